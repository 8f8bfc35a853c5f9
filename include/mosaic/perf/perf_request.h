// A performance-model request as a user states it (model, device, GPU count, batch, sequence
// length, number format, routing, profile) turned into everything the step model and the layout
// search need: the loaded model and its shape, the cluster, the profile and the job. One path for
// `mosaic perf`, the decision and co-design jobs and the Python package.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/dropping.h"
#include "mosaic/perf/search.h"
#include "mosaic/perf/step_model.h"
#include "mosaic/util/field_override.h"

#include <nlohmann/json.hpp>

namespace mosaic {

// The largest GPU count and global batch (sequences) a request may name (`mosaic perf`'s flags).
inline constexpr int64_t kMaxPerfGpus = int64_t{1} << 24;
inline constexpr int64_t kMaxPerfBatch = int64_t{1} << 30;

struct PerfRequest {
  std::string model;                    // preset name or model TOML path
  std::vector<FieldOverride> model_sets;     // model field overrides
  std::vector<FieldOverride> hardware_sets;  // device field overrides
  std::string hardware;                 // device preset or TOML path
  int64_t gpus = 0;
  int64_t batch = 0;                    // global batch, sequences per step
  int64_t seq = 4096;                   // tokens per sequence
  NumberFormat format = NumberFormat::kBf16;
  // nullopt: capacity when a capacity factor is given (capacity_factor, else the model's own
  // ModelConfig::capacity_factor), else dropless
  std::optional<RoutingPolicy> routing;
  // 0: none given; the model's capacity_factor applies when it has one, else 1.0 where a policy
  // needs one
  double capacity_factor = 0;
  bool pad_to_capacity = true;          // PerfJob::pad_to_capacity (capacity routing only)
  std::string profile;                  // "" = the device's default profile
  std::string profiles_file;            // "" = the shipped profiles
  int64_t bp_segment_loops = 0;
};

// Adds one `--set` override to the request: a field named "hardware.FIELD" to hardware_sets (as
// FIELD), any other to model_sets.
void AddFieldOverride(PerfRequest& request, FieldOverride override);

// Sets request.format and request.routing from their names ("bf16" | "fp8" | "mxfp8";
// "auto" | "dropless" | "balanced" | "capacity" | "fixed-cells", "auto" leaving the routing to the
// capacity factor). Throws InputError naming the value and the choices.
void SetFormatAndRouting(PerfRequest& request, std::string_view format, std::string_view routing);

// What the step model and the search take, built once per request.
struct PerfSetup {
  ModelSpec spec;
  HardwareSpec hardware;
  Cluster cluster;
  ProfileSet profiles;
  PerfProfile profile;
  PerfJob job;
  ModelShape shape;
  DropParams drop;
};

// Loads the model, device and profiles and builds the job. Throws InputError for an unknown or
// invalid model, device or profile (with "did you mean"), gpus or batch < 1, or a number format
// the device has no peak for (fp8 without peak_fp8_tflops; mxfp8 without MXFP8 tensor cores).
PerfSetup PreparePerf(const PerfRequest& request);

// Cautions about the prediction a setup gives, each one sentence without a final newline: a
// profile calibrated on (or set by hand for) another device than the job's, naming both (the
// closest calibrated sibling, CalibratedSibling, when that is why it was picked); a MoE model on
// a profile calibrated on dense models only (PerfProfile::moe_calibrated); a sequence
// past the model's max_seq_len; a model with attention sinks charged the untraced per-token cost
// (PerfProfile::untraced_sink_model_cost, docs/guide.md "Limits"), whose cause is not known.
// Empty when there is none.
std::vector<std::string> PerfCautions(const PerfSetup& setup);

// How the job routes tokens, for a header line: "dropless", "balanced", "capacity 2 (padded)",
// "capacity 2 (unpadded)", "fixed-cells 1"; "dense" for a model without routed experts.
std::string RoutingText(const PerfSetup& setup);

// Cautions about one estimate of a job in `format`, in PerfCautions's form: an MFU above 1; an MFU
// that counts dropped assignments (the model's FLOPs, as MFU is defined, not the work done). The
// causal MFU above 1 too: MFU is against the bf16 dense peak and fp8 or mxfp8 GEMMs run faster.
// Only the full-square MFU: it counts the whole s×s attention square, PaLM's convention, where a
// causal kernel computes half of it, so at long sequences it can pass 1 while the causal MFU, the
// count MaxText and Megatron-LM use, stays below. Empty when there is none.
std::vector<std::string> EstimateCautions(const StepEstimate& estimate, NumberFormat format);

// Parses `layout_text` (layout.h grammar), checks it against the model and job, and evaluates
// one step. Throws InputError naming the layout as `label` gave it ("--layout tp=0: ...", or a
// file's key, "layout tp=0: ..."), the violated constraint and its rule.
struct LayoutEstimate {
  Layout layout;
  StepEstimate estimate;
};
LayoutEstimate EvaluateLayout(const PerfSetup& setup, const std::string& layout_text,
                              std::string_view label = "--layout");

// Every feasible layout ranked by tokens/s per GPU (search.h). Throws InputError ("--search: no
// layout divides the batch: ...") before enumerating when UnsearchableReason finds none can.
SearchResult SearchBestLayouts(const PerfSetup& setup, const SearchOptions& options = {});

// Cautions about one layout under the setup's profile, in PerfCautions's form: ep > 1 for a MoE
// model under a profile calibrated on MoE rows none of which ran EP (PerfProfile::ep_calibrated:
// its EP overlap is set by hand); offload_modules that move nothing under the layout's recompute;
// a pp·vpp that does not divide the layers, with the layout string Megatron-Core needs for that
// split (EvenSplitPipelineLayout); a2a_overlap=1 under a profile whose stack does not run the
// paired all-to-all overlap (paired_a2a_overlap = false), which the estimate nonetheless assumes.
// Empty when there is none.
std::vector<std::string> LayoutCautions(const PerfSetup& setup, const Layout& layout);

// Cautions about a search's result, in PerfCautions's form: a dispatch set for the search that
// changes nothing (no all-to-all can leave a domain: AllToAllCanCrossDomains); the EP-overlap
// caution of
// LayoutCautions for the best layout; when the best layout is pipelined, that
// the search keeps stages even (search.h) and an uneven split, evaluated with --layout, may balance
// the embedding and output layer better; when the best layout's micro-batch above 1 runs more than
// 20% faster than the same layout at micro-batch 1, at least half of the time saved in the expert
// GEMMs' fitted per-expert cost (PerfProfile::expert_group_seconds), that measured releases
// disagree on such gains. Empty when there is none.
std::vector<std::string> SearchCautions(const PerfSetup& setup, const SearchResult& result);

// The links a layout's expert all-to-all (its ep·etp ranks) and FSDP collectives (tp·cp·fsdp
// ranks) cross on the cluster: the name of the smallest domain holding the span
// (Cluster::DomainForSpan: "nvlink-node", "nvlink-rack", "network", ...); and where the
// all-to-all leaves its scale-up domain (ep·etp > HardwareSpec::domain_gpus), how it crosses
// them: "flat" or "hierarchical" (Layout::dispatch), set by "layout" (its dispatch key) or
// "profile" (PerfProfile::hierarchical_dispatch); both empty inside one domain.
struct CollectiveLinks {
  std::string expert_all_to_all;
  std::string expert_dispatch;
  std::string expert_dispatch_from;
  std::string fsdp;
};
CollectiveLinks LinksOf(const Cluster& cluster, const Layout& layout, const PerfProfile& profile);

// Whether some layout of the job can send the EP all-to-all across scale-up domains: a model with
// routed experts on more GPUs than one domain holds (HardwareSpec::domain_gpus). Where it cannot,
// the dispatch path (Layout::dispatch, SearchOptions::dispatch) changes nothing.
bool AllToAllCanCrossDomains(const PerfSetup& setup);

// The peak HBM bytes as every output writes them: the sum of the memory parts each rounded to a
// whole byte, so that the parts printed add up to it exactly.
int64_t PeakMemoryWholeBytes(const MemoryBreakdown& memory);

// The estimate as JSON: layout, step time, tokens/s per GPU, MFU, memory and time breakdowns
// (seconds and bytes per GPU), dropped share; the field names of `mosaic perf --json`.
nlohmann::ordered_json EstimateJson(const Layout& layout, const StepEstimate& estimate);

// `mosaic perf --json` of one layout: the request (model, hardware, gpus, profile and the device it
// was calibrated on, batch, seq, format, routing, capacity factor, "notes": PerfCautions,
// LayoutCautions, then EstimateCautions; "routing" null for a dense model), EstimateJson's fields,
// and "links": the scale-up or scale-out links the expert all-to-all and the FSDP collectives
// cross (Cluster::DomainForSpan) and the all-to-all's path across domains (LinksOf), each null
// where that collective moves nothing (as the text report names them only where they take time);
// "megatron_pp_layout": the layout string Megatron-Core needs for an even split pp·vpp does not
// divide (EvenSplitPipelineLayout), else null.
nlohmann::ordered_json PerfJson(const PerfSetup& setup, const LayoutEstimate& evaluated);

// `mosaic perf --search --json`: the request as PerfJson gives it (model, hardware, gpus,
// profile and the device it was calibrated on, batch, seq, format, routing, capacity factor),
// "notes" (PerfCautions, then SearchCautions), "expert_dispatch" and "expert_dispatch_from" (the
// all-to-all's path across domains in every layout, "flat" or "hierarchical", from "profile" or
// "search"; null where none can leave a domain), layouts evaluated, feasible, rejected by reason,
// the ranked candidates (EstimateJson with "links" and "megatron_pp_layout", as PerfJson gives
// them, and "rank") and examples of rejections with their rules.
nlohmann::ordered_json SearchJson(const PerfSetup& setup, const SearchResult& result);

}  // namespace mosaic
