#include "mosaic/runs/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace mosaic::runs {

std::optional<SeriesOffset> CompareSeries(const TimeSeries& a, const TimeSeries& b) {
  std::map<int64_t, double> a_by_step;
  std::set<int64_t> a_steps, common_steps;  // every step, finite or not
  for (const ScalarPoint& p : a.points) {
    a_steps.insert(p.step);
    if (std::isfinite(p.value)) a_by_step.try_emplace(p.step, p.value);
  }
  std::map<int64_t, double> diffs;
  std::map<int64_t, double> relative;
  for (const ScalarPoint& p : b.points) {
    if (a_steps.count(p.step) != 0) common_steps.insert(p.step);
    if (!std::isfinite(p.value)) continue;
    auto it = a_by_step.find(p.step);
    if (it == a_by_step.end() || diffs.count(p.step) != 0) continue;
    diffs[p.step] = p.value - it->second;
    if (it->second != 0) relative[p.step] = (p.value - it->second) / it->second;
  }
  if (diffs.empty()) return std::nullopt;
  SeriesOffset o;
  o.common_steps = static_cast<int64_t>(diffs.size());
  o.non_finite_steps = static_cast<int64_t>(common_steps.size() - diffs.size());
  o.first_common_step = diffs.begin()->first;
  o.last_common_step = diffs.rbegin()->first;
  double sum = 0;
  o.min_difference = diffs.begin()->second;
  o.max_difference = diffs.begin()->second;
  for (const auto& [step, d] : diffs) {
    sum += d;
    o.min_difference = std::min(o.min_difference, d);
    o.max_difference = std::max(o.max_difference, d);
  }
  const double n = static_cast<double>(diffs.size());
  o.mean_difference = sum / n;
  double squares = 0;
  for (const auto& [step, d] : diffs) squares += (d - o.mean_difference) * (d - o.mean_difference);
  o.sd_difference = diffs.size() > 1 ? std::sqrt(squares / (n - 1)) : 0;
  o.standard_error = o.sd_difference / std::sqrt(n);
  double rel_sum = 0;
  for (const auto& [step, r] : relative) rel_sum += r;
  o.relative_steps = static_cast<int64_t>(relative.size());
  o.mean_relative_difference = relative.empty() ? 0 : rel_sum / static_cast<double>(relative.size());
  return o;
}

}  // namespace mosaic::runs
