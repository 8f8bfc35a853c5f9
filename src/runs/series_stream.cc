#include "series_stream.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace mosaic::runs::detail {

SeriesStream::SeriesStream(const SeriesStreamOptions& options, const std::string& tag)
    : options_(options), tag_(tag), skip_tag_(IsSkipTag(tag)) {
  const HealthOptions& health = *options.health;
  head_capacity_ = std::max(health.spike_window, 0);
  tail_.resize(static_cast<size_t>(std::max({health.spike_window, options.last_k, 1})));
  if (RE2::PartialMatch(tag, *options.spike_tags)) spikes_.emplace(health);
}

std::vector<double> SeriesStream::TailValues() const {
  const auto capacity = static_cast<int64_t>(tail_.size());
  std::vector<double> values;
  if (finite_ < capacity) {
    values.assign(tail_.begin(), tail_.begin() + finite_);
  } else {
    values.assign(tail_.begin() + static_cast<std::ptrdiff_t>(tail_next_), tail_.end());
    values.insert(values.end(), tail_.begin(),
                  tail_.begin() + static_cast<std::ptrdiff_t>(tail_next_));
  }
  return values;
}

void SeriesStream::TestHead(const std::vector<double>& before) {
  head_tested_ = true;
  if (!spikes_) return;
  SpikeTest head(*options_.health);
  const size_t primed = std::min(before.size(), static_cast<size_t>(head_capacity_));
  for (size_t i = before.size() - primed; i < before.size(); ++i) head.Push(before[i]);
  for (const ScalarPoint& p : head_) head.Add(p);
  head.Append(*spikes_);
  spikes_.reset();
  spikes_.emplace(std::move(head));
  std::vector<ScalarPoint>().swap(head_);
}

void SeriesStream::Append(SeriesStream&& later) {
  assert(later.tag_ == tag_);
  if (later.count_ == 0) return;
  if (!head_tested_) TestHead({});
  const std::vector<double> before = TailValues();
  later.TestHead(before);
  if (spikes_) spikes_->Append(*later.spikes_);
  if (count_ == 0) {
    first_ = later.first_;
    survey_ = later.survey_;
  } else {
    increasing_ = increasing_ && later.increasing_ && later.first_.step > last_.step;
    if (skip_tag_ && later.first_.value > last_.value) skipped_.push_back(later.first_.step);
    survey_.Add(last_, later.first_, options_.health->stall_min_seconds);
    const IntervalSurvey& b = later.survey_;
    if (b.intervals > 0) {
      survey_.regular = survey_.regular && b.regular && b.first_interval == survey_.first_interval;
      survey_.smallest_interval = std::min(survey_.smallest_interval, b.smallest_interval);
      survey_.largest_interval = std::max(survey_.largest_interval, b.largest_interval);
      survey_.stall_possible = survey_.stall_possible || b.stall_possible;
      survey_.usable_wall_intervals += b.usable_wall_intervals;
      survey_.intervals += b.intervals;
    }
  }
  increasing_ = increasing_ && later.increasing_;
  skipped_.insert(skipped_.end(), later.skipped_.begin(), later.skipped_.end());
  non_finite_.insert(non_finite_.end(), later.non_finite_.begin(), later.non_finite_.end());
  // The smallest finite value, the first of equal ones, as one pass finds it.
  if (!(later.min_ >= min_) && std::isfinite(later.min_)) min_ = later.min_;
  // The tail: the last values of the two stretches together.
  std::vector<double> tail = before;
  const std::vector<double> later_tail = later.TailValues();
  tail.insert(tail.end(), later_tail.begin(), later_tail.end());
  const size_t keep = std::min(tail.size(), tail_.size());
  std::copy(tail.end() - static_cast<std::ptrdiff_t>(keep), tail.end(), tail_.begin());
  finite_ += later.finite_;
  tail_next_ = keep == tail_.size() ? 0 : keep;
  count_ += later.count_;
  last_ = later.last_;
}

bool SeriesStream::DecidedWithoutPoints() const {
  if (!increasing_) return false;
  if (count_ < 3) return true;
  const HealthOptions& health = *options_.health;
  const IntervalSurvey& s = survey_;
  const bool no_gap_possible = health.gap_factor >= 0 && s.smallest_interval > 0 &&
                               s.largest_interval <= health.gap_factor * s.smallest_interval;
  if (!no_gap_possible) {
    if (!s.regular) return false;  // the median interval is needed
    const double typical = s.first_interval;
    if (typical > 0 && s.largest_interval > health.gap_factor * typical) return false;  // gaps
  }
  return !(s.stall_possible && s.usable_wall_intervals >= 2);
}

SeriesDigest SeriesStream::Digest() const {
  assert(count_ > 0 && DecidedWithoutPoints());
  SeriesDigest digest;
  digest.points = count_;
  digest.summary = {first_.step, last_.step, min_, static_cast<int64_t>(non_finite_.size())};
  digest.final_value = last_.value;
  // TimeSeries::MeanOfLast: summed from the newest value back.
  const std::vector<double> tail = TailValues();
  double sum = 0;
  int n = 0;
  for (auto it = tail.rbegin(); it != tail.rend() && n < options_.last_k; ++it, ++n) sum += *it;
  digest.mean_last_k = n == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / n;
  return digest;
}

void SeriesStream::Report(std::vector<Finding>* out) {
  assert(DecidedWithoutPoints());
  if (!head_tested_) TestHead({});
  if (!non_finite_.empty()) out->push_back(NonFiniteFinding(tag_, non_finite_));
  if (!skipped_.empty()) out->push_back(SkippedUpdateFinding(tag_, skipped_));
  if (spikes_) spikes_->Report(tag_, out);
}

}  // namespace mosaic::runs::detail
