// The intervals of one series streamed in step order, kept compactly enough to run the step-gap
// and stall tests of CheckHealth (health.h) exactly without the points:
//   - the step intervals as a histogram of their distinct lengths, for the median;
//   - the step intervals that could be gaps, as runs of equal intervals with the step each run
//     starts from: those above gap_factor × the smallest interval so far (the median is never
//     below the smallest), and, of the others (an interval met before the smallest one was),
//     the kTopOthers largest with their steps and the largest of the rest, which must be no gap;
//   - the wall-time intervals counted by bucket, for the usual one the stall test compares with
//     (wall_interval_buckets.h), and those long enough to be a stall, with the step each follows.
// A series whose intervals take too many lengths (above kMaxLengths), or with more possible
// gaps than one run per 8 intervals, gives up and is loaded with its points instead.
// Internal to the library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mosaic/runs/health.h"
#include "mosaic/runs/time_series.h"
#include "series_checks.h"
#include "wall_interval_buckets.h"

namespace mosaic::runs::detail {

class IntervalLog {
 public:
  // Takes in the interval from `previous` to `current`, the next point in step order
  // (current.step > previous.step).
  void Add(const ScalarPoint& previous, const ScalarPoint& current, const HealthOptions& options) {
    if (given_up_) return;
    const uint64_t distance =
        static_cast<uint64_t>(current.step) - static_cast<uint64_t>(previous.step);
    if (last_left_out_ && distance == lengths_[last_length_].first) {
      // The interval before was of this length and kept nowhere (neither a possible gap nor one of
      // the largest others): this one is too, and changes nothing but the counts (the regular
      // case, nearly every interval of a series).
      ++lengths_[last_length_].second;
      ++intervals_;
    } else if (!AddStepInterval(previous.step, distance, options)) {
      return;  // given up
    }
    const double dt = current.wall_time_seconds - previous.wall_time_seconds;
    if (std::isfinite(dt)) {
      if (dt >= 0) wall_intervals_.Add(dt);
      if (dt > options.stall_min_seconds) {
        long_waits_.push_back({previous.step, dt});
        if (TooMany(long_waits_.size())) return GiveUp();
      }
    }
  }

  // Appends the log of the stretch that follows this one's; the interval across the seam must
  // have been added first.
  void Append(IntervalLog&& later);

  // Drops what is kept: the series is loaded with its points instead.
  void GiveUp();
  bool given_up() const { return given_up_; }

  // Whether Report finds what CheckHealth finds on the points: not given up, and no interval
  // left out of the possible gaps is a gap. `survey`: the same intervals' IntervalSurvey.
  bool Decided(const HealthOptions& options, const IntervalSurvey& survey) const;

  // Appends the series' step-gap and stall findings, as CheckHealth finds them (requires
  // Decided() and at least 2 intervals).
  void Report(const std::string& tag, const HealthOptions& options, const IntervalSurvey& survey,
              std::vector<Finding>* out);

  // The most distinct interval lengths a log holds.
  static constexpr size_t kMaxLengths = 1024;

 private:
  // `count` intervals of `distance` steps, one after the other from step `from`.
  struct StepRun {
    int64_t from = 0;
    uint64_t distance = 0;
    int64_t count = 0;
    // The step after the run (in unsigned arithmetic: each step is an int64, a sum of them may
    // not be).
    int64_t next() const {
      return static_cast<int64_t>(static_cast<uint64_t>(from) +
                                  distance * static_cast<uint64_t>(count));
    }
  };
  struct LongWait {
    int64_t after_step = 0;
    double seconds = 0;
  };
  // Add's step interval of `distance` from step `from`, in the general case; false when the log
  // gave up.
  bool AddStepInterval(int64_t from, uint64_t distance, const HealthOptions& options);
  // Adds `count` intervals of `distance` to the histogram; false past kMaxLengths lengths.
  bool CountLength(uint64_t distance, int64_t count);
  // Keeps the interval from `from` among the largest others (d > smallest_other_).
  void AddOther(int64_t from, uint64_t distance);
  // Whether `n` runs (or long waits) cost more than the points they stand for.
  bool TooMany(size_t n) const {
    return n > kFreeEntries && n * kIntervalsPerEntry > static_cast<size_t>(intervals_);
  }
  // The median step interval, as Median() over every interval.
  double MedianStepInterval() const;
  // The usual interval CheckHealth compares each interval with (gaps are those above gap_factor
  // times it), or nullopt when it looks for no gap.
  std::optional<double> TypicalInterval(const HealthOptions& options,
                                        const IntervalSurvey& survey) const;

  static constexpr size_t kFreeEntries = 64;
  static constexpr size_t kTopOthers = 32;
  static constexpr size_t kIntervalsPerEntry = 8;

  bool given_up_ = false;
  int64_t intervals_ = 0;
  std::vector<std::pair<uint64_t, int64_t>> lengths_;  // (distance, count), by distance
  size_t last_length_ = 0;                             // the entry of the last interval
  bool last_left_out_ = false;  // the last interval added went to left_out_ (and no Append since)
  double smallest_ = 0;
  std::vector<StepRun> possible_gaps_;   // in step order
  // The largest intervals in neither possible_gaps_ nor left_out_ (a min-heap by distance of at
  // most kTopOthers single intervals), and the smallest of them once it is full (below that, an
  // interval is left out).
  std::vector<StepRun> top_others_;
  double smallest_other_ = -1;
  double left_out_ = 0;                  // the largest interval kept nowhere
  // The finite wall intervals that are not negative (the usual interval's sample).
  WallIntervalBuckets wall_intervals_;
  std::vector<LongWait> long_waits_;     // finite and above stall_min_seconds, in step order
};

}  // namespace mosaic::runs::detail
