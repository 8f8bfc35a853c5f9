// Layout search: every divisor-valid combination of tp, pp, vpp, cp, dp, fsdp, ep, etp and
// moe_chunk for a cluster, each with micro-batches 1, 2, 4, … up to what memory allows, the
// recompute policies (kRecomputeByCost) and, where the profile's stack runs it
// (PerfProfile::paired_a2a_overlap) and Megatron-Core can (CheckLayout's rules: ep > 1, vpp > 1
// when pp > 1, recompute neither full nor moe) and its schedule pairs a pass
// (A2aOverlapPairedShare > 0), with and without the EP all-to-all overlap (a2a_overlap),
// evaluated by the step model and ranked by tokens/s per GPU; speeds equal to about 1e-4 (the
// same 13 leading bits) rank the layout without the overlap first, then the one with the lower
// peak memory. Pipeline stages are split evenly (or, where pp·vpp does not divide the layers,
// by SplitPipeline's default) and, where pp·vpp divides the layers with two slots more and not
// without, also with the embedding and the loss counted as a layer each (pp_embed=1,pp_loss=1,
// as Megatron-Bridge's recipes for Qwen3-235B and Llama 3.1 405B do) unless that split equals the
// default one (PipelineSplit's ==, as at pp 2); pp_first, pp_last and
// pp_layout are not enumerated. Activation offload is tried only when asked
// (SearchOptions::offload), for layouts that fit under none of the recompute policies they may
// use (the overlap allows neither full nor MoE recompute). Rejected combinations are counted by reason (does not divide, exceeds a domain, out of memory, not
// supported) with a few examples each. Evaluation is allocation-free per layout, so a search for
// one model on one cluster runs in well under a second (bench/perf_bench.cc). A space with no
// layout that divides the batch is refused before enumerating (UnsearchableReason), and a long
// search reports its progress through SearchOptions::progress.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "mosaic/perf/step_model.h"

namespace mosaic {

// What the search tries for a layout that fits under no recompute policy (SearchOptions::
// offload): nothing; Megatron-Core's fine-grained offload of module inputs (offload_modules:
// first the experts' fc1 and activation inputs, expert_fc1+moe_act, then every module the model
// has); or the saved activations of every layer of a pipeline rank (offload_layers, as MaxText's
// host-offloading remat policies).
enum class OffloadSearch { kNone, kModules, kLayers };
// "none", "modules", "layers"
std::string_view ToString(OffloadSearch offload);
std::optional<OffloadSearch> OffloadSearchFromString(std::string_view text);

struct SearchOptions {
  int64_t top = 10;             // candidates kept in full, best first
  int64_t max_cp = 8;           // context-parallel degrees tried: 1, 2, 4, … up to this
  int64_t max_vpp = 8;          // virtual stages tried: 1, 2, 4, … up to this
  int64_t examples_per_reason = 3;
  // Offload tried where no recompute policy fits the HBM; each offloaded variant is a layout of
  // its own (counted in `evaluated`), kept when its HBM and host memory both fit, the least
  // offload first. Needs the device's host link and host memory (SearchLayouts throws
  // InputError otherwise).
  OffloadSearch offload = OffloadSearch::kNone;
  // The EP all-to-all's path across scale-up domains, written into every layout with ep > 1
  // (Layout::dispatch): the stack's, where it is not the profile's default (perf --dispatch; a
  // validated row's own). kProfile: left out, the profile's.
  Dispatch dispatch = Dispatch::kProfile;
  // Called after each (tp, pp) pair of the enumeration with the share of pairs done (0 < f <= 1,
  // increasing, 1 last) and the layouts looked at so far; empty: no calls. For progress displays.
  std::function<void(double fraction_done, int64_t evaluated)> progress;
};

struct SearchCandidate {
  Layout layout;
  StepEstimate estimate;
};

struct Rejection {
  Layout layout;
  LayoutViolation violation;
};

struct SearchResult {
  std::vector<SearchCandidate> best;             // the `top` fastest feasible, best first
  std::vector<double> feasible_tokens_per_s;     // every feasible layout's tokens/s, in search order
  int64_t evaluated = 0;                         // layouts looked at (valid or not)
  std::array<int64_t, kRejectKinds> rejected{};  // by RejectKind
  std::vector<Rejection> examples;               // a few per reason
  // The least HBM bytes a layout rejected for memory needs beside its activations (its peak less
  // activation_bytes): past the device's HBM, no activation offload can make any of them fit.
  // Infinity when none was rejected for memory.
  double least_memory_without_activations_bytes = std::numeric_limits<double>::infinity();

  // Set when no layout of the space can run the job (UnsearchableReason); nothing was enumerated.
  std::string unsearchable;
  // The EP all-to-all's path the search wrote into its layouts (SearchOptions::dispatch).
  Dispatch dispatch = Dispatch::kProfile;

  int64_t feasible() const { return static_cast<int64_t>(feasible_tokens_per_s.size()); }
  // 1-based rank a layout with `tokens_per_s` would take among the feasible ones.
  int64_t RankOf(double tokens_per_s) const;
  // The rejection counts in words: "3 do not divide, 0 exceed a domain, 12 out of memory, 1 not
  // supported".
  std::string RejectedText() const;
};

// Why no layout of the search space can divide the job, found without enumerating it (a few
// dozen gcd computations): every layout has dp·fsdp = GPUs/(tp·pp·cp) and needs it to divide the
// batch, with tp a divisor of the heads inside the scale-up domain, cp a power of two up to
// options.max_cp dividing the sequence, and pp <= the layer passes. For each (tp, cp) the smallest
// pp that works is M/gcd(M, batch), M = GPUs/(tp·cp). nullopt when some (tp, pp, cp) passes; the
// message names the batch, the GPUs and the smallest data-parallel size reachable otherwise.
std::optional<std::string> UnsearchableReason(const ModelConfig& model, const JobShape& job,
                                              int64_t domain_gpus,
                                              const SearchOptions& options = {});

SearchResult SearchLayouts(const ModelShape& model, const Cluster& cluster, const PerfJob& job,
                           const SharedPerfParams& shared, const PerfProfile& profile,
                           const DropParams& drop, const SearchOptions& options = {});

}  // namespace mosaic
