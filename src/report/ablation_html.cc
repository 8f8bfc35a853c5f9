// The ablation's HTML page: the offset, the effect table with run health, the curves with the
// offset taken out, the effects with their uncertainty, and the per-loop diagnostics as small
// multiples; self-contained.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ablation_format.h"
#include "mosaic/report/ablation_report.h"
#include "mosaic/report/html.h"
#include "mosaic/report/svg_chart.h"

namespace mosaic::report {
namespace {

using namespace ablation_format;
using runs::Ablation;
using runs::AblationRow;
using runs::ComparedPoint;
using runs::DiagMetricKind;
using runs::LoopMetric;

constexpr int kSmallWidth = 310;  // three side by side in the page's 1000 pixels
constexpr int kSmallHeight = 270;

std::string P(std::string_view text, std::string_view css_class = "") {
  return css_class.empty() ? "<p>" + EscapeXml(text) + "</p>\n"
                           : fmt::format("<p class=\"{}\">{}</p>\n", css_class, EscapeXml(text));
}

std::string Figure(const std::string& svg, std::string_view caption) {
  return "<figure>\n" + svg + "<figcaption>" + EscapeXml(caption) + "</figcaption>\n</figure>\n";
}

std::string SmallFigure(const std::string& svg) { return "<figure>\n" + svg + "</figure>\n"; }

// Each run's curve with the offset taken out against its baseline's, at the compared points.
std::string CurveCharts(const Ablation& a) {
  std::string out = "<div class=\"multiples\">\n";
  const double offset = a.offset.mean_difference;
  for (const AblationRow& r : a.rows) {
    XyChart chart;
    chart.title = r.run;
    chart.x_label = "step";
    chart.y_label = a.options.tag;
    chart.width = kSmallWidth;
    chart.height = kSmallHeight;
    XySeries run{r.run + " − offset", PaletteColor(0), {}, {}, {}, {}, false, true, false};
    XySeries base{r.base_run + (r.alignment == runs::Alignment::kScheduleFraction
                                    ? " (matched fraction)"
                                    : ""),
                  PaletteColor(1), {}, {}, {}, {}, false, true, true};
    for (const ComparedPoint& p : r.points) {
      run.x.push_back(static_cast<double>(p.step));
      run.y.push_back(p.value - offset);
      base.x.push_back(static_cast<double>(p.step));
      base.y.push_back(p.base_value);
    }
    chart.series = {std::move(base), std::move(run)};
    out += SmallFigure(RenderXyChart(chart));
  }
  return out + "</div>\n";
}

// The corrected effect over steps (or fractions), one line per run, over the offset's band.
std::string EffectOverTimeChart(const Ablation& a) {
  const bool by_fraction = a.options.alignment == runs::Alignment::kScheduleFraction;
  XyChart chart;
  chart.title = "Offset-corrected effect at every compared " +
                std::string(by_fraction ? "schedule fraction" : "step");
  chart.x_label = by_fraction ? "fraction of the run's schedule" : "step";
  chart.y_label = "effect on " + a.options.tag;
  chart.height = 460;
  double x_min = INFINITY, x_max = -INFINITY;
  for (size_t i = 0; i < a.rows.size(); ++i) {
    XySeries s{a.rows[i].run, PaletteColor(i + 2), {}, {}, {}, {}, false, true, false};
    for (const ComparedPoint& p : a.rows[i].points) {
      const double x = by_fraction ? p.fraction : static_cast<double>(p.step);
      s.x.push_back(x);
      s.y.push_back(p.effect);
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
    }
    chart.series.push_back(std::move(s));
  }
  if (x_min <= x_max) {
    const double band = a.options.sigmas * a.offset_band;
    XySeries zero{"offset band ±" + Fixed(band, Decimals(a)), "#888888", {x_min, x_max}, {0, 0},
                  {-band, -band}, {band, band}, false, true, true};
    chart.series.insert(chart.series.begin(), std::move(zero));
  }
  return RenderXyChart(chart);
}

// The effect at the compared step with its uncertainty, one marker per run.
std::string EffectChart(const Ablation& a) {
  XyChart chart;
  chart.title = "Effect at the compared step, ± uncertainty";
  chart.x_label = "run (in table order)";
  chart.y_label = "effect on " + a.options.tag;
  const double band = a.options.sigmas * a.offset_band;
  XySeries zero{"offset band ±" + Fixed(band, Decimals(a)), "#888888",
                {0.5, static_cast<double>(a.rows.size()) + 0.5}, {0, 0}, {-band, -band},
                {band, band}, false, true, true};
  chart.series.push_back(std::move(zero));
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const AblationRow& r = a.rows[i];
    XySeries s{r.run, PaletteColor(i + 2), {static_cast<double>(i + 1)}, {r.effect},
               {r.effect - r.uncertainty}, {r.effect + r.uncertainty}, true, false, false};
    chart.series.push_back(std::move(s));
  }
  return RenderXyChart(chart);
}

std::string EffectTable(const Ablation& a) {
  const int d = Decimals(a);
  std::vector<std::vector<Cell>> rows;
  for (const AblationRow& r : a.rows) {
    const std::string health = HealthSummary(r.health);
    rows.push_back({Cell(r.run + (r.offset_pair ? " (offset pair)" : "")),
                    Cell(r.base_run + (r.explicit_pair ? "" : " (default)")), Cell(r.compared_at),
                    Cell(Fixed(r.final_point.value, d), "num"),
                    Cell(Fixed(r.final_point.base_value, d), "num"),
                    Cell(Signed(r.final_point.difference, d), "num"),
                    Cell(Signed(r.effect, d) + " ± " + Fixed(r.uncertainty, d), "num"),
                    Cell(InsideText(r), r.inside_offset_uncertainty ? "unknown" : "pass"),
                    Cell(health, health == "ok" ? "pass" : "unknown")});
  }
  return HtmlTable({"run", "baseline", "compared at", "value", "baseline value", "difference",
                    "effect ± uncertainty", "vs the offset's uncertainty", "health"},
                   rows);
}

std::string HealthTable(const Ablation& a) {
  std::vector<std::vector<Cell>> rows;
  auto add = [&](const runs::RunHealth& h, const std::string& role) {
    std::string twice;
    for (const runs::LoggedTwice& l : h.logged_twice) {
      twice += fmt::format("{}steps {}–{} in {} ({} tags)", twice.empty() ? "" : "; ", l.from_step,
                           l.to_step, std::filesystem::path(l.file).filename().string(), l.tags);
    }
    std::string findings;
    for (const auto* list : {&h.non_finite, &h.spikes}) {
      for (const runs::Finding& f : *list) {
        findings += fmt::format("{}{}{}: {}", findings.empty() ? "" : "; ",
                                f.tag.empty() ? "" : f.tag + " ", runs::ToString(f.kind),
                                f.message);
      }
    }
    for (const FindingGroup& g : GroupByKind(h.other)) {
      findings += (findings.empty() ? "" : "; ") + GroupText(g);
    }
    rows.push_back({Cell(h.run), Cell(role),
                    Cell(fmt::format("{}: {}", runs::ToString(h.end), h.end_reason),
                         h.end == runs::RunEnd::kEndedEarly ? "fail"
                         : h.end == runs::RunEnd::kFinished ? "pass"
                                                            : "unknown"),
                    Cell(twice.empty() ? "—" : twice), Cell(findings.empty() ? "—" : findings)});
  };
  for (const AblationRow& r : a.rows) add(r.health, "ablation");
  for (const runs::RunHealth& h : a.baseline_health) add(h, "baseline");
  return HtmlTable({"run", "role", "schedule", "steps logged twice", "findings"},
                   rows);
}

// Small multiples of the diagnostics: per metric and branch the value at the last step by loop,
// one line per run; per run and branch the activation norm over time, one line per loop.
std::string DiagnosticCharts(const Ablation& a) {
  std::vector<std::string> metrics, branches;
  for (const AblationRow& r : a.rows) {
    for (const std::string& m : r.diagnostics.metrics) {
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
    }
    for (const std::string& b : r.diagnostics.branches) {
      if (std::find(branches.begin(), branches.end(), b) == branches.end()) branches.push_back(b);
    }
  }
  if (metrics.empty()) return P("No per-loop diagnostics in these runs.", "note");
  std::string out;
  out += "<h3>At the last diagnostic step, by loop</h3>\n<div class=\"multiples\">\n";
  for (const std::string& m : metrics) {
    for (const std::string& b : branches) {
      XyChart chart;
      chart.title = m + " · " + b;
      chart.x_label = "loop (cH)";
      chart.y_label = "mean over layers";
      chart.width = kSmallWidth;
      chart.height = kSmallHeight + 70;
      for (size_t i = 0; i < a.rows.size(); ++i) {
        const runs::LoopDiagnostics& d = a.rows[i].diagnostics;
        XySeries s{a.rows[i].run, PaletteColor(i + 2), {}, {}, {}, {}, true, true, false};
        for (int loop : d.loops) {
          if (const LoopMetric* g = d.Find(m, b, loop)) {
            s.x.push_back(loop);
            s.y.push_back(g->last_mean);
          }
        }
        if (!s.x.empty()) chart.series.push_back(std::move(s));
      }
      if (!chart.series.empty()) out += SmallFigure(RenderXyChart(chart));
    }
  }
  out += "</div>\n";
  const std::string norm = FirstMetric(a, DiagMetricKind::kActivationNorm);
  if (!norm.empty()) {
    out += "<h3>" + EscapeXml(norm) + " over time, per run and branch</h3>\n<div class=\"multiples\">\n";
    for (const AblationRow& r : a.rows) {
      const runs::LoopDiagnostics& d = r.diagnostics;
      for (const std::string& b : d.branches) {
        XyChart chart;
        chart.title = r.run + " · " + b;
        chart.x_label = "step";
        chart.y_label = norm + " (mean over layers)";
        chart.width = kSmallWidth;
        chart.height = kSmallHeight + 60;
        for (size_t li = 0; li < d.loops.size(); ++li) {
          const LoopMetric* g = d.Find(norm, b, d.loops[li]);
          if (g == nullptr) continue;
          XySeries s{fmt::format("cH{:02}", d.loops[li]), PaletteColor(li), {}, {}, {}, {}, false,
                     true, false};
          for (size_t k = 0; k < g->steps.size(); ++k) {
            s.x.push_back(static_cast<double>(g->steps[k]));
            s.y.push_back(g->means[k]);
          }
          chart.series.push_back(std::move(s));
        }
        if (!chart.series.empty()) out += SmallFigure(RenderXyChart(chart));
      }
    }
    out += "</div>\n";
  }
  // Findings and ignored columns, per run.
  std::vector<std::vector<Cell>> rows;
  for (const AblationRow& r : a.rows) {
    const runs::LoopDiagnostics& d = r.diagnostics;
    std::string findings;
    for (const runs::DiagFinding& f : d.findings) {
      findings += (findings.empty() ? "" : "; ") + f.message;
    }
    bool flagged = false;
    for (const runs::DiagFinding& f : d.findings) flagged = flagged || f.flagged;
    rows.push_back({Cell(r.run), Cell(fmt::format("{}", d.columns), "num"),
                    Cell(fmt::format("{}", d.loops.size()), "num"),
                    Cell(findings.empty() ? "—" : findings, flagged ? "unknown" : ""),
                    Cell(d.zero_columns.empty()
                             ? "—"
                             : fmt::format("{} ({})", d.zero_columns.size(),
                                           fmt::join(d.zero_columns, ", ")))});
  }
  out += HtmlTable({"run", "columns", "loops", "findings", "always-zero columns ignored"}, rows);
  return out;
}

}  // namespace

std::string RenderAblationHtml(const Ablation& a) {
  const runs::AblationOptions& o = a.options;
  const runs::SeriesOffset& off = a.offset;
  std::string body;
  const std::string title = fmt::format("Ablation on {}: {} against {}", o.tag,
                                        a.ablation_dir.empty() ? "ablation runs" : a.ablation_dir,
                                        a.baseline_dir.empty() ? "baseline runs" : a.baseline_dir);
  body += "<h1>" + EscapeXml(title) + "</h1>\n";
  body += "<div class=\"verdict\" id=\"offset\">\n";
  const int d = Decimals(a) + 1;
  body += fmt::format("<p><strong>Platform offset {} ± {}</strong> ({} − {}, mean over {} "
                      "common steps {}–{}; standard error; sd {}).</p>\n",
                      EscapeXml(Signed(off.mean_difference, d)), Fixed(off.standard_error, d),
                      EscapeXml(o.offset_pair.run), EscapeXml(o.offset_pair.base_run),
                      off.common_steps, off.first_common_step, off.last_common_step,
                      Fixed(off.sd_difference, d));
  // The offset pair sets the offset: its effect is near 0 by construction, so it is not counted.
  size_t inside = 0, compared = 0;
  for (const AblationRow& r : a.rows) {
    if (r.offset_pair) continue;
    ++compared;
    inside += r.inside_offset_uncertainty;
  }
  body += P(fmt::format("{} of {} runs have an effect inside the offset's uncertainty (|effect| "
                        "<= {:g} × sqrt(SE² + sd²) = {}; the offset pair, which sets the offset, "
                        "is not counted).",
                        inside, compared, o.sigmas, Fixed(o.sigmas * a.offset_band, d)));
  body += "</div>\n";
  body += P(fmt::format(
                "effect = (run − baseline) − offset at the compared step; uncertainty = sqrt(SE² + "
                "σ²), σ the noise of one difference from the run's last {} compared points (mean "
                "square successive difference). {}",
                o.noise_window,
                o.alignment == runs::Alignment::kStep
                    ? "Compared at common steps: a run shorter than its baseline at its own final "
                      "step."
                    : "Compared at matched fractions of each run's schedule."),
            "note");

  body += "<h2>Effects</h2>\n";
  body += EffectTable(a);
  body += Figure(EffectChart(a), "Each run's offset-corrected effect at its compared step with its "
                                 "uncertainty; the grey band is the offset's uncertainty.");
  body += Figure(EffectOverTimeChart(a),
                 "The offset-corrected difference at every compared point; the grey band is the "
                 "offset's uncertainty around zero.");

  body += "<h2>Curves against the baseline, offset taken out</h2>\n";
  body += CurveCharts(a);
  body += P("Each ablation run minus the platform offset (solid) and its baseline run (dashed) at "
            "the compared points.",
            "note");

  body += "<h2>Run health</h2>\n";
  body += HealthTable(a);

  body += "<h2>Per-loop diagnostics</h2>\n";
  body += DiagnosticCharts(a);
  for (const std::string& note : a.notes) body += P("Note: " + note, "note");
  return HtmlDocument(title, body);
}

}  // namespace mosaic::report
