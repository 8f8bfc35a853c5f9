// What to keep when a run logs a step again (a resume from a snapshot, a re-run into the same
// directory). Seed 004: "the first pass is the result". Applied per tag to the points in the order
// they were written (files in start order, then rows in file order); docs/logs.md.
//
// A restart is a step going back: a step below the writer's previous step, or equal to it when
// it comes from another file (a new writer) or with an earlier wall time. Several values at one
// step from one continuing writer (same file, wall time not going back: gradient accumulation,
// Lightning's CSV logger writing epoch and step metrics at one step) are repeated values, not
// restarts. A file whose wall-time range overlaps another file's (two ranks writing into one
// directory) is a concurrent writer: its points are judged against its own previous points only.
//   first: keep the earliest-written value of each step (default); of repeated values, the first;
//          of concurrent writers at one step, the one in the file that sorts first;
//   last:  TensorBoard's loader: a restart to step s evicts every kept point with step >= s; a
//          SessionLog.START purge marker at step s does the same for every tag; of repeated
//          values (and concurrent writers at one step), the last written is kept;
//   all:   keep every point, numbered by pass (what tbparse does); repeated values and concurrent
//          writers keep the pass they are in, only a restart starts a new one.
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
  // The point's file was written concurrently with another file of the run (overlapping wall
  // times): restarts are judged against the points of that file alone.
  bool concurrent = false;
};

// A purge marker (SessionLog.START) at `step`, written at `sequence`.
struct PurgeMarker {
  int64_t step = 0;
  int64_t sequence = 0;
  int32_t source = 0;
};

// A place where a tag went back: at the point written in `source`, the step fell from
// `from_step` (the largest step so far) to `back_to_step`; the next `overlapped_points` points of
// that pass (this one included) repeat steps at or below `from_step` and at or above the
// smallest step written before (a pass reaching below the first pass's start repeats nothing
// there, so `overlapped_points` can be 0).
struct Restart {
  std::string tag;
  int32_t source = 0;
  int64_t from_step = 0;
  int64_t back_to_step = 0;
  int64_t overlapped_points = 0;
};

// Finds every restart of one tag's written points (policy independent); repeated values at one
// step from one continuing writer are not restarts.
std::vector<Restart> FindRestarts(std::string_view tag, const std::vector<WrittenPoint>& written);

// Applies `policy` to one tag's points in write order. `purges` (sorted by sequence) only act
// under kLast. The result is sorted by step (kFirst, kLast) or by pass then write order (kAll);
// `pass_starts`, when given, receives where each pass after the first begins (TimeSeries::
// pass_starts: empty but under kAll).
std::vector<ScalarPoint> ApplyRestartPolicy(RestartPolicy policy,
                                            const std::vector<WrittenPoint>& written,
                                            const std::vector<PurgeMarker>& purges,
                                            std::vector<size_t>* pass_starts = nullptr);

}  // namespace mosaic::runs
