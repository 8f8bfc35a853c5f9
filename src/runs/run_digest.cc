#include "mosaic/runs/run_digest.h"

#include <cassert>
#include <utility>

#include "mosaic/util/parallel_for.h"

namespace mosaic::runs {

int64_t RunDigest::kept_points() const {
  int64_t kept = 0;
  for (const SeriesDigest& s : series) kept += s.points;
  return kept;
}

const SeriesDigest& RunDigest::Of(const TimeSeries& s) const {
  const auto i = static_cast<size_t>(&s - run.series.data());
  assert(i < series.size());
  return series[i];
}

std::vector<RunDigest> DigestRuns(std::vector<Run>&& runs, int last_k, const HealthOptions& health,
                                  int threads) {
  std::vector<std::vector<Finding>> findings = CheckHealthOfRuns(runs, health, threads);
  std::vector<RunDigest> out(runs.size());
  // Every series a task of its own, so that one run of a few long series uses every core.
  std::vector<std::pair<size_t, size_t>> tasks;
  for (size_t r = 0; r < runs.size(); ++r) {
    out[r].series.resize(runs[r].series.size());
    for (size_t k = 0; k < runs[r].series.size(); ++k) tasks.emplace_back(r, k);
  }
  ParallelFor(tasks.size(), ThreadCount(threads), [&](size_t t) {
    const auto [r, k] = tasks[t];
    TimeSeries& s = runs[r].series[k];
    out[r].series[k] = {static_cast<int64_t>(s.points.size()), s.Summarize(), s.FinalValue(),
                        s.MeanOfLast(last_k)};
    std::vector<ScalarPoint>().swap(s.points);
    std::vector<size_t>().swap(s.pass_starts);
  });
  for (size_t r = 0; r < runs.size(); ++r) {
    out[r].run = std::move(runs[r]);
    out[r].findings = std::move(findings[r]);
    out[r].last_k = last_k;
  }
  return out;
}

}  // namespace mosaic::runs
