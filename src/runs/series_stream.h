// One tag's points digested as they are read, without keeping them: what `mosaic runs` reports
// of the series (run_digest.h) and its health findings (health.h), identical to those of the
// series loaded whole, whenever the series' steps only increase and its intervals can be kept
// compactly (IntervalLog; then DecidedWithoutPoints() is true; otherwise the run is loaded with
// its points).
// A run's series is built from stretches (a file, or a part of a file read on its own thread)
// streamed on their own and appended in write order: each stretch keeps its first spike_window
// finite points untested and its last max(spike_window, k) finite values, so that appending
// tests those first points against the values before them, as one pass would.
//
// A stretch of a few points costs a few small vectors: nothing is allocated up front, and the
// tag is matched against the spike and skip patterns only once its values need it (a run of many
// files that each log thousands of tags once streams in about the memory of its points).
// Internal to the library.
#pragma once

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#include "mosaic/runs/health.h"
#include "mosaic/runs/run_digest.h"
#include "mosaic/runs/time_series.h"
#include "interval_log.h"
#include "series_checks.h"

namespace mosaic::runs::detail {

// The largest k of the mean of the last k values a stream keeps values for; ReadRunDigests loads
// the points for a larger k (each stretch would otherwise carry k values).
inline constexpr int kMaxStreamedLastK = 1024;

// What every stream of a load shares (outlives the streams).
struct SeriesStreamOptions {
  const HealthOptions* health = nullptr;
  const RE2* spike_tags = nullptr;  // CompileSpikeTags(*health)
  int last_k = 10;                  // the digest's mean of the last k finite values, <= kMaxStreamedLastK
};

class SeriesStream {
 public:
  explicit SeriesStream(const SeriesStreamOptions& options)
      : options_(options),
        head_capacity_(static_cast<size_t>(std::max(options.health->spike_window, 0))),
        tail_capacity_(static_cast<size_t>(
            std::max({options.health->spike_window, options.last_k, 1}))) {}

  // Takes in the next point in write order; `tag` is the series' tag. Also after Append (the
  // stream goes on as one pass over everything before would); not after Report.
  void Add(const ScalarPoint& p, std::string_view tag) {
    if (count_ > 0) {
      increasing_ = increasing_ && p.step > last_.step;
      survey_.Add(last_, p, options_.health->stall_min_seconds);
      if (increasing_) {
        intervals_.Add(last_, p, *options_.health);
      } else if (!intervals_.given_up()) {
        intervals_.GiveUp();
      }
      if (p.value > last_.value && skip_tag_ != 0 && IsSkipTag(tag)) skipped_.push_back(p.step);
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
    if (!past_head_) {
      if (head_.size() < HeadCapacity()) {
        head_.push_back(p);
        return;
      }
      LeaveHead(tag);
    }
    PushTail(p.value);
    if (spikes_) spikes_->Add(p);
  }

  // Appends `later`: the same tag's stream of the stretch written right after this one's.
  void Append(SeriesStream&& later, std::string_view tag);

  int64_t count() const { return count_; }

  // True when the steps only increase and the intervals were kept (IntervalLog): the digest
  // and the findings are then those of the series loaded whole.
  bool DecidedWithoutPoints() const {
    return increasing_ && intervals_.Decided(*options_.health, survey_);
  }

  // The series' figures (requires count() > 0 and DecidedWithoutPoints()).
  SeriesDigest Digest() const;

  // Appends the series' findings as CheckHealth orders them (non-finite values, skipped updates,
  // spikes, step gaps, stalls; requires DecidedWithoutPoints()); once.
  void Report(std::string_view tag, std::vector<Finding>* out);

 private:
  size_t HeadCapacity() const { return head_capacity_; }
  size_t TailCapacity() const { return tail_capacity_; }
  bool IsSkipTag(std::string_view tag);
  bool IsSpikeTag(std::string_view tag);
  // Past the head: the tail and (for a spike-tested tag) the spike test start from the head's
  // values, and every later finite point is tested.
  void LeaveHead(std::string_view tag);
  void PushTail(double value) {
    if (tail_.size() < TailCapacity()) {
      tail_.push_back(value);
      return;
    }
    tail_[tail_next_] = value;
    tail_next_ = tail_next_ + 1 == tail_.size() ? 0 : tail_next_ + 1;
  }
  // The last finite values, oldest first (at most TailCapacity()).
  std::vector<double> TailValues() const;
  // Tests the stretch's head against `before` (the finite values before the stretch, oldest
  // first), in front of the spikes found after it; `spike_tag`: whether the tag is tested at all.
  void TestHead(const std::vector<double>& before, bool spike_tag);

  const SeriesStreamOptions& options_;
  size_t head_capacity_;  // spike_window: the finite points a stretch keeps untested
  size_t tail_capacity_;  // max(spike_window, last_k, 1): the last finite values kept
  int8_t skip_tag_ = -1;   // IsSkipTag's answer once asked (-1: not yet)
  int8_t spike_tag_ = -1;  // IsSpikeTag's answer once asked
  bool increasing_ = true;
  bool past_head_ = false;
  bool head_tested_ = false;
  int64_t count_ = 0;
  ScalarPoint first_;
  ScalarPoint last_;
  double min_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> non_finite_;
  std::vector<int64_t> skipped_;
  IntervalSurvey survey_;
  IntervalLog intervals_;
  // The first HeadCapacity() finite points (kept untested until the values before the stretch are
  // known), then a ring of the last TailCapacity() finite values (tail_next_ the oldest once full).
  std::vector<ScalarPoint> head_;
  std::vector<double> tail_;
  size_t tail_next_ = 0;
  std::unique_ptr<SpikeTest> spikes_;  // the test of the points after the head (spike tags)
};

}  // namespace mosaic::runs::detail
