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

// The digests of `directories` (in their order) without keeping their points where that gives
// the same figures and findings: each run's series are digested while its files are read
// (health.h's checks run on the stream, a file read in parts joined as one pass would see it),
// and a run that needs its points (a step that goes back, a purge marker under `last`, CSV or
// JSONL logs, or step intervals a stream's log cannot keep: more than 1 024 distinct lengths, or
// too many possible gaps; src/runs/interval_log.h) is
// loaded and digested with them (DigestRuns), as is every run when last_k > 1024. Step gaps and
// stalls are found from the streams. Runs are read in batches of at most `batch_bytes` of logs,
// as LoadRunsInBatches reads them. The result is that of DigestRuns(LoadRuns(directories, options))
// (tested on every fixture and on files built to cross each of these rules), on any number of
// threads; memory is bounded by the batches loaded with their points. Like LoadRuns it never
// throws for a file: what could not be read is in each run's files and findings. A run that
// needs its points is read twice (streamed, then loaded).
std::vector<RunDigest> ReadRunDigests(const std::vector<RunDirectory>& directories,
                                      const LoadOptions& options, int last_k,
                                      const HealthOptions& health = {},
                                      int64_t batch_bytes = kDefaultBatchBytes);

}  // namespace mosaic::runs
