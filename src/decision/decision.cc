#include "mosaic/decision/decision.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "mosaic/model/flops.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/measurements.h"
#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"
#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/projection.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/number_format.h"
#include "mosaic/util/parallel_for.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/toml_reader.h"

namespace mosaic {

const RungResult* Decision::Find(const std::string& arm, int64_t d_model) const {
  for (const RungResult& r : results) {
    if (r.arm == arm && r.d_model == d_model) return &r;
  }
  return nullptr;
}

namespace {

using scaling::FitData;
using scaling::Interval;
using scaling::Law;

const LadderRow& PlanRow(const LadderPlan& plan, const std::string& arm, int64_t d_model) {
  for (const LadderRow& row : plan.rows) {
    if (row.arm == arm && row.d_model == d_model) return row;
  }
  throw std::logic_error("no ladder row for " + arm);  // validated arms and rungs always have one
}

SourceLocation CellLocation(const scaling::DataTable& table, int column, size_t row) {
  SourceLocation where;
  where.origin = table.origin;
  where.line = table.line[row];
  where.column = table.cell_column[column][row];
  where.source_line = table.line_text[row];
  return where;
}

std::optional<double> OptionalNumber(const scaling::DataTable& table, int column, size_t row,
                                     std::string_view rule_name, bool fraction) {
  if (column < 0) return std::nullopt;
  const std::string& text = table.text[column][row];
  if (text.empty()) return std::nullopt;
  const double v = table.values[column][row];
  const bool ok = std::isfinite(v) && (fraction ? v >= 0 && v <= 1 : v > 0);
  if (!ok) {
    throw FieldError(CellLocation(table, column, row), table.names[column], text,
                     fraction ? fmt::format("{} is blank or a fraction in [0, 1]", rule_name)
                              : fmt::format("{} is blank or a finite number > 0", rule_name));
  }
  return v;
}

// A loss is a per-token cross-entropy in nats: past kMaxLossNats (a perplexity of e^100, far
// above a uniform guess over any vocabulary) it is a unit or column slip, and a 1e300 printed as
// a 300-digit number.
constexpr double kMaxLossNats = 100;

std::optional<double> OptionalLoss(const scaling::DataTable& table, int column, size_t row) {
  const std::optional<double> v = OptionalNumber(table, column, row, "a loss", false);
  if (v && *v > kMaxLossNats) {
    throw FieldError(CellLocation(table, column, row), table.names[column],
                     table.text[column][row],
                     fmt::format("a loss is blank or a cross-entropy in nats in (0, {:g}]",
                                 kMaxLossNats));
  }
  return v;
}

void LoadCsvResults(const StudyConfig& study, const ResultsSpec& spec,
                    std::vector<RungResult>& results) {
  const scaling::DataTable table =
      scaling::ParseCsv(ReadInputBeside(spec.csv, study.embedded), spec.csv);
  // A header alone is a file not yet filled in, not results that settle nothing.
  if (table.rows() == 0) {
    throw InputError(fmt::format("{}: a header and no rows. Violated constraint: a results CSV "
                                 "holds a row per arm and rung run (a study without results yet "
                                 "is planned with `mosaic plan`)",
                                 spec.csv));
  }
  // A column the results need: named by its [results] key when missing.
  const auto require = [&](const std::string& column, std::string_view key,
                           std::string_view purpose) {
    const int index = table.Find(column);
    if (index < 0) {
      throw InputError(fmt::format("{}: no column '{}' ({}){}; set [results] {} = \"COLUMN\" "
                                   "(columns: {})",
                                   spec.csv, column, purpose, DidYouMean(column, table.names), key,
                                   fmt::join(table.names, ", ")));
    }
    return index;
  };
  const int arm = require(spec.arm_column, "arm_column", "the arm of each result");
  const int d = require(spec.d_model_column, "d_model_column", "the rung of each result");
  const int dropless = table.Find(spec.dropless_column);
  const int with_drop = table.Find(spec.with_drop_column);
  // The deciding loss must have its column; the other one is shown when present.
  if (spec.loss == DecisionLoss::kDropless) {
    require(spec.dropless_column, "dropless_column", "the dropless loss, which decides");
  } else {
    require(spec.with_drop_column, "with_drop_column", "the with-drop loss, which decides");
  }
  const int dropped = table.Find(spec.dropped_column);
  const int run = table.Find(spec.run_column);
  std::vector<std::string> arms;
  for (const Arm& a : study.arms) arms.push_back(a.name);
  for (size_t i = 0; i < table.rows(); ++i) {
    RungResult r;
    r.arm = table.text[arm][i];
    if (std::find(arms.begin(), arms.end(), r.arm) == arms.end()) {
      throw FieldError(CellLocation(table, arm, i), table.names[arm], r.arm,
                       fmt::format("{} names an arm of the study ({}){}", table.names[arm],
                                   fmt::join(arms, ", "), DidYouMean(r.arm, arms)));
    }
    const double dv = table.values[d][i];
    const auto rung = std::find_if(study.rungs.begin(), study.rungs.end(),
                                   [&](const Rung& g) { return g.d_model == dv; });
    if (rung == study.rungs.end()) {
      std::vector<std::string> rungs;
      for (const Rung& g : study.rungs) rungs.push_back(std::to_string(g.d_model));
      throw FieldError(CellLocation(table, d, i), table.names[d], table.text[d][i],
                       fmt::format("{} names a rung of the study ({})", table.names[d],
                                   fmt::join(rungs, ", ")));
    }
    r.d_model = rung->d_model;
    r.loss_dropless = OptionalLoss(table, dropless, i);
    r.loss_with_drop = OptionalLoss(table, with_drop, i);
    r.dropped_share = OptionalNumber(table, dropped, i, "the dropped share", true);
    if (run >= 0) r.run = table.text[run][i];
    r.source = fmt::format("{}:{}", spec.csv, table.line[i]);
    for (const RungResult& other : results) {
      if (other.arm == r.arm && other.d_model == r.d_model) {
        throw LocatedError(CellLocation(table, arm, i),
                           fmt::format("a second row for arm {} at d_model {} (first at {}); "
                                       "give one row per arm and rung",
                                       r.arm, r.d_model, other.source));
      }
    }
    if (!r.loss_dropless && !r.loss_with_drop) continue;  // a row kept for its notes only
    results.push_back(std::move(r));
  }
}

// The mean of the last k finite values of `tag` in `run`.
std::optional<double> LastKMean(const runs::Run& run, const std::string& tag, int64_t last_k,
                                bool required, const std::string& where) {
  const runs::TimeSeries* series = run.FindSeries(tag);
  if (series == nullptr) {
    if (!required) return std::nullopt;
    const std::vector<std::string> tags = run.Tags();
    throw InputError(fmt::format("{}: run {} has no tag '{}'{}", where, run.name, tag,
                                 DidYouMean(tag, tags)));
  }
  double sum = 0;
  int64_t n = 0;
  for (auto it = series->points.rbegin(); it != series->points.rend() && n < last_k; ++it) {
    if (std::isfinite(it->value)) {
      sum += it->value;
      ++n;
    }
  }
  if (n == 0) {
    if (!required) return std::nullopt;
    throw InputError(fmt::format("{}: run {}, tag '{}' has no finite value", where, run.name, tag));
  }
  return sum / static_cast<double>(n);
}

bool IsAnomaly(runs::FindingKind kind) {
  switch (kind) {
    case runs::FindingKind::kNonFinite:
    case runs::FindingKind::kSkippedUpdate:
    case runs::FindingKind::kSpike:
      return true;
    case runs::FindingKind::kRestart:
    case runs::FindingKind::kStepGap:
    case runs::FindingKind::kStall:
    case runs::FindingKind::kDamaged:
    case runs::FindingKind::kUnreadableFile:
    case runs::FindingKind::kUnreadableFolder:
    case runs::FindingKind::kConcurrentWriters:
      return false;
  }
  return false;
}

void LoadLogResults(const StudyConfig& study, const LadderPlan& plan, const ResultsSpec& spec,
                    std::vector<RungResult>& results, std::vector<std::string>& notes) {
  std::map<std::string, runs::RunDirectory> directories;
  for (const runs::RunDirectory& dir : runs::DiscoverRuns(spec.logs)) {
    directories.emplace(dir.name, dir);
  }
  std::vector<std::string> names;
  for (const auto& [name, unused] : directories) names.push_back(name);
  const std::string where = fmt::format("{} [results]", study.origin);
  std::vector<LogRunSpec> wanted = spec.runs;
  if (!spec.run_pattern.empty()) {
    for (const Arm& arm : study.arms) {
      for (const Rung& rung : study.rungs) {
        std::string name = spec.run_pattern;
        for (auto [key, value] : {std::pair<std::string, std::string>{"{arm}", arm.name},
                                  {"{d_model}", std::to_string(rung.d_model)}}) {
          for (size_t at = name.find(key); at != std::string::npos; at = name.find(key, at)) {
            name.replace(at, key.size(), value);
            at += value.size();
          }
        }
        wanted.push_back({arm.name, rung.d_model, name, spec.where});
      }
    }
  }
  // A pattern that names no run at all is a wrong pattern (or logs), not a study without results.
  if (!spec.run_pattern.empty() &&
      std::none_of(wanted.begin(), wanted.end(),
                   [&](const LogRunSpec& w) { return directories.count(w.run) > 0; })) {
    const size_t shown = std::min<size_t>(names.size(), 8);
    throw FieldError(
        spec.where, "run_pattern", "\"" + spec.run_pattern + "\"",
        fmt::format("run_pattern names runs in {} (as `mosaic runs` prints them); none of its {} "
                    "names (e.g. {}) is there{}; the runs found: {}{}",
                    fmt::join(spec.logs, ", "), wanted.size(), wanted.front().run,
                    DidYouMean(wanted.front().run, names),
                    names.empty() ? "none"
                                  : fmt::format("{}", fmt::join(names.begin(),
                                                                names.begin() + shown, ", ")),
                    names.size() > shown ? fmt::format(" and {} more", names.size() - shown)
                                         : ""));
  }
  // A dropped_tag that no run logs is a misspelling (a dropless run may well not log it).
  bool dropped_tag_found = false;
  std::set<std::string> tags_of_runs_without_it;
  for (const LogRunSpec& w : wanted) {
    auto it = directories.find(w.run);
    if (it == directories.end()) {
      if (spec.run_pattern.empty()) {
        throw FieldError(w.where, "run", "\"" + w.run + "\"",
                         fmt::format("run names a run in {} (as `mosaic runs` prints it){}",
                                     fmt::join(spec.logs, ", "), DidYouMean(w.run, names)));
      }
      notes.push_back(fmt::format("no run {} in {}: {} has no result at d{}", w.run,
                                  fmt::join(spec.logs, ", "), w.arm, w.d_model));
      continue;
    }
    const runs::Run run = runs::LoadRun(it->second, {});
    RungResult r;
    r.arm = w.arm;
    r.d_model = w.d_model;
    r.run = w.run;
    const double loss = *LastKMean(run, spec.tag, spec.last_k, true, where);
    const runs::TimeSeries& series = *run.FindSeries(spec.tag);  // LastKMean required it
    const runs::ScalarPoint& last = series.points.back();
    if (!std::isfinite(last.value)) {
      notes.push_back(fmt::format(
          "run {}: its last {} (step {}) is {}: the loss is of the last {} finite value{} before it",
          w.run, spec.tag, last.step, last.value, spec.last_k, spec.last_k == 1 ? "" : "s"));
    }
    if (!spec.dropped_tag.empty()) {
      r.dropped_share = LastKMean(run, spec.dropped_tag, spec.last_k, false, where);
      if (run.FindSeries(spec.dropped_tag) != nullptr) {
        dropped_tag_found = true;
      } else {
        const std::vector<std::string> tags = run.Tags();
        tags_of_runs_without_it.insert(tags.begin(), tags.end());
      }
    }
    r.source = fmt::format("{} ({} {})", it->second.directory, spec.tag,
                           spec.last_k == 1 ? "final value"
                                            : fmt::format("mean of the last {}", spec.last_k));
    // A run that stopped before its step budget (crashed, or still running) has not reached the
    // rung's loss: its arm has no loss at that rung yet, as when the run is missing; its health
    // still counts. Its last eval may be up to one eval interval short (a tenth of the budget
    // when the study sets no cadence).
    const LadderRow& row = PlanRow(plan, w.arm, w.d_model);
    const int64_t last_step = series.LastStep();
    const int64_t slack = row.eval_every_steps > 0 ? row.eval_every_steps : row.steps / 10;
    if (last_step < row.steps - slack) {
      notes.push_back(fmt::format(
          "run {} stopped at step {} of the {}-step budget of {} at d{}: its {} is not yet the "
          "rung's result, so {} has no loss at d{} (finish the run)",
          w.run, FormatThousands(last_step), FormatThousands(row.steps), w.arm, w.d_model,
          spec.tag, w.arm, w.d_model));
      r.source += fmt::format(", stopped at step {} of {}: no loss yet", last_step, row.steps);
    } else {
      (spec.loss == DecisionLoss::kDropless ? r.loss_dropless : r.loss_with_drop) = loss;
    }
    const std::vector<std::string> tags = run.Tags();
    r.logs_grad_norm = std::ranges::any_of(tags, runs::IsGradNormTag);
    for (const runs::Finding& f : runs::CheckHealth(run)) {
      if (IsAnomaly(f.kind)) {
        r.anomalies.push_back(
            fmt::format("{}: {}{}", w.run, f.tag.empty() ? "" : f.tag + ": ", f.message));
      }
    }
    results.push_back(std::move(r));
  }
  if (!spec.dropped_tag.empty() && !dropped_tag_found && !results.empty()) {
    const std::vector<std::string> tags(tags_of_runs_without_it.begin(),
                                        tags_of_runs_without_it.end());
    throw FieldError(spec.where, "dropped_tag", "\"" + spec.dropped_tag + "\"",
                     fmt::format("dropped_tag names a tag that some run read logs{}; the runs' "
                                 "tags: {}",
                                 DidYouMean(spec.dropped_tag, tags), fmt::join(tags, ", ")));
  }
  std::stable_sort(results.begin(), results.end(), [&](const RungResult& a, const RungResult& b) {
    auto arm_index = [&](const std::string& name) {
      for (size_t i = 0; i < study.arms.size(); ++i) {
        if (study.arms[i].name == name) return i;
      }
      return study.arms.size();
    };
    return std::make_pair(arm_index(a.arm), a.d_model) < std::make_pair(arm_index(b.arm), b.d_model);
  });
}

// The rungs of `rungs` at which `arm` has a loss of the deciding kind, in order.
std::vector<int64_t> RungsWithLoss(const Decision& d, const std::string& arm,
                                   const std::vector<int64_t>& rungs) {
  std::vector<int64_t> with;
  for (int64_t rung : rungs) {
    const RungResult* r = d.Find(arm, rung);
    if (r != nullptr && r->Loss(d.study.decision.results->loss)) with.push_back(rung);
  }
  return with;
}

// Fits `law` to the arm's losses at `rungs`, with `bootstrap` resamples (0: none) from seed
// stream `stream`; `paired`: the resamples draw rungs by their d_model (run_keys), so an arm
// fitted on the same rungs with the same stream draws the same rungs in every resample.
ArmFit FitArm(const Decision& d, const std::string& arm, const std::vector<int64_t>& rungs,
              int64_t bootstrap, uint64_t stream, bool paired, const DecideOptions& options) {
  const DecisionSpec& spec = d.study.decision;
  const DecisionLoss which = spec.results->loss;
  ArmFit af;
  af.arm = arm;
  FitData data;
  data.origin = spec.results->csv.empty() ? fmt::format("{}", fmt::join(spec.results->logs, ", "))
                                          : spec.results->csv;
  for (const scaling::LawInput& in : d.law.inputs) data.input_names.push_back(in.name);
  data.inputs.resize(d.law.inputs.size());
  for (int64_t rung : RungsWithLoss(d, arm, rungs)) {
    const RungResult* r = d.Find(arm, rung);
    const LadderRow& row = PlanRow(d.plan, arm, rung);
    for (size_t i = 0; i < d.law.inputs.size(); ++i) {
      const std::string& name = d.law.inputs[i].name;
      data.inputs[i].push_back(name == "C"   ? r->compute_flops
                               : name == "N" ? static_cast<double>(row.active_params)
                                             : static_cast<double>(row.token_budget));
    }
    data.loss.push_back(*r->Loss(which));
    data.weight.push_back(1);
    data.run.push_back(static_cast<int>(data.run_names.size()));
    data.run_names.push_back(r->source.empty() ? fmt::format("{} d{}", arm, rung)
                                               : fmt::format("{} d{}, {}", arm, rung, r->source));
    data.line.push_back(0);
    af.rungs.push_back(rung);
  }
  if (data.size() == 0) {
    af.why_not = fmt::format("no {} loss of {} at the fitted rungs", ToString(which), arm);
    af.settle = fmt::format("{} losses of {} in [results]", ToString(which), arm);
    return af;
  }
  scaling::FitOptions fo;
  fo.pins = spec.fit.pins;
  fo.multistart.threads = options.threads;
  fo.subset_rule = fmt::format("{} losses of {} at d{}", ToString(which), arm,
                               fmt::join(af.rungs, ", d"));
  try {
    af.fit = scaling::Fit(d.law, data, fo);
  } catch (const InputError& error) {
    af.why_not = fmt::format("{} cannot be fitted: {}", arm, error.what());
    af.settle = fmt::format("what the reason names: the [fit] pins or the result rows of {}", arm);
    return af;
  }
  if (!af.fit.ok()) {
    af.why_not = fmt::format("the fit of {} did not converge: {}", arm, af.fit.message);
    af.settle = fmt::format("a fit of {} that converges: more rungs, or [fit] pins on what its "
                            "rungs cannot determine",
                            arm);
    return af;
  }
  // With one run every resample is the data itself, and with no more points than free parameters
  // every resample that determines the law refits to the same values (the fit's caution says it
  // passes through every point): no interval to report.
  const auto free_params = std::count_if(af.fit.params.begin(), af.fit.params.end(),
                                         [](const scaling::FittedParam& p) { return !p.pinned; });
  if (bootstrap > 0 && data.num_runs() < 2) {
    af.no_interval = fmt::format("{} is fitted on one rung", arm);
  } else if (bootstrap > 0 && af.fit.points <= free_params) {
    af.no_interval = fmt::format("{} is fitted on {} point{} for its {} free parameter{}", arm,
                                 af.fit.points, af.fit.points == 1 ? "" : "s", free_params,
                                 free_params == 1 ? "" : "s");
  } else if (bootstrap > 0) {
    scaling::BootstrapOptions b;
    b.resamples = static_cast<int>(bootstrap);
    b.seed = scaling::StreamSeed(spec.fit.seed, stream);
    b.confidence = spec.fit.confidence;
    b.threads = options.threads;
    if (paired) b.run_keys = af.rungs;  // one run per rung
    // Resamples that cannot measure a spread (every refitted one the data itself, or too few
    // refitted) leave the arm without intervals, said among its cautions, not the study failed.
    try {
      af.bootstrap = scaling::Bootstrap(d.law, data, fo, af.fit, b);
    } catch (const InputError& error) {
      af.fit.cautions.push_back(fmt::format("no bootstrap intervals for {}: {}", arm, error.what()));
      af.no_interval = fmt::format("{}'s bootstrap resamples measure no spread", arm);
    }
  }
  // A law that lost a term projects on what is left: nothing to decide on (a FAIL on a
  // degenerate projection is no answer). Its fit and bootstrap cautions are still reported.
  if (!af.fit.negligible_params.empty()) {
    af.why_not = fmt::format("the fit of {} lost a term: {}", arm,
                             af.fit.NegligibleCaution(af.fit.negligible_params.front()));
    return af;
  }
  // A law whose loss grows with scale (an exponent or scale the law's form keeps non-negative
  // fitted below 0: losses that rise with compute) projects the wrong way; a criterion on it,
  // PASS or FAIL, would be no answer.
  for (size_t j = 0; j < d.law.params.size(); ++j) {
    if (af.fit.params[j].pinned || !d.law.ExpectsNonNegative(static_cast<int>(j)) ||
        !(af.fit.params[j].value < 0)) {
      continue;
    }
    af.why_not = fmt::format(
        "the fit of {} goes against the law's form ({} = {:.4g} < 0: its loss grows with scale)",
        arm, d.law.params[j].name, af.fit.params[j].value);
    af.settle = fmt::format("losses of {} that fall with scale: rerun the rung that breaks the "
                            "trend, add rungs, or pin {} in [fit]",
                            arm, d.law.params[j].name);
    return af;
  }
  af.fitted = true;
  return af;
}

std::string SettleRun(const Decision& d, const std::string& arm, int64_t d_model) {
  const LadderRow& row = PlanRow(d.plan, arm, d_model);
  return fmt::format("train {} at d{}: {} steps, {} tokens on {} {} (~{:.1f} h at the study's "
                     "{:g}% MFU)",
                     arm, d_model, FormatThousands(row.steps), FormatCount(static_cast<double>(row.token_budget)),
                     row.racks, row.racks == 1 ? "rack" : "racks", row.est_hours,
                     100 * d.study.assumed_mfu);
}

double TargetCompute(const Decision& d, std::string& rule) {
  const DecisionSpec& spec = d.study.decision;
  if (!spec.target) {
    rule = "no [target]";
    return 0;
  }
  const TargetSpec& t = *spec.target;
  if (t.compute_flops > 0) {
    rule = "[target] compute_flops";
    return t.compute_flops;
  }
  const std::string& default_arm = spec.rule->default_arm;
  for (const TargetArm& a : t.arms) {
    if (a.arm != default_arm) continue;
    const ModelSpec model = LoadModel(a.model);
    const int64_t seq = t.seq_len > 0 ? t.seq_len : d.study.seq_len;
    const FlopCount flops = CountFlops(model.config, {d.study.flop_convention, seq});
    rule = fmt::format("3 × {} forward FLOPs per token of {} ({}) × {} tokens",
                       FormatThousands(flops.forward_flops_per_token), a.model,
                       ToString(d.study.flop_convention), FormatCount(t.tokens));
    return flops.train_flops_per_token() * t.tokens;
  }
  rule = fmt::format("no [[target.arms]] model for the default arm {} (or [target] compute_flops)",
                     default_arm);
  return 0;
}

// The perf setup of an arm's target shape ([target] and its [[target.arms]] entry); errors are
// located at the entry.
PerfSetup TargetSetup(const StudyConfig& study, const TargetArm& target_arm) {
  const TargetSpec& target = *study.decision.target;
  if (target.hardware.empty() || target.gpus == 0 || target.batch_seqs == 0) {
    std::vector<std::string> missing;
    if (target.hardware.empty()) missing.push_back("hardware");
    if (target.gpus == 0) missing.push_back("gpus");
    if (target.batch_seqs == 0) missing.push_back("batch_seqs");
    throw LocatedError(target.where,
                       fmt::format("[target] needs {} for the target's model of {} (measured "
                                   "tokens/s are checked against it)",
                                   fmt::join(missing, ", "), target_arm.arm));
  }
  PerfRequest request;
  request.model = target_arm.model;
  request.hardware = target.hardware;
  request.gpus = target.gpus;
  request.batch = target.batch_seqs;
  request.seq = target.seq_len > 0 ? target.seq_len : study.seq_len;
  SetFormatAndRouting(request, target.format, target_arm.routing);
  request.capacity_factor = target_arm.capacity_factor;
  request.profile = target.profile;
  try {
    LoadModel(target_arm.model);  // a model that does not load is the entry's model's fault
  } catch (const InputError& error) {
    throw LocatedError(target_arm.model_where,
                       fmt::format("[[target.arms]] {}: {}", target_arm.arm, error.what()));
  }
  try {
    return PreparePerf(request);
  } catch (const InputError& error) {
    throw LocatedError(target_arm.where,
                       fmt::format("[[target.arms]] {}: {}", target_arm.arm, error.what()));
  }
}

// A measured throughput the target's device could not run: more model FLOPs per second than its
// peak (or under 0.1% of it), or an MFU more than a factor of 2 from what the tokens/s imply
// (CheckTokensPerSecondIsPossible, CheckMfuAgreesWithTokensPerSecond), is a typo or a unit slip,
// refused at its [[throughput.measured]] entry. The entry is taken as measured on the target's
// device and the arm's target model.
void CheckMeasuredThroughput(const MeasuredThroughput& m, const PerfSetup& target) {
  const double per_gpu = m.tokens_per_s / static_cast<double>(m.gpus);
  try {
    CheckTokensPerSecondIsPossible(per_gpu, target.shape, target.hardware, target.job.format,
                                   "tokens_per_s / gpus");
    CheckMfuAgreesWithTokensPerSecond(100 * m.mfu, per_gpu,
                                      target.shape.causal_model_flops_per_token, target.hardware,
                                      "mfu (%)", "tokens_per_s / gpus");
  } catch (const InputError& error) {
    throw LocatedError(m.where, fmt::format("[[throughput.measured]] {} on the target's {} × {}: {}",
                                            m.arm, target.cluster.gpus, target.hardware.name,
                                            error.what()));
  }
}

// The [[target.arms]] entry of `arm` (ValidateDecisionSpec allows one per arm); nullptr when
// there is no [target] or no such entry.
const TargetArm* FindTargetArm(const DecisionSpec& spec, const std::string& arm) {
  if (!spec.target) return nullptr;
  for (const TargetArm& a : spec.target->arms) {
    if (a.arm == arm) return &a;
  }
  return nullptr;
}

// The model's tokens/s of an arm on the target: `setup` is its TargetSetup.
ArmThroughput ModelThroughput(const StudyConfig& study, const TargetArm& target_arm,
                              const PerfSetup& setup) {
  const std::string& arm = target_arm.arm;
  ArmThroughput t;
  t.arm = arm;
  if (study.decision.throughput.layout == "arm") {
    try {
      t.estimate = EvaluateLayout(setup, target_arm.layout, "layout");
    } catch (const InputError& error) {
      throw LocatedError(target_arm.layout_where,
                         fmt::format("[[target.arms]] {}: {}", arm, error.what()));
    }
    t.source = fmt::format("mosaic model, the arm's layout {}", ToString(t.estimate->layout));
    if (!t.estimate->estimate.fits) {
      t.why_not = fmt::format("{}'s layout {} does not fit in memory ({:.1f} GB of {:.1f} GB)",
                              arm, ToString(t.estimate->layout),
                              t.estimate->estimate.memory.peak_bytes / 1e9,
                              t.estimate->estimate.capacity_bytes / 1e9);
      return t;
    }
  } else {
    SearchOptions so;
    so.top = 1;
    const SearchResult result = SearchBestLayouts(setup, so);
    if (result.best.empty()) {
      t.why_not = fmt::format("no layout of {} fits on {} × {} ({})", arm, setup.cluster.gpus,
                              setup.hardware.name, result.RejectedText());
      return t;
    }
    t.estimate = LayoutEstimate{result.best[0].layout, result.best[0].estimate};
    t.source = fmt::format("mosaic model, best of {} feasible layouts: {}", result.feasible(),
                           ToString(t.estimate->layout));
  }
  t.known = true;
  t.tokens_per_s_per_gpu = t.estimate->estimate.tokens_per_s_per_gpu;
  t.mfu = t.estimate->estimate.mfu;
  t.dropped_share = t.estimate->estimate.dropped_fraction;
  return t;
}

void Evaluate(const Decision& d, Scenario& s, const std::vector<CriterionResult>& shared) {
  const DecisionSpec& spec = d.study.decision;
  const RuleSpec& rule = *spec.rule;
  const ArmThroughput* def = nullptr;
  const ArmThroughput* ch = nullptr;
  for (const ArmThroughput& a : s.arms) {
    if (a.arm == rule.default_arm) def = &a;
    if (a.arm == rule.challenger) ch = &a;
  }
  AdvantageInputs in;
  in.effective_compute = d.effective_compute;
  in.effective_compute_interval = d.effective_compute_interval;
  if (!d.effective_compute_interval) {
    std::vector<std::string> why;
    for (const ArmFit& f : d.fits) {
      if (!f.no_interval.empty()) why.push_back(f.no_interval);
    }
    in.no_interval = fmt::format("{}", fmt::join(why, "; "));
  }
  in.missing_fit = d.missing_fit;
  in.settle_fit = d.settle_fit;
  if (d.noise && d.noise->used_effective_compute > 0) {
    in.noise_effective_compute = d.noise->used_effective_compute;
  }
  in.throughput_source = s.name;
  if (def == nullptr || !def->known || ch == nullptr || !ch->known) {
    std::vector<std::string> why;
    if (def == nullptr || !def->known) {
      why.push_back(def == nullptr ? "no tokens/s of " + rule.default_arm : def->why_not);
    }
    if (ch == nullptr || !ch->known) {
      why.push_back(ch == nullptr ? "no tokens/s of " + rule.challenger : ch->why_not);
    }
    in.missing_throughput = fmt::format("{}", fmt::join(why, "; "));
  } else {
    s.tokens_per_s_ratio = ch->tokens_per_s_per_gpu / def->tokens_per_s_per_gpu;
    in.tokens_per_s_ratio = s.tokens_per_s_ratio;
    if (d.effective_compute) {
      s.wall_clock = *d.effective_compute * *s.tokens_per_s_ratio;
      if (d.effective_compute_interval) {
        s.wall_clock_interval = Interval{d.effective_compute_interval->low * *s.tokens_per_s_ratio,
                                         d.effective_compute_interval->high * *s.tokens_per_s_ratio};
      }
      const double c = d.target_compute_flops;
      const double l_default = scaling::LossAtCompute(d.law, d.fits[0].fit.theta, c);
      const double l_challenger =
          scaling::LossAtCompute(d.law, d.fits[1].fit.theta, c * *s.tokens_per_s_ratio);
      s.loss_advantage = (l_default - l_challenger) / l_default;
      in.loss_advantage = s.loss_advantage;
    }
  }
  for (const std::string& name : rule.criteria) {
    if (name == "projected_advantage") {
      s.criteria.push_back(ProjectedAdvantage(in, rule));
      continue;
    }
    for (const CriterionResult& c : shared) {
      if (c.name == name) s.criteria.push_back(c);
    }
  }
  s.verdict = ApplyRule(s.criteria, rule);
}

}  // namespace

Decision Decide(const StudyConfig& study, const DecideOptions& options) {
  CheckThreadCount(options.threads);
  const DecisionSpec& spec = study.decision;
  const SourceLocation file = FileLocation(study.origin);
  if (!spec.results) {
    throw LocatedError(file, "the study has no [results] (csv = \"FILE\" or logs = [\"DIR\"]); "
                             "`mosaic decide` needs each arm's losses");
  }
  if (!spec.rule) {
    throw LocatedError(file, "the study has no [rule] (default, challenger, threshold, criteria)");
  }
  CheckResultsExist(*spec.results);
  Decision d;
  d.study = study;
  d.plan = PlanLadder(study);
  if (spec.results->csv.empty()) {
    LoadLogResults(study, d.plan, *spec.results, d.results, d.result_notes);
    d.logs_read = true;
  } else {
    LoadCsvResults(study, *spec.results, d.results);
  }
  for (RungResult& r : d.results) {
    r.compute_flops = PlanRow(d.plan, study.arms[0].name, r.d_model).train_flops;
  }
  const RuleSpec& rule = *spec.rule;
  const DecisionLoss which = spec.results->loss;
  d.law = scaling::FindLaw(spec.fit.law);
  try {
    scaling::PinnedTheta(d.law, spec.fit.pins);
  } catch (const InputError& error) {
    throw InputError(fmt::format("{} [fit] pin: {}", study.origin, error.what()));
  }
  // A result at or below the pinned floor cannot be fitted. Every such result is noted beside the
  // results: one on a rung the fit leaves out is refused by no fit.
  const scaling::LawFloor floor = scaling::PinnedFloor(d.law, spec.fit.pins);
  if (floor.value > 0) {
    for (const RungResult& r : d.results) {
      const std::optional<double> loss = r.Loss(which);
      if (loss && *loss <= floor.value) {
        d.result_notes.push_back(fmt::format(
            "{} at d{}: its {} loss {:g} is at or below the pinned floor {} = {:g}, which the "
            "law cannot reach (check the row, or the pin)",
            r.arm, r.d_model, ToString(which), *loss, fmt::join(floor.params, " + "),
            floor.value));
      }
    }
  }

  // Rungs to fit: those where both compared arms have the deciding loss, or each arm's own.
  std::vector<int64_t> common, all;
  for (const Rung& rung : study.rungs) {
    all.push_back(rung.d_model);
    const RungResult* a = d.Find(rule.default_arm, rung.d_model);
    const RungResult* b = d.Find(rule.challenger, rung.d_model);
    if (a && b && a->Loss(which) && b->Loss(which)) common.push_back(rung.d_model);
  }
  const std::vector<int64_t>& fit_rungs = spec.fit.rungs == "common" ? common : all;
  // Arms with losses at the same rungs are resampled together, rung by rung: losses of one rung
  // share its data order and evaluation, so independent resamples of the two arms would count
  // that shared part twice in the interval.
  const std::vector<int64_t> base_rungs = RungsWithLoss(d, rule.default_arm, fit_rungs);
  const bool paired =
      base_rungs.size() >= 2 && base_rungs == RungsWithLoss(d, rule.challenger, fit_rungs);
  d.fits.push_back(
      FitArm(d, rule.default_arm, fit_rungs, spec.fit.bootstrap, 0, paired, options));
  d.fits.push_back(
      FitArm(d, rule.challenger, fit_rungs, spec.fit.bootstrap, paired ? 0 : 1, paired, options));
  // Reported paired only where both arms have intervals (a fit through every point, or one that
  // failed, has none).
  d.paired_bootstrap = paired && d.fits[0].bootstrap && d.fits[1].bootstrap;
  d.target_compute_flops = TargetCompute(d, d.target_compute_rule);
  if (d.target_compute_flops > 0 && !d.fits[0].rungs.empty()) {
    double least = std::numeric_limits<double>::infinity();
    for (int64_t rung : d.fits[0].rungs) {
      least = std::min(least, PlanRow(d.plan, rule.default_arm, rung).train_flops);
    }
    if (d.target_compute_flops < least) {
      d.target_below_ladder = fmt::format(
          "the target is below the smallest fitted rung ({} FLOPs of {}): the projection runs the "
          "law below its data",
          FormatScientific(least, 3), rule.default_arm);
    }
  }
  const ArmFit& base = d.fits[0];
  const ArmFit& challenger = d.fits[1];
  if (!base.fitted || !challenger.fitted) {
    d.missing_fit = !base.fitted ? base.why_not : challenger.why_not;
    d.settle_fit = !base.fitted ? base.settle : challenger.settle;
    if (spec.fit.rungs == "common" && common.empty()) {
      d.settle_fit.clear();  // the criterion's own: results of both arms at the same rungs
      d.missing_fit = fmt::format("{} and {} have no rung in common with a {} loss", rule.default_arm,
                                  rule.challenger, ToString(which));
    }
  } else if (d.target_compute_flops <= 0) {
    d.missing_fit = "no target budget: " + d.target_compute_rule;
    d.settle_fit = "a target budget ([target] of the study)";
  } else {
    const scaling::Comparison c = scaling::CompareArms(
        d.law, base.fit, challenger.fit, d.target_compute_flops, 1.0,
        base.bootstrap ? &*base.bootstrap : nullptr,
        challenger.bootstrap ? &*challenger.bootstrap : nullptr, spec.fit.confidence);
    d.effective_compute = c.multiplier;
    d.effective_compute_interval = c.multiplier_interval;
    if (!std::isfinite(c.multiplier) || !(c.multiplier > 0)) {
      // A loss at or below the law's floor (a pinned E above the data), or a flat law (alpha = 0),
      // has no compute that reaches it: nothing to decide on.
      d.effective_compute.reset();
      d.effective_compute_interval.reset();
      d.missing_fit = fmt::format(
          "the projection is not finite ({}): the fitted losses do not fall with compute above "
          "the law's floor (check [fit] pin against the losses)",
          c.multiplier);
      d.settle_fit = "a [fit] pin of E below the fitted losses (or no pin on E)";
    }
  }
  // Each fitted arm's loss at the target budget, whether or not the comparison is finite.
  for (ArmFit& f : d.fits) {
    if (f.fitted && d.target_compute_flops > 0) {
      f.target_loss = scaling::LossAtCompute(d.law, f.fit.theta, d.target_compute_flops);
      if (f.bootstrap && !f.bootstrap->theta.empty()) {
        std::vector<double> losses;
        for (const auto& th : f.bootstrap->theta) {
          losses.push_back(scaling::LossAtCompute(d.law, th, d.target_compute_flops));
        }
        f.target_loss_interval = scaling::PercentileInterval(std::move(losses), spec.fit.confidence);
      }
    }
  }

  // Sensitivity: the same projection with each arm fitted on every rung it ran.
  if (spec.fit.rungs == "common" && d.target_compute_flops > 0) {
    const ArmFit a = FitArm(d, rule.default_arm, all, 0, 0, false, options);
    const ArmFit b = FitArm(d, rule.challenger, all, 0, 1, false, options);
    if (a.fitted && b.fitted && (a.rungs != d.fits[0].rungs || b.rungs != d.fits[1].rungs)) {
      d.effective_compute_all_rungs =
          scaling::CompareArms(d.law, a.fit, b.fit, d.target_compute_flops, 1.0, nullptr, nullptr,
                               spec.fit.confidence)
              .multiplier;
      d.all_rungs_note = fmt::format("{} on d{}, {} on d{}", a.arm, fmt::join(a.rungs, ", d"),
                                     b.arm, fmt::join(b.rungs, ", d"));
    }
  }

  // Effective compute at each rung where an arm and the default both have a loss.
  if (base.fitted) {
    for (const RungResult& r : d.results) {
      if (r.arm == rule.default_arm || !r.Loss(which)) continue;
      const RungResult* def = d.Find(rule.default_arm, r.d_model);
      if (def == nullptr || !def->Loss(which)) continue;
      const double c_def = scaling::ComputeForLoss(d.law, base.fit.theta, *def->Loss(which));
      const double c_arm = scaling::ComputeForLoss(d.law, base.fit.theta, *r.Loss(which));
      const double multiplier = c_arm / c_def;
      if (std::isfinite(multiplier) && multiplier > 0) {
        d.rung_multipliers.push_back({r.arm, r.d_model, multiplier});
      }
    }
  }

  if (spec.noise) {
    NoiseSummary n;
    n.spec = *spec.noise;
    const RungResult* def = d.Find(rule.default_arm, n.spec.d_model);
    if (def && def->Loss(which)) {
      n.default_loss = *def->Loss(which);
    } else if (base.fitted) {
      n.default_loss = scaling::LossAtCompute(
          d.law, base.fit.theta, PlanRow(d.plan, study.arms[0].name, n.spec.d_model).train_flops);
    }
    // Identical runs cannot spread by more than the loss above the floor E: one of them would
    // sit below what any amount of compute reaches (a spread in the wrong unit, or a floor
    // pinned too high).
    if (const int e = d.law.ParamIndex("E"); base.fitted && n.default_loss > 0 && e >= 0) {
      const double floor_loss = d.law.ToValue(e, base.fit.theta[e]);
      if (n.spec.loss_spread >= n.default_loss - floor_loss) {
        throw FieldError(
            n.spec.loss_spread_where, "loss_spread", fmt::format("{:g}", n.spec.loss_spread),
            fmt::format("below {}'s loss above its floor at d{} ({:.4f} − E {:.4g} = {:.4f}): "
                        "identical runs spread by less than the loss any compute can still "
                        "remove (nats)",
                        rule.default_arm, n.spec.d_model, n.default_loss, floor_loss,
                        n.default_loss - floor_loss));
      }
    }
    if (base.fitted && n.default_loss > 0) {
      n.derived_effective_compute =
          scaling::ComputeForLoss(d.law, base.fit.theta, n.default_loss) /
              scaling::ComputeForLoss(d.law, base.fit.theta, n.default_loss + n.spec.loss_spread) -
          1;
    }
    n.used_effective_compute =
        n.spec.effective_compute_spread > 0 ? n.spec.effective_compute_spread
                                            : n.derived_effective_compute;
    if (d.effective_compute && n.used_effective_compute > 0) {
      d.inside_noise = std::abs(*d.effective_compute - 1) < n.used_effective_compute;
    }
    d.noise = n;
  }

  // Criteria that do not depend on the throughput source.
  std::vector<CriterionResult> shared;
  const int64_t largest = std::max_element(study.rungs.begin(), study.rungs.end(),
                                           [](const Rung& a, const Rung& b) {
                                             return a.d_model < b.d_model;
                                           })->d_model;
  {
    LargestRungInputs in;
    in.d_model = largest;
    if (const RungResult* r = d.Find(rule.default_arm, largest)) in.default_loss = r->Loss(which);
    if (const RungResult* r = d.Find(rule.challenger, largest)) in.challenger_loss = r->Loss(which);
    in.settle_default = SettleRun(d, rule.default_arm, largest);
    in.settle_challenger = SettleRun(d, rule.challenger, largest);
    if (!common.empty()) {
      in.common_d_model = common.back();
      in.common_default_loss = *d.Find(rule.default_arm, common.back())->Loss(which);
      in.common_challenger_loss = *d.Find(rule.challenger, common.back())->Loss(which);
    }
    if (spec.noise) in.loss_spread = spec.noise->loss_spread;
    shared.push_back(WinsAtLargestRung(in, rule));
  }
  shared.push_back(ContextExtensionSmooth(spec.context_extension, rule, largest));
  {
    std::vector<std::string> anomalies, without_grad_norm;
    int runs_read = 0;
    for (const RungResult& r : d.results) {
      if (r.arm != rule.challenger) continue;
      ++runs_read;
      anomalies.insert(anomalies.end(), r.anomalies.begin(), r.anomalies.end());
      if (d.logs_read && !r.logs_grad_norm) without_grad_norm.push_back(r.run);
    }
    shared.push_back(NoAnomalies(d.logs_read, runs_read, anomalies, rule, without_grad_norm));
  }

  // One scenario per throughput source. Each arm's target setup is prepared once, for the
  // measured rows' checks and the model's estimate alike.
  std::map<std::string, PerfSetup> target_setups;
  const auto target_setup = [&](const TargetArm& target_arm) -> const PerfSetup& {
    auto it = target_setups.find(target_arm.arm);
    if (it == target_setups.end()) {
      it = target_setups.emplace(target_arm.arm, TargetSetup(study, target_arm)).first;
    }
    return it->second;
  };
  if (!spec.throughput.measured.empty()) {
    Scenario s;
    s.name = "measured";
    s.description = "measured tokens/s ([[throughput.measured]])";
    for (const Arm& arm : study.arms) {
      ArmThroughput t;
      t.arm = arm.name;
      t.why_not = fmt::format("no measured tokens/s of {}", arm.name);
      for (const MeasuredThroughput& m : spec.throughput.measured) {
        if (m.arm != arm.name) continue;
        if (spec.target) {
          // Taken as measured on the target: the arm's target model is what checks it.
          const TargetArm* target_arm = FindTargetArm(spec, arm.name);
          if (target_arm == nullptr) {
            throw LocatedError(m.where,
                               fmt::format("[[throughput.measured]] {}: no [[target.arms]] entry "
                                           "for {}. Violated constraint: a measured throughput "
                                           "names an arm with its model on the target, which "
                                           "checks it against the device's peak",
                                           m.arm, m.arm));
          }
          CheckMeasuredThroughput(m, target_setup(*target_arm));
          if (m.gpus != spec.target->gpus) {
            s.notes.push_back(fmt::format(
                "{}'s tokens/s was measured on {} GPUs and is taken per GPU on the target's {}: "
                "its layout, communication and pipeline bubble at {} GPUs are not what that run "
                "had",
                m.arm, m.gpus, spec.target->gpus, spec.target->gpus));
          }
        }
        t.known = true;
        t.why_not.clear();
        t.tokens_per_s_per_gpu = m.tokens_per_s / static_cast<double>(m.gpus);
        t.mfu = m.mfu;
        t.dropped_share = m.dropped_share;
        t.source = m.source;
      }
      s.arms.push_back(std::move(t));
    }
    d.scenarios.push_back(std::move(s));
  }
  if (spec.throughput.model) {
    Scenario s;
    s.name = "model";
    const TargetSpec& t = *spec.target;
    // A device file is named by the device it describes, not its path.
    const std::string device = DeviceName(t.hardware);
    s.description = fmt::format("mosaic's performance model on {} × {}, batch {} × {}, {} ({})",
                                t.gpus, device, t.batch_seqs,
                                t.seq_len > 0 ? t.seq_len : study.seq_len, t.format,
                                spec.throughput.layout == "search" ? "best layout per arm"
                                                                   : "each arm's own layout");
    for (const Arm& arm : study.arms) {
      const TargetArm* target_arm = FindTargetArm(spec, arm.name);
      if (target_arm == nullptr) {
        ArmThroughput none;
        none.arm = arm.name;
        none.why_not = fmt::format("no [[target.arms]] entry for {}", arm.name);
        s.arms.push_back(std::move(none));
        continue;
      }
      s.arms.push_back(ModelThroughput(study, *target_arm, target_setup(*target_arm)));
    }
    d.scenarios.push_back(std::move(s));
  }
  if (d.scenarios.empty()) {
    Scenario s;
    s.name = "none";
    s.description = "no throughput given ([throughput] has no measured rows and model = false)";
    d.scenarios.push_back(std::move(s));
  }
  for (Scenario& s : d.scenarios) {
    // Throughput measured while dropping tokens, beside losses of dropless runs: the dropping
    // run does fewer expert rows than the dropless one would, so the ratio leans its way.
    if (spec.results->loss == DecisionLoss::kDropless) {
      for (const ArmThroughput& a : s.arms) {
        if (a.known && a.dropped_share > 0) {
          // The model scenario's share is the performance model's prediction, not a measurement.
          s.notes.push_back(fmt::format(
              "{}'s tokens/s {} {:.2f}% of routed assignments, while the deciding losses are "
              "dropless: a dropless run of {} computes every assignment and waits for its most "
              "loaded rank, so the tokens/s ratio leans toward it",
              a.arm, s.name == "model" ? "is predicted dropping" : "was measured dropping",
              100 * a.dropped_share, a.arm));
        }
      }
    }
    Evaluate(d, s, shared);
  }
  return d;
}

std::vector<std::string> StudyInputFiles(const std::string& study_path, const StudyConfig& study) {
  std::vector<std::string> inputs = {study_path, study.model};
  // The target's device and arms' model files, as the study reader resolved them (beside it).
  if (study.decision.target) {
    auto add_file = [&](const std::string& path) {
      if (IsWrittenAsPath(path)) inputs.push_back(path);
    };
    add_file(study.decision.target->hardware);
    for (const TargetArm& arm : study.decision.target->arms) add_file(arm.model);
  }
  if (study.decision.results) {
    // Results not yet written are no input (`mosaic plan` runs before them; Decide refuses
    // them at their key).
    const ResultsSpec& results = *study.decision.results;
    if (!results.csv.empty()) inputs.push_back(results.csv);
    std::vector<std::string> logs;
    for (const std::string& dir : results.logs) {
      std::error_code ignored;
      if (std::filesystem::exists(dir, ignored)) logs.push_back(dir);
    }
    if (!logs.empty()) {
      for (const std::string& file : runs::LogFiles(runs::DiscoverRuns(logs))) {
        inputs.push_back(file);
      }
    }
  }
  return inputs;
}

}  // namespace mosaic
