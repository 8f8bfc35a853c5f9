#include "mosaic/runs/health.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <memory>

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
    const size_t out = CountBelow(s, capacity_, oldest, std::less<double>());
    const size_t in = CountBelow(s, capacity_, value, std::less_equal<double>());
    if (in > out) {
      std::memmove(s + out, s + out + 1, (in - 1 - out) * sizeof(double));
      s[in - 1] = value;
    } else {
      std::memmove(s + in + 1, s + in, (out - in) * sizeof(double));
      s[in] = value;
    }
  }

  // The number of leading elements of the sorted `s[0, n)` with `before(element, x)`: std::
  // lower_bound (less) or upper_bound (less_equal) by a bisection without branches, since in a
  // rolling window where the value lands is unpredictable.
  template <typename Before>
  static size_t CountBelow(const double* s, size_t n, double x, Before before) {
    if (n == 0) return 0;
    const double* base = s;
    while (n > 1) {
      const size_t half = n / 2;
      base = before(base[half - 1], x) ? base + half : base;
      n -= half;
    }
    return static_cast<size_t>(base - s) + (before(*base, x) ? 1 : 0);
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

// The distance from step `from` to step `to` >= `from`, without the signed overflow of `to - from`
// (steps may span the whole 64-bit range: -5 to 2^63 - 1 is a distance of 2^63 + 4).
double StepDistance(int64_t from, int64_t to) {
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
    if (intervals++ == 0) first_interval = smallest_interval = largest_interval = d;
    regular = regular && d == first_interval;
    smallest_interval = std::min(smallest_interval, d);
    largest_interval = std::max(largest_interval, d);
    const double dt = current.wall_time_seconds - previous.wall_time_seconds;
    if (std::isfinite(dt)) {
      usable_wall_intervals += dt >= 0;
      stall_possible = stall_possible || dt > stall_min_seconds;
    }
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

// `spikes`: the series' spike test already run (in parts, on several threads), or nullptr to run
// it here.
void CheckSeries(const Run& run, const TimeSeries& s, const HealthOptions& options,
                 const RE2& spike_tags, Workspace* work, std::vector<Finding>* out,
                 const SpikeTest* spikes_done = nullptr) {
  // One pass over the points in write order: non-finite values, spikes, whether the series is
  // its own step order (all of pass 1 and steps increasing; always so under `first` and `last`)
  // and, if so, its intervals.
  std::vector<int64_t> non_finite;
  bool direct = s.pass_starts.empty();
  IntervalSurvey survey;
  const bool spike_tag = spikes_done == nullptr && RE2::PartialMatch(s.tag, spike_tags);
  SpikeTest spikes(options);
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScalarPoint& p = s.points[i];
    if (i > 0) {
      // Steps strictly increasing: a step repeated (several values at one step under `all`)
      // takes the sorted path, which keeps each step once, as `first` does.
      direct = direct && s.points[i - 1].step < p.step;
      survey.Add(s.points[i - 1], p, options.stall_min_seconds);
    }
    if (!std::isfinite(p.value)) {
      non_finite.push_back(p.step);
    } else if (spike_tag) {
      spikes.Add(p);
    }
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

  (spikes_done != nullptr ? *spikes_done : spikes).Report(s.tag, out);

  // Step gaps and stalls over the distinct steps in order: the series itself when it is in step
  // order, else pointers to its points sorted stably by step, each step once. Working vectors
  // are reused from series to series.
  std::vector<const ScalarPoint*>& ordered = work->ordered;
  ordered.clear();
  if (!direct) {
    // Every pass's points (under `all` a resumed run's steps past the restart are in a later
    // pass), each step once: its first occurrence, which the stable sort puts first. These are
    // the points `first` keeps, so both policies find the same gaps and stalls.
    for (const ScalarPoint& p : s.points) ordered.push_back(&p);
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const ScalarPoint* a, const ScalarPoint* b) { return a->step < b->step; });
    ordered.erase(std::unique(ordered.begin(), ordered.end(),
                              [](const ScalarPoint* a, const ScalarPoint* b) {
                                return a->step == b->step;
                              }),
                  ordered.end());
  }
  const size_t count = direct ? s.points.size() : ordered.size();
  auto at = [&](size_t i) -> const ScalarPoint& { return direct ? s.points[i] : *ordered[i]; };
  // The step interval after the i-th point and the wall time between the (i-1)-th and i-th.
  auto interval = [&](size_t i) { return StepDistance(at(i).step, at(i + 1).step); };
  auto wall_interval = [&](size_t i) {
    return at(i).wall_time_seconds - at(i - 1).wall_time_seconds;
  };
  std::vector<double>& scratch = work->scratch;
  if (count >= 3) {
    if (!direct) {
      survey = IntervalSurvey();
      for (size_t i = 1; i < count; ++i) survey.Add(at(i - 1), at(i), options.stall_min_seconds);
    }
    // The median interval: the interval itself when all are equal (the common case); not needed
    // when even the smallest interval as the median would make no gap.
    const bool no_gap_possible = options.gap_factor >= 0 && survey.smallest_interval > 0 &&
                                 survey.largest_interval <= options.gap_factor * survey.smallest_interval;
    double typical = interval(0);
    if (!survey.regular && !no_gap_possible) {
      scratch.clear();
      for (size_t i = 0; i + 1 < count; ++i) scratch.push_back(interval(i));
      typical = Median(scratch);
    }
    std::vector<int64_t> gaps;
    double largest = 0;
    int64_t largest_from = 0;
    int64_t largest_to = 0;
    if (!no_gap_possible && typical > 0 && survey.largest_interval > options.gap_factor * typical) {
      for (size_t i = 0; i + 1 < count; ++i) {
        const double d = interval(i);
        if (d > options.gap_factor * typical) {
          gaps.push_back(at(i).step);
          if (d > largest) {
            largest = d;
            largest_from = at(i).step;
            largest_to = at(i + 1).step;
          }
        }
      }
    }
    if (!gaps.empty()) {
      out->push_back({FindingKind::kStepGap, s.tag, gaps,
                      fmt::format("{} step gap{} (> {} × the usual interval {}); largest {} → {}",
                                  gaps.size(), gaps.size() == 1 ? "" : "s", options.gap_factor,
                                  typical, largest_from, largest_to)});
    }
    if (survey.stall_possible && survey.usable_wall_intervals >= 2) {
      scratch.clear();
      for (size_t i = 1; i < count; ++i) {
        const double dt = wall_interval(i);
        if (std::isfinite(dt) && dt >= 0) scratch.push_back(dt);
      }
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

namespace {

// The findings of the run itself (damaged records, unreadable files and folders, concurrent
// writers), which CheckHealth lists before those of its series.
std::vector<Finding> RunFindings(const Run& run) {
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
  return findings;
}

// HealthOptions::spike_tags compiled, case-insensitive.
std::unique_ptr<RE2> CompileSpikeTags(const HealthOptions& options) {
  RE2::Options case_insensitive;
  case_insensitive.set_case_sensitive(false);
  auto spike_tags = std::make_unique<RE2>(options.spike_tags, case_insensitive);
  assert(spike_tags->ok() && "HealthOptions::spike_tags is a valid RE2 pattern");
  return spike_tags;
}

}  // namespace

std::vector<Finding> CheckHealth(const Run& run, const HealthOptions& options) {
  std::vector<Finding> findings = RunFindings(run);
  const std::unique_ptr<RE2> spike_tags = CompileSpikeTags(options);
  Workspace work;
  for (const TimeSeries& s : run.series) CheckSeries(run, s, options, *spike_tags, &work, &findings);
  return findings;
}

std::vector<std::vector<Finding>> CheckHealthOfRuns(const std::vector<Run>& runs,
                                                    const HealthOptions& options, int threads) {
  // Every series of every run is a task of its own (the largest first, so that one long series
  // does not start last), its findings in a slot of their own; each run's are then put together
  // as CheckHealth orders them.
  const std::unique_ptr<RE2> spike_tags = CompileSpikeTags(options);
  const int workers = ThreadCount(threads);
  // A long spike-tested series is first tested in parts of at least spike_part_points, one task
  // each (each part's window primed with the values before it), so that one run of a few long
  // series still uses every core; the parts' spikes are joined in order.
  struct SpikePart {
    size_t run;
    size_t series;
    size_t begin;
    size_t end;
  };
  std::vector<SpikePart> spike_parts;
  std::vector<std::vector<std::unique_ptr<SpikeTest>>> spikes_done(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    spikes_done[r].resize(runs[r].series.size());
    for (size_t i = 0; i < runs[r].series.size(); ++i) {
      const TimeSeries& s = runs[r].series[i];
      const size_t n = s.points.size();
      const size_t least = static_cast<size_t>(std::max<int64_t>(options.spike_part_points, 1));
      const size_t parts = std::min<size_t>(static_cast<size_t>(workers), n / least);
      if (parts < 2 || !RE2::PartialMatch(s.tag, *spike_tags)) continue;
      for (size_t k = 0; k < parts; ++k) {
        spike_parts.push_back({r, i, n * k / parts, n * (k + 1) / parts});
      }
    }
  }
  std::vector<std::unique_ptr<SpikeTest>> part_tests(spike_parts.size());
  ParallelFor(spike_parts.size(), workers, [&](size_t t) {
    const SpikePart& part = spike_parts[t];
    const std::vector<ScalarPoint>& points = runs[part.run].series[part.series].points;
    auto test = std::make_unique<SpikeTest>(options);
    test->Prime(points, part.begin);
    for (size_t i = part.begin; i < part.end; ++i) {
      if (std::isfinite(points[i].value)) test->Add(points[i]);
    }
    part_tests[t] = std::move(test);
  });
  for (size_t t = 0; t < spike_parts.size(); ++t) {
    std::unique_ptr<SpikeTest>& joined = spikes_done[spike_parts[t].run][spike_parts[t].series];
    if (joined == nullptr) {
      joined = std::move(part_tests[t]);
    } else {
      joined->Append(*part_tests[t]);
    }
  }
  struct Task {
    size_t run;
    size_t series;
    size_t points;
  };
  std::vector<Task> tasks;
  std::vector<std::vector<std::vector<Finding>>> series_findings(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    series_findings[r].resize(runs[r].series.size());
    for (size_t i = 0; i < runs[r].series.size(); ++i) {
      tasks.push_back({r, i, runs[r].series[i].points.size()});
    }
  }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const Task& a, const Task& b) { return a.points > b.points; });
  ParallelFor(tasks.size(), workers, [&](size_t t) {
    const Task& task = tasks[t];
    Workspace work;
    CheckSeries(runs[task.run], runs[task.run].series[task.series], options, *spike_tags, &work,
                &series_findings[task.run][task.series],
                spikes_done[task.run][task.series].get());
  });
  std::vector<std::vector<Finding>> findings(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    findings[r] = RunFindings(runs[r]);
    for (std::vector<Finding>& f : series_findings[r]) {
      findings[r].insert(findings[r].end(), std::make_move_iterator(f.begin()),
                         std::make_move_iterator(f.end()));
    }
  }
  return findings;
}

}  // namespace mosaic::runs
