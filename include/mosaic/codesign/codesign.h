// The co-design job (seed 003, MOSAIC: "Compute-optimal is not cluster-optimal"): for every
// architecture of a space, exact accounting → the fastest layout that fits the cluster (the
// layout search of perf/search.h) → tokens/s → tokens trained in the budget → predicted loss by
// the space's scaling law; and the same architectures under a pure model-FLOPs budget (tokens =
// FLOPs budget / model FLOPs per token, no memory or communication), the comparison MOSAIC makes.
//
// Law inputs per architecture: N = active parameters (every law but abnar) or total parameters
// (abnar), D = training tokens, S = 1 − active/total (sparsity: the inactive fraction of
// parameters, MOSAIC's definition), G = 4·d_model / expert_width (Krajewski et al. 2024's
// granularity), E_count = routed experts. Parameters are counted with embeddings (model/
// param_count.h, "inclusive"); model FLOPs per token are 3 × the physical forward FLOPs, the MFU
// numerator of perf/step_model.h.
//
// Deterministic: the result does not depend on the thread count or on how the architectures are
// split over MPI ranks (codesign/distributed.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mosaic/codesign/space.h"
#include "mosaic/perf/perf_request.h"
#include "mosaic/scaling/law.h"

namespace mosaic {

// A field of a rejected architecture that is not known: the space left it to the base model or
// to a derivation, and the model was invalid before it was resolved.
inline constexpr int64_t kUnknownField = -1;

struct Architecture {
  // Each field as the model resolves it; kUnknownField when not known (rejected architectures).
  int64_t d_model = 0;
  int64_t layers = 0;
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t expert_width = 0;
  int64_t shared_experts = 0;
  int64_t latent_dim = 0;

  // "d1024 L16 E64 k4 w512 s2" (+ " l512" with a latent dimension); "?" for a field not known.
  std::string Name() const;
};

// Why an architecture has no layout on the cluster.
enum class ArchRejection {
  kNone,
  kModel,          // the model itself is invalid (e.g. top_k > experts, heads do not divide)
  kMemory,         // its training state alone exceeds the cluster's memory, or no layout fits
  kDomain,         // every layout exceeds a scale-up domain
  kDivisibility,   // no layout divides the model, batch and GPUs
  kBudget,         // its fastest layout's optimizer step is longer than the cluster budget
};
// "", "model", "memory", "domain", "divisibility", "budget"
std::string_view ToString(ArchRejection kind);

struct ArchitectureResult {
  Architecture arch;
  ArchRejection rejected = ArchRejection::kNone;
  std::string rule;               // the rule that rejected it
  int64_t active_params = 0;
  int64_t total_params = 0;
  double sparsity = 0;            // 1 − active/total
  double granularity = 0;
  double model_flops_per_token = 0;
  // The fastest layout that fits (when not rejected).
  Layout layout;
  StepEstimate estimate;
  double cluster_tokens = 0;      // tokens trained in the cluster budget
  double cluster_loss = 0;        // NaN when rejected
  double flops_tokens = 0;        // tokens in the FLOPs-only budget
  // NaN when the model is invalid or the FLOPs-only budget buys it less than one global batch.
  double flops_loss = 0;
  int64_t layouts_evaluated = 0;  // by its layout search

  bool feasible() const { return rejected == ArchRejection::kNone; }
  bool valid_model() const { return rejected != ArchRejection::kModel; }
};

// Best loss per value of one quantity (sparsity or expert count) under a budget.
struct CurvePoint {
  double x = 0;
  double cluster_loss = 0;   // NaN when no architecture with this x fits the cluster
  size_t cluster_index = 0;  // the architecture reaching it
  double flops_loss = 0;     // NaN when the FLOPs-only budget ranks none with this x
  size_t flops_index = 0;
};

// Where an optimum lies in the swept range of a quantity.
struct OptimumPlacement {
  double value = 0;
  double low = 0, high = 0;  // the range swept (of architectures eligible under that budget)
  bool interior = false;     // strictly inside the range
};

struct CodesignResult {
  SpaceConfig space;
  scaling::Law law;
  std::vector<double> theta;            // the law's θ from the space's parameters
  std::string device;                   // the device's name (space.hardware may be a file path)
  std::string profile;                  // the performance profile the layout searches used
  std::string profile_calibration;      // CalibrationText: "calibrated on h100", ...
  std::vector<std::string> perf_notes;  // PerfCautions of the base job (another device's profile)
  double peak_flops_per_gpu = 0;        // bf16 dense
  double cluster_seconds = 0;           // wall-clock of the cluster budget
  double flops_budget = 0;              // model FLOPs of the FLOPs-only budget
  // Valid architectures the FLOPs-only budget buys less than one global batch (no FLOPs-only
  // loss), and that batch in tokens.
  int64_t flops_under_one_batch = 0;
  double batch_tokens = 0;
  double reference_mfu = 0;             // used to convert between the two
  std::string reference_mfu_rule;
  std::vector<ArchitectureResult> architectures;  // enumeration order
  std::vector<size_t> ranking;          // feasible architectures, best cluster loss first
  std::optional<size_t> cluster_optimum;
  std::optional<size_t> flops_optimum;
  std::vector<CurvePoint> by_sparsity;  // ascending sparsity
  std::vector<CurvePoint> by_experts;   // ascending expert count
  std::optional<OptimumPlacement> cluster_sparsity, flops_sparsity;
  // Each optimum's expert count among those swept at its other dimensions (d_model, layers,
  // top_k, width, shared experts, latent dimension), of the architectures eligible under its
  // budget: whether more or fewer experts of the same model were on offer. The sparsity
  // placement compares across model sizes; this one along the experts axis alone.
  std::optional<OptimumPlacement> cluster_experts, flops_experts;
  std::string finding;                  // the MOSAIC comparison, and where each optimum's
                                        // experts sit on their axis
  int64_t layouts_evaluated = 0;
};

// Every architecture of the space, in a fixed order (d_model, layers, experts, top_k, width,
// shared experts, latent dimension; each axis in its listed order).
std::vector<Architecture> EnumerateArchitectures(const SpaceConfig& space);

// Evaluates architectures [begin, end) of `all` (accounting, layout search); losses are filled by
// Summarize once the budgets are known. Thread-safe for disjoint ranges.
struct SweepContext;  // the loaded base model, device, profiles and job (opaque)
std::shared_ptr<const SweepContext> PrepareSweep(const SpaceConfig& space);
void EvaluateRange(const SweepContext& context, const std::vector<Architecture>& all, size_t begin,
                   size_t end, std::vector<ArchitectureResult>& out);

// Budgets, losses, ranking, curves and the finding, from evaluated architectures.
CodesignResult Summarize(const SpaceConfig& space, std::vector<ArchitectureResult> architectures);

struct CodesignOptions {
  int threads = 2;
  // Called about every 0.25 s with (done, total), from one of the evaluating threads (never two
  // calls at once), and once with (total, total) at the end; may be empty.
  std::function<void(size_t, size_t)> progress;
};

// Evaluates architectures [begin, end) of `all` on `options.threads` threads (chunks taken in
// turn through ParallelFor, the calling thread one of them; each result written to its own slot of
// `out`, so the split does not change them), calling `options.progress` with (done, end − begin)
// as CodesignOptions says. Throws InputError unless
// 1 <= options.threads <= kMaxThreads (parallel_for.h).
void EvaluateShare(const SweepContext& context, const std::vector<Architecture>& all,
                   size_t begin, size_t end, const CodesignOptions& options,
                   std::vector<ArchitectureResult>& out);

// The whole job on one process: enumerate, evaluate on `threads` threads, summarize. Throws
// InputError unless 1 <= options.threads <= kMaxThreads (parallel_for.h).
CodesignResult RunCodesign(const SpaceConfig& space, const CodesignOptions& options = {});

}  // namespace mosaic
