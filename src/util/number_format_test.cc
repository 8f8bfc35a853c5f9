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

// Values far from a table's scale print in scientific notation (a frontier at C = 1e-300 printed a
// D*/N* of 43 digits and a loss of 63); one that rounds to zero from below prints without a sign.
TEST(FormatFixed, FixedInItsRangeScientificOutside) {
  EXPECT_EQ(FormatFixed(6.25, 1), "6.2");
  EXPECT_EQ(FormatFixed(1.99786, 4), "1.9979");
  EXPECT_EQ(FormatFixed(0, 1), "0.0");
  EXPECT_EQ(FormatFixed(-0.01, 1), "0.0");
  EXPECT_EQ(FormatFixed(4.9211e42, 1), "4.92e42");
  EXPECT_EQ(FormatFixed(2e-5, 4), "2.00e-5");
  EXPECT_EQ(FormatCount(1.8403e-172), "1.84e-172");
  EXPECT_EQ(FormatCount(0.5), "0.5");
}

TEST(FormatSignedPercent, NoSignOnZero) {
  EXPECT_EQ(FormatSignedPercent(0.0123), "+1.2%");
  EXPECT_EQ(FormatSignedPercent(-0.5), "-50.0%");
  EXPECT_EQ(FormatSignedPercent(-0.0004), "0.0%");
  EXPECT_EQ(FormatSignedPercent(0.0004), "0.0%");
  EXPECT_EQ(FormatSignedPercent(-0.0004, 2), "-0.04%");
}

TEST(FormatScientific, WritesBareExponent) {
  EXPECT_EQ(FormatScientific(4.8123e19), "4.81e19");
  EXPECT_EQ(FormatScientific(2.3949e20), "2.39e20");
  EXPECT_EQ(FormatScientific(1.5e-3, 2), "1.5e-3");
}

}  // namespace
}  // namespace mosaic
