#include "series_stream.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

namespace mosaic::runs::detail {

bool SeriesStream::IsSkipTag(std::string_view tag) {
  if (skip_tag_ < 0) skip_tag_ = detail::IsSkipTag(std::string(tag)) ? 1 : 0;
  return skip_tag_ == 1;
}

bool SeriesStream::IsSpikeTag(std::string_view tag) {
  if (spike_tag_ < 0) spike_tag_ = RE2::PartialMatch(tag, *options_.spike_tags) ? 1 : 0;
  return spike_tag_ == 1;
}

void SeriesStream::LeaveHead(std::string_view tag) {
  past_head_ = true;
  for (const ScalarPoint& p : head_) PushTail(p.value);
  if (IsSpikeTag(tag)) {
    spikes_ = std::make_unique<SpikeTest>(*options_.health);
    for (const ScalarPoint& p : head_) spikes_->Push(p.value);
  }
}

std::vector<double> SeriesStream::TailValues() const {
  std::vector<double> values;
  if (!past_head_) {
    for (const ScalarPoint& p : head_) values.push_back(p.value);
    return values;
  }
  const auto next = static_cast<std::ptrdiff_t>(tail_next_);
  values.assign(tail_.begin() + next, tail_.end());
  values.insert(values.end(), tail_.begin(), tail_.begin() + next);
  return values;
}

void SeriesStream::TestHead(const std::vector<double>& before, bool spike_tag) {
  head_tested_ = true;
  if (!spike_tag) return;
  auto head = std::make_unique<SpikeTest>(*options_.health);
  const size_t primed = std::min(before.size(), HeadCapacity());
  for (size_t i = before.size() - primed; i < before.size(); ++i) head->Push(before[i]);
  for (const ScalarPoint& p : head_) head->Add(p);
  if (spikes_) {
    spikes_->Prepend(*head);  // spikes_ keeps the window of the stretch's last values
  } else {
    spikes_ = std::move(head);  // every finite value was in the head: its window is the last
  }
}

void SeriesStream::Append(SeriesStream&& later, std::string_view tag) {
  if (later.count_ == 0) return;
  const bool spike_tag = IsSpikeTag(tag);
  if (!head_tested_) TestHead({}, spike_tag);
  const std::vector<double> before = TailValues();
  later.TestHead(before, spike_tag);
  if (spike_tag) spikes_->AppendAndTakeWindow(std::move(*later.spikes_));
  if (count_ == 0) {
    first_ = later.first_;
    survey_ = later.survey_;
    intervals_ = std::move(later.intervals_);
  } else {
    increasing_ = increasing_ && later.first_.step > last_.step;
    if (later.first_.value > last_.value && IsSkipTag(tag)) skipped_.push_back(later.first_.step);
    survey_.Add(last_, later.first_, options_.health->stall_min_seconds);
    if (increasing_) {
      intervals_.Add(last_, later.first_, *options_.health);
      intervals_.Append(std::move(later.intervals_));
    } else {
      intervals_.GiveUp();
    }
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
  // The tail: the last values of the two stretches together, as a ring of the tail's capacity
  // (not full: appended to; full: tail_next_ 0 is the oldest).
  std::vector<double> tail = before;
  const std::vector<double> later_tail = later.TailValues();
  tail.insert(tail.end(), later_tail.begin(), later_tail.end());
  const size_t keep = std::min(tail.size(), TailCapacity());
  tail_.assign(tail.end() - static_cast<std::ptrdiff_t>(keep), tail.end());
  tail_next_ = 0;
  past_head_ = true;
  std::vector<ScalarPoint>().swap(head_);
  count_ += later.count_;
  last_ = later.last_;
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

void SeriesStream::Report(std::string_view tag, std::vector<Finding>* out) {
  assert(DecidedWithoutPoints());
  if (!head_tested_) TestHead({}, IsSpikeTag(tag));
  const std::string name(tag);
  if (!non_finite_.empty()) out->push_back(NonFiniteFinding(name, non_finite_));
  if (!skipped_.empty()) out->push_back(SkippedUpdateFinding(name, skipped_));
  if (spikes_) spikes_->Report(name, out);
  if (count_ >= 3) intervals_.Report(name, *options_.health, survey_, out);
}

}  // namespace mosaic::runs::detail
