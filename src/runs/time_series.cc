#include "mosaic/runs/time_series.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace mosaic::runs {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

int64_t TimeSeries::FirstStep() const {
  assert(!points.empty());
  return Summarize().first_step;
}

int64_t TimeSeries::LastStep() const {
  assert(!points.empty());
  return Summarize().last_step;
}

double TimeSeries::FinalValue() const { return points.empty() ? kNaN : points.back().value; }

double TimeSeries::MeanOfLast(int k) const {
  double sum = 0;
  int n = 0;
  for (auto it = points.rbegin(); it != points.rend() && n < k; ++it) {
    if (!std::isfinite(it->value)) continue;
    sum += it->value;
    ++n;
  }
  return n == 0 ? kNaN : sum / n;
}

double TimeSeries::Min() const { return Summarize().min; }

std::optional<double> TimeSeries::ValueAt(int64_t step) const {
  for (const ScalarPoint& p : points) {
    if (p.step == step) return p.value;
  }
  return std::nullopt;
}

int64_t TimeSeries::NonFiniteCount() const { return Summarize().non_finite; }

int32_t TimeSeries::PassOf(size_t i) const {
  return 1 + static_cast<int32_t>(std::upper_bound(pass_starts.begin(), pass_starts.end(), i) -
                                  pass_starts.begin());
}

SeriesSummary TimeSeries::Summarize() const {
  SeriesSummary summary;
  summary.min = kNaN;
  if (points.empty()) return summary;
  summary.first_step = summary.last_step = points.front().step;
  for (const ScalarPoint& p : points) {
    summary.first_step = std::min(summary.first_step, p.step);
    summary.last_step = std::max(summary.last_step, p.step);
    if (!std::isfinite(p.value)) {
      ++summary.non_finite;
    } else if (!(p.value >= summary.min)) {
      summary.min = p.value;
    }
  }
  return summary;
}

}  // namespace mosaic::runs
