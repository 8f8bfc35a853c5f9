#include "decision_format.h"

#include <gtest/gtest.h>

namespace mosaic::report::decision_format {
namespace {

Decision WithNoise(double effective_compute, double low, double high) {
  Decision d;
  d.study.decision.fit.confidence = 0.95;
  d.noise = NoiseSummary{};
  d.noise->used_effective_compute = 0.067;
  d.effective_compute = effective_compute;
  d.effective_compute_interval = scaling::Interval{low, high};
  d.inside_noise = std::abs(effective_compute - 1) < 0.067;
  return d;
}

// A gain outside the noise says whether its interval reaches back inside it (helper report: the
// +16.2% gain was "outside the noise" while its interval ran from 0.660).
TEST(NoiseComparisonText, NamesAnIntervalThatReachesInsideTheNoise) {
  EXPECT_EQ(NoiseComparisonText(WithNoise(1.162, 0.660, 2.189)),
            "the projected effective-compute gain +16.2% is outside the noise (6.7%), but its 95% "
            "interval reaches inside it (low end -34.0%)");
  EXPECT_EQ(NoiseComparisonText(WithNoise(1.162, 1.10, 1.23)),
            "the projected effective-compute gain +16.2% is outside the noise (6.7%)");
  EXPECT_EQ(NoiseComparisonText(WithNoise(0.80, 0.70, 0.98)),
            "the projected effective-compute gain -20.0% is outside the noise (6.7%), but its 95% "
            "interval reaches inside it (high end -2.0%)");
  EXPECT_EQ(NoiseComparisonText(WithNoise(1.03, 0.9, 1.2)),
            "the projected effective-compute gain +3.0% is INSIDE the noise (6.7%)");
  Decision none;
  EXPECT_EQ(NoiseComparisonText(none), "");
}

}  // namespace
}  // namespace mosaic::report::decision_format
