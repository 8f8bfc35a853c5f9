#include "mosaic/util/text_input.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace mosaic {
namespace {

TEST(TextInput, StripsOnlyALeadingByteOrderMark) {
  EXPECT_EQ(StripByteOrderMark("\xEF\xBB\xBFstep,loss\n"), "step,loss\n");
  EXPECT_EQ(StripByteOrderMark("step,loss\n"), "step,loss\n");
  EXPECT_EQ(StripByteOrderMark("a\xEF\xBB\xBF"), "a\xEF\xBB\xBF");
  EXPECT_EQ(StripByteOrderMark("\xEF\xBB"), "\xEF\xBB");
  EXPECT_EQ(StripByteOrderMark(""), "");
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
