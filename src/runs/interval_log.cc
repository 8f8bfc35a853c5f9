#include "interval_log.h"

#include <algorithm>
#include <cmath>
#include <utility>


namespace mosaic::runs::detail {

void IntervalLog::AddOther(int64_t from, uint64_t distance) {
  // The order of a min-heap by distance.
  auto longer = [](const StepRun& a, const StepRun& b) { return a.distance > b.distance; };
  if (top_others_.size() == kTopOthers) {
    std::pop_heap(top_others_.begin(), top_others_.end(), longer);
    left_out_ = std::max(left_out_, static_cast<double>(top_others_.back().distance));
    top_others_.pop_back();
  }
  top_others_.push_back({from, distance, 1});
  std::push_heap(top_others_.begin(), top_others_.end(), longer);
  if (top_others_.size() == kTopOthers) {
    smallest_other_ = static_cast<double>(top_others_.front().distance);
  }
}

bool IntervalLog::AddStepInterval(int64_t from, uint64_t distance, const HealthOptions& options) {
  last_left_out_ = false;
  if (intervals_ > 0 && distance == lengths_[last_length_].first) {
    ++lengths_[last_length_].second;
  } else if (!CountLength(distance, 1)) {
    GiveUp();
    return false;
  }
  const auto d = static_cast<double>(distance);
  smallest_ = intervals_++ == 0 ? d : std::min(smallest_, d);
  if (d > options.gap_factor * smallest_) {
    if (!possible_gaps_.empty() && possible_gaps_.back().distance == distance &&
        possible_gaps_.back().next() == from) {
      ++possible_gaps_.back().count;
    } else {
      possible_gaps_.push_back({from, distance, 1});
      if (TooMany(possible_gaps_.size())) {
        GiveUp();
        return false;
      }
    }
  } else if (d > smallest_other_) {
    AddOther(from, distance);
  } else {
    // Kept nowhere. Another interval of this length right after it would be too: smallest_ and
    // smallest_other_ only come down and up, and left_out_ already holds d.
    left_out_ = std::max(left_out_, d);
    last_left_out_ = true;
  }
  return true;
}

void IntervalLog::GiveUp() {
  given_up_ = true;
  std::vector<std::pair<uint64_t, int64_t>>().swap(lengths_);
  std::vector<StepRun>().swap(possible_gaps_);
  std::vector<StepRun>().swap(top_others_);
  wall_intervals_.Clear();
  std::vector<LongWait>().swap(long_waits_);
}

bool IntervalLog::CountLength(uint64_t distance, int64_t count) {
  const auto at = std::lower_bound(lengths_.begin(), lengths_.end(),
                                   std::pair<uint64_t, int64_t>(distance, 0));
  if (at != lengths_.end() && at->first == distance) {
    at->second += count;
    last_length_ = static_cast<size_t>(at - lengths_.begin());
    return true;
  }
  if (lengths_.size() == kMaxLengths) return false;
  // The insertion may move the histogram: its new begin is taken after it.
  const auto inserted = lengths_.insert(at, {distance, count});
  last_length_ = static_cast<size_t>(inserted - lengths_.begin());
  return true;
}

void IntervalLog::Append(IntervalLog&& later) {
  if (given_up_) return;
  if (later.given_up_) return GiveUp();
  if (later.intervals_ == 0) return;
  last_left_out_ = false;
  for (const auto& [distance, count] : later.lengths_) {
    if (!CountLength(distance, count)) return GiveUp();
  }
  last_length_ = 0;
  for (size_t i = 0; i < lengths_.size(); ++i) {
    if (lengths_[i].first == later.lengths_[later.last_length_].first) last_length_ = i;
  }
  smallest_ = intervals_ == 0 ? later.smallest_ : std::min(smallest_, later.smallest_);
  intervals_ += later.intervals_;
  left_out_ = std::max(left_out_, later.left_out_);
  for (const StepRun& other : later.top_others_) {
    if (static_cast<double>(other.distance) > smallest_other_) {
      AddOther(other.from, other.distance);
    } else {
      left_out_ = std::max(left_out_, static_cast<double>(other.distance));
    }
  }
  auto first = later.possible_gaps_.begin();
  if (!possible_gaps_.empty() && first != later.possible_gaps_.end() &&
      possible_gaps_.back().distance == first->distance &&
      possible_gaps_.back().next() == first->from) {
    possible_gaps_.back().count += first->count;
    ++first;
  }
  possible_gaps_.insert(possible_gaps_.end(), first, later.possible_gaps_.end());
  wall_intervals_.Append(later.wall_intervals_);
  long_waits_.insert(long_waits_.end(), later.long_waits_.begin(), later.long_waits_.end());
  if (TooMany(possible_gaps_.size()) || TooMany(long_waits_.size())) GiveUp();
}

double IntervalLog::MedianStepInterval() const {
  // Median() takes the interval of rank n / 2 and, for an even count, the mean of it and the
  // one of rank n / 2 - 1.
  auto of_rank = [&](int64_t rank) {
    for (const auto& [distance, count] : lengths_) {
      if (rank < count) return static_cast<double>(distance);
      rank -= count;
    }
    return static_cast<double>(lengths_.back().first);  // not reached: rank < intervals_
  };
  const int64_t mid = intervals_ / 2;
  const double m = of_rank(mid);
  return intervals_ % 2 == 0 ? (m + of_rank(mid - 1)) / 2 : m;
}

std::optional<double> IntervalLog::TypicalInterval(const HealthOptions& options,
                                                   const IntervalSurvey& survey) const {
  if (survey.NoGapPossible(options.gap_factor)) return std::nullopt;
  const double typical = survey.regular ? survey.first_interval : MedianStepInterval();
  if (!(typical > 0 && survey.largest_interval > options.gap_factor * typical)) return std::nullopt;
  return typical;
}

bool IntervalLog::Decided(const HealthOptions& options, const IntervalSurvey& survey) const {
  if (given_up_) return false;
  if (intervals_ < 2) return true;
  const std::optional<double> typical = TypicalInterval(options, survey);
  return !typical || !(left_out_ > options.gap_factor * *typical);
}

void IntervalLog::Report(const std::string& tag, const HealthOptions& options,
                         const IntervalSurvey& survey, std::vector<Finding>* out) {
  if (const std::optional<double> typical = TypicalInterval(options, survey)) {
    const double threshold = options.gap_factor * *typical;
    // The runs of gaps in step order (from both lists), each interval from the step a gap is
    // reported at.
    std::vector<StepRun> runs;
    auto keep_gaps = [&](const std::vector<StepRun>& from) {
      for (const StepRun& r : from) {
        if (static_cast<double>(r.distance) > threshold) runs.push_back(r);
      }
    };
    keep_gaps(possible_gaps_);
    keep_gaps(top_others_);
    std::sort(runs.begin(), runs.end(),
              [](const StepRun& a, const StepRun& b) { return a.from < b.from; });
    std::vector<int64_t> gaps;
    double largest = 0;
    int64_t largest_from = 0;
    int64_t largest_to = 0;
    for (const StepRun& r : runs) {
      auto step = static_cast<uint64_t>(r.from);
      for (int64_t j = 0; j < r.count; ++j, step += r.distance) {
        gaps.push_back(static_cast<int64_t>(step));
      }
      const auto d = static_cast<double>(r.distance);
      if (d > largest) {
        largest = d;
        largest_from = r.from;
        largest_to = static_cast<int64_t>(static_cast<uint64_t>(r.from) + r.distance);
      }
    }
    if (!gaps.empty()) {
      out->push_back(StepGapFinding(tag, std::move(gaps), options.gap_factor, *typical,
                                    largest_from, largest_to));
    }
  }
  if (survey.stall_possible && survey.usable_wall_intervals >= 2) {
    const double typical_seconds = wall_intervals_.UsualSeconds();
    std::vector<int64_t> stalls;
    double longest = 0;
    for (const LongWait& w : long_waits_) {
      if (w.seconds > options.stall_factor * typical_seconds) {
        stalls.push_back(w.after_step);
        longest = std::max(longest, w.seconds);
      }
    }
    if (!stalls.empty()) {
      out->push_back(StallFinding(tag, std::move(stalls), options.stall_factor, typical_seconds,
                                  longest));
    }
  }
}

}  // namespace mosaic::runs::detail
