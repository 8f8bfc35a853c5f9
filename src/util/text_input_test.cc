#include "mosaic/util/text_input.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

namespace mosaic {
namespace {

TEST(TextInput, StripsOnlyALeadingByteOrderMark) {
  EXPECT_EQ(StripByteOrderMark("\xEF\xBB\xBFstep,loss\n"), "step,loss\n");
  EXPECT_EQ(StripByteOrderMark("step,loss\n"), "step,loss\n");
  EXPECT_EQ(StripByteOrderMark("a\xEF\xBB\xBF"), "a\xEF\xBB\xBF");
  EXPECT_EQ(StripByteOrderMark("\xEF\xBB"), "\xEF\xBB");
  EXPECT_EQ(StripByteOrderMark(""), "");
}

TEST(TextInput, ParseDecimalReadsOneWholeDecimalNumber) {
  EXPECT_EQ(ParseDecimal("-2.5e3"), -2500.0);
  EXPECT_EQ(ParseDecimal("1296"), 1296.0);
  EXPECT_EQ(ParseDecimal(".5"), 0.5);
  EXPECT_EQ(ParseDecimal("inf"), std::numeric_limits<double>::infinity());  // callers check
  // What strtod would read and a decimal reader must not: hexadecimal, a sign or space first,
  // text after the number; and no value for what overflows a double.
  for (const char* no : {"0x510", "0x1p10", "+1", " 1", "1 ", "12abc", "", "-", "1e400", "1,5"}) {
    EXPECT_FALSE(ParseDecimal(no).has_value()) << no;
  }
}

TEST(TextInput, ReadTextFileDropsTheByteOrderMark) {
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) /
                                     ("mosaic_text_input_" + std::to_string(getpid()) + ".csv");
  std::ofstream(path, std::ios::binary) << "\xEF\xBB\xBFstep,loss\n1,2\n";
  EXPECT_EQ(ReadTextFile(path.string()), "step,loss\n1,2\n");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mosaic
