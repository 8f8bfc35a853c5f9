// One tag's points digested as they are read, without keeping them: what `mosaic runs` reports
// of the series (run_digest.h) and its health findings (health.h), identical to those of the
// series loaded whole, whenever the series' steps only increase and its gap and stall tests need
// no median (then DecidedWithoutPoints() is true; otherwise the run is loaded with its points).
// A run's series is built from stretches (a file, or a part of a file read on its own thread)
// streamed on their own and appended in write order: each stretch keeps its first spike_window
// finite points untested and its last max(spike_window, k) finite values, so that appending
// tests those first points against the values before them, as one pass would. Internal to the
// library.
#pragma once

#include <re2/re2.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "mosaic/runs/health.h"
#include "mosaic/runs/run_digest.h"
#include "mosaic/runs/time_series.h"
#include "series_checks.h"

namespace mosaic::runs::detail {

// What every stream of a load shares (outlives the streams).
struct SeriesStreamOptions {
  const HealthOptions* health = nullptr;
  const RE2* spike_tags = nullptr;  // CompileSpikeTags(*health)
  int last_k = 10;                  // the digest's mean of the last k finite values
};

class SeriesStream {
 public:
  SeriesStream(const SeriesStreamOptions& options, const std::string& tag);

  // Takes in the stretch's next point in write order.
  void Add(const ScalarPoint& p) {
    if (count_ > 0) {
      increasing_ = increasing_ && p.step > last_.step;
      survey_.Add(last_, p, options_.health->stall_min_seconds);
      if (skip_tag_ && p.value > last_.value) skipped_.push_back(p.step);
    } else {
      first_ = p;
    }
    last_ = p;
    ++count_;
    if (!std::isfinite(p.value)) {
      non_finite_.push_back(p.step);
      return;
    }
    if (!(p.value >= min_)) min_ = p.value;
    tail_[tail_next_] = p.value;
    tail_next_ = tail_next_ + 1 == tail_.size() ? 0 : tail_next_ + 1;
    if (spikes_) {
      if (finite_ < head_capacity_) {
        head_.push_back(p);
        spikes_->Push(p.value);
      } else {
        spikes_->Add(p);
      }
    }
    ++finite_;
  }

  // Appends `later`: the same tag's stream of the stretch written right after this one's.
  void Append(SeriesStream&& later);

  int64_t count() const { return count_; }
  const ScalarPoint& last() const { return last_; }  // requires count() > 0

  // True when the steps only increase and the gap and stall tests are decided without the
  // points (every interval within gap_factor of the smallest, or all equal and no gap; no
  // interval long enough to be a stall): the series then has no step-gap or stall finding.
  bool DecidedWithoutPoints() const;

  // The series' figures (requires count() > 0 and DecidedWithoutPoints()).
  SeriesDigest Digest() const;

  // Appends the series' findings as CheckHealth orders them (non-finite values, skipped updates,
  // spikes; requires DecidedWithoutPoints()).
  void Report(std::vector<Finding>* out);

 private:
  // The last finite values, oldest first (at most the tail's capacity).
  std::vector<double> TailValues() const;
  // Tests the stretch's first finite points against `before` (the finite values before the
  // stretch, oldest first), in front of the spikes found after them.
  void TestHead(const std::vector<double>& before);

  const SeriesStreamOptions& options_;
  const std::string tag_;
  bool skip_tag_ = false;
  int64_t count_ = 0;
  int64_t finite_ = 0;
  ScalarPoint first_;
  ScalarPoint last_;
  bool increasing_ = true;
  double min_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> non_finite_;
  std::vector<int64_t> skipped_;
  IntervalSurvey survey_;
  std::vector<double> tail_;  // a ring of the last finite values; tail_next_ is the oldest once full
  size_t tail_next_ = 0;
  // Spike-tested tags only: the test of the points after the head, and the head (the first
  // head_capacity_ finite points, tested once the values before the stretch are known).
  std::optional<SpikeTest> spikes_;
  int64_t head_capacity_ = 0;
  std::vector<ScalarPoint> head_;
  bool head_tested_ = false;
};

}  // namespace mosaic::runs::detail
