// WallIntervalBuckets finds UsualWallInterval() of the same intervals, in a memory set by their
// spread.
#include "wall_interval_buckets.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace mosaic::runs::detail {
namespace {

// UsualWallInterval of a copy (it reorders).
double UsualOf(std::vector<double> values) { return UsualWallInterval(values); }

TEST(WallIntervalBuckets, UsualIntervalIsTheLowerMedianRoundedDown) {
  // Five intervals: the lower median is the third, 2.0 s, a bucket's edge.
  std::vector<double> values = {3.0, 1.0, 2.0, 100.0, 0.5};
  EXPECT_EQ(UsualOf(values), 2.0);
  // Six: the lower median (rank 2) is 2.0 again, not the mean of 2 and 3.
  values.push_back(2.5);
  EXPECT_EQ(UsualOf(values), 2.0);
  // 100.3 s lies in [100.25, 100.3125): 1 024 buckets between 64 and 128 s.
  EXPECT_EQ(UsualOf({100.3}), 100.25);
  EXPECT_EQ(WallIntervalFloor(0.1), std::ldexp(std::floor(std::ldexp(0.1, 14)), -14));
  EXPECT_EQ(WallIntervalFloor(0.0), 0.0);
  // At most 2^-10 of itself below the value.
  for (const double v : {1e-6, 0.1, 0.7, 1.0, 1.999, 3.14159, 612.5, 1e9}) {
    EXPECT_LE(WallIntervalFloor(v), v);
    EXPECT_GT(WallIntervalFloor(v), v * (1 - std::ldexp(1.0, -10)));
  }
}

TEST(WallIntervalBuckets, CountsFindTheUsualIntervalOfJitteredOnes) {
  std::mt19937_64 random(20261202);
  for (const size_t n : {1, 2, 3, 10, 101, 1000, 4096, 50001}) {
    SCOPED_TRACE(n);
    std::uniform_real_distribution<double> jitter(0.3, 3.0);
    std::vector<double> values;
    WallIntervalBuckets buckets;
    for (size_t i = 0; i < n; ++i) {
      // Every seventh interval repeats the one before (the fast path of the last bucket).
      values.push_back(i % 7 == 6 ? values.back() : jitter(random));
      buckets.Add(values.back());
    }
    EXPECT_EQ(buckets.count(), static_cast<int64_t>(n));
    EXPECT_EQ(buckets.UsualSeconds(), UsualOf(values));
  }
}

TEST(WallIntervalBuckets, StretchesAppendedAsOne) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> jitter(10.0, 12.0);
  std::vector<double> values;
  WallIntervalBuckets whole;
  WallIntervalBuckets parts[3];
  for (size_t i = 0; i < 3001; ++i) {
    values.push_back(jitter(random));
    whole.Add(values.back());
    parts[i * 3 / 3001].Add(values.back());
  }
  parts[0].Append(parts[1]);
  parts[0].Append(parts[2]);
  // After the table grew while appending, the last bucket is still counted in its new slot.
  for (int i = 0; i < 5; ++i) {
    parts[0].Add(values.back());
    whole.Add(values.back());
    values.push_back(values.back());
  }
  EXPECT_EQ(parts[0].count(), whole.count());
  EXPECT_EQ(parts[0].buckets(), whole.buckets());
  EXPECT_EQ(parts[0].UsualSeconds(), UsualOf(values));
  EXPECT_EQ(whole.UsualSeconds(), UsualOf(values));
}

TEST(WallIntervalBuckets, MemorySetByTheSpreadNotTheCount) {
  // A million intervals between 0.5 and 0.6 s meet 0.1 / (0.5 × 2^-10) + 1 = 205 buckets at most.
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> jitter(0.5, 0.6);
  WallIntervalBuckets buckets;
  std::vector<double> values;
  for (int i = 0; i < 1000000; ++i) {
    values.push_back(jitter(random));
    buckets.Add(values.back());
  }
  EXPECT_EQ(buckets.buckets(), 205u);
  EXPECT_EQ(buckets.UsualSeconds(), UsualOf(values));
  buckets.Clear();
  EXPECT_EQ(buckets.count(), 0);
  EXPECT_EQ(buckets.buckets(), 0u);
}

}  // namespace
}  // namespace mosaic::runs::detail
