// The health checks' building blocks (health.h), shared by the check of loaded series
// (CheckHealth) and the check of series streamed while they are read (series_stream.h): the
// rolling spike baseline, the step-interval survey and the findings' wording. Internal to the
// library.
#pragma once

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"

namespace mosaic::runs::detail {

constexpr size_t kStepsShown = 5;
constexpr double kMadToSigma = 1.4826;

inline std::string StepList(const std::vector<int64_t>& steps) {
  std::string text;
  for (size_t i = 0; i < steps.size() && i < kStepsShown; ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(steps[i]);
  }
  if (steps.size() > kStepsShown) text += fmt::format(", … ({} more)", steps.size() - kStepsShown);
  return text;
}

inline double Median(std::vector<double>& values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double m = values[mid];
  if (values.size() % 2 == 0) {
    m = (m + *std::max_element(values.begin(), values.begin() + mid)) / 2;
  }
  return m;
}

// The last `capacity` finite values of a series, kept both in arrival order (to drop the oldest)
// and sorted, so that the median and the median absolute deviation cost O(capacity) moves and
// O(capacity / 2) comparisons per point instead of two selections over a copy. The figures are
// bit-identical to Median() over the window and over |v - median|: the same elements are
// selected and combined with the same operations (rounding is monotone, so |s[i] - median| is
// sorted outwards from the median on either side of it).
class RollingBaseline {
 public:
  explicit RollingBaseline(size_t capacity) : capacity_(capacity) {
    sorted_.reserve(capacity);
    arrival_.reserve(capacity);
  }

  size_t size() const { return sorted_.size(); }

  void Push(double value) {
    if (capacity_ == 0) return;
    if (sorted_.size() < capacity_) {
      arrival_.push_back(value);
      sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), value), value);
      return;
    }
    // Full: the oldest value leaves and `value` enters in one move of the elements between their
    // two places. Any element equal to the oldest value is that value (for ±0 the sign may
    // differ, which no comparison or reported figure can see).
    const double oldest = arrival_[oldest_];
    arrival_[oldest_] = value;
    oldest_ = oldest_ + 1 == capacity_ ? 0 : oldest_ + 1;
    double* s = sorted_.data();
    size_t out;  // the elements below the oldest value: where it sits
    size_t in;   // the elements at most `value`: where it enters
    CountBelowBoth(s, capacity_, oldest, value, &out, &in);
    if (in > out) {
      std::memmove(s + out, s + out + 1, (in - 1 - out) * sizeof(double));
      s[in - 1] = value;
    } else {
      std::memmove(s + in + 1, s + in, (out - in) * sizeof(double));
      s[in] = value;
    }
  }

  // The number of leading elements of the sorted `s[0, n)` (n >= 1) below `oldest` into `out`
  // (std::lower_bound) and at most `value` into `in` (std::upper_bound): two bisections without
  // branches, since in a rolling window where a value lands is unpredictable, interleaved, as
  // their steps do not depend on each other, and sharing the halving of `n` (which depends on no
  // value, so that each step's load waits only for the step before it; bisecting in powers of two
  // from n - m instead made `mosaic runs` a fifth slower, with fewer instructions).
  static void CountBelowBoth(const double* s, size_t n, double oldest, double value, size_t* out,
                             size_t* in) {
    const double* a = s;
    const double* b = s;
    while (n > 1) {
      const size_t half = n / 2;
      a = a[half - 1] < oldest ? a + half : a;
      b = b[half - 1] <= value ? b + half : b;
      n -= half;
    }
    *out = static_cast<size_t>(a - s) + (*a < oldest ? 1 : 0);
    *in = static_cast<size_t>(b - s) + (*b <= value ? 1 : 0);
  }

  // Requires size() > 0.
  double Median() const {
    const size_t n = sorted_.size();
    const size_t mid = n / 2;
    return n % 2 == 0 ? (sorted_[mid] + sorted_[mid - 1]) / 2 : sorted_[mid];
  }

  // The median of |v - m| over the window, `m` being Median().
  double Mad(double m) const {
    const size_t n = sorted_.size();
    const size_t mid = n / 2;
    // The deviations |s[i] - m| form two sorted sequences: walking left from just below the
    // median (a) and right from it (b). The mid-th smallest of their union (and, for an even
    // count, the one before it) are found by bisection on how many come from a.
    const size_t split = static_cast<size_t>(
        std::lower_bound(sorted_.begin(), sorted_.end(), m) - sorted_.begin());
    auto a = [&](size_t j) { return std::fabs(sorted_[split - 1 - j] - m); };
    auto b = [&](size_t j) { return std::fabs(sorted_[split + j] - m); };
    const size_t na = split;
    const size_t nb = n - split;
    // The k-th smallest (from 0) deviation.
    auto kth = [&](size_t k) {
      size_t lo = k + 1 > nb ? k + 1 - nb : 0;
      size_t hi = std::min(k + 1, na);
      while (lo < hi) {
        const size_t i = (lo + hi) / 2;  // taken from a; k + 1 - i from b
        if (a(i) < b(k - i)) {
          lo = i + 1;
        } else {
          hi = i;
        }
      }
      const size_t j = k + 1 - lo;
      if (lo == 0) return b(j - 1);
      if (j == 0) return a(lo - 1);
      return std::max(a(lo - 1), b(j - 1));
    };
    const double current = kth(mid);
    return n % 2 == 0 ? (current + kth(mid - 1)) / 2 : current;
  }

 private:
  size_t capacity_;
  std::vector<double> sorted_;
  std::vector<double> arrival_;  // a ring once full; arrival_[oldest_] is the oldest value
  size_t oldest_ = 0;
};

// A gradient norm's tag: grad_norm, grad-norm, gradnorm, gradient_norm, or Levanter's and
// Marin's grad/norm/total, in any case.
inline bool IsGradNorm(const std::string& tag) {
  static const RE2 kGradNorm("(?i)grad(ient)?[_/-]?norm");
  return RE2::PartialMatch(tag, kGradNorm);
}



// The distance from step `from` to step `to` >= `from`, without the signed overflow of `to - from`
// (steps may span the whole 64-bit range: -5 to 2^63 - 1 is a distance of 2^63 + 4).
inline double StepDistance(int64_t from, int64_t to) {
  return static_cast<double>(static_cast<uint64_t>(to) - static_cast<uint64_t>(from));
}

// What one pass over a series in step order finds: its step intervals (whether all are equal,
// the smallest and largest) and whether any wall-time interval could be a stall (finite and
// above `stall_min_seconds`). Those decide whether the medians of the gap and stall tests are
// needed at all: with no interval that could be a stall, or every interval within `gap_factor`
// of the smallest, no median can make one.
struct IntervalSurvey {
  bool regular = true;
  double first_interval = 0;
  double smallest_interval = 0;
  double largest_interval = 0;
  bool stall_possible = false;
  size_t usable_wall_intervals = 0;  // finite and not negative, the stall median's sample
  size_t intervals = 0;

  // Takes in the interval from `previous` to `current`, the next point in step order.
  void Add(const ScalarPoint& previous, const ScalarPoint& current, double stall_min_seconds) {
    const double d = StepDistance(previous.step, current.step);
    if (!(regular && d == first_interval && intervals > 0)) {
      // Not one more of the first interval's length (which would change nothing but the count).
      if (intervals == 0) first_interval = smallest_interval = largest_interval = d;
      regular = regular && d == first_interval;
      smallest_interval = std::min(smallest_interval, d);
      largest_interval = std::max(largest_interval, d);
    }
    ++intervals;
    const double dt = current.wall_time_seconds - previous.wall_time_seconds;
    if (std::isfinite(dt)) {
      usable_wall_intervals += dt >= 0;
      stall_possible = stall_possible || dt > stall_min_seconds;
    }
  }

  // Whether every interval is within `gap_factor` of the smallest: then no median can make a gap.
  bool NoGapPossible(double gap_factor) const {
    return gap_factor >= 0 && smallest_interval > 0 &&
           largest_interval <= gap_factor * smallest_interval;
  }
};

// The spike test of one series, fed its finite values in write order.
class SpikeTest {
 public:
  explicit SpikeTest(const HealthOptions& options)
      : options_(options), window_(static_cast<size_t>(std::max(options.spike_window, 0))) {}

  void Add(const ScalarPoint& p) {
    if (static_cast<int>(window_.size()) >= options_.spike_min_points) {
      const double median = window_.Median();
      const double floor_sigma = options_.spike_floor_relative * std::fabs(median);
      // z = excess / sigma with sigma >= floor_sigma: a value at or below the median, or within
      // spike_sigmas floors of it, is no spike whatever the MAD, which is then not computed.
      const double excess = p.value - median;
      const bool cannot_be_spike =
          options_.spike_sigmas >= 0 &&
          (excess <= 0 || (floor_sigma > 0 && excess / floor_sigma <= options_.spike_sigmas));
      const double sigma =
          cannot_be_spike ? 0 : std::max(kMadToSigma * window_.Mad(median), floor_sigma);
      if (sigma > 0) {
        const double z = (p.value - median) / sigma;
        if (z > options_.spike_sigmas) {
          spikes_.push_back(p.step);
          if (z > worst_sigmas_) {
            worst_sigmas_ = z;
            worst_step_ = p.step;
          }
        }
      }
    }
    window_.Push(p.value);
  }

  // Takes `value` into the window without testing it (the window of a stretch whose first values
  // are tested later, against the values before the stretch).
  void Push(double value) { window_.Push(value); }

  // Puts the window in the state it has before point `begin` of `points`: the last
  // spike_window finite values before it (a part of a long series tested on its own thread).
  void Prime(const std::vector<ScalarPoint>& points, size_t begin) {
    const size_t capacity = static_cast<size_t>(std::max(options_.spike_window, 0));
    size_t first = begin;
    for (size_t finite = 0; first > 0 && finite < capacity;) {
      --first;
      finite += std::isfinite(points[first].value) ? 1 : 0;
    }
    for (size_t i = first; i < begin; ++i) {
      if (std::isfinite(points[i].value)) window_.Push(points[i].value);
    }
  }

  // Takes in the spikes of the part of the series that follows this one's.
  void Append(const SpikeTest& later) {
    spikes_.insert(spikes_.end(), later.spikes_.begin(), later.spikes_.end());
    if (later.worst_sigmas_ > worst_sigmas_) {
      worst_sigmas_ = later.worst_sigmas_;
      worst_step_ = later.worst_step_;
    }
  }

  // Takes in the spikes of the part of the series before this one's (ahead of this one's; the
  // earlier of equally large spikes is the largest, as in one pass).
  void Prepend(const SpikeTest& earlier) {
    spikes_.insert(spikes_.begin(), earlier.spikes_.begin(), earlier.spikes_.end());
    if (earlier.worst_sigmas_ >= worst_sigmas_) {
      worst_sigmas_ = earlier.worst_sigmas_;
      worst_step_ = earlier.worst_step_;
    }
  }

  // Append(later), and the window of `later`, which tested the points that follow this one's:
  // the test then goes on as one pass over both parts would.
  void AppendAndTakeWindow(SpikeTest&& later) {
    Append(later);
    window_ = std::move(later.window_);
  }

  // The finding, if any spike was seen.
  void Report(const std::string& tag, std::vector<Finding>* out) const {
    if (spikes_.empty()) return;
    out->push_back({FindingKind::kSpike, tag, spikes_,
                    fmt::format("{} spike{} (> {} robust sd above the median of the last {}) at "
                                "step{} {}; largest {:.1f} sd at step {}",
                                spikes_.size(), spikes_.size() == 1 ? "" : "s",
                                options_.spike_sigmas, options_.spike_window,
                                spikes_.size() == 1 ? "" : "s", StepList(spikes_), worst_sigmas_,
                                worst_step_)});
  }

 private:
  const HealthOptions& options_;
  RollingBaseline window_;
  std::vector<int64_t> spikes_;
  double worst_sigmas_ = 0;
  int64_t worst_step_ = 0;
};
// The findings of the run itself (damaged records, unreadable files and folders, concurrent
// writers), which CheckHealth lists before those of its series.
std::vector<Finding> RunFindings(const Run& run);

// HealthOptions::spike_tags compiled, case-insensitive.
std::unique_ptr<RE2> CompileSpikeTags(const HealthOptions& options);

// Whether `tag` counts skipped updates (names "skip" in any case): an increase is a skipped step.
bool IsSkipTag(const std::string& tag);

// The non-finite finding of `tag` for the steps of its NaN or infinite values (not empty).
Finding NonFiniteFinding(const std::string& tag, std::vector<int64_t> steps);

// The skipped-update finding of `tag` for the steps where it increased (not empty).
Finding SkippedUpdateFinding(const std::string& tag, std::vector<int64_t> steps);

// The step-gap finding of `tag` for the steps `gaps` (not empty) after which the interval is above
// `gap_factor` × `typical`, the median interval; the largest gap is from `largest_from` to
// `largest_to`.
Finding StepGapFinding(const std::string& tag, std::vector<int64_t> gaps, double gap_factor,
                       double typical, int64_t largest_from, int64_t largest_to);

// The stall finding of `tag` for the steps `stalls` (not empty) after which the wall-time interval
// is above `stall_factor` × `typical_seconds`, the median interval; the longest is
// `longest_seconds`.
Finding StallFinding(const std::string& tag, std::vector<int64_t> stalls, double stall_factor,
                     double typical_seconds, double longest_seconds);

}  // namespace mosaic::runs::detail
