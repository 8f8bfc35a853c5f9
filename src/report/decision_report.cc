// Text and JSON renderings of a decision; the HTML page is in decision_html.cc.
#include "mosaic/report/decision_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"
#include "decision_format.h"

namespace mosaic::report {
namespace {

using Json = nlohmann::ordered_json;

Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
Json Optional(const std::optional<double>& v) { return v ? Number(*v) : Json(nullptr); }
Json IntervalJson(const std::optional<scaling::Interval>& i) {
  if (!i) return nullptr;
  return Json::array({Number(i->low), Number(i->high)});
}

std::string Loss(const std::optional<double>& v) { return v ? fmt::format("{:.4f}", *v) : "—"; }
std::string Share(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f}%", 100 * *v) : "—";
}
std::string IntervalText(const std::optional<scaling::Interval>& i, int digits = 3) {
  if (!i || !std::isfinite(i->low)) return "";
  return fmt::format(" [{:.{}f}, {:.{}f}]", i->low, digits, i->high, digits);
}

const Decision::RungMultiplier* FindMultiplier(const Decision& d, const std::string& arm,
                                               int64_t d_model) {
  for (const auto& m : d.rung_multipliers) {
    if (m.arm == arm && m.d_model == d_model) return &m;
  }
  return nullptr;
}

std::string FitLine(const Decision& d, const ArmFit& f) {
  if (!f.fitted) return fmt::format("  {:<14} not fitted: {}\n", f.arm, f.why_not);
  std::string params;
  for (size_t i = 0; i < f.fit.params.size(); ++i) {
    const scaling::FittedParam& p = f.fit.params[i];
    params += fmt::format("{} {:.6g}{}", p.name, p.value, p.pinned ? " (pinned)" : "");
    if (!p.pinned && f.bootstrap) params += IntervalText(f.bootstrap->params[i], 4);
    params += "; ";
  }
  std::string out = fmt::format("  {:<14} {}on {} {} (d{})\n", f.arm, params, f.fit.points,
                                f.fit.points == 1 ? "point" : "points", fmt::join(f.rungs, ", d"));
  if (d.target_compute_flops > 0) {
    out += fmt::format("  {:<14} loss at the target {:.4f}{}\n", "", f.target_loss,
                       IntervalText(f.target_loss_interval, 4));
  }
  for (const std::string& caution : f.Cautions()) {
    out += fmt::format("  {:<14} caution: {}\n", "", caution);
  }
  return out;
}

}  // namespace

std::string RenderDecisionText(const Decision& d) {
  const DecisionSpec& spec = d.study.decision;
  const RuleSpec& rule = *spec.rule;
  const DecisionLoss which = spec.results->loss;
  std::string out = fmt::format("{}: should {} replace {}?\n", d.study.title, rule.challenger,
                                rule.default_arm);
  out += fmt::format("study {}; results {}; the {} loss decides\n", d.study.origin,
                     spec.results->csv.empty() ? fmt::format("{}", fmt::join(spec.results->logs, ", "))
                                               : spec.results->csv,
                     ToString(which));

  out += fmt::format("\nLadder results (C = {}'s training FLOPs, {} convention)\n",
                     d.study.arms[0].name, ToString(d.study.flop_convention));
  out += fmt::format("  {:<6} {:>8}  {:<14} {:>9} {:>10} {:>8}  {}\n", "size", "C", "arm",
                     "dropless", "with drop", "dropped",
                     fmt::format("effective compute vs {}", rule.default_arm));
  for (const Rung& rung : d.study.rungs) {
    bool first = true;
    for (const Arm& arm : d.study.arms) {
      const RungResult* r = d.Find(arm.name, rung.d_model);
      if (r == nullptr) continue;
      std::string ec = "—";
      if (arm.name == rule.default_arm) {
        ec = "1 (the default)";
      } else if (const auto* m = FindMultiplier(d, arm.name, rung.d_model)) {
        ec = fmt::format("{:.3f}×", m->effective_compute);
      }
      out += fmt::format("  {:<6} {:>8}  {:<14} {:>9} {:>10} {:>8}  {}\n",
                         first ? fmt::format("d{}", rung.d_model) : "",
                         first ? FormatScientific(r->compute_flops) : "", arm.name,
                         Loss(r->loss_dropless), Loss(r->loss_with_drop), Share(r->dropped_share),
                         ec);
      first = false;
    }
    if (first) out += fmt::format("  {:<6} no results\n", fmt::format("d{}", rung.d_model));
  }
  for (const std::string& note : d.result_notes) out += "  note: " + note + "\n";

  out += fmt::format("\nFits: {} ({}), on {}\n", d.law.formula, d.law.name,
                     spec.fit.rungs == "common" ? "the rungs both arms ran" : "every rung of each arm");
  for (const ArmFit& f : d.fits) out += FitLine(d, f);
  if (spec.fit.bootstrap > 0) {
    const bool same_rungs = d.fits.size() == 2 && d.fits[0].rungs == d.fits[1].rungs;
    const bool any_interval =
        std::any_of(d.fits.begin(), d.fits.end(), [](const ArmFit& f) { return f.bootstrap; });
    // Why there are none, once: no arm is fitted, or each fitted arm's reason (one rung, too
    // few points, resamples without spread).
    std::vector<std::string> why_none;
    for (const ArmFit& f : d.fits) {
      if (f.fitted && !f.no_interval.empty()) why_none.push_back(f.no_interval);
    }
    const std::string none_computed =
        why_none.empty() ? std::string("none computed: no arm is fitted")
                         : fmt::format("none computed: {}", fmt::join(why_none, "; "));
    out += fmt::format("  intervals: {:g}% percentile, bootstrap by rung, {} resamples, {}\n",
                       100 * spec.fit.confidence, spec.fit.bootstrap,
                       d.paired_bootstrap ? "paired: both arms are fitted on the same rungs and "
                                            "each resample draws the same rungs of both (none "
                                            "for an arm fitted on one rung)"
                       : !any_interval    ? none_computed
                       : same_rungs       ? "each arm resampled on its own (none for an arm "
                                            "fitted on one rung)"
                                          : "each arm resampled on its own, fitted on different "
                                            "rungs (none for an arm fitted on one rung)");
  }

  out += "\nTarget";
  if (spec.target && !spec.target->description.empty()) out += ": " + spec.target->description;
  out += "\n";
  if (d.target_compute_flops > 0) {
    out += fmt::format("  C = {} FLOPs ({})\n", FormatScientific(d.target_compute_flops, 4),
                       d.target_compute_rule);
    if (!d.target_below_ladder.empty()) out += "  note: " + d.target_below_ladder + "\n";
  } else {
    out += fmt::format("  C unknown: {}\n", d.target_compute_rule);
  }
  if (d.effective_compute) {
    out += fmt::format("  effective compute of {} at the target: {:.3f}×{}\n", rule.challenger,
                       *d.effective_compute, IntervalText(d.effective_compute_interval));
  } else {
    out += fmt::format("  effective compute at the target unknown: {}\n", d.missing_fit);
  }
  if (const std::string sensitivity = decision_format::SensitivityText(d); !sensitivity.empty()) {
    out += "  " + sensitivity + "\n";
  }
  if (d.noise) {
    const NoiseSummary& n = *d.noise;
    out += fmt::format("  noise: identical runs at d{} spread {:.4f} in loss", n.spec.d_model,
                       n.spec.loss_spread);
    if (n.spec.runs > 0) out += fmt::format(" ({} runs)", n.spec.runs);
    std::vector<std::string> as_compute;
    if (n.spec.effective_compute_spread > 0) {
      as_compute.push_back(fmt::format("{:.1f}% effective compute as stated ({})",
                                       100 * n.spec.effective_compute_spread, n.spec.source));
    }
    if (n.derived_effective_compute > 0) {
      as_compute.push_back(fmt::format("{:.1f}% on {}'s fit at its d{} loss {:.4f}",
                                       100 * n.derived_effective_compute, rule.default_arm,
                                       n.spec.d_model, n.default_loss));
    }
    if (!as_compute.empty()) out += fmt::format(": {}", fmt::join(as_compute, "; "));
    out += "\n";
    if (const std::string noise = decision_format::NoiseComparisonText(d); !noise.empty()) {
      out += "  " + noise + "\n";
    }
  }

  out += "\nThroughput (tokens/s per GPU, MFU, dropped share)\n";
  for (const Scenario& s : d.scenarios) {
    if (s.arms.empty()) {
      out += fmt::format("  {}: {}\n", s.name, s.description);
      continue;
    }
    out += fmt::format("  {} — {}\n", s.name, s.description);
    for (const ArmThroughput& a : s.arms) {
      if (!a.known) {
        out += fmt::format("    {:<14} unknown: {}\n", a.arm, a.why_not);
        continue;
      }
      out += fmt::format("    {:<14} {:>9.0f} {:>7} {:>8}  {}\n", a.arm, a.tokens_per_s_per_gpu,
                         a.mfu > 0 ? fmt::format("{:.2f}%", 100 * a.mfu) : "—",
                         a.dropped_share >= 0 ? fmt::format("{:.2f}%", 100 * a.dropped_share) : "—",
                         a.source);
    }
    if (const std::string ratio = decision_format::ThroughputRatioText(d, s); !ratio.empty()) {
      out += "    " + ratio + "\n";
    }
    for (const std::string& note : s.notes) out += "    note: " + note + "\n";
  }

  for (const Scenario& s : d.scenarios) {
    out += fmt::format("\nCriteria with {} (threshold {:g}%, as {})\n", s.ThroughputText(),
                       100 * rule.threshold, rule.measure == "loss" ? "loss" : "effective compute");
    char letter = 'a';
    for (const CriterionResult& c : s.criteria) {
      out += fmt::format("  ({}) {:<8} {}\n", letter++, ToString(c.status), c.title);
      out += fmt::format("      {}\n", c.reason);
      if (!c.caveat.empty()) out += fmt::format("      but {}\n", c.caveat);
      if (c.status == CriterionStatus::kUnknown && !c.settle.empty()) {
        out += fmt::format("      to settle: {}\n", c.settle);
      }
    }
    out += fmt::format("Verdict ({}): {}\n", s.name == "none" ? s.ThroughputText() : s.name,
                       s.verdict.summary);
  }
  if (d.inside_noise) {
    out += fmt::format("Note: the projected effective-compute gain lies inside the run-to-run "
                       "noise of identical runs.\n");
  }
  return out;
}

std::string RenderDecisionJson(const Decision& d) {
  const DecisionSpec& spec = d.study.decision;
  const RuleSpec& rule = *spec.rule;
  Json j;
  j["study"] = {{"name", d.study.name},     {"title", d.study.title},
                {"origin", d.study.origin}, {"default", rule.default_arm},
                {"challenger", rule.challenger}};
  j["results_source"] = spec.results->csv.empty() ? Json(spec.results->logs) : Json(spec.results->csv);
  j["deciding_loss"] = ToString(spec.results->loss);
  Json results = Json::array();
  for (const RungResult& r : d.results) {
    Json e = {{"arm", r.arm},
              {"d_model", r.d_model},
              {"compute_flops", Number(r.compute_flops)},
              {"loss_dropless", Optional(r.loss_dropless)},
              {"loss_with_drop", Optional(r.loss_with_drop)},
              {"dropped_share", Optional(r.dropped_share)},
              {"run", r.run},
              {"source", r.source},
              {"anomalies", r.anomalies}};
    const auto* m = FindMultiplier(d, r.arm, r.d_model);
    e["effective_compute"] = m ? Number(m->effective_compute) : Json(nullptr);
    results.push_back(e);
  }
  j["results"] = results;
  j["result_notes"] = d.result_notes;
  Json fits = Json::array();
  for (const ArmFit& f : d.fits) {
    Json e = {{"arm", f.arm}, {"fitted", f.fitted}, {"rungs", f.rungs}};
    if (!f.fitted) {
      e["why_not"] = f.why_not;
    } else {
      Json params = Json::object(), intervals = Json::object();
      for (size_t i = 0; i < f.fit.params.size(); ++i) {
        params[f.fit.params[i].name] = Number(f.fit.params[i].value);
        if (f.bootstrap) intervals[f.fit.params[i].name] = IntervalJson(f.bootstrap->params[i]);
      }
      e["law"] = d.law.name;
      e["formula"] = d.law.formula;
      e["params"] = params;
      e["pinned"] = Json::array();
      for (const auto& p : f.fit.params) {
        if (p.pinned) e["pinned"].push_back(p.name);
      }
      if (f.bootstrap) {
        e["intervals"] = intervals;
        e["bootstrap"] = {{"resamples", f.bootstrap->resamples},
                          {"failed", f.bootstrap->failed},
                          {"underdetermined", f.bootstrap->underdetermined},
                          {"confidence", f.bootstrap->confidence},
                          {"by", "rung"}};
      }
      e["objective"] = Number(f.fit.objective);
      e["points"] = f.fit.points;
      e["target_loss"] = d.target_compute_flops > 0 ? Number(f.target_loss) : Json(nullptr);
      e["target_loss_interval"] = IntervalJson(f.target_loss_interval);
      e["cautions"] = f.Cautions();
    }
    fits.push_back(e);
  }
  j["fits"] = fits;
  j["fit_rungs"] = spec.fit.rungs;
  j["target"] = {{"description", spec.target ? spec.target->description : ""},
                 {"tokens", spec.target && spec.target->tokens > 0 ? Number(spec.target->tokens)
                                                                 : Json(nullptr)},
                 {"compute_flops", d.target_compute_flops > 0 ? Number(d.target_compute_flops)
                                                              : Json(nullptr)},
                 {"compute_rule", d.target_compute_rule},
                 {"below_ladder", d.target_below_ladder},
                 {"effective_compute", Optional(d.effective_compute)},
                 {"effective_compute_interval", IntervalJson(d.effective_compute_interval)},
                 {"paired_bootstrap", d.paired_bootstrap},
                 {"missing", d.missing_fit},
                 {"effective_compute_all_rungs", Optional(d.effective_compute_all_rungs)},
                 {"all_rungs", d.all_rungs_note}};
  if (d.noise) {
    j["noise"] = {{"loss_spread", d.noise->spec.loss_spread},
                  {"d_model", d.noise->spec.d_model},
                  {"runs", d.noise->spec.runs},
                  {"source", d.noise->spec.source},
                  {"stated_effective_compute", Number(d.noise->spec.effective_compute_spread)},
                  {"derived_effective_compute", Number(d.noise->derived_effective_compute)},
                  {"used_effective_compute", Number(d.noise->used_effective_compute)},
                  {"default_loss", Number(d.noise->default_loss)},
                  {"inside_noise", d.inside_noise}};
  } else {
    j["noise"] = nullptr;
  }
  Json scenarios = Json::array();
  for (const Scenario& s : d.scenarios) {
    Json arms = Json::array();
    for (const ArmThroughput& a : s.arms) {
      Json e = {{"arm", a.arm}, {"known", a.known}};
      if (!a.known) e["why_not"] = a.why_not;
      e["tokens_per_s_per_gpu"] = a.known ? Number(a.tokens_per_s_per_gpu) : Json(nullptr);
      e["mfu"] = a.mfu > 0 ? Number(a.mfu) : Json(nullptr);
      e["dropped_share"] = a.dropped_share >= 0 ? Number(a.dropped_share) : Json(nullptr);
      e["source"] = a.source;
      e["estimate"] = a.estimate ? EstimateJson(a.estimate->layout, a.estimate->estimate)
                                 : Json(nullptr);
      arms.push_back(e);
    }
    Json criteria = Json::array();
    for (const CriterionResult& c : s.criteria) {
      criteria.push_back({{"name", c.name},
                          {"title", c.title},
                          {"status", ToString(c.status)},
                          {"reason", c.reason},
                          {"missing", c.missing},
                          {"settle", c.settle},
                          {"caveat", c.caveat}});
    }
    scenarios.push_back({{"throughput", s.name},
                         {"description", s.description},
                         {"arms", arms},
                         {"tokens_per_s_ratio", Optional(s.tokens_per_s_ratio)},
                         {"wall_clock", Optional(s.wall_clock)},
                         {"wall_clock_interval", IntervalJson(s.wall_clock_interval)},
                         {"loss_advantage", Optional(s.loss_advantage)},
                         {"criteria", criteria},
                         {"notes", s.notes},
                         {"verdict",
                          {{"chosen_arm", s.verdict.chosen_arm},
                           {"challenger_picked", s.verdict.challenger_picked},
                           {"decided_by", s.verdict.decided_by},
                           {"caveats", s.verdict.caveats},
                           {"summary", s.verdict.summary}}}});
  }
  j["scenarios"] = scenarios;
  j["rule"] = {{"threshold", rule.threshold}, {"measure", rule.measure}, {"criteria", rule.criteria}};
  return DumpJson(j) + "\n";
}

namespace decision_format {

std::string SensitivityText(const Decision& d) {
  if (!d.effective_compute_all_rungs) return "";
  return fmt::format("sensitivity, not used to decide: fitted on every rung each arm ran ({}): "
                     "{:.3f}×",
                     d.all_rungs_note, *d.effective_compute_all_rungs);
}

std::string NoiseComparisonText(const Decision& d) {
  if (!d.noise || !d.effective_compute) return "";
  const double noise = d.noise->used_effective_compute;
  std::string text = fmt::format("the projected effective-compute gain {} is {} the noise "
                                 "({:.1f}%)",
                                 FormatSignedPercent(*d.effective_compute - 1),
                                 d.inside_noise ? "INSIDE" : "outside", 100 * noise);
  const auto& interval = d.effective_compute_interval;
  if (!d.inside_noise && interval && std::isfinite(interval->low) &&
      std::isfinite(interval->high)) {
    // The end of the interval nearest no change, and whether it lies within the noise.
    const bool gain = *d.effective_compute > 1;
    const double near_end = gain ? interval->low : interval->high;
    if (std::abs(near_end - 1) < noise || (gain ? near_end < 1 : near_end > 1)) {
      text += fmt::format(", but its {:g}% interval reaches inside it ({} end {})",
                          100 * d.study.decision.fit.confidence, gain ? "low" : "high",
                          FormatSignedPercent(near_end - 1));
    }
  }
  return text;
}

std::string ThroughputRatioText(const Decision& d, const Scenario& s) {
  if (!s.tokens_per_s_ratio) return "";
  const RuleSpec& rule = *d.study.decision.rule;
  std::string text = fmt::format("tokens/s ratio {} / {} = {:.3f}", rule.challenger,
                                 rule.default_arm, *s.tokens_per_s_ratio);
  if (s.wall_clock) {
    text += fmt::format("; wall-clock advantage {:.3f}×{}", *s.wall_clock,
                        IntervalText(s.wall_clock_interval));
  }
  return text;
}

}  // namespace decision_format
}  // namespace mosaic::report
