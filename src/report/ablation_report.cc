// The ablation's text and JSON reports, and the short texts both reports share.
#include "mosaic/report/ablation_report.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/terminal_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ablation_format.h"

namespace mosaic::report {

using runs::Ablation;
using runs::AblationRow;
using runs::ComparedPoint;
using runs::DiagMetricKind;
using runs::Finding;
using runs::LoggedTwice;
using runs::LoopDiagnostics;
using runs::LoopMetric;
using runs::RunHealth;

namespace ablation_format {

// Values past kFixedLimit (a loss of 1e308 a run logged) are written in scientific notation,
// which keeps the table's columns; fixed-point would spell out every digit.
constexpr double kFixedLimit = 1e9;

std::string Signed(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  if (std::abs(value) >= kFixedLimit) return fmt::format("{:+.{}e}", value, decimals);
  return fmt::format("{:+.{}f}", value, decimals);
}

int Decimals(const Ablation& ablation, int base) {
  double scale = 0;
  for (const AblationRow& r : ablation.rows) {
    for (double v : {r.final_point.value, r.final_point.base_value}) {
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    }
  }
  const int extra = scale > 0 && scale < 1 ? static_cast<int>(-std::floor(std::log10(scale))) : 0;
  return std::min(base + extra, 15);
}

std::string Fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  if (std::abs(value) >= kFixedLimit) return fmt::format("{:.{}e}", value, decimals);
  return fmt::format("{:.{}f}", value, decimals);
}

std::string StepRanges(const std::vector<LoggedTwice>& logged_twice) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const LoggedTwice& l : logged_twice) ranges.emplace_back(l.from_step, l.to_step);
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  std::vector<std::string> parts;
  for (const auto& [from, to] : merged) parts.push_back(fmt::format("{}–{}", from, to));
  return fmt::format("{}", fmt::join(parts, ", "));
}

namespace {

std::string Steps(const std::vector<int64_t>& steps) {
  constexpr size_t kShown = 4;
  std::vector<int64_t> shown(steps.begin(), steps.begin() + std::min(steps.size(), kShown));
  std::string text = fmt::format("{}", fmt::join(shown, ", "));
  if (steps.size() > kShown) text += fmt::format(" (+{})", steps.size() - kShown);
  return text;
}

std::string KeptPass(runs::RestartPolicy policy) {
  switch (policy) {
    case runs::RestartPolicy::kFirst: return "first pass kept";
    case runs::RestartPolicy::kLast: return "last pass kept";
    case runs::RestartPolicy::kAll: return "both passes kept";
  }
  return "";
}

}  // namespace

std::vector<FindingGroup> GroupByKind(const std::vector<Finding>& findings) {
  std::vector<FindingGroup> groups;
  for (const Finding& f : findings) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const FindingGroup& g) { return g.kind == f.kind; });
    if (it == groups.end()) {
      groups.push_back({f.kind, 0, {}, &f});
      it = groups.end() - 1;
    }
    ++it->tags;
    it->steps.insert(it->steps.end(), f.steps.begin(), f.steps.end());
  }
  for (FindingGroup& g : groups) {
    std::sort(g.steps.begin(), g.steps.end());
    g.steps.erase(std::unique(g.steps.begin(), g.steps.end()), g.steps.end());
  }
  return groups;
}

std::string GroupText(const FindingGroup& g) {
  const Finding& f = *g.first;
  if (g.tags == 1) {
    return fmt::format("{}{}: {}", f.tag.empty() ? "" : f.tag + ": ", runs::ToString(f.kind),
                       f.message);
  }
  return fmt::format("{} in {} tags{} (e.g. {}{})", runs::ToString(g.kind), g.tags,
                     g.steps.empty() ? "" : " at steps " + Steps(g.steps),
                     f.tag.empty() ? "" : f.tag + ": ", f.message);
}

std::string HealthSummary(const RunHealth& h) {
  std::vector<std::string> parts;
  if (!h.logged_twice.empty()) {
    parts.push_back(fmt::format("logged twice {} ({})", StepRanges(h.logged_twice),
                                KeptPass(h.policy)));
  }
  for (const Finding& f : h.non_finite) {
    parts.push_back(fmt::format("non-finite {} at {}", f.tag, Steps(f.steps)));
  }
  for (const Finding& f : h.spikes) {
    parts.push_back(fmt::format("spike{} {} at {}", f.steps.size() == 1 ? "" : "s", f.tag,
                                Steps(f.steps)));
  }
  for (const FindingGroup& g : GroupByKind(h.other)) {
    parts.push_back(g.tags > 1 ? fmt::format("{} in {} tags", runs::ToString(g.kind), g.tags)
                    : g.first->tag.empty()
                        ? std::string(runs::ToString(g.kind))
                        : fmt::format("{} {}", runs::ToString(g.kind), g.first->tag));
  }
  if (h.end == runs::RunEnd::kEndedEarly) {
    parts.push_back(fmt::format("ended early at step {}", h.last_step));
  }
  if (parts.empty()) return "ok";
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string ComparedAtShort(const AblationRow& row) {
  const ComparedPoint& p = row.final_point;
  switch (runs::ComparedEndOf(row)) {
    case runs::ComparedEnd::kFraction:
      return fmt::format("f {:.3f}: {} ↔ {:g}{}", p.fraction, p.step, p.base_step,
                         p.base_interpolated ? " (interp.)" : "");
    case runs::ComparedEnd::kBothFinal:
      return fmt::format("final {}", p.step);
    case runs::ComparedEnd::kRunFinal:
      return fmt::format("{} (run's final; baseline to {})", p.step, row.base_tag_steps);
    case runs::ComparedEnd::kBaseFinal:
      return fmt::format("{} (baseline's final; run to {})", p.step, row.run_tag_steps);
    case runs::ComparedEnd::kLastCommon:
      break;
  }
  return fmt::format("{} (last common)", p.step);
}

std::string InsideText(const AblationRow& row) {
  return row.inside_offset_uncertainty ? "inside" : "outside";
}

std::string FirstMetric(const Ablation& a, DiagMetricKind kind) {
  for (const AblationRow& row : a.rows) {
    for (const std::string& m : row.diagnostics.metrics) {
      if (runs::ClassifyDiagMetric(m) == kind) return m;
    }
  }
  return "";
}

}  // namespace ablation_format

namespace {

using namespace ablation_format;

std::string G4(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "n/a"; }

// A left-aligned text table with columns separated by two spaces; `right` columns are aligned
// right.
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows, const std::set<size_t>& right,
                  const std::string& indent = "  ") {
  auto width = [](const std::string& s) { return DisplayWidth(s); };  // terminal columns
  std::vector<size_t> widths(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) widths[i] = width(header[i]);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], width(row[i]));
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = indent;
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string pad(widths[i] - width(cells[i]), ' ');
      const bool last = i + 1 == cells.size();
      out += right.count(i) ? pad + cells[i] : cells[i] + (last ? "" : pad);
      if (!last) out += "  ";
    }
    while (out.size() > indent.size() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string Loop(int loop) { return fmt::format("cH{:02}", loop); }

std::string DiagnosticsText(const Ablation& a) {
  std::string out;
  bool any = false;
  for (const AblationRow& row : a.rows) any = any || !row.diagnostics.empty();
  if (!any) return "No per-loop diagnostics (no module_diag columns with a loop `cH<n>`).\n";
  out += "Per-loop diagnostics (module_diag; per loop and branch, the mean over layers at the last "
         "diagnostic step;\ngrowth = last / first mean; lowest = the layer whose value fell most, "
         "last / first):\n";
  for (const AblationRow& row : a.rows) {
    const LoopDiagnostics& d = row.diagnostics;
    if (d.empty()) {
      out += fmt::format("\n  {}: no per-loop diagnostics\n", row.run);
      continue;
    }
    out += fmt::format("\n  {}: {} columns, {} loops, last step {}", row.run, d.columns,
                       d.loops.size(), d.last_step);
    if (!d.zero_columns.empty()) {
      out += fmt::format("; {} always-zero column{} ignored ({}{})", d.zero_columns.size(),
                         d.zero_columns.size() == 1 ? "" : "s", d.zero_columns.front(),
                         d.zero_columns.size() > 1 ? ", …" : "");
    }
    out += "\n";
    std::vector<std::string> header = {"loop", "branch"};
    for (const std::string& m : d.metrics) {
      const DiagMetricKind kind = runs::ClassifyDiagMetric(m);
      header.push_back(kind == DiagMetricKind::kActivationNorm  ? m + " (growth)"
                       : kind == DiagMetricKind::kEffectiveRank ? m + " (lowest)"
                                                                 : m);
    }
    std::set<size_t> right;
    for (size_t i = 2; i < header.size(); ++i) right.insert(i);
    std::vector<std::vector<std::string>> rows;
    for (int loop : d.loops) {
      for (const std::string& branch : d.branches) {
        std::vector<std::string> cells = {Loop(loop), branch};
        bool have = false;
        for (const std::string& m : d.metrics) {
          const LoopMetric* g = d.Find(m, branch, loop);
          if (g == nullptr) {
            cells.push_back("—");
            continue;
          }
          have = true;
          std::string cell = G4(g->last_mean);
          if (g->kind == DiagMetricKind::kActivationNorm) {
            cell += fmt::format(" (×{:.2f})", g->growth);
          } else if (g->kind == DiagMetricKind::kEffectiveRank && g->lowest_ratio_layer >= 0) {
            cell += fmt::format(" (L{:02} ×{:.2f})", g->lowest_ratio_layer, g->lowest_layer_ratio);
          }
          cells.push_back(cell);
        }
        if (have) rows.push_back(std::move(cells));
      }
    }
    out += Table(header, rows, right, "    ");
    for (const runs::DiagFinding& f : d.findings) {
      out += fmt::format("    {} {}\n", f.flagged ? "!" : "-", f.message);
    }
  }

  // The ablations side by side, per loop.
  std::vector<int> loops;
  for (const AblationRow& row : a.rows) {
    for (int l : row.diagnostics.loops) {
      if (std::find(loops.begin(), loops.end(), l) == loops.end()) loops.push_back(l);
    }
  }
  std::sort(loops.begin(), loops.end());
  for (const DiagMetricKind kind : {DiagMetricKind::kActivationNorm, DiagMetricKind::kEffectiveRank}) {
    const std::string metric = FirstMetric(a, kind);
    if (metric.empty()) continue;
    out += fmt::format("\n  {} by loop, the ablations side by side ({}):\n", metric,
                       kind == DiagMetricKind::kActivationNorm
                           ? "growth, last / first mean over layers"
                           : "the lowest layer's last / first");
    std::vector<std::string> header = {"run", "branch"};
    for (int l : loops) header.push_back(Loop(l));
    std::set<size_t> right;
    for (size_t i = 2; i < header.size(); ++i) right.insert(i);
    std::vector<std::vector<std::string>> rows;
    for (const AblationRow& row : a.rows) {
      for (const std::string& branch : row.diagnostics.branches) {
        std::vector<std::string> cells = {row.run, branch};
        bool have = false;
        for (int l : loops) {
          const LoopMetric* g = row.diagnostics.Find(metric, branch, l);
          if (g == nullptr) {
            cells.push_back("");
            continue;
          }
          have = true;
          cells.push_back(fmt::format(
              "{:.2f}", kind == DiagMetricKind::kActivationNorm ? g->growth : g->lowest_layer_ratio));
        }
        if (have) rows.push_back(std::move(cells));
      }
    }
    out += Table(header, rows, right, "    ");
  }
  return out;
}

nlohmann::ordered_json Num(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json FindingJson(const Finding& f) {
  return {{"kind", runs::ToString(f.kind)}, {"tag", f.tag}, {"steps", f.steps},
          {"message", f.message}};
}

nlohmann::ordered_json HealthJson(const RunHealth& h) {
  nlohmann::ordered_json j;
  j["run"] = h.run;
  j["healthy"] = h.Healthy();
  j["restarts"] = runs::ToString(h.policy);
  nlohmann::ordered_json twice = nlohmann::ordered_json::array();
  for (const LoggedTwice& l : h.logged_twice) {
    twice.push_back(
        {{"file", l.file}, {"from_step", l.from_step}, {"to_step", l.to_step}, {"tags", l.tags}});
  }
  j["logged_twice"] = twice;
  for (const auto& [key, list] : {std::pair{"non_finite", &h.non_finite},
                                  std::pair{"spikes", &h.spikes}, std::pair{"other", &h.other}}) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const Finding& f : *list) arr.push_back(FindingJson(f));
    j[key] = arr;
  }
  j["last_step"] = h.last_step;
  j["end"] = runs::ToString(h.end);
  j["end_reason"] = h.end_reason;
  return j;
}

nlohmann::ordered_json DiagnosticsJson(const LoopDiagnostics& d) {
  nlohmann::ordered_json j;
  j["columns"] = d.columns;
  j["last_step"] = d.last_step;
  j["loops"] = d.loops;
  j["branches"] = d.branches;
  j["metrics"] = d.metrics;
  j["zero_columns"] = d.zero_columns;
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const LoopMetric& g : d.groups) {
    groups.push_back({{"metric", g.metric},
                      {"kind", runs::ToString(g.kind)},
                      {"branch", g.branch},
                      {"loop", g.loop},
                      {"layers", g.layers},
                      {"first_step", g.first_step},
                      {"last_step", g.last_step},
                      {"first_mean", Num(g.first_mean)},
                      {"last_mean", Num(g.last_mean)},
                      {"growth", Num(g.growth)},
                      {"last_min", Num(g.last_min)},
                      {"last_min_layer", g.last_min_layer},
                      {"last_max", Num(g.last_max)},
                      {"last_max_layer", g.last_max_layer},
                      {"lowest_layer_ratio", Num(g.lowest_layer_ratio)},
                      {"lowest_ratio_layer", g.lowest_ratio_layer},
                      {"highest_layer_ratio", Num(g.highest_layer_ratio)},
                      {"highest_ratio_layer", g.highest_ratio_layer},
                      {"steps", g.steps},
                      {"means", g.means}});
  }
  j["groups"] = groups;
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const runs::DiagFinding& f : d.findings) {
    findings.push_back({{"kind", runs::ToString(f.kind)},
                        {"metric", f.metric},
                        {"branch", f.branch},
                        {"loop", f.loop},
                        {"layer", f.layer},
                        {"first_step", f.first_step},
                        {"last_step", f.last_step},
                        {"first", Num(f.first)},
                        {"last", Num(f.last)},
                        {"ratio", Num(f.ratio)},
                        {"flagged", f.flagged},
                        {"message", f.message}});
  }
  j["findings"] = findings;
  return j;
}

}  // namespace

std::string RenderAblationText(const Ablation& a) {
  const runs::AblationOptions& o = a.options;
  const runs::SeriesOffset& off = a.offset;
  std::string out;
  const std::string policy =
      a.rows.empty() ? "first" : std::string(runs::ToString(a.rows.front().health.policy));
  out += fmt::format("Ablation on '{}': {} run{}{} against {} (restarts: {})\n\n", o.tag,
                     a.rows.size(), a.rows.size() == 1 ? "" : "s",
                     a.ablation_dir.empty() ? "" : " of " + a.ablation_dir,
                     a.baseline_dir.empty() ? "their baseline runs" : a.baseline_dir, policy);
  out += fmt::format("Platform offset, {} − {} over {} common steps ({}–{}):\n", o.offset_pair.run,
                     o.offset_pair.base_run, off.common_steps, off.first_common_step,
                     off.last_common_step);
  const int d = Decimals(a);
  out += fmt::format("  {} ± {} (standard error); sd {}, range {} to {}\n",
                     Signed(off.mean_difference, d + 1), Fixed(off.standard_error, d + 1),
                     Fixed(off.sd_difference, d + 1), Signed(off.min_difference, d + 1),
                     Signed(off.max_difference, d + 1));
  out += fmt::format(
      "effect = (run − baseline) − offset at the compared step; ± sqrt(SE² + σ²), σ the noise of one "
      "difference\nfrom the run's last {} compared points; inside: |effect| <= {:g} × sqrt(SE² + "
      "sd²) = {}.\n",
      o.noise_window, o.sigmas, Fixed(o.sigmas * a.offset_band, d + 1));
  out += o.alignment == runs::Alignment::kStep
             ? "Compared at common steps: a run shorter than its baseline at its own final step "
               "(--align fraction matches\nschedule fractions instead).\n\n"
             : "Compared at matched fractions of each run's schedule (its last step): the "
               "baseline read at step × L_base / L_run.\n\n";

  std::vector<std::vector<std::string>> rows;
  for (const AblationRow& r : a.rows) {
    rows.push_back({r.run + (r.offset_pair ? " *" : ""), r.base_run + (r.explicit_pair ? "" : " †"),
                    ComparedAtShort(r), Fixed(r.final_point.value, d),
                    Fixed(r.final_point.base_value, d), Signed(r.final_point.difference, d),
                    Signed(r.effect, d) + " ± " + Fixed(r.uncertainty, d) +
                    (r.noise_source == runs::NoiseSource::kOffsetPair ? " ‡" : ""),
                    InsideText(r), HealthSummary(r.health)});
  }
  out += Table({"run", "baseline", "compared at", "value", "base value", "difference",
                "effect ± uncertainty", "offset band", "health"},
               rows, {3, 4, 5, 6});
  out += "  * the offset pair: its effect is one step's noise by construction\n";
  bool dagger = false, ddagger = false;
  for (const AblationRow& r : a.rows) {
    dagger = dagger || !r.explicit_pair;
    ddagger = ddagger || r.noise_source == runs::NoiseSource::kOffsetPair;
  }
  if (dagger) out += "  † no --pair: compared with the offset pair's baseline run\n";
  if (ddagger) {
    out += "  ‡ fewer than 3 compared points: the offset pair's sd stands in for the run's noise\n";
  }

  out += fmt::format("\nRun health ({}):\n", policy == "first"
                                                 ? "restarts: first, the first pass of a step "
                                                   "logged twice is kept"
                                                 : "restarts: " + policy);
  auto health_lines = [&](const RunHealth& h, const std::string& label) {
    out += fmt::format("  {}{}: {} ({})\n", h.run, label,
                       h.end == runs::RunEnd::kEndedEarly ? "ended early"
                       : h.end == runs::RunEnd::kFinished ? "schedule finished"
                                                          : "end of schedule unknown",
                       h.end_reason);
    for (const LoggedTwice& l : h.logged_twice) {
      out += fmt::format("    steps {}–{} logged twice in {} ({} tag{})\n", l.from_step, l.to_step,
                         l.file, l.tags, l.tags == 1 ? "" : "s");
    }
    for (const auto* list : {&h.non_finite, &h.spikes}) {
      for (const Finding& f : *list) {
        out += fmt::format("    {}{}: {}\n", f.tag.empty() ? "" : f.tag + ": ",
                           runs::ToString(f.kind), f.message);
      }
    }
    for (const FindingGroup& g : GroupByKind(h.other)) out += "    " + GroupText(g) + "\n";
  };
  for (const AblationRow& r : a.rows) health_lines(r.health, "");
  for (const RunHealth& h : a.baseline_health) health_lines(h, " (baseline)");

  // The corrected effect at every compared step.
  const bool by_fraction = o.alignment == runs::Alignment::kScheduleFraction;
  // Keyed by the fraction (rounded to 1e-6) or by the step itself (an int64: a double would
  // round large steps together, and 2^63 − 1 would not convert back).
  std::map<std::pair<double, int64_t>, std::map<size_t, double>> by_key;
  for (size_t i = 0; i < a.rows.size(); ++i) {
    for (const ComparedPoint& p : a.rows[i].points) {
      const auto key = by_fraction ? std::pair{std::round(p.fraction * 1e6) / 1e6, int64_t{0}}
                                   : std::pair{0.0, p.step};
      by_key[key][i] = p.effect;
    }
  }
  out += fmt::format("\nOffset-corrected effect at every compared {} (run − baseline − offset):\n",
                     by_fraction ? "schedule fraction" : "step");
  {
    std::vector<std::string> header = {by_fraction ? "fraction" : "step"};
    std::set<size_t> right;
    for (size_t i = 0; i < a.rows.size(); ++i) {
      header.push_back(a.rows[i].run);
      right.insert(i + 1);
    }
    right.insert(0);
    std::vector<std::vector<std::string>> table;
    for (const auto& [key, effects] : by_key) {
      std::vector<std::string> cells = {by_fraction ? fmt::format("{:.3f}", key.first)
                                                    : fmt::format("{}", key.second)};
      for (size_t i = 0; i < a.rows.size(); ++i) {
        const auto it = effects.find(i);
        cells.push_back(it == effects.end() ? "" : Signed(it->second, d));
      }
      table.push_back(std::move(cells));
    }
    out += Table(header, table, right);
  }

  out += "\n";
  out += DiagnosticsText(a);
  if (!a.notes.empty()) {
    out += "\n";
    for (const std::string& note : a.notes) out += "note: " + note + "\n";
  }
  return out;
}

std::string RenderAblationJson(const Ablation& a) {
  const runs::AblationOptions& o = a.options;
  nlohmann::ordered_json j;
  j["tag"] = o.tag;
  j["ablation_dir"] = a.ablation_dir;
  j["baseline_dir"] = a.baseline_dir;
  j["alignment"] = runs::ToString(o.alignment);
  j["sigmas"] = o.sigmas;
  j["noise_window"] = o.noise_window;
  const runs::SeriesOffset& off = a.offset;
  j["offset"] = {{"run", o.offset_pair.run},
                 {"base_run", o.offset_pair.base_run},
                 {"common_steps", off.common_steps},
                 {"first_common_step", off.first_common_step},
                 {"last_common_step", off.last_common_step},
                 {"mean_difference", Num(off.mean_difference)},
                 {"sd_difference", Num(off.sd_difference)},
                 {"standard_error", Num(off.standard_error)},
                 {"min_difference", Num(off.min_difference)},
                 {"max_difference", Num(off.max_difference)},
                 {"mean_relative_difference", Num(off.mean_relative_difference)},
                 {"band", Num(a.offset_band)},
                 {"inside_threshold", Num(o.sigmas * a.offset_band)}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const AblationRow& r : a.rows) {
    nlohmann::ordered_json jr;
    jr["run"] = r.run;
    jr["base_run"] = r.base_run;
    jr["offset_pair"] = r.offset_pair;
    jr["explicit_pair"] = r.explicit_pair;
    jr["run_steps"] = r.run_steps;
    jr["base_steps"] = r.base_steps;
    jr["run_tag_steps"] = r.run_tag_steps;
    jr["base_tag_steps"] = r.base_tag_steps;
    jr["alignment"] = runs::ToString(r.alignment);
    jr["compared_at"] = {{"step", r.final_point.step},
                         {"base_step", Num(r.final_point.base_step)},
                         {"fraction", Num(r.final_point.fraction)},
                         {"base_interpolated", r.final_point.base_interpolated},
                         {"description", r.compared_at}};
    jr["value"] = Num(r.final_point.value);
    jr["base_value"] = Num(r.final_point.base_value);
    jr["difference"] = Num(r.final_point.difference);
    jr["effect"] = Num(r.effect);
    jr["noise"] = Num(r.noise);
    jr["noise_source"] = runs::ToString(r.noise_source);
    jr["uncertainty"] = Num(r.uncertainty);
    jr["inside_offset_uncertainty"] = r.inside_offset_uncertainty;
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const ComparedPoint& p : r.points) {
      points.push_back({{"step", p.step},
                        {"base_step", Num(p.base_step)},
                        {"fraction", Num(p.fraction)},
                        {"value", Num(p.value)},
                        {"base_value", Num(p.base_value)},
                        {"base_interpolated", p.base_interpolated},
                        {"difference", Num(p.difference)},
                        {"effect", Num(p.effect)}});
    }
    jr["points"] = points;
    jr["health"] = HealthJson(r.health);
    jr["diagnostics"] = DiagnosticsJson(r.diagnostics);
    rows.push_back(jr);
  }
  j["runs"] = rows;
  nlohmann::ordered_json base = nlohmann::ordered_json::array();
  for (const RunHealth& h : a.baseline_health) base.push_back(HealthJson(h));
  j["baseline_health"] = base;
  j["notes"] = a.notes;
  return DumpJson(j) + "\n";
}

}  // namespace mosaic::report
