#include "mosaic/report/codesign_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "mosaic/perf/perf_request.h"
#include "mosaic/report/html.h"
#include "mosaic/report/svg_chart.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"

namespace mosaic::report {
namespace {

using Json = nlohmann::ordered_json;

Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// Days of wall-clock: one decimal, or three significant digits under a tenth of a day.
std::string Days(double seconds) {
  const double days = seconds / 86400;
  return days >= 0.1 || days == 0 ? fmt::format("{:.1f}", days) : fmt::format("{:.3g}", days);
}

std::string Budget(const CodesignResult& r) {
  const BudgetSpec& b = r.space.budget;
  // A budget in days is the cluster budget as given; the others are converted to it.
  const std::string given =
      b.gpu_hours > 0 ? fmt::format("{} GPU-hours ({} days of the cluster's wall-clock)",
                                    FormatCount(b.gpu_hours), Days(r.cluster_seconds))
      : b.days > 0    ? fmt::format("{:g} day{} of the cluster's wall-clock", b.days,
                                    b.days == 1 ? "" : "s")
                      : fmt::format("{} model FLOPs ({} days of the cluster's wall-clock)",
                                    FormatScientific(b.model_flops), Days(r.cluster_seconds));
  if (!(r.flops_budget > 0)) {
    return fmt::format("{}; no FLOPs-only budget ({})", given, r.reference_mfu_rule);
  }
  return fmt::format("{}; FLOPs-only budget {} model FLOPs (at MFU {:.3g}: {})", given,
                     FormatScientific(r.flops_budget, 4),
                     r.reference_mfu, r.reference_mfu_rule);
}

// A loss to five decimals, or "—" where there is none (NaN).
std::string LossText(double loss) {
  return std::isnan(loss) ? "—" : fmt::format("{:.5f}", loss);
}

std::string Row(const ArchitectureResult& a) {
  return fmt::format("{:<28} {:>8} {:>8} {:>7.4f} {:>7.4f} {:>8.1f} {:>7.4f} {:>8} {:>9.5f} {:>9}  {}",
                     a.arch.Name(), FormatCount(double(a.active_params)),
                     FormatCount(double(a.total_params)), a.sparsity, a.estimate.mfu,
                     a.estimate.memory.peak_bytes / 1e9, a.estimate.dropped_fraction,
                     FormatCount(a.cluster_tokens), a.cluster_loss, LossText(a.flops_loss),
                     ToString(a.layout));
}

std::string Header() {
  return fmt::format("{:<28} {:>8} {:>8} {:>7} {:>7} {:>8} {:>7} {:>8} {:>9} {:>9}  {}\n",
                     "architecture", "active", "total", "sparsity", "MFU", "mem GB", "dropped",
                     "tokens", "loss", "FLOPs-only", "layout");
}

}  // namespace

std::string RenderCodesignText(const CodesignResult& r, size_t top) {
  const SpaceConfig& s = r.space;
  std::string out = fmt::format("{} — {} × {} ({} profile, {})\n", s.title, s.gpus, r.device,
                                r.profile, r.profile_calibration);
  for (const std::string& note : r.perf_notes) out += "note: " + note + "\n";
  if (!s.source.empty()) out += fmt::format("source: {}\n", s.source);
  out += fmt::format("base {}; law {} ({}), parameters {}\n", s.base, r.law.name, r.law.formula,
                     s.law.origin);
  out += fmt::format("budget {}\n", Budget(r));
  size_t feasible = 0;
  std::map<std::string, std::pair<size_t, std::string>> rejected;
  for (const ArchitectureResult& a : r.architectures) {
    if (a.feasible()) {
      ++feasible;
    } else {
      auto& [count, example] = rejected[std::string(ToString(a.rejected))];
      if (count++ == 0) example = a.arch.Name() + ": " + a.rule;
    }
  }
  // Those whose step outlasts the budget fit the cluster too.
  const size_t over_budget = rejected.contains("budget") ? rejected.at("budget").first : 0;
  const size_t fit = feasible + over_budget;
  out += fmt::format("{} architecture{}: {} fit{} the cluster{}; {} layouts evaluated\n\n",
                     r.architectures.size(), r.architectures.size() == 1 ? "" : "s", fit,
                     fit == 1 ? "s" : "",
                     over_budget > 0 ? fmt::format(" ({} of them train{} no whole step in the "
                                                   "budget)",
                                                   over_budget, over_budget == 1 ? "s" : "")
                                     : "",
                     r.layouts_evaluated);
  out += fmt::format("Best under the cluster budget (fastest layout that fits; tokens = tokens/s × "
                     "{} days)\n",
                     Days(r.cluster_seconds));
  out += "  rank " + Header();
  for (size_t i = 0; i < r.ranking.size() && i < top; ++i) {
    out += fmt::format("  {:>4} {}\n", i + 1, Row(r.architectures[r.ranking[i]]));
  }
  if (r.ranking.empty()) {
    out += rejected.contains("budget") ? "  none fits and trains a whole step in the budget\n"
                                       : "  none fits\n";
  }
  if (r.flops_optimum) {
    const ArchitectureResult& f = r.architectures[*r.flops_optimum];
    out += fmt::format("\nBest under the FLOPs-only budget (no memory or communication limits): {} "
                       "(sparsity {:.4f}, {} tokens, loss {:.5f}){}\n",
                       f.arch.Name(), f.sparsity, FormatCount(f.flops_tokens), f.flops_loss,
                       f.feasible() ? fmt::format("; on the cluster: loss {:.5f}", f.cluster_loss)
                       : f.rejected == ArchRejection::kBudget
                           ? std::string("; trains no whole step in the cluster budget")
                           : fmt::format("; does not fit the cluster ({})", ToString(f.rejected)));
  }
  out += "\nBest loss per routed-expert count (cluster budget | FLOPs-only budget)\n";
  for (const CurvePoint& p : r.by_experts) {
    out += fmt::format("  E = {:<5} {:>9}  {:<30} | {:>9}  {}\n", p.x, LossText(p.cluster_loss),
                       std::isnan(p.cluster_loss) ? "(none fits)"
                                                  : r.architectures[p.cluster_index].arch.Name(),
                       LossText(p.flops_loss),
                       std::isnan(p.flops_loss) ? (r.flops_budget > 0 ? "(less than one batch)"
                                                                      : "(no FLOPs-only budget)")
                                                : r.architectures[p.flops_index].arch.Name());
  }
  out += "\n" + r.finding + "\n";
  if (!rejected.empty()) {
    out += "\nRejected architectures\n";
    for (const auto& [kind, entry] : rejected) {
      out += fmt::format("  {:<13} {:>6}  e.g. {}\n", kind, entry.first, entry.second);
    }
  }
  return out;
}

std::string RenderCodesignJson(const CodesignResult& r) {
  const SpaceConfig& s = r.space;
  Json j;
  j["space"] = {{"name", s.name}, {"title", s.title}, {"origin", s.origin}, {"source", s.source},
                {"base", s.base}, {"hardware", s.hardware}, {"device", r.device}, {"gpus", s.gpus}};
  j["profile"] = {{"name", r.profile}, {"calibration", r.profile_calibration},
                  {"notes", r.perf_notes}};
  Json params = Json::object();
  for (const auto& [name, value] : s.law.params) params[name] = value;
  j["law"] = {{"name", r.law.name}, {"formula", r.law.formula}, {"params", params},
              {"origin", s.law.origin}};
  j["budget"] = {{"cluster_seconds", Number(r.cluster_seconds)},
                 // Without an MFU to convert the cluster's time (nothing fits), there is no
                 // FLOPs-only budget: null, not 0.
                 {"flops_budget", r.flops_budget > 0 ? Number(r.flops_budget) : Json(nullptr)},
                 {"reference_mfu", r.reference_mfu > 0 ? Number(r.reference_mfu) : Json(nullptr)},
                 {"reference_mfu_rule", r.reference_mfu_rule},
                 {"peak_flops_per_gpu", Number(r.peak_flops_per_gpu)},
                 {"batch_tokens", Number(r.batch_tokens)},
                 {"flops_under_one_batch", r.flops_under_one_batch}};
  Json archs = Json::array();
  for (const ArchitectureResult& a : r.architectures) {
    // A field not known (kUnknownField) is null.
    const auto field = [](int64_t v) { return v == kUnknownField ? Json() : Json(v); };
    Json e = {{"name", a.arch.Name()},
              {"d_model", field(a.arch.d_model)},
              {"layers", field(a.arch.layers)},
              {"experts", field(a.arch.experts)},
              {"top_k", field(a.arch.top_k)},
              {"expert_width", field(a.arch.expert_width)},
              {"shared_experts", field(a.arch.shared_experts)},
              {"latent_dim", field(a.arch.latent_dim)},
              {"fits", a.feasible()}};
    if (!a.feasible()) {
      e["rejected"] = ToString(a.rejected);
      e["rule"] = a.rule;
    }
    if (a.valid_model()) {
      e["active_params"] = a.active_params;
      e["total_params"] = a.total_params;
      e["sparsity"] = Number(a.sparsity);
      e["granularity"] = Number(a.granularity);
      e["model_flops_per_token"] = Number(a.model_flops_per_token);
      e["flops_tokens"] = Number(a.flops_tokens);
      e["flops_loss"] = Number(a.flops_loss);
    }
    if (a.feasible()) {
      e["cluster_tokens"] = Number(a.cluster_tokens);
      e["cluster_loss"] = Number(a.cluster_loss);
      e["estimate"] = EstimateJson(a.layout, a.estimate);
    }
    archs.push_back(e);
  }
  j["architectures"] = archs;
  j["ranking"] = r.ranking;
  j["cluster_optimum"] = r.cluster_optimum ? Json(*r.cluster_optimum) : Json(nullptr);
  j["flops_optimum"] = r.flops_optimum ? Json(*r.flops_optimum) : Json(nullptr);
  Json curve = Json::array();
  for (const CurvePoint& p : r.by_sparsity) {
    curve.push_back({{"sparsity", p.x},
                     {"cluster_loss", Number(p.cluster_loss)},
                     {"flops_loss", Number(p.flops_loss)}});
  }
  j["by_sparsity"] = curve;
  Json experts = Json::array();
  for (const CurvePoint& p : r.by_experts) {
    experts.push_back({{"experts", p.x},
                       {"cluster_loss", Number(p.cluster_loss)},
                       {"flops_loss", Number(p.flops_loss)}});
  }
  j["by_experts"] = experts;
  const auto place = [](const std::optional<OptimumPlacement>& p) {
    if (!p) return Json(nullptr);
    return Json{{"sparsity", p->value}, {"low", p->low}, {"high", p->high}, {"interior", p->interior}};
  };
  j["cluster_sparsity"] = place(r.cluster_sparsity);
  j["flops_sparsity"] = place(r.flops_sparsity);
  const auto on_axis = [](const std::optional<OptimumPlacement>& p) {
    if (!p) return Json(nullptr);
    return Json{
        {"experts", p->value}, {"low", p->low}, {"high", p->high}, {"interior", p->interior}};
  };
  j["cluster_experts"] = on_axis(r.cluster_experts);
  j["flops_experts"] = on_axis(r.flops_experts);
  j["finding"] = r.finding;
  return DumpJson(j) + "\n";
}

std::string RenderCodesignCsv(const CodesignResult& r) {
  std::string out =
      "architecture,d_model,layers,experts,top_k,expert_width,shared_experts,latent_dim,"
      "active_params,total_params,sparsity,fits,rejected,layout,tokens_per_s_per_gpu,mfu,"
      "peak_memory_bytes,dropped_fraction,cluster_tokens,cluster_loss,flops_tokens,flops_loss,"
      "rule\n";
  const auto num = [](double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); };
  const auto quote = [](const std::string& text) {
    std::string q = "\"";
    for (char c : text) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const ArchitectureResult& a : r.architectures) {
    // A field not known (kUnknownField) is an empty cell.
    const auto field = [](int64_t v) {
      return v == kUnknownField ? std::string() : std::to_string(v);
    };
    out += fmt::format("{},{},{},{},{},{},{},{},", quote(a.arch.Name()), field(a.arch.d_model),
                       field(a.arch.layers), field(a.arch.experts), field(a.arch.top_k),
                       field(a.arch.expert_width), field(a.arch.shared_experts),
                       field(a.arch.latent_dim));
    // An architecture that is not a valid model has no parameter counts: empty cells, not zeros.
    if (a.valid_model()) {
      out += fmt::format("{},{},{},", a.active_params, a.total_params, num(a.sparsity));
    } else {
      out += ",,,";
    }
    out += fmt::format("{},{},", a.feasible() ? "true" : "false", ToString(a.rejected));
    if (a.feasible()) {
      out += fmt::format("{},{},{},{},{},{},{},", quote(ToString(a.layout)),
                         num(a.estimate.tokens_per_s_per_gpu), num(a.estimate.mfu),
                         PeakMemoryWholeBytes(a.estimate.memory),
                         num(a.estimate.dropped_fraction),
                         num(a.cluster_tokens), num(a.cluster_loss));
    } else {
      out += ",,,,,,,";
    }
    out += fmt::format("{},{},{}\n", a.valid_model() ? num(a.flops_tokens) : "",
                       a.valid_model() ? num(a.flops_loss) : "", quote(a.rule));
  }
  return out;
}

std::string RenderCodesignHtml(const CodesignResult& r, size_t top) {
  const SpaceConfig& s = r.space;
  std::string body = "<h1>" + EscapeXml(s.title) + "</h1>\n";
  body += "<p class=\"note\">" +
          EscapeXml(fmt::format("{} × {} ({} profile, {}); base {}; law {} ({}); budget {}", s.gpus,
                                r.device, r.profile, r.profile_calibration, s.base, r.law.name,
                                r.law.formula, Budget(r))) +
          "</p>\n";
  for (const std::string& note : r.perf_notes) {
    body += "<p class=\"note\">note: " + EscapeXml(note) + "</p>\n";
  }
  body += "<div class=\"verdict\" id=\"verdict\">\n";
  if (r.cluster_optimum) {
    const ArchitectureResult& a = r.architectures[*r.cluster_optimum];
    body += fmt::format("<p><strong>Train {} with {}</strong><br>{}</p>\n", EscapeXml(a.arch.Name()),
                        EscapeXml(ToString(a.layout)),
                        EscapeXml(fmt::format("sparsity {:.4f}, {} active / {} total parameters, "
                                              "MFU {:.3f}, {} tokens in the budget, predicted "
                                              "loss {:.5f}",
                                              a.sparsity, FormatCount(double(a.active_params)),
                                              FormatCount(double(a.total_params)), a.estimate.mfu,
                                              FormatCount(a.cluster_tokens), a.cluster_loss)));
  }
  body += "<p>" + EscapeXml(r.finding) + "</p>\n</div>\n";

  {
    // Loss against sparsity, one pair of lines per width: solid on the cluster, dashed FLOPs-only.
    XyChart chart;
    chart.title = "Predicted loss against sparsity: cluster budget and FLOPs-only budget";
    chart.x_label = "sparsity S = 1 − active/total";
    chart.y_label = "predicted loss (nats)";
    std::map<int64_t, std::vector<size_t>> by_width;
    for (size_t i = 0; i < r.architectures.size(); ++i) {
      if (r.architectures[i].valid_model()) by_width[r.architectures[i].arch.d_model].push_back(i);
    }
    size_t color = 0;
    for (auto& [width, indices] : by_width) {
      std::stable_sort(indices.begin(), indices.end(), [&](size_t x, size_t y) {
        return r.architectures[x].sparsity < r.architectures[y].sparsity;
      });
      XySeries cluster;
      cluster.name = fmt::format("d{} on the cluster", width);
      cluster.color = PaletteColor(color);
      XySeries flops;
      flops.name = fmt::format("d{} FLOPs-only", width);
      flops.color = PaletteColor(color);
      ++color;
      cluster.line = flops.line = true;
      flops.dashed = true;
      flops.markers = false;
      for (size_t i : indices) {
        const ArchitectureResult& a = r.architectures[i];
        if (!std::isnan(a.flops_loss)) {  // none under one batch of the FLOPs-only budget
          flops.x.push_back(a.sparsity);
          flops.y.push_back(a.flops_loss);
        }
        if (a.feasible()) {
          cluster.x.push_back(a.sparsity);
          cluster.y.push_back(a.cluster_loss);
        }
      }
      chart.series.push_back(std::move(cluster));
      chart.series.push_back(std::move(flops));
    }
    if (r.cluster_optimum) {
      chart.markers.push_back({r.architectures[*r.cluster_optimum].sparsity, "cluster optimum"});
    }
    if (r.flops_optimum) {
      chart.markers.push_back({r.architectures[*r.flops_optimum].sparsity, "FLOPs-only"});
    }
    body += "<figure>\n" + RenderXyChart(chart) + "<figcaption>" +
            EscapeXml("Every architecture of the space by width; a solid line stops where the "
                      "sparser architectures no longer fit the cluster. Vertical lines mark the "
                      "two optima.") +
            "</figcaption>\n</figure>\n";
  }
  {
    XyChart chart;
    chart.title = "Best predicted loss against expert count under each budget";
    chart.x_label = "routed experts";
    chart.y_label = "predicted loss (nats)";
    chart.log_x = true;
    XySeries cluster;
    cluster.name = "cluster budget (fastest layout that fits)";
    cluster.color = PaletteColor(0);
    XySeries flops;
    flops.name = "FLOPs-only budget";
    flops.color = PaletteColor(1);
    cluster.line = flops.line = true;
    flops.dashed = true;
    for (const CurvePoint& p : r.by_experts) {
      if (!(p.x > 0)) continue;
      cluster.x.push_back(p.x);
      cluster.y.push_back(p.cluster_loss);
      if (!std::isnan(p.flops_loss)) {
        flops.x.push_back(p.x);
        flops.y.push_back(p.flops_loss);
      }
    }
    chart.series = {cluster, flops};
    body += "<figure>\n" + RenderXyChart(chart) + "<figcaption>" +
            EscapeXml("For each expert count, the best architecture over the other axes.") +
            "</figcaption>\n</figure>\n";
  }

  body += "<h2>Ranking under the cluster budget</h2>\n";
  std::vector<std::vector<Cell>> rows;
  for (size_t i = 0; i < r.ranking.size() && i < top; ++i) {
    const ArchitectureResult& a = r.architectures[r.ranking[i]];
    rows.push_back({Cell(std::to_string(i + 1), "num"), Cell(a.arch.Name()),
                    Cell(fmt::format("{:.4f}", a.sparsity), "num"),
                    Cell(fmt::format("{:.3f}", a.estimate.mfu), "num"),
                    Cell(fmt::format("{:.1f}", a.estimate.memory.peak_bytes / 1e9), "num"),
                    Cell(fmt::format("{:.2f}%", 100 * a.estimate.dropped_fraction), "num"),
                    Cell(FormatCount(a.cluster_tokens), "num"),
                    Cell(fmt::format("{:.5f}", a.cluster_loss), "num"),
                    Cell(LossText(a.flops_loss), "num"), Cell(ToString(a.layout))});
  }
  body += HtmlTable({"rank", "architecture", "sparsity", "MFU", "memory GB", "dropped", "tokens",
                     "loss", "FLOPs-only loss", "layout"},
                    rows);
  std::vector<std::vector<Cell>> rejected;
  for (const ArchitectureResult& a : r.architectures) {
    if (!a.feasible() && rejected.size() < 50) {
      rejected.push_back({Cell(a.arch.Name()), Cell(std::string(ToString(a.rejected))), Cell(a.rule)});
    }
  }
  if (!rejected.empty()) {
    body += "<h2>Architectures that fit no layout</h2>\n";
    body += HtmlTable({"architecture", "reason", "rule"}, rejected);
  }
  return HtmlDocument(s.title + " — co-design", body);
}

}  // namespace mosaic::report
