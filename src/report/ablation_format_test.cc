#include "ablation_format.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mosaic::report::ablation_format {
namespace {

runs::Ablation WithFinalValues(double value, double base_value) {
  runs::Ablation a;
  runs::AblationRow row;
  row.final_point.value = value;
  row.final_point.base_value = base_value;
  a.rows.push_back(row);
  return a;
}

// A loss (order 1) keeps four decimals; a learning rate of 1.8e-4 gets eight, so a difference of
// -1.5e-4 reads as -0.00015000, not -0.0001 (a fresh user read "outside" against 0.0000 ± 0.0000).
TEST(Decimals, GrowWithEachPowerOfTenBelowOne) {
  EXPECT_EQ(Decimals(WithFinalValues(3.05, 3.1)), 4);
  EXPECT_EQ(Decimals(WithFinalValues(30.5, 31)), 4);
  EXPECT_EQ(Decimals(WithFinalValues(0.5, 0.4)), 5);
  EXPECT_EQ(Decimals(WithFinalValues(3e-5, 1.8e-4)), 8);
  EXPECT_EQ(Decimals(WithFinalValues(3e-5, 1.8e-4), 5), 9);
  EXPECT_EQ(Decimals(WithFinalValues(NAN, 0)), 4);
  EXPECT_EQ(Decimals(WithFinalValues(1e-300, 0)), 15);
  EXPECT_EQ(Signed(-1.5e-4, Decimals(WithFinalValues(3e-5, 1.8e-4))), "-0.00015000");
  EXPECT_EQ(Fixed(NAN, 4), "n/a");
}

// A value of a billion or more (a run that logged a loss of 1e308) is written in scientific
// notation, so that the table keeps its columns; below, fixed-point as before.
TEST(Fixed, HugeValuesAreScientific) {
  EXPECT_EQ(Fixed(1e308, 4), "1.0000e+308");
  EXPECT_EQ(Signed(1e308, 4), "+1.0000e+308");
  EXPECT_EQ(Signed(-2.5e9, 4), "-2.5000e+09");
  EXPECT_EQ(Fixed(999999999.0, 2), "999999999.00");
  EXPECT_EQ(Signed(0.1, 4), "+0.1000");
}

}  // namespace
}  // namespace mosaic::report::ablation_format
