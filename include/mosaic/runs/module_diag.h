// Per-loop module diagnostics of a looped model (seed 004's module_diag.csv): wide columns named
// per layer, branch and loop, e.g. `H/L03/moe/cH01/act_var` (docs/logs.md, "Other formats"),
// summarised per loop at the last diagnostic step and over time.
//
// A column is a per-loop diagnostic when its '/'-separated name has a loop component `cH<digits>`
// followed by at least one more component; the last component is the metric, a component
// `L<digits>` is the layer, the components between the layer and the loop are the branch (`attn`,
// `moe`; "all" when there are none) and those before are a prefix that is not used. The CSV is read
// by the run reader (run.h), so the run's restart policy has already chosen which pass of a step
// is kept.
//
// Per (metric, branch, loop), over the layers that logged it:
//   over time: at every diagnostic step, the mean over the layers with a finite value there;
//   first:     that mean at the group's first step (columns appear over time: earlier cells blank);
//   last:      that mean at the group's last step, with the lowest and highest layer;
//   growth:    last / first of the mean;
//   per layer: last / first of each column, the lowest and the highest ratio and their layers.
// Findings: the loop whose activation norm grows the most (flagged when growth >=
// `growth_ratio`), and where effective rank falls the most (flagged as a collapse when a layer's
// last / first ratio <= `collapse_ratio`), per branch.
//
// Columns that are always zero where they have a value (per-module gradient norms that were not
// collected under FSDP2: seed 004's `module_diag/*/grad_norm_mean`) say nothing: they are named in
// `zero_columns` and left out. Besides per-loop columns this applies to tags under `module_diag/`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/runs/run.h"

namespace mosaic::runs {

// What a diagnostic metric measures, from its name (case-insensitive): a name containing "rank"
// is an effective rank; "cos" a mean cosine; "sv", "singular" or "sigma" a top singular value;
// "var" a variance; "norm" (but not "grad") an activation norm; anything else kOther.
enum class DiagMetricKind {
  kActivationNorm,
  kVariance,
  kEffectiveRank,
  kTopSingularValue,
  kMeanCosine,
  kOther
};
std::string_view ToString(DiagMetricKind kind);  // "activation norm", "variance", ...
DiagMetricKind ClassifyDiagMetric(std::string_view metric);

// One per-loop diagnostic column, parsed from its name.
struct DiagColumn {
  std::string tag;
  int layer = -1;      // -1 when the name has no `L<digits>` component
  std::string branch;  // "all" when the name has none
  int loop = 0;        // the number after cH
  std::string metric;  // the last component, e.g. "act_var"
};

// The column's parts; nullopt when `tag` is not a per-loop diagnostic column.
std::optional<DiagColumn> ParseDiagColumn(std::string_view tag);

struct DiagOptions {
  double growth_ratio = 2.0;    // activation norm growth (last / first mean) flagged from here
  double collapse_ratio = 0.5;  // effective rank of a layer (last / first) flagged at or below
};

// One metric of one branch of one loop, over the layers that logged it.
struct LoopMetric {
  std::string metric;
  DiagMetricKind kind = DiagMetricKind::kOther;
  std::string branch;
  int loop = 0;
  int layers = 0;  // columns (layers) in the group
  int64_t first_step = 0;
  int64_t last_step = 0;
  double first_mean = 0;  // mean over layers at first_step
  double last_mean = 0;   // mean over layers at last_step
  double growth = 0;      // last_mean / first_mean; NaN when first_mean is 0
  double last_min = 0, last_max = 0;  // over layers at last_step
  int last_min_layer = -1, last_max_layer = -1;
  double lowest_layer_ratio = 0;  // the smallest last / first of one column; NaN when none
  int lowest_ratio_layer = -1;
  double highest_layer_ratio = 0;
  int highest_ratio_layer = -1;
  std::vector<int64_t> steps;   // every step of the group, ascending
  std::vector<double> means;    // mean over layers at each step
};

enum class DiagFindingKind { kNormGrowth, kRankCollapse };
std::string_view ToString(DiagFindingKind kind);  // "norm-growth", "rank-collapse"

// Per branch and metric: the loop (and layer) where the activation norm grew most or the
// effective rank fell most; `flagged` when past the option's threshold.
struct DiagFinding {
  DiagFindingKind kind = DiagFindingKind::kNormGrowth;
  std::string metric;
  std::string branch;
  int loop = 0;
  int layer = -1;  // kRankCollapse: the layer with the lowest ratio
  int64_t first_step = 0, last_step = 0;
  double first = 0, last = 0, ratio = 0;
  bool flagged = false;
  std::string message;  // one line, e.g. "activation norm (moe) grows most in cH09: 1.1 → 4.2 (×3.8)"
};

struct LoopDiagnostics {
  int64_t columns = 0;          // per-loop columns used
  int64_t last_step = 0;        // the last diagnostic step over every column used
  std::vector<int> loops;       // ascending
  std::vector<std::string> branches;  // in order of first appearance
  std::vector<std::string> metrics;   // by kind, then name
  std::vector<LoopMetric> groups;     // by metric (as `metrics`), branch, loop
  std::vector<std::string> zero_columns;  // always zero: named and left out, sorted
  std::vector<DiagFinding> findings;

  bool empty() const { return groups.empty(); }
  const LoopMetric* Find(std::string_view metric, std::string_view branch, int loop) const;
};

// The per-loop summary of `run`'s diagnostic columns (empty when it has none).
LoopDiagnostics SummarizeLoopDiagnostics(const Run& run, const DiagOptions& options = {});

}  // namespace mosaic::runs
