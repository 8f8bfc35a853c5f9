// Health checks of a loaded run, per tag (docs/logs.md "Health checks"):
//   - non-finite values (NaN, ±inf), and the steps where an update was skipped: a non-finite
//     gradient norm, or a step where a tag named like "skip" (e.g. skipped_steps) increases;
//   - spikes of loss and gradient norm: a value more than `spike_sigmas` robust standard
//     deviations above the median of the previous `spike_window` finite values, where the robust
//     standard deviation is 1.4826 × the median absolute deviation (MAD), floored at
//     `spike_floor_relative` × |median| so that a flat stretch does not make every wiggle a spike;
//   - restarts (the run's restart reports), step gaps (an interval above `gap_factor` × the
//     median interval), stalls (a wall-time interval above `stall_factor` × the usual one and
//     above `stall_min_seconds`; the usual interval is the lower median of the finite,
//     non-negative wall-time intervals rounded down to 2^-10 of its binade, at most 0.1 % below
//     it, so that a stream finds it from bucket counts: src/runs/wall_interval_buckets.h);
//   - damaged records and skipped files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/runs/run.h"

namespace mosaic::runs {

struct HealthOptions {
  int spike_window = 50;               // points in the rolling baseline
  int spike_min_points = 10;           // no spike test before this many baseline points
  double spike_sigmas = 6.0;           // robust standard deviations above the median
  double spike_floor_relative = 1e-3;  // floor of the robust sd, relative to |median|
  double gap_factor = 3.0;             // step interval / median interval that counts as a gap
  double stall_factor = 10.0;          // wall-time interval / usual interval that counts as a stall
  double stall_min_seconds = 300.0;    // and at least this long
  // Tags checked for spikes: case-insensitive match of this regular expression (RE2 syntax).
  std::string spike_tags = "loss|grad[_-]?norm|gradnorm";
  // CheckHealthOfRuns tests a series of at least twice this many points for spikes in parts of
  // at least this many, on several threads (each part's window primed with the values before
  // it): the findings are the same as in one pass.
  int64_t spike_part_points = int64_t{1} << 18;
};

// kDamaged: a corrupt record or file; kUnreadableFile: a log file that could not be used at all
// (e.g. a CSV without a step column, a file without read permission), reported once as a finding
// rather than also as a note; kUnreadableFolder: a folder that could not be listed (its logs, if
// any, were not read); kConcurrentWriters: event files of one run whose wall-time ranges overlap
// (two ranks or processes writing into one directory), which are not restarts.
enum class FindingKind {
  kNonFinite,
  kSkippedUpdate,
  kSpike,
  kRestart,
  kStepGap,
  kStall,
  kDamaged,
  kUnreadableFile,
  kUnreadableFolder,
  kConcurrentWriters
};
std::string_view ToString(FindingKind kind);

struct Finding {
  FindingKind kind = FindingKind::kNonFinite;
  std::string tag;              // empty for run-level findings (damaged records)
  std::vector<int64_t> steps;   // where (all of them for non-finite values and spikes)
  std::string message;          // one line, e.g. "2 non-finite values at steps 1000, 1852"
};

// All findings of `run`, ordered by tag then kind; run-level findings first.
std::vector<Finding> CheckHealth(const Run& run, const HealthOptions& options = {});

// Whether `tag` is a gradient norm's, whose non-finite values CheckHealth reports as skipped
// updates: it contains grad_norm, grad-norm, gradnorm, gradient_norm or grad/norm, in any case
// ("train/grad_norm", Levanter's and Marin's "grad/norm/total").
bool IsGradNormTag(std::string_view tag);

// CheckHealth of each of `runs` (in their order), every series a task of its own on `threads`
// threads (0: one per hardware thread), so that one run of many tags uses every core too; the
// result does not depend on the number of threads.
std::vector<std::vector<Finding>> CheckHealthOfRuns(const std::vector<Run>& runs,
                                                    const HealthOptions& options = {},
                                                    int threads = 1);

}  // namespace mosaic::runs
