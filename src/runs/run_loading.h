// How LoadRuns reads runs, for the library's other readers of runs (run_digest.cc). Internal.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "mosaic/runs/run.h"
#include "series_stream.h"

namespace mosaic::runs::detail {

// A run as LoadRunsWith reads it: with `stream`, its series carry no points and `streams` holds
// each one's stream (one per run.series, in its order), unless `needs_points`: a purge marker
// was read under `last`, or the run has CSV/JSONL logs, which only a load with points handles
// (then `run` and `streams` are incomplete and must not be used).
struct LoadedRun {
  Run run;
  std::vector<std::unique_ptr<SeriesStream>> streams;
  bool needs_points = false;

  // Whether the streams stand for the points: the run's digest and findings are then those of
  // the run loaded with its points.
  bool StreamsSuffice() const {
    if (needs_points) return false;
    for (const auto& s : streams) {
      if (!s->DecidedWithoutPoints()) return false;
    }
    return true;
  }
};

// LoadRuns, each series streamed instead of kept when `stream` is not null.
std::vector<LoadedRun> LoadRunsWith(const std::vector<RunDirectory>& directories,
                                    const LoadOptions& options, const SeriesStreamOptions* stream);

// The batches LoadRunsInBatches reads: [first, end) ranges of `directories`, in order.
std::vector<std::pair<size_t, size_t>> RunBatches(const std::vector<RunDirectory>& directories,
                                                  int64_t batch_bytes);

}  // namespace mosaic::runs::detail
