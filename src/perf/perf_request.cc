#include "mosaic/perf/perf_request.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

#include "mosaic/util/error.h"
#include "mosaic/util/terminal_text.h"

namespace mosaic {

void SetFormatAndRouting(PerfRequest& request, std::string_view format, std::string_view routing) {
  const std::optional<NumberFormat> f = NumberFormatFromString(format);
  if (!f) {
    throw InputError(fmt::format("format '{}': expected bf16, fp8 or mxfp8", Printable(format)));
  }
  request.format = *f;
  request.routing.reset();
  if (routing == "auto") return;
  request.routing = RoutingPolicyFromString(routing);
  if (!request.routing) {
    throw InputError(fmt::format(
        "routing '{}': expected auto, dropless, balanced, capacity or fixed-cells",
        Printable(routing)));
  }
}

void AddFieldOverride(PerfRequest& request, FieldOverride override) {
  constexpr std::string_view kDevice = "hardware.";
  if (override.field == "hardware.name") {
    throw InputError(fmt::format(
        "hardware.name = {}. Violated constraint: the device is chosen by name (--hardware, or "
        "hardware= in Python), not set: a new name would keep the old device's specifications "
        "under another device's profile",
        Printable(override.value)));
  }
  if (override.field.starts_with(kDevice)) {
    override.field.erase(0, kDevice.size());
    request.hardware_sets.push_back(std::move(override));
  } else {
    request.model_sets.push_back(std::move(override));
  }
}

PerfSetup PreparePerf(const PerfRequest& request) {
  // The ranges of `mosaic perf`'s flags, for callers that do not parse them (the Python package).
  if (request.gpus < 1 || request.gpus > kMaxPerfGpus) {
    throw InputError(fmt::format("gpus = {}. Violated constraint: 1 <= gpus <= {}", request.gpus,
                                 kMaxPerfGpus));
  }
  if (request.batch < 1 || request.batch > kMaxPerfBatch) {
    throw InputError(fmt::format("batch = {}. Violated constraint: 1 <= batch <= {} (sequences)",
                                 request.batch, kMaxPerfBatch));
  }
  if (request.seq < 1 || request.seq > kMaxSeqLen) {
    throw InputError(fmt::format("seq = {}. Violated constraint: 1 <= seq <= {} (tokens)",
                                 request.seq, kMaxSeqLen));
  }
  if (request.capacity_factor != 0 &&
      !(request.capacity_factor >= 0.01 && request.capacity_factor <= kMaxCapacityFactor)) {
    throw InputError(fmt::format(
        "--capacity-factor = {}. Violated constraint: --capacity-factor in [0.01, {}]",
        request.capacity_factor, kMaxCapacityFactor));
  }
  // Two flags that contradict each other: a usage error.
  if (request.capacity_factor > 0 && request.routing && !CapsTokens(*request.routing)) {
    throw UsageError(fmt::format(
        "--capacity-factor = {} with --routing {}. Violated constraint: a capacity factor caps "
        "tokens only under --routing capacity or fixed-cells",
        request.capacity_factor, ToString(*request.routing)));
  }
  PerfSetup s;
  s.spec = LoadModel(request.model, request.model_sets);
  if (!s.spec.config.is_moe() && request.capacity_factor > 0) {
    throw InputError(fmt::format(
        "--capacity-factor = {} on {}. Violated constraint: a capacity factor caps the tokens of "
        "routed experts, and {} is dense (experts = 0)",
        request.capacity_factor, s.spec.config.name, s.spec.config.name));
  }
  if (!s.spec.config.is_moe() && request.routing && CapsTokens(*request.routing)) {
    throw InputError(fmt::format(
        "--routing {} on {}. Violated constraint: a capacity caps the tokens of routed experts, "
        "and {} is dense (experts = 0)",
        ToString(*request.routing), s.spec.config.name, s.spec.config.name));
  }
  if (request.bp_segment_loops < 0) {
    throw InputError(fmt::format("--bp-segment = {}. Violated constraint: --bp-segment >= 0",
                                 request.bp_segment_loops));
  }
  if (request.bp_segment_loops > 0 && s.spec.config.loops <= 1) {
    throw InputError(fmt::format("--bp-segment = {}. Violated constraint: only looped models "
                                 "(loops > 1) segment backprop; {} has loops = {}",
                                 request.bp_segment_loops, s.spec.config.name,
                                 s.spec.config.loops));
  }
  if (request.bp_segment_loops > s.spec.config.loops && s.spec.config.loops > 1) {
    throw InputError(fmt::format("--bp-segment = {}. Violated constraint: --bp-segment <= loops "
                                 "({} > {})",
                                 request.bp_segment_loops, request.bp_segment_loops,
                                 s.spec.config.loops));
  }
  s.hardware = LoadHardware(request.hardware, request.hardware_sets);
  s.cluster = MakeCluster(s.hardware, request.gpus);
  s.profiles = LoadProfiles(request.profiles_file);
  s.profile = s.profiles.Resolve(request.profile, s.hardware.name, "--profile");
  if (request.format == NumberFormat::kFp8 && s.hardware.peak_fp8_tflops <= 0) {
    throw InputError(fmt::format("--format fp8: {} has no fp8 peak (peak_fp8_tflops = 0)",
                                 s.hardware.name));
  }
  if (request.format == NumberFormat::kMxfp8 && s.hardware.peak_mxfp8_tflops <= 0) {
    throw InputError(fmt::format(
        "--format mxfp8: {} has no MXFP8 tensor cores (peak_mxfp8_tflops = 0; {})",
        s.hardware.name, s.hardware.peak_fp8_tflops > 0 ? "use fp8" : "nor fp8: use bf16"));
  }
  s.job.global_batch = request.batch;
  s.job.seq_len = request.seq;
  s.job.format = request.format;
  // The capacity factor given, else the model's recipe value (ModelConfig::capacity_factor).
  const double capacity_factor =
      request.capacity_factor > 0 ? request.capacity_factor : s.spec.config.capacity_factor;
  s.job.routing = request.routing.value_or(capacity_factor > 0 ? RoutingPolicy::kCapacity
                                                               : RoutingPolicy::kDropless);
  // Dropless and balanced routing cap nothing: the model's factor does not apply to them.
  s.job.capacity_factor = CapsTokens(s.job.routing) && capacity_factor > 0 ? capacity_factor : 1.0;
  if (!request.pad_to_capacity && s.job.routing != RoutingPolicy::kCapacity) {
    throw UsageError(fmt::format("--no-capacity-padding with --routing {}. Violated constraint: "
                                 "only capacity routing chooses whether to pad (fixed-cells always "
                                 "does; dropless and balanced have no capacity)",
                                 ToString(s.job.routing)));
  }
  s.job.pad_to_capacity = request.pad_to_capacity;
  s.job.bp_segment_loops = request.bp_segment_loops;
  s.shape = MakeModelShape(s.spec.config, request.seq);
  s.drop = DefaultDropParams();
  return s;
}

std::vector<std::string> PerfCautions(const PerfSetup& setup) {
  std::vector<std::string> notes;
  const PerfProfile& profile = setup.profile;
  const std::string& device = setup.cluster.device.name;
  if (!profile.hardware.empty() && DeviceNameOf(profile) != device) {
    if (profile.calibrated && CalibratedSibling(device) == profile.hardware) {
      notes.push_back(fmt::format("no profile is calibrated on {}; using {}, calibrated on its "
                                  "closest calibrated sibling {}",
                                  device, profile.name, profile.hardware));
    } else {
      notes.push_back(fmt::format("the {} profile was {} {}, not {}", profile.name,
                                  profile.calibrated ? "calibrated on" : "set by hand for",
                                  profile.hardware, device));
    }
  }
  if (setup.spec.config.is_moe() && profile.calibrated && !profile.moe_calibrated) {
    notes.push_back(fmt::format(
        "the {} profile was calibrated on dense models only: its per-expert GEMM cost and EP "
        "overlap are set by hand, so the MoE layers' time is not calibrated",
        profile.name));
  }
  const int64_t max_seq = setup.spec.config.max_seq_len;
  if (max_seq > 0 && setup.job.seq_len > max_seq) {
    notes.push_back(fmt::format(
        "seq {} is past {}'s max_seq_len {}: the cost is the same model's at that length, but "
        "the model would need its context extended (position scaling, longer-sequence "
        "training) to use it",
        setup.job.seq_len, setup.spec.config.name, max_seq));
  }
  const double untraced = setup.profiles.shared.untraced_sink_model_seconds;
  if (setup.spec.config.attention_sinks && setup.profile.untraced_sink_model_cost &&
      untraced > 0) {
    notes.push_back(fmt::format(
        "{} charges {} gpt-oss's untraced cost, {:.3g} µs per token and layer pass "
        "(untraced_sink_model_seconds; the shipped value is fitted on Megatron-Bridge's "
        "gpt-oss-120b runs, docs/guide.md \"Limits\"): what spends it is not known, so a model, "
        "stack or layout unlike theirs may not pay it",
        setup.profile.name, setup.spec.config.name, untraced * 1e6));
  }
  return notes;
}

CollectiveLinks LinksOf(const Cluster& cluster, const Layout& l, const PerfProfile& profile) {
  CollectiveLinks links{.expert_all_to_all = cluster.DomainForSpan(l.ep * l.etp),
                        .fsdp = cluster.DomainForSpan(l.tp * l.cp * l.fsdp)};
  if (l.ep > 1 && l.ep * l.etp > cluster.device.domain_gpus()) {
    links.expert_dispatch = ToString(ResolveDispatch(l.dispatch, profile.hierarchical_dispatch));
    links.expert_dispatch_from = l.dispatch == Dispatch::kProfile ? "profile" : "layout";
  }
  return links;
}

bool AllToAllCanCrossDomains(const PerfSetup& s) {
  return s.spec.config.is_moe() && s.cluster.gpus > s.hardware.domain_gpus();
}

std::string RoutingText(const PerfSetup& setup) {
  const PerfJob& job = setup.job;
  if (!setup.spec.config.is_moe()) return "dense";
  if (!CapsTokens(job.routing)) return std::string(ToString(job.routing));
  const bool padded = job.routing != RoutingPolicy::kCapacity || job.pad_to_capacity;
  return fmt::format("{} {:g} ({})", ToString(job.routing), job.capacity_factor,
                     padded ? "padded" : "unpadded");
}

std::vector<std::string> EstimateCautions(const StepEstimate& e, NumberFormat format) {
  std::vector<std::string> notes;
  if (e.dropped_fraction > 0.001) {
    notes.push_back(fmt::format(
        "the MFU counts the model's FLOPs of every routed assignment, {:.1f}% of which were "
        "dropped and computed by no expert: it is the MFU of the model, not of the work done",
        100 * e.dropped_fraction));
  }
  if (e.mfu_causal > 1) {
    notes.push_back(fmt::format(
        "the MFU ({:.4f}; causal {:.4f}) passes 1 because it is measured against the bf16 dense "
        "peak, and {} matrix multiplies run on tensor cores faster than that peak",
        e.mfu, e.mfu_causal, ToString(format)));
  } else if (e.mfu > 1) {
    notes.push_back(fmt::format(
        "the full-square MFU ({:.4f}) passes 1 because it counts the whole attention square, "
        "half of which a causal kernel skips; the causal MFU ({:.4f}) counts only what such a "
        "kernel computes",
        e.mfu, e.mfu_causal));
  }
  return notes;
}

namespace {

// The memory parts of a breakdown, in the order outputs list them.
std::array<std::pair<const char*, double>, 8> MemoryParts(const MemoryBreakdown& m) {
  return {{{"weights_bytes", m.weights_bytes},
           {"gradients_bytes", m.gradients_bytes},
           {"optimizer_bytes", m.optimizer_bytes},
           {"gather_buffer_bytes", m.gather_buffer_bytes},
           {"activation_bytes", m.activation_bytes},
           {"logits_bytes", m.logits_bytes},
           {"dispatch_bytes", m.dispatch_bytes},
           {"reserve_bytes", m.reserve_bytes}}};
}

// The most bytes a memory part may hold: whole bytes, eight parts and their sum in 64 bits.
constexpr double kMaxMemoryPartBytes = 0x1p59;  // 576 PB

}  // namespace

LayoutEstimate EvaluateLayout(const PerfSetup& setup, const std::string& layout_text,
                              std::string_view label) {
  LayoutEstimate result;
  result.layout = ParseLayout(layout_text, label);
  if (auto v = CheckLayout(result.layout, setup.spec.config,
                           {setup.cluster.gpus, setup.job.global_batch, setup.job.seq_len},
                           setup.hardware)) {
    throw InputError(fmt::format("{} {}: {}. Violated constraint: {}", label,
                                 Printable(layout_text), ToString(v->kind), v->rule));
  }
  result.estimate = EvaluateStep(setup.shape, setup.cluster, result.layout, setup.job,
                                 setup.profiles.shared, setup.profile, &setup.drop);
  // The outputs write each memory part in whole bytes and the peak as their sum.
  const MemoryBreakdown& memory = result.estimate.memory;
  auto parts = MemoryParts(memory);
  for (const auto& [name, bytes] :
       std::array{parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6], parts[7],
                  std::pair<const char*, double>{"host_activation_bytes",
                                                 memory.host_activation_bytes}}) {
    if (!(bytes <= kMaxMemoryPartBytes)) {
      throw InputError(fmt::format(
          "{} {}: its {} ({:.4g} bytes) is past 2^59 bytes (576 PB), more than any device "
          "holds and than whole bytes add up to in 64 bits: a smaller batch, sequence, "
          "micro-batch or model",
          label, Printable(layout_text), name, bytes));
    }
  }
  return result;
}

SearchResult SearchBestLayouts(const PerfSetup& setup, const SearchOptions& options) {
  if (auto reason = UnsearchableReason(
          setup.spec.config, {setup.cluster.gpus, setup.job.global_batch, setup.job.seq_len},
          setup.hardware.domain_gpus(), options)) {
    throw InputError(fmt::format("--search: {}", *reason));
  }
  return SearchLayouts(setup.shape, setup.cluster, setup.job, setup.profiles.shared, setup.profile,
                       setup.drop, options);
}

namespace {

// An expert-parallel layout of a MoE model under a profile whose calibration had MoE rows but none
// with EP (PerfProfile::ep_calibrated): its EP overlap is the hand-set value. (A profile without
// MoE rows at all gets PerfCautions's broader note instead.)
void AddEpOverlapCaution(const PerfSetup& setup, const Layout& layout,
                         std::vector<std::string>& notes) {
  const PerfProfile& profile = setup.profile;
  if (!setup.spec.config.is_moe() || layout.ep <= 1 || !profile.calibrated ||
      !profile.moe_calibrated || profile.ep_calibrated) {
    return;
  }
  notes.push_back(fmt::format(
      "ep={} under the {} profile, calibrated on MoE rows without expert parallelism: its EP "
      "overlap (the share of the all-to-all hidden under compute) is set by hand, so the "
      "all-to-all's exposed time is not calibrated",
      layout.ep, profile.name));
}

}  // namespace

std::vector<std::string> LayoutCautions(const PerfSetup& setup, const Layout& layout) {
  std::vector<std::string> notes;
  AddEpOverlapCaution(setup, layout, notes);
  const uint32_t idle =
      layout.offload_modules &
      ~ModulesWithStoredInput(layout.recompute, setup.spec.config.uses_mla());
  if (idle != 0) {
    const bool one = std::has_single_bit(idle);
    notes.push_back(fmt::format("offload_modules {} move{} nothing under recompute={}, which "
                                "does not keep {} input{}",
                                OffloadModulesText(idle), one ? "s" : "",
                                ToString(layout.recompute), one ? "its" : "their",
                                one ? "" : "s"));
  }
  const ModelConfig& c = setup.spec.config;
  const std::string split = EvenSplitPipelineLayout(layout, c.layers * c.loops, c.mtp_layers);
  if (!split.empty()) {
    const int64_t stages = layout.pp * layout.vpp;
    notes.push_back(fmt::format(
        "pp·vpp = {} does not divide the {} layer passes: the first {} {}stages hold one layer "
        "less; Megatron-Core runs that split only as a layout string, "
        "--pipeline-model-parallel-layout \"{}\" (pp_layout={})",
        stages, c.layers * c.loops, stages - (c.layers * c.loops) % stages,
        layout.vpp > 1 ? "virtual " : "", split, split));
  }
  if (layout.a2a_overlap > 0 && !setup.profile.paired_a2a_overlap) {
    notes.push_back(fmt::format(
        "a2a_overlap=1 under the {} profile, whose stack does not run Megatron-Core's paired "
        "all-to-all overlap (paired_a2a_overlap = false): the estimate assumes it does",
        setup.profile.name));
  }
  return notes;
}

std::vector<std::string> SearchCautions(const PerfSetup& setup, const SearchResult& result) {
  std::vector<std::string> notes;
  if (result.dispatch != Dispatch::kProfile && !AllToAllCanCrossDomains(setup)) {
    notes.push_back(fmt::format(
        "dispatch={} changes nothing here: {}", ToString(result.dispatch),
        setup.spec.config.is_moe()
            ? fmt::format("the {} GPUs fit in one scale-up domain of {}, so no all-to-all leaves "
                          "it",
                          setup.cluster.gpus, setup.hardware.domain_gpus())
            : fmt::format("{} has no routed experts, so no all-to-all", setup.spec.config.name)));
  }
  if (result.best.empty()) return notes;
  const SearchCandidate& best = result.best.front();
  AddEpOverlapCaution(setup, best.layout, notes);
  if (best.layout.pp > 1) {
    notes.push_back(
        "the search splits the layers as evenly as pp·vpp allows (one layer fewer on the first "
        "chunks where it does not divide them) and also counts the embedding and the loss as a "
        "layer each where pp·vpp divides layers + 2 (pp_embed=1,pp_loss=1); a split of your own "
        "(pp_first=, pp_last= or pp_layout=) may unload the last stage, which also runs the "
        "output layer, better: evaluate one with --layout");
  }
  // A best micro-batch above 1 whose gain over micro-batch 1 comes mostly from the fitted
  // per-expert GEMM cost, which fewer, larger expert GEMMs pay less often.
  if (best.layout.mbs > 1 && setup.spec.config.is_moe() && setup.profile.expert_group_seconds > 0) {
    Layout one = best.layout;
    one.mbs = 1;
    if (!CheckLayout(one, setup.spec.config,
                     {setup.cluster.gpus, setup.job.global_batch, setup.job.seq_len},
                     setup.hardware)) {
      const StepEstimate single = EvaluateStep(setup.shape, setup.cluster, one, setup.job,
                                               setup.profiles.shared, setup.profile, nullptr);
      const double gain = best.estimate.tokens_per_s_per_gpu / single.tokens_per_s_per_gpu - 1;
      const double saved = single.step_seconds - best.estimate.step_seconds;
      const double from_experts =
          single.time.expert_gemm_seconds - best.estimate.time.expert_gemm_seconds;
      if (gain > 0.2 && saved > 0 && from_experts >= 0.5 * saved) {
        notes.push_back(fmt::format(
            "the best layout's micro-batch {} runs {:.0f}% faster than micro-batch 1 in the "
            "model, {:.0f}% of the time saved in the expert GEMMs (more rows per expert: the "
            "fitted per-expert cost, {:.3g} µs per local expert and kernel under {}, is paid less "
            "often and small GEMMs run faster); published releases of one stack disagree on such "
            "gains (Qwen3-30B-A3B on 8 H100 at micro-batch 2 measured as fast as, and twice as "
            "fast as, micro-batch 1), so measure it before relying on it",
            best.layout.mbs, 100 * gain, 100 * from_experts / saved,
            setup.profile.expert_group_seconds * 1e6, setup.profile.name));
      }
    }
  }
  return notes;
}

namespace {

// The memory breakdown in whole bytes: each part is the model's estimate rounded, and the peak
// is their sum (PeakMemoryWholeBytes), so the parts add up to it exactly.
nlohmann::ordered_json MemoryJson(const StepEstimate& e) {
  nlohmann::ordered_json memory;
  for (const auto& [name, bytes] : MemoryParts(e.memory)) memory[name] = std::llround(bytes);
  memory["peak_bytes"] = PeakMemoryWholeBytes(e.memory);
  memory["capacity_bytes"] = std::llround(e.capacity_bytes);
  return memory;
}

}  // namespace

int64_t PeakMemoryWholeBytes(const MemoryBreakdown& memory) {
  int64_t peak_bytes = 0;
  for (const auto& [name, bytes] : MemoryParts(memory)) peak_bytes += std::llround(bytes);
  return peak_bytes;
}

nlohmann::ordered_json EstimateJson(const Layout& l, const StepEstimate& e) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json memory = MemoryJson(e);
  j["layout"] = ToString(l);
  j["step_seconds"] = e.step_seconds;
  j["tokens_per_s_per_gpu"] = e.tokens_per_s_per_gpu;
  j["mfu"] = e.mfu;
  j["mfu_convention"] = "full-square";
  j["mfu_causal"] = e.mfu_causal;
  j["peak_memory_bytes"] = memory["peak_bytes"];
  j["fits"] = e.fits;
  j["dropped_fraction"] = e.dropped_fraction;
  j["micro_batches"] = e.micro_batches;
  j["slowest_stage"] = {{"layers", e.slowest_stage_layers},
                        {"moe_layers", e.slowest_stage_moe_layers},
                        {"mtp_layers", e.slowest_stage_mtp_layers},
                        {"holds_output_layer", e.slowest_stage_holds_output_layer}};
  j["peak_memory_stage"] = {{"rank", e.memory.peak_stage_rank},
                            {"layers", e.memory.peak_stage_layers},
                            {"moe_layers", e.memory.peak_stage_moe_layers}};
  j["model_flops_per_step"] = e.model_flops_per_step;
  const StepBreakdown& t = e.time;
  j["time"] = {{"compute_seconds", t.compute_seconds},
               {"dense_gemm_seconds", t.dense_gemm_seconds},
               {"expert_gemm_seconds", t.expert_gemm_seconds},
               {"attention_seconds", t.attention_seconds},
               {"elementwise_seconds", t.elementwise_seconds},
               {"untraced_seconds", t.untraced_seconds},
               {"recompute_seconds", t.recompute_seconds},
               {"output_layer_seconds", t.output_layer_seconds},
               {"tp_seconds", t.tp_seconds},
               {"cp_seconds", t.cp_seconds},
               {"ep_seconds", t.ep_seconds},
               {"fsdp_seconds", t.fsdp_seconds},
               {"dp_seconds", t.dp_seconds},
               {"pp_seconds", t.pp_seconds},
               {"exposed_comm_seconds", t.exposed_comm_seconds},
               {"host_seconds", t.host_seconds},
               {"offload_seconds", t.offload_seconds},
               {"exposed_offload_seconds", t.exposed_offload_seconds},
               {"bubble_seconds", t.bubble_seconds},
               {"overhead_seconds", t.overhead_seconds}};
  j["memory"] = std::move(memory);
  // Activation offload's host memory, apart from the HBM's parts and peak above.
  j["host_memory"] = {{"activation_bytes", std::llround(e.memory.host_activation_bytes)},
                      {"capacity_bytes", std::llround(e.host_capacity_bytes)}};
  return j;
}

namespace {

// The request both JSON forms open with.
nlohmann::ordered_json RequestJson(const PerfSetup& s) {
  nlohmann::ordered_json j;
  j["model"] = s.spec.config.name;
  j["hardware"] = s.hardware.name;
  j["gpus"] = s.cluster.gpus;
  j["profile"] = s.profile.name;
  j["profile_hardware"] = s.profile.hardware;
  j["profile_calibrated"] = s.profile.calibrated;  // false: uncalibrated defaults
  j["batch"] = s.job.global_batch;
  j["seq"] = s.job.seq_len;
  j["format"] = ToString(s.job.format);
  // A dense model routes nothing.
  j["routing"] = s.spec.config.is_moe() ? nlohmann::ordered_json(ToString(s.job.routing))
                                        : nlohmann::ordered_json(nullptr);
  // Only a capping routing has a capacity factor (null under dropless and balanced).
  j["capacity_factor"] = CapsTokens(s.job.routing) ? nlohmann::ordered_json(s.job.capacity_factor)
                                                   : nlohmann::ordered_json(nullptr);
  // Whether experts compute their padded capacity (null where nothing is capped).
  j["capacity_padding"] = CapsTokens(s.job.routing)
                              ? nlohmann::ordered_json(s.job.routing != RoutingPolicy::kCapacity ||
                                                       s.job.pad_to_capacity)
                              : nlohmann::ordered_json(nullptr);
  j["notes"] = PerfCautions(s);
  return j;
}

// The link each collective of `l` runs over; null where it moves nothing (as the text names
// them).
nlohmann::ordered_json LinksJson(const Cluster& cluster, const Layout& l,
                                 const PerfProfile& profile, const StepBreakdown& t) {
  const CollectiveLinks links = LinksOf(cluster, l, profile);
  const auto link = [](double seconds, std::string_view name) {
    return seconds > 0 && !name.empty() ? nlohmann::ordered_json(name)
                                        : nlohmann::ordered_json(nullptr);
  };
  return {{"expert_all_to_all", link(t.ep_seconds, links.expert_all_to_all)},
          {"expert_dispatch", link(t.ep_seconds, links.expert_dispatch)},
          {"expert_dispatch_from", link(t.ep_seconds, links.expert_dispatch_from)},
          {"fsdp", link(t.fsdp_seconds, links.fsdp)}};
}

// The layout string Megatron-Core needs for `l`'s even split where pp·vpp does not divide the
// layers (EvenSplitPipelineLayout); null where none is needed.
nlohmann::ordered_json MegatronPpLayoutJson(const PerfSetup& s, const Layout& l) {
  const ModelConfig& c = s.spec.config;
  const std::string text = EvenSplitPipelineLayout(l, c.layers * c.loops, c.mtp_layers);
  return text.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(text);
}

}  // namespace

nlohmann::ordered_json PerfJson(const PerfSetup& s, const LayoutEstimate& evaluated) {
  nlohmann::ordered_json j = RequestJson(s);
  const nlohmann::ordered_json estimate = EstimateJson(evaluated.layout, evaluated.estimate);
  for (auto it = estimate.begin(); it != estimate.end(); ++it) j[it.key()] = it.value();
  j["links"] = LinksJson(s.cluster, evaluated.layout, s.profile, evaluated.estimate.time);
  j["megatron_pp_layout"] = MegatronPpLayoutJson(s, evaluated.layout);
  for (const std::string& note : LayoutCautions(s, evaluated.layout)) j["notes"].push_back(note);
  for (const std::string& note : EstimateCautions(evaluated.estimate, s.job.format)) {
    j["notes"].push_back(note);
  }
  return j;
}

nlohmann::ordered_json SearchJson(const PerfSetup& setup, const SearchResult& r) {
  nlohmann::ordered_json j = RequestJson(setup);
  // How the layouts' all-to-all crosses scale-up domains: null where it cannot leave one.
  const bool crosses = AllToAllCanCrossDomains(setup);
  j["expert_dispatch"] =
      crosses ? nlohmann::ordered_json(
                    ToString(ResolveDispatch(r.dispatch, setup.profile.hierarchical_dispatch)))
              : nlohmann::ordered_json(nullptr);
  j["expert_dispatch_from"] =
      crosses ? nlohmann::ordered_json(r.dispatch == Dispatch::kProfile ? "profile" : "search")
              : nlohmann::ordered_json(nullptr);
  j["evaluated"] = r.evaluated;
  j["feasible"] = r.feasible();
  for (const std::string& note : SearchCautions(setup, r)) j["notes"].push_back(note);
  j["rejected"] = {{"does_not_divide", r.rejected[0]},
                   {"exceeds_a_domain", r.rejected[1]},
                   {"out_of_memory", r.rejected[2]},
                   {"not_supported", r.rejected[3]}};
  nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
  int64_t rank = 1;
  for (const SearchCandidate& c : r.best) {
    nlohmann::ordered_json cj = EstimateJson(c.layout, c.estimate);
    cj["links"] = LinksJson(setup.cluster, c.layout, setup.profile, c.estimate.time);
    cj["megatron_pp_layout"] = MegatronPpLayoutJson(setup, c.layout);
    cj["rank"] = rank++;
    ranked.push_back(cj);
  }
  j["ranked"] = ranked;
  nlohmann::ordered_json examples = nlohmann::ordered_json::array();
  for (const Rejection& x : r.examples) {
    examples.push_back({{"layout", ToString(x.layout)},
                        {"reason", ToString(x.violation.kind)},
                        {"rule", x.violation.rule}});
  }
  j["rejected_examples"] = examples;
  return j;
}

}  // namespace mosaic
