#include "mosaic/util/number_format.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace mosaic {
namespace {

TEST(FormatThousands, GroupsDigits) {
  EXPECT_EQ(FormatThousands(0), "0");
  EXPECT_EQ(FormatThousands(999), "999");
  EXPECT_EQ(FormatThousands(9703), "9,703");
  EXPECT_EQ(FormatThousands(-1234567), "-1,234,567");
  EXPECT_EQ(FormatThousands(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
}

// The seed-000 table's styles: 54.3M, 145.5M, 1.06B, 40.7B, 359.6B.
TEST(FormatCount, MatchesSeedTableStyle) {
  EXPECT_EQ(FormatCount(54263808), "54.3M");
  EXPECT_EQ(FormatCount(145489920), "145.5M");
  EXPECT_EQ(FormatCount(1060634624), "1.06B");
  EXPECT_EQ(FormatCount(40697856000.0), "40.7B");
  EXPECT_EQ(FormatCount(359643629568.0), "359.6B");
  EXPECT_EQ(FormatCount(512), "512");
}

TEST(FormatScientific, WritesBareExponent) {
  EXPECT_EQ(FormatScientific(4.8123e19), "4.81e19");
  EXPECT_EQ(FormatScientific(2.3949e20), "2.39e20");
  EXPECT_EQ(FormatScientific(1.5e-3, 2), "1.5e-3");
}

}  // namespace
}  // namespace mosaic
