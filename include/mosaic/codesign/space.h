// A co-design space (seed 003, MOSAIC): the cluster and the budget, the architecture axes swept
// over a base model, the scaling law with sparsity that turns an architecture and its training
// tokens into a loss, and the layout-search options of the performance model. Loaded from TOML;
// data/spaces/*.toml are the shipped examples (embedded).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic {

// The budget of the comparison. Exactly one of gpu_hours, days (wall-clock on the cluster) and
// model_flops is given. The cluster budget is wall-clock seconds on the cluster; the FLOPs-only
// budget is model FLOPs; they are converted into each other at reference_mfu:
//   model FLOPs = seconds × gpus × peak bf16 FLOP/s × reference_mfu.
// reference_mfu = 0 means: the median MFU of the architectures that fit (computed by the sweep).
struct BudgetSpec {
  double gpu_hours = 0;
  double days = 0;
  double model_flops = 0;
  double reference_mfu = 0;
  SourceLocation where;  // where the budget (gpu_hours, days or model_flops) is written
};

// One swept value of an integer axis: a number, or an expression in d (d_model) such as "d/2"
// (study/study_config.h ResolveOverride grammar).
using AxisValue = std::string;

struct AxesSpec {
  std::vector<int64_t> d_model;            // empty: the base model's
  std::vector<int64_t> layers;             // crossed with d_model ("free" depth); empty: see below
  int64_t aspect_ratio = 0;                // > 0: layers = round(d_model / aspect_ratio), >= 1
  std::vector<int64_t> experts;
  std::vector<int64_t> top_k;
  std::vector<AxisValue> expert_width;     // exclusive with granularity
  std::vector<int64_t> granularity;        // expert_width = 4·d_model / G (Krajewski et al. 2024)
  std::vector<int64_t> shared_experts;
  std::vector<AxisValue> latent_dim;       // 0 = no LatentMoE
};

// The depth rule of a space with an aspect_ratio (> 0): layers = round(d_model / aspect_ratio),
// halves rounded up. 0 when d_model is under half the ratio, which LoadSpaceFromToml refuses for
// every swept d_model.
inline int64_t LayersForAspectRatio(int64_t d_model, int64_t aspect_ratio) {
  return (d_model + aspect_ratio / 2) / aspect_ratio;
}

// The scaling law: a built-in law of `mosaic fit` and its parameter values (paper names, value
// space), inline or from a `mosaic fit --json` output.
struct LawSpec {
  std::string name;
  std::vector<std::pair<std::string, double>> params;
  std::string origin;  // "inline in FILE" or the JSON file's path
};

// Layout search options (perf/search.h) and the job shape.
struct SearchSpec {
  std::string profile;
  std::string format = "bf16";
  std::string routing = "auto";
  double capacity_factor = 0;
  int64_t batch_seqs = 0;
  int64_t seq_len = 4096;
  int64_t max_cp = 8;
  int64_t max_vpp = 8;
};

struct SpaceConfig {
  std::string name;
  std::string title;
  std::string source;      // where the space's numbers come from
  std::string origin;      // file path or "data/spaces/NAME.toml"
  std::string base;        // model preset or TOML path
  std::string hardware;
  int64_t gpus = 0;
  BudgetSpec budget;
  AxesSpec axes;
  LawSpec law;
  SearchSpec search;
};

// Names of the embedded spaces (data/spaces/*.toml), sorted.
std::vector<std::string> SpaceNames();

// Loads a space from a TOML file, or an embedded space by name. Throws InputError with
// file:line:col, key, value and rule: unknown keys (did you mean), an empty axis, a range whose
// bounds or step make no values, expert_width and granularity both given, no budget or two, an
// unknown law or base preset, law parameters missing or unknown, a fit JSON of another law.
SpaceConfig LoadSpace(std::string_view name_or_path);
SpaceConfig LoadSpaceFromToml(std::string_view toml_text, const std::string& origin);

}  // namespace mosaic
