#include "mosaic/runs/module_diag.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <tuple>

namespace mosaic::runs {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The number after `prefix` when `part` is `prefix` followed by digits only.
std::optional<int> NumberAfter(std::string_view part, std::string_view prefix) {
  if (part.size() <= prefix.size() || part.substr(0, prefix.size()) != prefix) return std::nullopt;
  int value = 0;
  for (char c : part.substr(prefix.size())) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || value > 100'000'000) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::vector<std::string_view> Split(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = text.find('/', start);
    parts.push_back(text.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

bool AlwaysZero(const TimeSeries& s) {
  bool any = false;
  for (const ScalarPoint& p : s.points) {
    if (!std::isfinite(p.value)) continue;
    if (p.value != 0) return false;
    any = true;
  }
  return any;
}

std::string LayerName(int layer) { return layer < 0 ? "" : fmt::format("L{:02}", layer); }

std::string FormatG(double v) { return fmt::format("{:.4g}", v); }

}  // namespace

std::string_view ToString(DiagMetricKind kind) {
  switch (kind) {
    case DiagMetricKind::kActivationNorm: return "activation norm";
    case DiagMetricKind::kVariance: return "variance";
    case DiagMetricKind::kEffectiveRank: return "effective rank";
    case DiagMetricKind::kTopSingularValue: return "top singular value";
    case DiagMetricKind::kMeanCosine: return "mean cosine";
    case DiagMetricKind::kOther: return "other";
  }
  return "?";
}

std::string_view ToString(DiagFindingKind kind) {
  switch (kind) {
    case DiagFindingKind::kNormGrowth: return "norm-growth";
    case DiagFindingKind::kRankCollapse: return "rank-collapse";
  }
  return "?";
}

DiagMetricKind ClassifyDiagMetric(std::string_view metric) {
  const std::string name = Lower(metric);
  auto has = [&](std::string_view part) { return name.find(part) != std::string::npos; };
  if (has("rank")) return DiagMetricKind::kEffectiveRank;
  if (has("cos")) return DiagMetricKind::kMeanCosine;
  if (has("sv") || has("singular") || has("sigma")) return DiagMetricKind::kTopSingularValue;
  if (has("var")) return DiagMetricKind::kVariance;
  if (has("norm") && !has("grad")) return DiagMetricKind::kActivationNorm;
  return DiagMetricKind::kOther;
}

std::optional<DiagColumn> ParseDiagColumn(std::string_view tag) {
  const std::vector<std::string_view> parts = Split(tag);
  if (parts.size() < 2) return std::nullopt;
  int loop_at = -1, layer_at = -1;
  DiagColumn column;
  column.tag = std::string(tag);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (std::optional<int> loop = NumberAfter(parts[i], "cH"); loop && loop_at < 0) {
      loop_at = static_cast<int>(i);
      column.loop = *loop;
    } else if (std::optional<int> layer = NumberAfter(parts[i], "L"); layer && layer_at < 0) {
      layer_at = static_cast<int>(i);
      column.layer = *layer;
    }
  }
  if (loop_at < 0 || parts.back().empty()) return std::nullopt;
  column.metric = std::string(parts.back());
  // The branch: what lies between the layer (or the start, without a layer: nothing) and the
  // loop, or after the loop before the metric when the loop comes first.
  std::string branch;
  auto add = [&](std::string_view part) {
    if (part.empty()) return;
    branch += (branch.empty() ? "" : "/") + std::string(part);
  };
  if (layer_at >= 0 && layer_at < loop_at) {
    for (int i = layer_at + 1; i < loop_at; ++i) add(parts[i]);
  }
  for (size_t i = static_cast<size_t>(loop_at) + 1; i + 1 < parts.size(); ++i) {
    if (static_cast<int>(i) != layer_at) add(parts[i]);
  }
  column.branch = branch.empty() ? "all" : branch;
  return column;
}

const LoopMetric* LoopDiagnostics::Find(std::string_view metric, std::string_view branch,
                                        int loop) const {
  for (const LoopMetric& g : groups) {
    if (g.metric == metric && g.branch == branch && g.loop == loop) return &g;
  }
  return nullptr;
}

LoopDiagnostics SummarizeLoopDiagnostics(const Run& run, const DiagOptions& options) {
  LoopDiagnostics out;
  struct Member {
    int layer;
    const TimeSeries* series;
  };
  // (kind, metric) → branch → loop → columns.
  std::map<std::tuple<int, std::string, std::string, int>, std::vector<Member>> by_group;
  std::map<std::string, size_t> branch_order;
  for (const TimeSeries& s : run.series) {
    const std::optional<DiagColumn> column = ParseDiagColumn(s.tag);
    const bool module_tag = s.tag.rfind("module_diag/", 0) == 0;
    if (!column && !module_tag) continue;
    if (AlwaysZero(s)) {
      out.zero_columns.push_back(s.tag);
      continue;
    }
    if (!column) continue;
    bool finite = false;
    for (const ScalarPoint& p : s.points) finite = finite || std::isfinite(p.value);
    if (!finite) continue;
    branch_order.try_emplace(column->branch, branch_order.size());
    by_group[{static_cast<int>(ClassifyDiagMetric(column->metric)), column->metric,
              column->branch, column->loop}]
        .push_back({column->layer, &s});
    ++out.columns;
  }
  std::sort(out.zero_columns.begin(), out.zero_columns.end());
  out.branches.resize(branch_order.size());
  for (const auto& [branch, index] : branch_order) out.branches[index] = branch;

  for (auto& [key, members] : by_group) {
    const auto& [kind, metric, branch, loop] = key;
    std::sort(members.begin(), members.end(),
              [](const Member& a, const Member& b) { return a.layer < b.layer; });
    LoopMetric g;
    g.metric = metric;
    g.kind = static_cast<DiagMetricKind>(kind);
    g.branch = branch;
    g.loop = loop;
    g.layers = static_cast<int>(members.size());
    std::map<int64_t, std::pair<double, int>> sums;  // step → (sum, count)
    for (const Member& m : members) {
      for (const ScalarPoint& p : m.series->points) {
        if (!std::isfinite(p.value)) continue;
        auto& [sum, count] = sums[p.step];
        sum += p.value;
        ++count;
      }
    }
    for (const auto& [step, sc] : sums) {
      g.steps.push_back(step);
      g.means.push_back(sc.first / sc.second);
    }
    g.first_step = g.steps.front();
    g.last_step = g.steps.back();
    g.first_mean = g.means.front();
    g.last_mean = g.means.back();
    g.growth = g.first_mean != 0 ? g.last_mean / g.first_mean : NAN;
    g.last_min = INFINITY;
    g.last_max = -INFINITY;
    g.lowest_layer_ratio = NAN;
    g.highest_layer_ratio = NAN;
    for (const Member& m : members) {
      std::optional<double> first, at_last;
      for (const ScalarPoint& p : m.series->points) {
        if (!std::isfinite(p.value)) continue;
        if (!first) first = p.value;
        if (p.step == g.last_step && !at_last) at_last = p.value;
      }
      if (!at_last) continue;
      if (*at_last < g.last_min) {
        g.last_min = *at_last;
        g.last_min_layer = m.layer;
      }
      if (*at_last > g.last_max) {
        g.last_max = *at_last;
        g.last_max_layer = m.layer;
      }
      if (first && *first != 0) {
        const double ratio = *at_last / *first;
        if (!(ratio >= g.lowest_layer_ratio)) {
          g.lowest_layer_ratio = ratio;
          g.lowest_ratio_layer = m.layer;
        }
        if (!(ratio <= g.highest_layer_ratio)) {
          g.highest_layer_ratio = ratio;
          g.highest_ratio_layer = m.layer;
        }
      }
    }
    out.last_step = std::max(out.last_step, g.last_step);
    if (std::find(out.loops.begin(), out.loops.end(), loop) == out.loops.end()) {
      out.loops.push_back(loop);
    }
    if (std::find(out.metrics.begin(), out.metrics.end(), metric) == out.metrics.end()) {
      out.metrics.push_back(metric);
    }
    out.groups.push_back(std::move(g));
  }
  std::sort(out.loops.begin(), out.loops.end());
  // Groups by metric (kind, then name: the map's order), then branch in order of appearance.
  std::stable_sort(out.groups.begin(), out.groups.end(), [&](const LoopMetric& a,
                                                             const LoopMetric& b) {
    const auto ma = std::find(out.metrics.begin(), out.metrics.end(), a.metric);
    const auto mb = std::find(out.metrics.begin(), out.metrics.end(), b.metric);
    if (ma != mb) return ma < mb;
    if (a.branch != b.branch) return branch_order[a.branch] < branch_order[b.branch];
    return a.loop < b.loop;
  });

  // Findings, per metric and branch.
  for (const std::string& metric : out.metrics) {
    const DiagMetricKind kind = ClassifyDiagMetric(metric);
    if (kind != DiagMetricKind::kActivationNorm && kind != DiagMetricKind::kEffectiveRank) continue;
    for (const std::string& branch : out.branches) {
      const LoopMetric* best = nullptr;
      for (const LoopMetric& g : out.groups) {
        if (g.metric != metric || g.branch != branch) continue;
        if (kind == DiagMetricKind::kActivationNorm) {
          if (std::isfinite(g.growth) && (best == nullptr || g.growth > best->growth)) best = &g;
        } else if (std::isfinite(g.lowest_layer_ratio) &&
                   (best == nullptr || g.lowest_layer_ratio < best->lowest_layer_ratio)) {
          best = &g;
        }
      }
      if (best == nullptr) continue;
      DiagFinding f;
      f.metric = metric;
      f.branch = branch;
      f.loop = best->loop;
      f.first_step = best->first_step;
      f.last_step = best->last_step;
      if (kind == DiagMetricKind::kActivationNorm) {
        f.kind = DiagFindingKind::kNormGrowth;
        f.first = best->first_mean;
        f.last = best->last_mean;
        f.ratio = best->growth;
        f.flagged = f.ratio >= options.growth_ratio;
        f.message = fmt::format(
            "{} ({}, {}) grows most in cH{:02}: {} → {} (×{:.2f}) over steps {}–{}{}", metric,
            ToString(kind), branch, f.loop, FormatG(f.first), FormatG(f.last), f.ratio,
            f.first_step, f.last_step,
            f.flagged ? fmt::format("; at least ×{:g}", options.growth_ratio) : "");
      } else {
        f.kind = DiagFindingKind::kRankCollapse;
        f.layer = best->lowest_ratio_layer;
        f.ratio = best->lowest_layer_ratio;
        // The layer's own first and last values.
        for (const TimeSeries& s : run.series) {
          const std::optional<DiagColumn> c = ParseDiagColumn(s.tag);
          if (!c || c->metric != metric || c->branch != branch || c->loop != f.loop ||
              c->layer != f.layer) {
            continue;
          }
          bool have_first = false;
          for (const ScalarPoint& p : s.points) {
            if (!std::isfinite(p.value)) continue;
            if (!have_first) f.first = p.value;
            have_first = true;
            if (p.step == best->last_step) f.last = p.value;
          }
          break;
        }
        f.flagged = f.ratio <= options.collapse_ratio;
        f.message = fmt::format("{} ({}, {}) falls most in cH{:02}{}: {} → {} (×{:.2f}) over "
                                "steps {}–{}{}",
                                metric, ToString(kind), branch, f.loop,
                                f.layer >= 0 ? " " + LayerName(f.layer) : "", FormatG(f.first),
                                FormatG(f.last), f.ratio, f.first_step, f.last_step,
                                f.flagged ? fmt::format("; collapsed (at most ×{:g})",
                                                        options.collapse_ratio)
                                          : "");
      }
      out.findings.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace mosaic::runs
