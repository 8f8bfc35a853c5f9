// What the `mosaic runs` reports show of a run, kept without its points: each series' count,
// steps, final value, mean of its last k values, minimum and non-finite count, and the run's
// health findings (health.h). A directory read in batches (LoadRunsInBatches) and digested batch
// by batch is reported in the memory of one batch.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"
#include "mosaic/runs/time_series.h"

namespace mosaic::runs {

// One series' figures (TimeSeries::Summarize, FinalValue, MeanOfLast).
struct SeriesDigest {
  int64_t points = 0;
  SeriesSummary summary;
  double final_value = 0;   // NaN for an empty series
  double mean_last_k = 0;   // of the last `last_k` finite values; NaN when none
};

struct RunDigest {
  // The run with every series' points released (tags, float32 flags, files, restarts, notes and
  // the other run-level facts kept).
  Run run;
  std::vector<SeriesDigest> series;  // one per run.series, in its order
  std::vector<Finding> findings;     // CheckHealth(run) before its points were released
  int last_k = 0;

  int64_t kept_points() const;
  // The digest of run.series[i] for the series `s` points to (from Run::LossSeries/FindSeries).
  const SeriesDigest& Of(const TimeSeries& s) const;
};

// Checks `runs` (CheckHealthOfRuns with `health` on `threads` threads, 0: one per hardware
// thread), summarises every series on as many, and releases the points. The result does not
// depend on `threads`. `last_k` >= 1.
std::vector<RunDigest> DigestRuns(std::vector<Run>&& runs, int last_k,
                                  const HealthOptions& health = {}, int threads = 1);

}  // namespace mosaic::runs
