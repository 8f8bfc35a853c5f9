#include "mosaic/runs/health.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cassert>
#include <cmath>

#include "mosaic/util/parallel_for.h"

namespace mosaic::runs {
namespace {

constexpr size_t kStepsShown = 5;
constexpr double kMadToSigma = 1.4826;

std::string StepList(const std::vector<int64_t>& steps) {
  std::string text;
  for (size_t i = 0; i < steps.size() && i < kStepsShown; ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(steps[i]);
  }
  if (steps.size() > kStepsShown) text += fmt::format(", … ({} more)", steps.size() - kStepsShown);
  return text;
}

double Median(std::vector<double>& values) {
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
    if (sorted_.size() == capacity_) {
      const double oldest = arrival_[oldest_];
      // Any element equal to the oldest value is that value (for ±0 the sign may differ, which
      // no comparison or reported figure can see).
      sorted_.erase(std::lower_bound(sorted_.begin(), sorted_.end(), oldest));
      arrival_[oldest_] = value;
      oldest_ = (oldest_ + 1) % capacity_;
    } else {
      arrival_.push_back(value);
    }
    sorted_.insert(std::upper_bound(sorted_.begin(), sorted_.end(), value), value);
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

bool IsGradNorm(const std::string& tag) {
  static const RE2 kGradNorm("(?i)grad[_-]?norm|gradnorm");
  return RE2::PartialMatch(tag, kGradNorm);
}

// Vectors CheckSeries reuses from one series to the next (large series would otherwise fault in
// fresh pages for each).
struct Workspace {
  std::vector<const ScalarPoint*> ordered;
  std::vector<double> scratch;
};

void CheckSeries(const Run& run, const TimeSeries& s, const HealthOptions& options,
                 const RE2& spike_tags, Workspace* work, std::vector<Finding>* out) {
  // Non-finite values and skipped updates.
  std::vector<int64_t> non_finite;
  for (const ScalarPoint& p : s.points) {
    if (!std::isfinite(p.value)) non_finite.push_back(p.step);
  }
  if (!non_finite.empty()) {
    out->push_back({FindingKind::kNonFinite, s.tag, non_finite,
                    fmt::format("{} non-finite value{} at step{} {}{}", non_finite.size(),
                                non_finite.size() == 1 ? "" : "s",
                                non_finite.size() == 1 ? "" : "s", StepList(non_finite),
                                IsGradNorm(s.tag) ? " (update skipped)" : "")});
  }
  static const RE2 kSkipTag("(?i)skip");
  if (RE2::PartialMatch(s.tag, kSkipTag)) {
    std::vector<int64_t> skipped;
    for (size_t i = 1; i < s.points.size(); ++i) {
      if (s.points[i].value > s.points[i - 1].value) skipped.push_back(s.points[i].step);
    }
    if (!skipped.empty()) {
      out->push_back({FindingKind::kSkippedUpdate, s.tag, skipped,
                      fmt::format("updates skipped at step{} {}", skipped.size() == 1 ? "" : "s",
                                  StepList(skipped))});
    }
  }

  // Spikes against a rolling robust baseline.
  if (RE2::PartialMatch(s.tag, spike_tags)) {
    RollingBaseline window(static_cast<size_t>(std::max(options.spike_window, 0)));
    std::vector<int64_t> spikes;
    double worst_sigmas = 0;
    int64_t worst_step = 0;
    for (const ScalarPoint& p : s.points) {
      if (!std::isfinite(p.value)) continue;
      if (static_cast<int>(window.size()) >= options.spike_min_points) {
        const double median = window.Median();
        const double floor_sigma = options.spike_floor_relative * std::fabs(median);
        // z = excess / sigma with sigma >= floor_sigma: a value at or below the median, or within
        // spike_sigmas floors of it, is no spike whatever the MAD, which is then not computed.
        const double excess = p.value - median;
        const bool cannot_be_spike =
            options.spike_sigmas >= 0 &&
            (excess <= 0 || (floor_sigma > 0 && excess / floor_sigma <= options.spike_sigmas));
        const double sigma =
            cannot_be_spike ? 0 : std::max(kMadToSigma * window.Mad(median), floor_sigma);
        if (sigma > 0) {
          const double z = (p.value - median) / sigma;
          if (z > options.spike_sigmas) {
            spikes.push_back(p.step);
            if (z > worst_sigmas) {
              worst_sigmas = z;
              worst_step = p.step;
            }
          }
        }
      }
      window.Push(p.value);
    }
    if (!spikes.empty()) {
      out->push_back({FindingKind::kSpike, s.tag, spikes,
                      fmt::format("{} spike{} (> {} robust sd above the median of the last {}) at "
                                  "step{} {}; largest {:.1f} sd at step {}",
                                  spikes.size(), spikes.size() == 1 ? "" : "s",
                                  options.spike_sigmas, options.spike_window,
                                  spikes.size() == 1 ? "" : "s", StepList(spikes), worst_sigmas,
                                  worst_step)});
    }
  }

  // Step gaps and stalls over the distinct steps in order: the series itself when its points are
  // all of pass 1 and in step order (always under `first` and `last`), else pointers to them
  // sorted stably by step. Working vectors are reused from series to series.
  std::vector<const ScalarPoint*>& ordered = work->ordered;
  ordered.clear();
  bool direct = std::is_sorted(s.points.begin(), s.points.end(),
                               [](const ScalarPoint& a, const ScalarPoint& b) {
                                 return a.step < b.step;
                               });
  for (const ScalarPoint& p : s.points) direct = direct && p.pass == 1;
  if (!direct) {
    for (const ScalarPoint& p : s.points) {
      if (p.pass == 1) ordered.push_back(&p);
    }
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const ScalarPoint* a, const ScalarPoint* b) { return a->step < b->step; });
  }
  const size_t count = direct ? s.points.size() : ordered.size();
  auto at = [&](size_t i) -> const ScalarPoint& { return direct ? s.points[i] : *ordered[i]; };
  // The step interval after the i-th point and the wall time between the (i-1)-th and i-th.
  auto interval = [&](size_t i) { return static_cast<double>(at(i + 1).step - at(i).step); };
  auto wall_interval = [&](size_t i) {
    return at(i).wall_time_seconds - at(i - 1).wall_time_seconds;
  };
  std::vector<double>& scratch = work->scratch;
  if (count >= 3) {
    bool regular = true;  // every interval the same (the common case): that is the median
    for (size_t i = 1; i + 1 < count && regular; ++i) regular = interval(i) == interval(0);
    double typical = interval(0);
    if (!regular) {
      scratch.clear();
      for (size_t i = 0; i + 1 < count; ++i) scratch.push_back(interval(i));
      typical = Median(scratch);
    }
    std::vector<int64_t> gaps;
    int64_t largest = 0;
    int64_t largest_from = 0;
    for (size_t i = 0; i + 1 < count; ++i) {
      const double d = interval(i);
      if (typical > 0 && d > options.gap_factor * typical) {
        gaps.push_back(at(i).step);
        if (d > largest) {
          largest = static_cast<int64_t>(d);
          largest_from = at(i).step;
        }
      }
    }
    if (!gaps.empty()) {
      out->push_back({FindingKind::kStepGap, s.tag, gaps,
                      fmt::format("{} step gap{} (> {} × the usual interval {}); largest {} → {}",
                                  gaps.size(), gaps.size() == 1 ? "" : "s", options.gap_factor,
                                  typical, largest_from, largest_from + largest)});
    }
    scratch.clear();
    for (size_t i = 1; i < count; ++i) {
      const double dt = wall_interval(i);
      if (std::isfinite(dt) && dt >= 0) scratch.push_back(dt);
    }
    if (scratch.size() >= 2) {
      const double typical_seconds = Median(scratch);
      std::vector<int64_t> stalls;
      double longest = 0;
      for (size_t i = 1; i < count; ++i) {
        const double dt = wall_interval(i);
        if (std::isfinite(dt) && dt > options.stall_factor * typical_seconds &&
            dt > options.stall_min_seconds) {
          stalls.push_back(at(i - 1).step);
          longest = std::max(longest, dt);
        }
      }
      if (!stalls.empty()) {
        out->push_back({FindingKind::kStall, s.tag, stalls,
                        fmt::format("{} stall{} (> {} × the usual {:.3g} s between points) after "
                                    "step{} {}; longest {:.0f} s",
                                    stalls.size(), stalls.size() == 1 ? "" : "s",
                                    options.stall_factor, typical_seconds,
                                    stalls.size() == 1 ? "" : "s", StepList(stalls), longest)});
      }
    }
  }

  for (const Restart& r : run.restarts) {
    if (r.tag != s.tag) continue;
    out->push_back({FindingKind::kRestart, s.tag, {r.back_to_step},
                    fmt::format("in {}: back from step {} to step {}, {} point{} overlapped",
                                run.files[r.source].path, r.from_step, r.back_to_step,
                                r.overlapped_points, r.overlapped_points == 1 ? "" : "s")});
  }
}

}  // namespace

std::string_view ToString(FindingKind kind) {
  switch (kind) {
    case FindingKind::kNonFinite: return "non-finite";
    case FindingKind::kSkippedUpdate: return "skipped-update";
    case FindingKind::kSpike: return "spike";
    case FindingKind::kRestart: return "restart";
    case FindingKind::kStepGap: return "step-gap";
    case FindingKind::kStall: return "stall";
    case FindingKind::kDamaged: return "damaged";
    case FindingKind::kUnreadableFile: return "unreadable file";
    case FindingKind::kUnreadableFolder: return "unreadable folder";
    case FindingKind::kConcurrentWriters: return "concurrent writers";
  }
  return "?";
}

std::vector<Finding> CheckHealth(const Run& run, const HealthOptions& options) {
  std::vector<Finding> findings;
  for (const RecordIssue& issue : run.record_issues) {
    if (issue.is_error()) {
      findings.push_back({FindingKind::kDamaged, "", {}, issue.Message()});
    }
  }
  for (const SourceFile& file : run.files) {
    if (!file.loaded) findings.push_back({FindingKind::kUnreadableFile, "", {}, file.skip_reason});
  }
  if (!run.unreadable.empty()) {
    findings.push_back({FindingKind::kUnreadableFolder, "", {}, run.unreadable});
  }
  for (const ConcurrentFiles& c : run.concurrent_files) {
    const EventFileStats& a = run.files[c.first].events;
    const EventFileStats& b = run.files[c.second].events;
    findings.push_back(
        {FindingKind::kConcurrentWriters, "", {},
         fmt::format("{} (wall time {:.3f}–{:.3f}) and {} ({:.3f}–{:.3f}) were written at the same "
                     "time (two writers into one directory, e.g. two ranks); each is read as a "
                     "writer of its own, not as a restart",
                     run.files[c.first].path, a.first_wall_time_seconds, a.last_wall_time_seconds,
                     run.files[c.second].path, b.first_wall_time_seconds,
                     b.last_wall_time_seconds)});
  }
  RE2::Options case_insensitive;
  case_insensitive.set_case_sensitive(false);
  const RE2 spike_tags(options.spike_tags, case_insensitive);
  assert(spike_tags.ok() && "HealthOptions::spike_tags is a valid RE2 pattern");
  Workspace work;
  for (const TimeSeries& s : run.series) CheckSeries(run, s, options, spike_tags, &work, &findings);
  return findings;
}

std::vector<std::vector<Finding>> CheckHealthOfRuns(const std::vector<Run>& runs,
                                                    const HealthOptions& options, int threads) {
  std::vector<std::vector<Finding>> findings(runs.size());
  ParallelFor(runs.size(), ThreadCount(threads),
              [&](size_t i) { findings[i] = CheckHealth(runs[i], options); });
  return findings;
}

}  // namespace mosaic::runs
