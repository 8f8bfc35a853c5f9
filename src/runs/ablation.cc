#include "mosaic/runs/ablation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <system_error>

#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/wide_int.h"

namespace mosaic::runs {
namespace {

// Step → the first finite value logged at it (under --restarts all, the first pass).
std::map<int64_t, double> FiniteByStep(const TimeSeries& s) {
  std::map<int64_t, double> by_step;
  for (const ScalarPoint& p : s.points) {
    if (std::isfinite(p.value)) by_step.try_emplace(p.step, p.value);
  }
  return by_step;
}

const Run* FindRun(const std::vector<Run>& runs, std::string_view name) {
  for (const Run& r : runs) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::vector<std::string> Names(const std::vector<Run>& runs) {
  std::vector<std::string> names;
  for (const Run& r : runs) names.push_back(r.name);
  return names;
}

std::string NameList(const std::vector<std::string>& names) {
  constexpr size_t kShown = 12;
  std::vector<std::string> shown(names.begin(), names.begin() + std::min(names.size(), kShown));
  std::string text = fmt::format("{}", fmt::join(shown, ", "));
  if (names.size() > kShown) text += fmt::format(", … ({} more)", names.size() - kShown);
  return text;
}

// The run named by one side of a pair, with the tag; throws naming the flag otherwise.
const Run& RequireRun(const std::vector<Run>& runs, std::string_view name, std::string_view flag,
                      std::string_view value, std::string_view side, std::string_view tag) {
  const Run* run = FindRun(runs, name);
  if (run == nullptr) {
    const std::vector<std::string> names = Names(runs);
    throw FieldError({}, flag, value,
                     fmt::format("{} must be a run of the {} directory ({}){}", side,
                                 side == "RUN" ? "ablation" : "baseline", NameList(names),
                                 Printable(DidYouMean(name, names))));
  }
  if (run->FindSeries(tag) == nullptr) {
    // The tag is what is missing: the error names --tag and the tags the run has (it named the
    // pair's flag, and no tags).
    const std::vector<std::string> tags = run->Tags();
    throw FieldError({}, "--tag", tag,
                     fmt::format("a tag of run {} ({} {}){}; its tags: {}", Printable(name), flag,
                                 value, Printable(DidYouMean(tag, tags)),
                                 Printable(NameList(tags))));
  }
  return *run;
}

int64_t LastStep(const Run& run) {
  int64_t last = 0;
  for (const TimeSeries& s : run.series) {
    if (!s.empty()) last = std::max(last, s.LastStep());
  }
  return last;
}

std::vector<ComparedPoint> CompareAtSteps(const std::map<int64_t, double>& run,
                                          const std::map<int64_t, double>& base,
                                          int64_t run_steps) {
  std::vector<ComparedPoint> points;
  for (const auto& [step, value] : run) {
    const auto it = base.find(step);
    if (it == base.end()) continue;
    ComparedPoint p;
    p.step = step;
    p.base_step = static_cast<double>(step);
    p.fraction = run_steps > 0 ? static_cast<double>(step) / run_steps : 0;
    p.value = value;
    p.base_value = it->second;
    points.push_back(p);
  }
  return points;
}

std::vector<ComparedPoint> CompareAtFractions(const std::map<int64_t, double>& run,
                                              const std::map<int64_t, double>& base,
                                              int64_t run_steps, int64_t base_steps) {
  std::vector<ComparedPoint> points;
  if (run_steps <= 0 || base.empty()) return points;
  for (const auto& [step, value] : run) {
    ComparedPoint p;
    p.step = step;
    p.fraction = static_cast<double>(step) / run_steps;
    // Exact integer arithmetic when the matched step is a whole step.
    const WideInt scaled = static_cast<WideInt>(step) * base_steps;
    p.base_step = static_cast<double>(scaled) / run_steps;
    p.value = value;
    if (scaled % run_steps == 0) {
      const auto it = base.find(static_cast<int64_t>(scaled / run_steps));
      if (it != base.end()) {
        p.base_value = it->second;
        points.push_back(p);
        continue;
      }
    }
    auto upper = base.upper_bound(static_cast<int64_t>(std::floor(p.base_step)));
    if (upper == base.end() || upper == base.begin()) continue;
    auto lower = std::prev(upper);
    if (static_cast<double>(lower->first) > p.base_step) continue;
    const double t = (p.base_step - lower->first) / static_cast<double>(upper->first - lower->first);
    p.base_value = lower->second + t * (upper->second - lower->second);
    p.base_interpolated = true;
    points.push_back(p);
  }
  return points;
}

std::string ComparedAt(const AblationRow& row) {
  const ComparedPoint& p = row.final_point;
  const int64_t run_end = row.run_tag_steps, base_end = row.base_tag_steps;
  switch (ComparedEndOf(row)) {
    case ComparedEnd::kFraction:
      return fmt::format("fraction {:.3f}: step {} of {} ↔ baseline step {:g} of {}{}", p.fraction,
                         p.step, row.run_steps, p.base_step, row.base_steps,
                         p.base_interpolated ? " (interpolated)" : "");
    case ComparedEnd::kBothFinal:
      return fmt::format("final step {}", p.step);
    case ComparedEnd::kRunFinal:
      return fmt::format("step {} (the run's final step; the baseline runs to {})", p.step,
                         base_end);
    case ComparedEnd::kBaseFinal:
      return fmt::format("step {} (the baseline's final step; the run goes on to {})", p.step,
                         run_end);
    case ComparedEnd::kLastCommon:
      break;
  }
  return fmt::format("step {} (the last common step with finite values; the run ends at {}, the "
                     "baseline at {})",
                     p.step, run_end, base_end);
}

std::string G(double v) { return fmt::format("{:.4g}", v); }

}  // namespace

ComparedEnd ComparedEndOf(const AblationRow& row) {
  if (row.alignment == Alignment::kScheduleFraction) return ComparedEnd::kFraction;
  // Matched steps: "final" is the compared tag's last step in each run.
  const int64_t step = row.final_point.step;
  const int64_t run_end = row.run_tag_steps, base_end = row.base_tag_steps;
  if (step == run_end && step == base_end) return ComparedEnd::kBothFinal;
  if (step == run_end && base_end > run_end) return ComparedEnd::kRunFinal;
  if (step == base_end && run_end > base_end) return ComparedEnd::kBaseFinal;
  return ComparedEnd::kLastCommon;
}

std::string_view ToString(Alignment alignment) {
  switch (alignment) {
    case Alignment::kStep: return "step";
    case Alignment::kScheduleFraction: return "fraction";
  }
  return "?";
}

Alignment AlignmentFromString(std::string_view text) {
  if (text == "step") return Alignment::kStep;
  if (text == "fraction") return Alignment::kScheduleFraction;
  throw FieldError({}, "--align", text, "one of step, fraction");
}

std::string_view ToString(RunEnd end) {
  switch (end) {
    case RunEnd::kFinished: return "finished";
    case RunEnd::kEndedEarly: return "ended early";
    case RunEnd::kUnknown: return "unknown";
  }
  return "?";
}

std::string_view ToString(NoiseSource source) {
  switch (source) {
    case NoiseSource::kRun: return "run";
    case NoiseSource::kOffsetPair: return "offset pair";
  }
  return "?";
}

RunPair ParseRunPair(std::string_view flag, std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size() ||
      text.find('=', eq + 1) != std::string_view::npos) {
    throw FieldError({}, flag, text,
                     "RUN=BASE_RUN: an ablation run and its baseline run, named as `mosaic runs` "
                     "names them");
  }
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

bool RunHealth::Healthy() const {
  return logged_twice.empty() && non_finite.empty() && spikes.empty() && other.empty() &&
         end != RunEnd::kEndedEarly;
}

RunHealth CheckRunHealth(const Run& run, const AblationOptions& options) {
  RunHealth h;
  h.run = run.name;
  h.policy = run.policy;
  for (Finding& f : CheckHealth(run, options.health)) {
    switch (f.kind) {
      case FindingKind::kRestart: break;  // merged below
      case FindingKind::kNonFinite: h.non_finite.push_back(std::move(f)); break;
      case FindingKind::kSpike: h.spikes.push_back(std::move(f)); break;
      case FindingKind::kSkippedUpdate:
      case FindingKind::kStepGap:
      case FindingKind::kStall:
      case FindingKind::kDamaged:
      case FindingKind::kUnreadableFile:
      case FindingKind::kUnreadableFolder:
      case FindingKind::kConcurrentWriters: h.other.push_back(std::move(f)); break;
    }
  }
  std::map<int32_t, std::pair<LoggedTwice, std::set<std::string>>> by_file;
  for (const Restart& r : run.restarts) {
    auto [it, inserted] = by_file.try_emplace(r.source);
    LoggedTwice& l = it->second.first;
    if (inserted) {
      l.file = run.files[r.source].path;
      l.from_step = r.back_to_step;
      l.to_step = r.from_step;
    }
    l.from_step = std::min(l.from_step, r.back_to_step);
    l.to_step = std::max(l.to_step, r.from_step);
    it->second.second.insert(r.tag);
  }
  for (auto& [source, entry] : by_file) {
    entry.first.tags = static_cast<int64_t>(entry.second.size());
    h.logged_twice.push_back(std::move(entry.first));
  }
  h.last_step = LastStep(run);

  const std::regex lr_tags(options.lr_tags, std::regex::icase);
  for (const TimeSeries& s : run.series) {
    if (!std::regex_search(s.tag, lr_tags)) continue;
    double peak = -INFINITY, final_value = NAN;
    int64_t final_step = 0;
    for (const ScalarPoint& p : s.points) {
      if (!std::isfinite(p.value)) continue;
      peak = std::max(peak, p.value);
      if (std::isnan(final_value) || p.step >= final_step) {
        final_value = p.value;
        final_step = p.step;
      }
    }
    if (!(peak > 0)) continue;
    const double ratio = final_value / peak;
    if (ratio > options.unfinished_lr_fraction) {
      h.end = RunEnd::kEndedEarly;
      h.end_reason = fmt::format(
          "{} is still {} at its last step {} ({:.2g} × its peak {}; a finished schedule ends at "
          "or below {:g} ×)",
          s.tag, G(final_value), final_step, ratio, G(peak), options.unfinished_lr_fraction);
    } else {
      h.end = RunEnd::kFinished;
      h.end_reason = fmt::format("{} ends at {} at step {}, {:.2g} × its peak {}", s.tag,
                                 G(final_value), final_step, ratio, G(peak));
    }
    break;
  }
  if (h.end == RunEnd::kUnknown) {
    h.end_reason = "no learning-rate tag: whether the schedule finished is not known";
  }
  return h;
}

Ablation AnalyzeAblation(const std::vector<Run>& ablation_runs,
                         const std::vector<Run>& baseline_runs, const AblationOptions& options) {
  Ablation out;
  out.options = options;
  const std::string& tag = options.tag;
  const std::string offset_value =
      options.offset_pair.run + "=" + options.offset_pair.base_run;
  const Run& offset_run = RequireRun(ablation_runs, options.offset_pair.run, "--offset-pair",
                                     offset_value, "RUN", tag);
  const Run& offset_base = RequireRun(baseline_runs, options.offset_pair.base_run, "--offset-pair",
                                      offset_value, "BASE_RUN", tag);
  // Whether two runs are one (the same object, or the same folder read twice: the baseline
  // directory given as the ablation's).
  const auto same_run = [](const Run& a, const Run& b) {
    std::error_code ec;
    return &a == &b || (!a.directory.empty() &&
                        std::filesystem::equivalent(a.directory, b.directory, ec) && !ec);
  };
  if (same_run(offset_run, offset_base)) {
    throw FieldError({}, "--offset-pair", offset_value,
                     fmt::format("two runs (both name {}): one run against itself has an offset "
                                 "of 0 with no spread to judge effects against",
                                 offset_run.directory.empty() ? offset_run.name
                                                              : offset_run.directory));
  }
  std::map<std::string, std::string> base_of;
  base_of[offset_run.name] = offset_base.name;
  for (const RunPair& pair : options.pairs) {
    const std::string value = pair.run + "=" + pair.base_run;
    const Run& run = RequireRun(ablation_runs, pair.run, "--pair", value, "RUN", tag);
    const Run& base = RequireRun(baseline_runs, pair.base_run, "--pair", value, "BASE_RUN", tag);
    if (same_run(run, base)) {
      throw FieldError({}, "--pair", value,
                       fmt::format("two runs (both name {}): a run against itself has no effect "
                                   "to measure",
                                   run.directory.empty() ? run.name : run.directory));
    }
    const auto [it, inserted] = base_of.try_emplace(pair.run, pair.base_run);
    if (!inserted && it->second != pair.base_run) {
      throw FieldError({}, "--pair", value,
                       fmt::format("one baseline run per ablation run ({} is already paired "
                                   "with {})",
                                   pair.run, it->second));
    }
  }

  const std::optional<SeriesOffset> offset =
      CompareSeries(*offset_base.FindSeries(tag), *offset_run.FindSeries(tag));
  if (!offset) {
    throw FieldError({}, "--offset-pair", offset_value,
                     fmt::format("the two runs must share a step with a finite '{}' value", tag));
  }
  if (offset->common_steps < 2) {
    throw FieldError({}, "--offset-pair", offset_value,
                     fmt::format("the two runs must share at least 2 steps with a finite '{}' "
                                 "value: they share step {} only, and the spread of the offset "
                                 "(the noise every effect is judged against) needs two",
                                 tag, offset->first_common_step));
  }
  out.offset = *offset;
  out.offset_band = std::hypot(offset->standard_error, offset->sd_difference);
  if (out.offset_band == 0) {
    // Two runs of a real pair never differ by the same amount at every step: a copy of one run,
    // against which every effect, however small, is judged real.
    out.notes.push_back(fmt::format(
        "the offset pair {} differs by the same {} at each of its {} shared steps: the offset has "
        "no spread, so any effect is judged outside it (a copy of one run?)",
        offset_value, G(offset->mean_difference), offset->common_steps));
  }

  std::vector<const Run*> order = {&offset_run};
  for (const Run& r : ablation_runs) {
    if (&r == &offset_run) continue;
    if (r.FindSeries(tag) == nullptr) {
      out.notes.push_back(fmt::format("run {} has no tag '{}': left out", r.name, tag));
      continue;
    }
    order.push_back(&r);
  }
  std::sort(order.begin() + 1, order.end(),
            [](const Run* a, const Run* b) { return a->name < b->name; });

  std::set<std::string> bases_used;
  for (const Run* run : order) {
    const auto paired = base_of.find(run->name);
    const std::string& base_name =
        paired != base_of.end() ? paired->second : offset_base.name;
    const Run& base = *FindRun(baseline_runs, base_name);
    if (same_run(*run, base)) {
      out.notes.push_back(fmt::format("run {} is the offset pair's baseline run itself: left out "
                                      "(no baseline to compare it with; give it one with --pair)",
                                      run->name));
      continue;
    }
    AblationRow row;
    row.run = run->name;
    row.base_run = base.name;
    row.offset_pair = run == &offset_run;
    row.explicit_pair = paired != base_of.end();
    row.alignment = options.alignment;
    row.health = CheckRunHealth(*run, options);
    row.run_steps = row.health.last_step;
    row.base_steps = LastStep(base);
    const std::map<int64_t, double> a = FiniteByStep(*run->FindSeries(tag));
    const std::map<int64_t, double> b = FiniteByStep(*base.FindSeries(tag));
    // The tag's last step, finite or not: a run whose last eval is NaN did not end where its
    // last finite value is.
    row.run_tag_steps = run->FindSeries(tag)->LastStep();
    row.base_tag_steps = base.FindSeries(tag)->LastStep();
    row.points = options.alignment == Alignment::kStep
                     ? CompareAtSteps(a, b, row.run_steps)
                     : CompareAtFractions(a, b, row.run_steps, row.base_steps);
    if (options.alignment == Alignment::kScheduleFraction) {
      // The schedule's length is the run's last step over every tag; a compared tag that stops
      // well short of it (counted in epochs while others count iterations, or cut off) puts
      // its points at fractions they do not stand for: say so.
      for (const auto& [who, steps, points] :
           {std::tuple{run, row.run_steps, &a}, std::tuple{&base, row.base_steps, &b}}) {
        if (points->empty() || 10 * points->rbegin()->first >= 9 * steps) continue;
        out.notes.push_back(fmt::format(
            "run {}: tag '{}' ends at step {}, its other tags at step {}; schedule fractions "
            "take {} as its length (--align step compares the tag's own steps)",
            who->name, tag, points->rbegin()->first, steps, steps));
      }
    }
    if (row.points.empty()) {
      out.notes.push_back(fmt::format("run {} has no {} in common with its baseline run {}: left "
                                      "out",
                                      run->name,
                                      options.alignment == Alignment::kStep
                                          ? "step with a finite value"
                                          : "schedule fraction",
                                      base.name));
      continue;
    }
    for (ComparedPoint& p : row.points) {
      p.difference = p.value - p.base_value;
      p.effect = p.difference - out.offset.mean_difference;
    }
    row.final_point = row.points.back();
    row.compared_at = ComparedAt(row);
    row.effect = row.final_point.effect;
    const size_t window = std::min(row.points.size(), static_cast<size_t>(options.noise_window));
    if (window >= 3) {
      double squares = 0;
      for (size_t i = row.points.size() - window + 1; i < row.points.size(); ++i) {
        const double step = row.points[i].difference - row.points[i - 1].difference;
        squares += step * step;
      }
      row.noise = std::sqrt(squares / (2.0 * static_cast<double>(window - 1)));
      row.noise_source = NoiseSource::kRun;
    } else {
      row.noise = out.offset.sd_difference;
      row.noise_source = NoiseSource::kOffsetPair;
    }
    row.uncertainty = std::hypot(out.offset.standard_error, row.noise);
    row.inside_offset_uncertainty = std::fabs(row.effect) <= options.sigmas * out.offset_band;
    row.diagnostics = SummarizeLoopDiagnostics(*run, options.diagnostics);
    bases_used.insert(base.name);
    out.rows.push_back(std::move(row));
  }
  for (const std::string& name : bases_used) {
    out.baseline_health.push_back(CheckRunHealth(*FindRun(baseline_runs, name), options));
  }
  return out;
}

Ablation RunAblation(const std::string& ablation_dir, const std::string& baseline_dir,
                     const AblationOptions& options, const LoadOptions& load) {
  const std::vector<Run> ablation_runs = LoadRuns(DiscoverRuns(ablation_dir), load);
  const std::vector<Run> baseline_runs = LoadRuns(DiscoverRuns(baseline_dir), load);
  Ablation out = AnalyzeAblation(ablation_runs, baseline_runs, options);
  out.ablation_dir = ablation_dir;
  out.baseline_dir = baseline_dir;
  return out;
}

}  // namespace mosaic::runs
