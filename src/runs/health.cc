#include "mosaic/runs/health.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <memory>

#include "mosaic/util/parallel_for.h"
#include "series_checks.h"
#include "wall_interval_buckets.h"

namespace mosaic::runs {

namespace detail {

bool IsSkipTag(const std::string& tag) {
  static const RE2 kSkipTag("(?i)skip");
  return RE2::PartialMatch(tag, kSkipTag);
}

Finding NonFiniteFinding(const std::string& tag, std::vector<int64_t> steps) {
  const size_t n = steps.size();
  std::string message = fmt::format("{} non-finite value{} at step{} {}{}", n, n == 1 ? "" : "s",
                                    n == 1 ? "" : "s", StepList(steps),
                                    IsGradNorm(tag) ? " (update skipped)" : "");
  return {FindingKind::kNonFinite, tag, std::move(steps), std::move(message)};
}

Finding SkippedUpdateFinding(const std::string& tag, std::vector<int64_t> steps) {
  std::string message = fmt::format("updates skipped at step{} {}", steps.size() == 1 ? "" : "s",
                                    StepList(steps));
  return {FindingKind::kSkippedUpdate, tag, std::move(steps), std::move(message)};
}

Finding StepGapFinding(const std::string& tag, std::vector<int64_t> gaps, double gap_factor,
                       double typical, int64_t largest_from, int64_t largest_to) {
  std::string message =
      fmt::format("{} step gap{} (> {} × the usual interval {}); largest {} → {}", gaps.size(),
                  gaps.size() == 1 ? "" : "s", gap_factor, typical, largest_from, largest_to);
  return {FindingKind::kStepGap, tag, std::move(gaps), std::move(message)};
}

Finding StallFinding(const std::string& tag, std::vector<int64_t> stalls, double stall_factor,
                     double typical_seconds, double longest_seconds) {
  std::string message = fmt::format(
      "{} stall{} (> {} × the usual {:.3g} s between points) after step{} {}; longest {:.0f} s",
      stalls.size(), stalls.size() == 1 ? "" : "s", stall_factor, typical_seconds,
      stalls.size() == 1 ? "" : "s", StepList(stalls), longest_seconds);
  return {FindingKind::kStall, tag, std::move(stalls), std::move(message)};
}

}  // namespace detail

namespace {

using detail::IntervalSurvey;
using detail::Median;
using detail::SpikeTest;
using detail::StepDistance;
using detail::StepList;

// Vectors CheckSeries reuses from one series to the next (large series would otherwise fault in
// fresh pages for each).
struct Workspace {
  std::vector<const ScalarPoint*> ordered;
  std::vector<double> scratch;
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
  if (!non_finite.empty()) out->push_back(detail::NonFiniteFinding(s.tag, std::move(non_finite)));
  if (detail::IsSkipTag(s.tag)) {
    std::vector<int64_t> skipped;
    for (size_t i = 1; i < s.points.size(); ++i) {
      if (s.points[i].value > s.points[i - 1].value) skipped.push_back(s.points[i].step);
    }
    if (!skipped.empty()) out->push_back(detail::SkippedUpdateFinding(s.tag, std::move(skipped)));
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
  // Restarts followed by a stall's worth of time before the next new step, and that time.
  std::vector<std::pair<const Restart*, double>> restart_seconds;
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
    const bool no_gap_possible = survey.NoGapPossible(options.gap_factor);
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
      out->push_back(detail::StepGapFinding(s.tag, std::move(gaps), options.gap_factor, typical,
                                            largest_from, largest_to));
    }
    if (survey.stall_possible && survey.usable_wall_intervals >= 2) {
      scratch.clear();
      for (size_t i = 1; i < count; ++i) {
        const double dt = wall_interval(i);
        if (std::isfinite(dt) && dt >= 0) scratch.push_back(dt);
      }
      const double typical_seconds = detail::UsualWallInterval(scratch);
      std::vector<int64_t> stalls;
      double longest = 0;
      for (size_t i = 1; i < count; ++i) {
        const double dt = wall_interval(i);
        if (std::isfinite(dt) && dt > options.stall_factor * typical_seconds &&
            dt > options.stall_min_seconds) {
          // The time from where a run went back to its next new step (the downtime and the
          // replayed steps) belongs to that restart's finding, not to a stall as well.
          // The wait sits after the step the run went back from (policies `first`, `all`) or
          // before the step it went back to (`last`, which keeps the later pass there).
          const auto restart = std::find_if(
              run.restarts.begin(), run.restarts.end(), [&](const Restart& r) {
                return r.tag == s.tag &&
                       (r.from_step == at(i - 1).step || r.back_to_step == at(i).step);
              });
          if (restart != run.restarts.end()) {
            restart_seconds.emplace_back(&*restart, dt);
            continue;
          }
          stalls.push_back(at(i - 1).step);
          longest = std::max(longest, dt);
        }
      }
      if (!stalls.empty()) {
        out->push_back(detail::StallFinding(s.tag, std::move(stalls), options.stall_factor,
                                            typical_seconds, longest));
      }
    }
  }

  for (const Restart& r : run.restarts) {
    if (r.tag != s.tag) continue;
    std::string message =
        fmt::format("in {}: back from step {} to step {}, {} point{} overlapped",
                    run.files[r.source].path, r.from_step, r.back_to_step, r.overlapped_points,
                    r.overlapped_points == 1 ? "" : "s");
    for (const auto& [restart, seconds] : restart_seconds) {
      if (restart == &r) {
        message += fmt::format("; {:.0f} s of wall time before the run went on", seconds);
      }
    }
    out->push_back({FindingKind::kRestart, s.tag, {r.back_to_step}, std::move(message)});
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

namespace detail {

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

std::unique_ptr<RE2> CompileSpikeTags(const HealthOptions& options) {
  RE2::Options case_insensitive;
  case_insensitive.set_case_sensitive(false);
  auto spike_tags = std::make_unique<RE2>(options.spike_tags, case_insensitive);
  assert(spike_tags->ok() && "HealthOptions::spike_tags is a valid RE2 pattern");
  return spike_tags;
}

}  // namespace detail

std::vector<Finding> CheckHealth(const Run& run, const HealthOptions& options) {
  std::vector<Finding> findings = detail::RunFindings(run);
  const std::unique_ptr<RE2> spike_tags = detail::CompileSpikeTags(options);
  Workspace work;
  for (const TimeSeries& s : run.series) CheckSeries(run, s, options, *spike_tags, &work, &findings);
  return findings;
}

std::vector<std::vector<Finding>> CheckHealthOfRuns(const std::vector<Run>& runs,
                                                    const HealthOptions& options, int threads) {
  // Every series of every run is a task of its own (the largest first, so that one long series
  // does not start last), its findings in a slot of their own; each run's are then put together
  // as CheckHealth orders them.
  const std::unique_ptr<RE2> spike_tags = detail::CompileSpikeTags(options);
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
    findings[r] = detail::RunFindings(runs[r]);
    for (std::vector<Finding>& f : series_findings[r]) {
      findings[r].insert(findings[r].end(), std::make_move_iterator(f.begin()),
                         std::make_move_iterator(f.end()));
    }
  }
  return findings;
}

bool IsGradNormTag(std::string_view tag) { return detail::IsGradNorm(std::string(tag)); }

}  // namespace mosaic::runs
