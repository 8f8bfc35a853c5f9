// What to keep when a run logs a step again (a resume from a snapshot, a re-run into the same
// directory). Seed 004: "the first pass is the result". Applied per tag to the points in the order
// they were written (files in start order, then rows in file order); docs/logs.md.
//   first: keep the earliest-written value of each step (default);
//   last:  TensorBoard's loader: a step s at or below the last kept step evicts every kept point
//          with step >= s; a SessionLog.START purge marker at step s does the same for every tag;
//   all:   keep every point, numbered by pass (what tbparse does).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/runs/time_series.h"

namespace mosaic::runs {

enum class RestartPolicy { kFirst, kLast, kAll };

std::string_view ToString(RestartPolicy policy);
// Throws InputError "--restarts = X. Violated constraint: one of first, last, all".
RestartPolicy RestartPolicyFromString(std::string_view text);

// A point as written, before the policy: `sequence` orders writes across all files of the run and
// `source` indexes the run's files.
struct WrittenPoint {
  int64_t step = 0;
  double wall_time_seconds = 0;
  double value = 0;
  int64_t sequence = 0;
  int32_t source = 0;
};

// A purge marker (SessionLog.START) at `step`, written at `sequence`.
struct PurgeMarker {
  int64_t step = 0;
  int64_t sequence = 0;
  int32_t source = 0;
};

// A place where a tag went back: at the point written in `source`, the step fell from
// `from_step` (the largest step so far) to `back_to_step`; the next `overlapped_points` points of
// that pass (this one included) repeat steps at or below `from_step`.
struct Restart {
  std::string tag;
  int32_t source = 0;
  int64_t from_step = 0;
  int64_t back_to_step = 0;
  int64_t overlapped_points = 0;
};

// Finds every restart of one tag's written points (policy independent).
std::vector<Restart> FindRestarts(std::string_view tag, const std::vector<WrittenPoint>& written);

// Applies `policy` to one tag's points in write order. `purges` (sorted by sequence) only act
// under kLast. The result is sorted by step (kFirst, kLast) or by pass then write order (kAll).
std::vector<ScalarPoint> ApplyRestartPolicy(RestartPolicy policy,
                                            const std::vector<WrittenPoint>& written,
                                            const std::vector<PurgeMarker>& purges);

}  // namespace mosaic::runs
