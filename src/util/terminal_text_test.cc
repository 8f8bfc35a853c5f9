#include "mosaic/util/terminal_text.h"

#include <gtest/gtest.h>

namespace mosaic {
namespace {

TEST(TerminalText, EscapesControlCharactersOnly) {
  EXPECT_EQ(Printable("train/loss"), "train/loss");
  EXPECT_EQ(Printable("a\nb\tc\r"), "a\\nb\\tc\\r");
  EXPECT_EQ(Printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(Printable(std::string("nul\0del\x7f", 8)), "nul\\x00del\\x7f");
  EXPECT_EQ(Printable("δ/λ"), "δ/λ");
}

}  // namespace
}  // namespace mosaic
