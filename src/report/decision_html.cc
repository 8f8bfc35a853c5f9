// The decision's HTML page: verdict, criteria, charts and tables, self-contained.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "mosaic/report/decision_report.h"
#include "mosaic/report/html.h"
#include "mosaic/report/svg_chart.h"
#include "mosaic/scaling/projection.h"
#include "mosaic/util/number_format.h"
#include "decision_format.h"

namespace mosaic::report {
namespace {

std::string P(std::string_view text, std::string_view css_class = "") {
  return css_class.empty() ? "<p>" + EscapeXml(text) + "</p>\n"
                           : fmt::format("<p class=\"{}\">{}</p>\n", css_class, EscapeXml(text));
}

std::string Figure(const std::string& svg, std::string_view caption) {
  return "<figure>\n" + svg + "<figcaption>" + EscapeXml(caption) + "</figcaption>\n</figure>\n";
}

std::string StatusClass(CriterionStatus s) {
  switch (s) {
    case CriterionStatus::kPass: return "pass";
    case CriterionStatus::kFail: return "fail";
    case CriterionStatus::kUnknown: return "unknown";
  }
  return "";
}

size_t ArmIndex(const Decision& d, const std::string& arm) {
  for (size_t i = 0; i < d.study.arms.size(); ++i) {
    if (d.study.arms[i].name == arm) return i;
  }
  return 0;
}

std::string LossChart(const Decision& d) {
  const DecisionLoss which = d.study.decision.results->loss;
  XyChart chart;
  chart.title = fmt::format("Loss against training compute ({} loss), fits and the target",
                            ToString(which));
  chart.x_label = "training compute C (FLOPs)";
  chart.y_label = "loss (nats)";
  chart.log_x = true;
  double c_min = INFINITY, c_max = 0;
  for (const Arm& arm : d.study.arms) {
    XySeries points;
    points.name = arm.name + " (runs)";
    points.color = PaletteColor(ArmIndex(d, arm.name));
    for (const RungResult& r : d.results) {
      if (r.arm != arm.name || !r.Loss(which)) continue;
      points.x.push_back(r.compute_flops);
      points.y.push_back(*r.Loss(which));
      c_min = std::min(c_min, r.compute_flops);
      c_max = std::max(c_max, r.compute_flops);
    }
    if (!points.x.empty()) chart.series.push_back(std::move(points));
  }
  const double c_end = d.target_compute_flops > 0 ? d.target_compute_flops : c_max;
  for (const ArmFit& f : d.fits) {
    if (!f.fitted || !(c_min < INFINITY)) continue;
    XySeries line;
    line.name = f.arm + " fit" + (f.bootstrap ? " (band: bootstrap interval)" : "");
    line.color = PaletteColor(ArmIndex(d, f.arm));
    line.markers = false;
    line.line = true;
    line.dashed = true;
    const int steps = 40;
    for (int i = 0; i <= steps; ++i) {
      const double c = c_min * std::pow(c_end / c_min, double(i) / steps);
      line.x.push_back(c);
      line.y.push_back(scaling::LossAtCompute(d.law, f.fit.theta, c));
      if (f.bootstrap && !f.bootstrap->theta.empty()) {
        std::vector<double> losses;
        for (const auto& th : f.bootstrap->theta) losses.push_back(scaling::LossAtCompute(d.law, th, c));
        const scaling::Interval band = scaling::PercentileInterval(std::move(losses),
                                                                   f.bootstrap->confidence);
        line.low.push_back(band.low);
        line.high.push_back(band.high);
      }
    }
    chart.series.push_back(std::move(line));
    if (d.target_compute_flops > 0) {
      XySeries target;
      target.name = f.arm + " at the target";
      target.color = PaletteColor(ArmIndex(d, f.arm));
      target.x.push_back(d.target_compute_flops);
      target.y.push_back(f.target_loss);
      if (f.target_loss_interval) {
        target.low.push_back(f.target_loss_interval->low);
        target.high.push_back(f.target_loss_interval->high);
      }
      chart.series.push_back(std::move(target));
    }
  }
  if (d.target_compute_flops > 0) {
    chart.markers.push_back({d.target_compute_flops, "target"});
  }
  return RenderXyChart(chart);
}

std::string ThroughputCharts(const Decision& d) {
  std::string out;
  BarChart tps, mfu;
  tps.title = "Throughput per arm at the target shape";
  tps.y_label = "tokens/s per GPU";
  tps.value_labels = 4;
  mfu.title = "Model FLOPs utilisation per arm";
  mfu.y_label = "MFU (%)";
  for (const Arm& arm : d.study.arms) {
    tps.categories.push_back(arm.name);
    mfu.categories.push_back(arm.name);
  }
  size_t color = 0;
  for (const Scenario& s : d.scenarios) {
    if (s.arms.empty()) continue;
    BarSeries t{s.name, PaletteColor(color), {}}, m{s.name, PaletteColor(color), {}};
    ++color;
    for (const ArmThroughput& a : s.arms) {
      t.values.push_back(a.known ? std::optional<double>(a.tokens_per_s_per_gpu) : std::nullopt);
      m.values.push_back(a.mfu > 0 ? std::optional<double>(100 * a.mfu) : std::nullopt);
    }
    tps.series.push_back(std::move(t));
    mfu.series.push_back(std::move(m));
  }
  if (tps.series.empty()) return P("No throughput was given for any arm.", "note");
  out += Figure(RenderBarChart(tps),
                "Tokens per second per GPU of each arm under each throughput source (n/a: not "
                "known for that arm).");
  out += Figure(RenderBarChart(mfu), "MFU = model FLOPs / (step time × peak bf16 FLOP/s × GPUs).");
  return out;
}

std::string DroppedChart(const Decision& d) {
  BarChart chart;
  chart.title = "Share of routed assignments dropped in training";
  chart.y_label = "dropped (%)";
  for (const Rung& rung : d.study.rungs) chart.categories.push_back(fmt::format("d{}", rung.d_model));
  for (const Arm& arm : d.study.arms) {
    BarSeries s{arm.name, PaletteColor(ArmIndex(d, arm.name)), {}};
    bool any = false;
    for (const Rung& rung : d.study.rungs) {
      const RungResult* r = d.Find(arm.name, rung.d_model);
      if (r && r->dropped_share) {
        s.values.push_back(100 * *r->dropped_share);
        any = true;
      } else {
        s.values.push_back(std::nullopt);
      }
    }
    if (any) chart.series.push_back(std::move(s));
  }
  for (const Scenario& sc : d.scenarios) {
    bool any = false;
    for (const ArmThroughput& a : sc.arms) any = any || a.dropped_share >= 0;
    if (!any) continue;
    chart.categories.push_back("target (" + sc.name + ")");
    for (BarSeries& s : chart.series) {
      std::optional<double> v;
      for (const ArmThroughput& a : sc.arms) {
        if (a.arm == s.name && a.dropped_share >= 0) v = 100 * a.dropped_share;
      }
      s.values.push_back(v);
    }
  }
  if (chart.series.empty()) return P("No dropped shares were recorded.", "note");
  return Figure(RenderBarChart(chart),
                "Per rung, the share dropped over the last steps of training; at the target, the "
                "share in the throughput measurement or the performance model's estimate.");
}

std::string MemoryChart(const Decision& d) {
  for (const Scenario& s : d.scenarios) {
    bool any = false;
    for (const ArmThroughput& a : s.arms) any = any || a.estimate.has_value();
    if (!any) continue;
    BarChart chart;
    chart.title = "Memory per GPU at the target (performance model)";
    chart.y_label = "GB per GPU";
    chart.stacked = true;
    const std::vector<std::pair<std::string, double MemoryBreakdown::*>> parts = {
        {"weights", &MemoryBreakdown::weights_bytes},
        {"gradients", &MemoryBreakdown::gradients_bytes},
        {"optimizer states", &MemoryBreakdown::optimizer_bytes},
        {"gather buffers", &MemoryBreakdown::gather_buffer_bytes},
        {"activations", &MemoryBreakdown::activation_bytes},
        {"logits", &MemoryBreakdown::logits_bytes},
        {"all-to-all buffers", &MemoryBreakdown::dispatch_bytes},
        {"reserve", &MemoryBreakdown::reserve_bytes}};
    for (size_t i = 0; i < parts.size(); ++i) {
      chart.series.push_back({parts[i].first, PaletteColor(i), {}});
    }
    double capacity = 0;
    for (const ArmThroughput& a : s.arms) {
      chart.categories.push_back(a.arm);
      for (size_t i = 0; i < parts.size(); ++i) {
        chart.series[i].values.push_back(
            a.estimate ? std::optional<double>(a.estimate->estimate.memory.*(parts[i].second) / 1e9)
                       : std::nullopt);
      }
      if (a.estimate) capacity = a.estimate->estimate.capacity_bytes;
    }
    if (capacity > 0) {
      chart.reference = capacity / 1e9;
      chart.reference_label = fmt::format("HBM {:.0f} GB", capacity / 1e9);
    }
    return Figure(RenderBarChart(chart),
                  "Peak memory per GPU of each arm's layout at the target, by kind (first pipeline "
                  "stage); the dashed line is the device's memory.");
  }
  return "";
}

}  // namespace

std::string RenderDecisionHtml(const Decision& d) {
  const DecisionSpec& spec = d.study.decision;
  const RuleSpec& rule = *spec.rule;
  const DecisionLoss which = spec.results->loss;
  std::string body;
  body += "<h1>" + EscapeXml(d.study.title) + "</h1>\n";
  body += P(fmt::format("Should {} replace {}? Study {}; the {} loss decides.", rule.challenger,
                        rule.default_arm, d.study.origin, ToString(which)),
            "note");
  body += "<div class=\"verdict\" id=\"verdict\">\n";
  for (const Scenario& s : d.scenarios) {
    body += fmt::format("<p><strong>Verdict ({}): {}</strong><br>{}</p>\n",
                        EscapeXml(s.ThroughputText()), EscapeXml(s.verdict.chosen_arm),
                        EscapeXml(s.verdict.summary));
    for (const std::string& note : s.notes) body += P("Note: " + note + ".", "note");
  }
  if (d.effective_compute) {
    body += P(fmt::format("Projected effective compute of {} at the target: {:.3f}×{}.",
                          rule.challenger, *d.effective_compute,
                          d.effective_compute_interval && std::isfinite(d.effective_compute_interval->low)
                              ? fmt::format(" ({:g}% interval {:.3f}–{:.3f})",
                                            100 * spec.fit.confidence,
                                            d.effective_compute_interval->low,
                                            d.effective_compute_interval->high)
                              : ""));
  }
  if (const std::string noise = decision_format::NoiseComparisonText(d); !noise.empty()) {
    std::string sentence = noise + " between identical runs.";
    sentence[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sentence[0])));
    body += P(sentence);
  }
  if (const std::string sensitivity = decision_format::SensitivityText(d); !sensitivity.empty()) {
    std::string sentence = sensitivity + ".";
    sentence[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(sentence[0])));
    body += P(sentence, "note");
  }
  body += "</div>\n";

  for (const Scenario& s : d.scenarios) {
    body += "<h2>Criteria with " + EscapeXml(s.ThroughputText()) + "</h2>\n";
    body += P(s.description, "note");
    std::vector<std::vector<Cell>> rows;
    char letter = 'a';
    for (const CriterionResult& c : s.criteria) {
      rows.push_back({Cell(fmt::format("({}) {}", letter++, c.title)),
                      Cell(std::string(ToString(c.status)), StatusClass(c.status)),
                      Cell(c.caveat.empty() ? c.reason : c.reason + "; but " + c.caveat),
                      Cell(c.status == CriterionStatus::kUnknown ? c.settle : "")});
    }
    body += HtmlTable({"criterion", "status", "reason", "what would settle it"}, rows);
  }

  body += "<h2>Loss against compute</h2>\n";
  // The band and the interval are drawn only where a bootstrap gave them.
  const bool any_band =
      std::any_of(d.fits.begin(), d.fits.end(), [](const ArmFit& f) { return f.bootstrap; });
  body += Figure(LossChart(d),
                 fmt::format("Each arm's {} loss per rung (markers), its fit {} (dashed{}) "
                             "extended to the target budget (vertical line), and the projected "
                             "loss there{}.",
                             ToString(which), d.law.formula,
                             any_band ? ", with the bootstrap band" : "",
                             any_band ? " with its interval" : " (no bootstrap intervals)"));
  {
    std::vector<std::vector<Cell>> rows;
    for (const RungResult& r : d.results) {
      std::string ec = r.arm == rule.default_arm ? "1 (default)" : "—";
      for (const auto& m : d.rung_multipliers) {
        if (m.arm == r.arm && m.d_model == r.d_model) ec = fmt::format("{:.3f}×", m.effective_compute);
      }
      auto loss = [](const std::optional<double>& v) {
        return v ? fmt::format("{:.4f}", *v) : std::string("—");
      };
      rows.push_back({Cell(fmt::format("d{}", r.d_model)), Cell(r.arm),
                      Cell(FormatScientific(r.compute_flops), "num"),
                      Cell(loss(r.loss_dropless), "num"), Cell(loss(r.loss_with_drop), "num"),
                      Cell(r.dropped_share ? fmt::format("{:.2f}%", 100 * *r.dropped_share) : "—",
                           "num"),
                      Cell(ec, "num"), Cell(r.source)});
    }
    body += HtmlTable({"rung", "arm", "C (FLOPs)", "dropless loss", "with-drop loss", "dropped",
                       "effective compute vs " + rule.default_arm, "source"},
                      rows);
  }
  {
    std::vector<std::vector<Cell>> rows;
    for (const ArmFit& f : d.fits) {
      if (!f.fitted) {
        rows.push_back({Cell(f.arm), Cell("not fitted: " + f.why_not), Cell(""), Cell("")});
        continue;
      }
      std::string params;
      for (size_t i = 0; i < f.fit.params.size(); ++i) {
        const auto& p = f.fit.params[i];
        params += fmt::format("{} = {:.5g}{}; ", p.name, p.value,
                              p.pinned ? " (pinned)"
                              : f.bootstrap && std::isfinite(f.bootstrap->params[i].low)
                                  ? fmt::format(" [{:.5g}, {:.5g}]", f.bootstrap->params[i].low,
                                                f.bootstrap->params[i].high)
                                  : "");
      }
      for (const std::string& caution : f.Cautions()) params += " Caution: " + caution + ".";
      rows.push_back({Cell(f.arm), Cell(params),
                      Cell(fmt::format("d{}", fmt::join(f.rungs, ", d"))),
                      Cell(d.target_compute_flops > 0 ? fmt::format("{:.4f}", f.target_loss) : "—",
                           "num")});
    }
    body += HtmlTable({"arm", "fitted parameters", "rungs", "loss at the target"}, rows);
    // A target without a description is named by its budget alone (it read "Target: .").
    std::string target = "Target: none. ";
    if (spec.target) {
      target = spec.target->description.empty() ? ""
                                                : "Target: " + spec.target->description + ". ";
    }
    body += P(fmt::format("{}C = {} ({}).", target,
                          d.target_compute_flops > 0 ? FormatScientific(d.target_compute_flops, 4) + " FLOPs"
                                                     : "unknown",
                          d.target_compute_rule),
              "note");
    if (!d.target_below_ladder.empty()) body += P("Note: " + d.target_below_ladder + ".", "note");
  }
  if (d.noise) {
    const NoiseSummary& n = *d.noise;
    body += P(fmt::format("Noise: identical runs at d{} spread {:.4f} in loss{}; as effective "
                          "compute {:.1f}% ({}){}.",
                          n.spec.d_model, n.spec.loss_spread,
                          n.spec.runs > 0 ? fmt::format(" over {} runs", n.spec.runs) : "",
                          100 * n.used_effective_compute,
                          n.spec.effective_compute_spread > 0 ? "as stated by " + n.spec.source
                                                              : "derived from the default arm's fit",
                          n.derived_effective_compute > 0
                              ? fmt::format("; {:.1f}% on the default arm's fit at its d{} loss",
                                            100 * n.derived_effective_compute, n.spec.d_model)
                              : ""),
              "note");
  }

  body += "<h2>Throughput</h2>\n";
  body += ThroughputCharts(d);
  {
    std::vector<std::vector<Cell>> rows;
    for (const Scenario& s : d.scenarios) {
      for (const ArmThroughput& a : s.arms) {
        rows.push_back({Cell(s.name), Cell(a.arm),
                        Cell(a.known ? fmt::format("{:.0f}", a.tokens_per_s_per_gpu) : "—", "num"),
                        Cell(a.mfu > 0 ? fmt::format("{:.2f}%", 100 * a.mfu) : "—", "num"),
                        Cell(a.dropped_share >= 0 ? fmt::format("{:.2f}%", 100 * a.dropped_share) : "—",
                             "num"),
                        Cell(a.known ? a.source : a.why_not)});
      }
    }
    if (!rows.empty()) {
      body += HtmlTable({"source", "arm", "tokens/s per GPU", "MFU", "dropped", "from"}, rows);
    }
    for (const Scenario& s : d.scenarios) {
      if (const std::string ratio = decision_format::ThroughputRatioText(d, s); !ratio.empty()) {
        body += P(s.name + ": " + ratio + ".");
      }
    }
  }
  body += "<h2>Token dropping</h2>\n";
  body += DroppedChart(d);
  const std::string memory = MemoryChart(d);
  if (!memory.empty()) {
    body += "<h2>Memory</h2>\n" + memory;
  }
  for (const std::string& note : d.result_notes) body += P("Note: " + note, "note");
  return HtmlDocument(d.study.title + " — decision", body);
}

}  // namespace mosaic::report
