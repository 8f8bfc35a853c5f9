#include "mosaic/perf/step_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "mosaic/model/flops.h"
#include "mosaic/model/param_count.h"
#include "mosaic/util/enum_names.h"
#include "mosaic/util/error.h"

namespace mosaic {

std::string_view ToString(NumberFormat format) {
  switch (format) {
    case NumberFormat::kBf16: return "bf16";
    case NumberFormat::kFp8: return "fp8";
    case NumberFormat::kMxfp8: return "mxfp8";
  }
  return "?";
}

std::optional<NumberFormat> NumberFormatFromString(std::string_view text) {
  return EnumFromString<NumberFormat>(
      text, {NumberFormat::kBf16, NumberFormat::kFp8, NumberFormat::kMxfp8});
}

std::string_view ToString(RoutingPolicy policy) {
  switch (policy) {
    case RoutingPolicy::kDropless: return "dropless";
    case RoutingPolicy::kBalanced: return "balanced";
    case RoutingPolicy::kCapacity: return "capacity";
    case RoutingPolicy::kFixedCells: return "fixed-cells";
  }
  return "?";
}

std::optional<RoutingPolicy> RoutingPolicyFromString(std::string_view text) {
  return EnumFromString<RoutingPolicy>(
      text, {RoutingPolicy::kDropless, RoutingPolicy::kBalanced, RoutingPolicy::kCapacity,
             RoutingPolicy::kFixedCells});
}

namespace {

constexpr double kActBytes = 2;     // bf16 activations
constexpr double kWeightBytes = 2;  // bf16 weights
constexpr double kGradBytes = 4;    // fp32 main gradients
// Share of the host link's per-direction bandwidth a device-host copy reaches: nvbandwidth on
// GB300 measured 193 GB/s device to host and 211 host to device of NVLink-C2C's 225 per GPU
// (NVIDIA/Megatron-LM issue 6491), 0.86 and 0.94; a little under the lower one is taken.
constexpr double kHostLinkEfficiency = 0.85;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

ModelShape MakeModelShape(const ModelConfig& c, int64_t seq_len) {
  if (auto v = Validate(c)) {
    throw InputError(fmt::format("{} = {}. Violated constraint: {}", v->field, v->value, v->rule));
  }
  if (seq_len < 1) {
    throw InputError(fmt::format("--seq = {}. Violated constraint: seq >= 1", seq_len));
  }
  ModelShape s;
  s.config = c;
  s.seq_len = seq_len;
  const ParamCount p = CountParams(c);
  for (const ParamComponent& comp : p.components) {
    const auto params = static_cast<double>(comp.total_params);
    if (comp.name == "routed_experts" || comp.name == "routed_expert_bias") {
      s.trunk_expert_params += params;
    } else if (comp.name == "dense_ffn" || comp.name == "dense_ffn_bias") {
      s.dense_ffn_params += params;
    } else if (comp.name == "router" || comp.name == "router_bias" ||
               comp.name == "shared_experts" || comp.name == "shared_expert_bias" ||
               comp.name == "latent_projections" || comp.name == "latent_norm") {
      s.moe_block_params += params;
    }
    if (comp.name == "routed_experts" || comp.name == "routed_expert_bias" ||
        comp.name == "mtp_routed_experts" || comp.name == "mtp_routed_expert_bias") {
      s.expert_params += params;
    }
  }
  s.embedding_params = static_cast<double>(p.embedding_params);
  s.layer_params = static_cast<double>(p.total_params) - s.expert_params - s.embedding_params;

  const FlopCount f = CountFlops(c, {FlopConvention::kFullSquare, seq_len});
  const FlopCount causal = CountFlops(c, {FlopConvention::kCausal, seq_len});
  // The trunk alone: the MTP modules' FLOPs are what the whole model counts beyond it.
  ModelConfig trunk_config = c;
  trunk_config.mtp_layers = 0;
  const FlopCount trunk = CountFlops(trunk_config, {FlopConvention::kFullSquare, seq_len});
  const FlopCount trunk_causal = CountFlops(trunk_config, {FlopConvention::kCausal, seq_len});
  const double d = static_cast<double>(c.d_model);
  const double mats = c.glu ? 3 : 2;
  s.layer_passes = c.layers * c.loops;
  s.moe_layer_passes = c.moe_layers() * c.loops;
  s.routed_width = c.latent_dim > 0 ? static_cast<double>(c.latent_dim) : d;
  const double routed_flops_per_layer = 2 * mats * s.routed_width *
                                        static_cast<double>(c.expert_width) *
                                        static_cast<double>(c.top_k);
  s.forward_flops_per_token = static_cast<double>(f.forward_flops_per_token);
  s.expert_flops_per_token = static_cast<double>(s.moe_layer_passes) * routed_flops_per_layer;
  s.attention_score_flops_per_token = static_cast<double>(f.attention_score_flops);
  s.head_flops_per_token = 2.0 * static_cast<double>(c.d_model) * static_cast<double>(c.vocab);
  s.dense_flops_per_token = static_cast<double>(trunk.forward_flops_per_token) -
                            s.expert_flops_per_token -
                            static_cast<double>(trunk.attention_score_flops) -
                            s.head_flops_per_token;
  // CountFlops' dense FFN term (model/flops.cc); the rest of the trunk's MLP FLOPs beside the
  // routed experts are the shared experts'.
  s.dense_ffn_flops_per_token = static_cast<double>(c.dense_ffn_layers() * c.loops) * 2 * mats *
                                d * static_cast<double>(c.dense_ffn_width);
  s.moe_block_flops_per_token =
      static_cast<double>(trunk.mlp_flops + trunk.router_flops + trunk.latent_projection_flops) -
      s.expert_flops_per_token - s.dense_ffn_flops_per_token;
  s.attention_kernel_flops_per_token = static_cast<double>(trunk_causal.attention_score_flops);
  {
    const double passes = static_cast<double>(s.layer_passes);
    const double moe_passes = static_cast<double>(s.moe_layer_passes);
    const double every_layer = (s.dense_flops_per_token - s.dense_ffn_flops_per_token -
                                s.moe_block_flops_per_token + s.attention_kernel_flops_per_token) /
                               passes;
    s.dense_layer_flops_per_token =
        every_layer + (passes > moe_passes ? s.dense_ffn_flops_per_token / (passes - moe_passes)
                                           : 0.0);
    s.moe_layer_flops_per_token =
        every_layer + (moe_passes > 0 ? (s.moe_block_flops_per_token + s.expert_flops_per_token) /
                                            moe_passes
                                      : 0.0);
  }
  s.mtp_expert_flops_per_token = static_cast<double>(c.mtp_moe_layers()) * routed_flops_per_layer;
  s.mtp_attention_kernel_flops_per_token =
      static_cast<double>(causal.attention_score_flops - trunk_causal.attention_score_flops);
  s.mtp_dense_flops_per_token =
      static_cast<double>(f.forward_flops_per_token - trunk.forward_flops_per_token) -
      s.mtp_expert_flops_per_token -
      static_cast<double>(f.attention_score_flops - trunk.attention_score_flops);
  s.model_flops_per_token = f.train_flops_per_token();
  s.causal_model_flops_per_token = causal.train_flops_per_token();

  // Widths.
  const double H = static_cast<double>(c.heads);
  double kv_sum = 0;
  for (int64_t i = 0; i < c.layers; ++i) kv_sum += static_cast<double>(c.kv_heads_of_layer(i));
  const double kv_mean = kv_sum / static_cast<double>(c.layers);
  if (c.uses_mla()) {
    const double qk = static_cast<double>(c.qk_nope_head_dim + c.qk_rope_head_dim);
    s.q_dim = H * qk;
    s.kv_dim = H * (qk + static_cast<double>(c.v_head_dim)) / 2;  // k and v expanded per head
  } else {
    const double hd = static_cast<double>(c.resolved_head_dim());
    s.q_dim = H * hd;
    s.kv_dim = kv_mean * hd;
  }
  // Stored activations per token per layer (bf16), after Korthikanti et al. (arXiv 2205.05198)
  // with flash attention: norm input, q/k/v, attention output, projection input, softmax
  // statistics (fp32 per head).
  s.attention_act_bytes_per_token =
      kActBytes * (3 * d + 2 * s.q_dim + 2 * s.kv_dim) + 4 * H;
  s.core_attention_saved_bytes_per_token = 4 * H;
  auto ffn = [&](double width) { return kActBytes * (d + (mats - 1) * width + width); };
  const double v_width = c.uses_mla() ? H * static_cast<double>(c.v_head_dim) : s.q_dim;
  // One layer of each kind. GEMM inputs (what fp8 stores in one byte): the normed input of the
  // q/k/v (and fc1) projections and the attention output (and fc2 input) of the output
  // projection; experts: the dispatched token and the activation output.
  const auto layer_of_kind = [&](bool moe_layer) {
    LayerActivations a;
    double mlp = kActBytes * 2 * d;  // norm input and its output
    double ffn_inputs = 0;
    if (moe_layer) {
      const double shared_w = static_cast<double>(c.resolved_shared_expert_width());
      double moe = 4.0 * static_cast<double>(c.experts) +  // router logits (fp32)
                   static_cast<double>(c.shared_experts) * ffn(shared_w);
      if (c.latent_dim > 0) moe += kActBytes * (2 * s.routed_width);
      mlp += moe;
      a.moe_recompute_saved_bytes_per_token = kActBytes * 2 * d + moe;
      a.expert_act_bytes_per_assignment =
          kActBytes * (2 * s.routed_width + mats * static_cast<double>(c.expert_width));
      a.routed_input_bytes_per_assignment = kActBytes * s.routed_width;
      a.selective_saved_bytes_per_token =
          kActBytes * 2 * d +
          static_cast<double>(c.top_k) * kActBytes * static_cast<double>(c.expert_width) +
          static_cast<double>(c.shared_experts) * kActBytes * shared_w;
      ffn_inputs = static_cast<double>(c.shared_experts) * (d + shared_w);
      a.fp8_saved_bytes_per_assignment = s.routed_width + static_cast<double>(c.expert_width);
    } else {
      // A MoE model's dense layers are dense_ffn_width wide (expert_width when it is not given).
      const double width = static_cast<double>(
          !c.is_moe() || c.dense_ffn_width > 0 ? c.dense_ffn_width : c.expert_width);
      mlp += ffn(width);
      a.moe_recompute_saved_bytes_per_token = kActBytes * 2 * d;
      a.selective_saved_bytes_per_token = kActBytes * 2 * d + kActBytes * width;
      ffn_inputs = d + width;
    }
    a.mlp_act_bytes_per_token = mlp;
    a.fp8_saved_bytes_per_token = d + v_width + ffn_inputs;
    // Fine-grained offload: each module's saved input (Megatron-Core's offload_modules).
    a.offload_module_bytes = {
        kActBytes * d,                          // attn_norm: the layer input
        kActBytes * d,                          // qkv_linear: the normed input
        kActBytes * (s.q_dim + 2 * s.kv_dim),   // core_attn: q, k, v
        kActBytes * v_width,                    // attn_proj: the attention output
        kActBytes * d,                          // mlp_norm: the attention block's output
        a.routed_input_bytes_per_assignment,    // expert_fc1: the dispatched token
        moe_layer ? kActBytes * (mats - 1) * static_cast<double>(c.expert_width) : 0.0,  // moe_act
    };
    a.elementwise_width_per_token = 2 * d + s.q_dim + 2 * s.kv_dim + v_width + 2 * ffn_inputs;
    a.elementwise_width_per_assignment = 2 * a.fp8_saved_bytes_per_assignment;
    return a;
  };
  s.dense_layer = layer_of_kind(false);
  s.moe_layer = c.is_moe() && c.moe_layers() > 0 ? layer_of_kind(true) : s.dense_layer;
  if (c.uses_mla()) {
    // Megatron-Core's selective recompute (recompute_modules mla_up_proj): the expanded queries,
    // keys and values are recomputed from the stored latents, so only the latents stay.
    const double rope = static_cast<double>(c.qk_rope_head_dim);
    const double q_latent = c.q_lora_rank > 0 ? static_cast<double>(c.q_lora_rank) : d;
    const double kv_latent = static_cast<double>(c.kv_lora_rank);
    const double expanded = s.q_dim + 2 * s.kv_dim;
    const double latents_kept = std::max(0.0, kActBytes * (expanded - q_latent - kv_latent - rope));
    s.dense_layer.selective_saved_bytes_per_token += latents_kept;
    s.moe_layer.selective_saved_bytes_per_token += latents_kept;
    const double kv_up = H * static_cast<double>(c.qk_nope_head_dim + c.v_head_dim);
    s.selective_recompute_flops_per_token =
        static_cast<double>(c.layers * c.loops) * 2 *
        ((c.q_lora_rank > 0 ? q_latent * s.q_dim : 0) + kv_latent * kv_up);
  }
  return s;
}

namespace {

// Members of a group of `size` ranks `stride` apart in each scale-up domain of `domain_gpus`.
double MembersPerDomain(int64_t size, int64_t stride, int64_t domain_gpus) {
  return std::clamp<double>(static_cast<double>(domain_gpus) / static_cast<double>(stride), 1.0,
                            static_cast<double>(size));
}

// The fewest members of the group in any domain it spans, the ring's bottleneck: where the
// domains hold domain_gpus / stride members each, a last domain holds the remainder of size (8 +
// 1 GPUs: the lone GPU's NIC carries every ring's traffic). Strides that do not divide the domain
// keep the average.
double FewestMembersPerDomain(int64_t size, int64_t stride, int64_t domain_gpus) {
  const double members = MembersPerDomain(size, stride, domain_gpus);
  if (stride >= domain_gpus || domain_gpus % stride != 0) return members;
  const int64_t per_domain = domain_gpus / stride;
  if (size <= per_domain || size % per_domain == 0) return members;
  return static_cast<double>(size % per_domain);
}

}  // namespace

double RingSeconds(double bytes, int64_t size, int64_t stride, int64_t domain_gpus,
                   double scale_up_bytes_per_s, double scale_out_bytes_per_s) {
  const double members = FewestMembersPerDomain(size, stride, domain_gpus);
  const double out = bytes / members / scale_out_bytes_per_s;
  const double up = bytes * (members - 1) / members / scale_up_bytes_per_s;
  return std::max(out, up);
}

bool CapsTokens(RoutingPolicy policy) {
  return policy == RoutingPolicy::kCapacity || policy == RoutingPolicy::kFixedCells;
}

double GroupedGemmTileFactor(double rows_per_expert, double local_experts, double row_tile,
                             RoutingPolicy routing) {
  const int64_t groups = std::llround(local_experts);
  const int64_t tile = std::llround(row_tile);
  if (tile <= 0 || groups <= 1 || rows_per_expert <= 0) return 1.0;
  int64_t starts_inside = groups - 1;
  if (routing != RoutingPolicy::kDropless) {
    // Expert i starts at row i·rows: on a tile's first row when i is a multiple of
    // tile / gcd(rows, tile).
    const int64_t rows = std::max<int64_t>(1, std::llround(rows_per_expert));
    starts_inside -= (groups - 1) / (tile / std::gcd(rows, tile));
  }
  // The tiles covering all rows (the last one padded), and one more per expert starting inside.
  const double all_rows = rows_per_expert * local_experts;
  const double tiles = std::ceil(all_rows / row_tile) + static_cast<double>(starts_inside);
  return std::max(1.0, tiles * row_tile / all_rows);
}

double RingLatencySeconds(int64_t size, int64_t stride, int64_t domain_gpus,
                          double call_seconds) {
  if (size <= 1) return call_seconds;
  const double members = MembersPerDomain(size, stride, domain_gpus);
  const double domains = std::ceil(static_cast<double>(size) / members);
  return call_seconds + (domains - 1) * kNetRingStepSeconds;
}

namespace {

// Whether routing caps each expert's rows: Megatron's per-rank capacity always; Marin's fixed
// all-to-all cells only when there is an all-to-all (ep > 1; without it experts see every token).
bool UsesCapacity(RoutingPolicy routing, const Layout& l) {
  return routing == RoutingPolicy::kCapacity ||
         (routing == RoutingPolicy::kFixedCells && l.ep > 1);
}

BackpropSegments SegmentsOf(const ModelConfig& c, const PerfJob& job) {
  BackpropSegments s{1, c.loops, c.loops};
  if (job.bp_segment_loops > 0 && c.loops > 1 && job.bp_segment_loops < c.loops) {
    s.loops = job.bp_segment_loops;
    s.segments = CeilDiv(c.loops, s.loops);
    s.last_loops = c.loops - s.loops * (s.segments - 1);
  }
  return s;
}

// A rank's share of the layer passes of one kind: `held` of `total` (0 when the model has none).
double KindShare(int64_t held, int64_t total) {
  return total > 0 ? static_cast<double>(held) / static_cast<double>(total) : 0.0;
}

// The non-expert (`dense`) and routed-expert parameters of a rank holding `layers` layer passes,
// `moe` of them MoE: the layer stack's by the rank's share of its passes, the dense FFNs by its
// share of the dense-FFN passes and the MoE blocks and routed experts by its share of the MoE
// passes (for a model of one layer kind, the kind's share is the layer share).
struct StageParams {
  double dense = 0, expert = 0;
};
StageParams StageLayerParams(const ModelShape& m, int64_t layers, int64_t moe) {
  const double share = KindShare(layers, m.layer_passes);
  const double moe_share = KindShare(moe, m.moe_layer_passes);
  const double dense_share = KindShare(layers - moe, m.layer_passes - m.moe_layer_passes);
  return {m.layer_params * share + m.dense_ffn_params * (dense_share - share) +
              m.moe_block_params * (moe_share - share),
          m.expert_params * share + m.trunk_expert_params * (moe_share - share)};
}

}  // namespace

LayoutDerivation DeriveLayout(const ModelShape& m, const Layout& l, const PerfJob& job) {
  return DeriveLayout(m, l, job, SplitPipeline(l, m.config, m.layer_costs()));
}

LayoutDerivation DeriveLayout(const ModelShape& m, const Layout& l, const PerfJob& job,
                              const PipelineSplit& split) {
  LayoutDerivation x;
  x.tokens_mb_seq = static_cast<double>(l.mbs * job.seq_len / l.cp);
  x.tokens_mb_rank = x.tokens_mb_seq / static_cast<double>(l.tp);
  x.micro_batches = job.global_batch / (l.data_parallel() * l.mbs);
  // The slowest rank and the other ranks' load against it: SplitPipeline's. The output layer is
  // on the one stage when pp = 1; with a pipeline, LayoutStep::Evaluate weighs rank pp−1 (its
  // layers and the output layer) against the slowest rank.
  x.split = split;
  x.head_on_stage = l.pp == 1;
  const ModelConfig& c = m.config;
  x.layers_stage = split.slowest;
  x.moe_layers_stage = split.slowest_moe;
  const int64_t placed_mtp = split.slowest_mtp;  // the MTP layers pp_layout places on it
  x.other_load_ratio = split.other_load_ratio;
  // Segmented backprop of a looped model keeps one segment of S loops and repeats the forward of
  // every segment but the last in the backward: loops − (the last segment's loops) of `loops`.
  const BackpropSegments segments = SegmentsOf(m.config, job);
  x.segment_recompute = segments.segments == 1
                            ? 0.0
                            : static_cast<double>(m.config.loops - segments.last_loops) /
                                  static_cast<double>(m.config.loops);
  x.stage_share = static_cast<double>(x.layers_stage) / static_cast<double>(m.layer_passes);
  x.moe_stage_share = KindShare(x.moe_layers_stage, m.moe_layer_passes);
  x.dense_stage_share =
      KindShare(x.layers_stage - x.moe_layers_stage, m.layer_passes - m.moe_layer_passes);
  x.mtp_layers_stage = static_cast<double>(c.mtp_layers) * x.stage_share;
  x.mtp_moe_layers_stage = static_cast<double>(c.mtp_moe_layers()) * x.stage_share;
  if (x.split.mtp_placed) {
    x.mtp_layers_stage = static_cast<double>(placed_mtp);
    x.mtp_moe_layers_stage =
        c.mtp_layers > 0 ? static_cast<double>(placed_mtp * c.mtp_moe_layers()) /
                               static_cast<double>(c.mtp_layers)
                         : 0.0;
  }
  x.mtp_share =
      c.mtp_layers > 0 ? x.mtp_layers_stage / static_cast<double>(c.mtp_layers) : 0.0;
  const bool padded = UsesCapacity(job.routing, l);
  x.pad = !padded ? 1.0
          : job.routing == RoutingPolicy::kCapacity && !job.pad_to_capacity
              ? std::min(job.capacity_factor, 1.0)
              : job.capacity_factor;
  x.expert_fsdp = static_cast<double>(l.expert_fsdp());
  return x;
}

namespace {

// Fine-grained offload (Layout::offload_modules): the chosen modules' saved inputs of one layer
// pass and micro-batch of `tokens` tokens and `assignments` routed assignments, as `recompute`
// stores them; GEMM inputs in fp8 under fp8 formats; expert_fc1's `etp` times (expert tensor
// parallelism's gathered tokens). Kept out of line: the layout search evaluates millions of
// layouts without it.
[[gnu::noinline]] double ModuleOffloadBytes(const ModelShape& m, double moe_share,
                                            uint32_t modules, Recompute recompute,
                                            NumberFormat format, double tokens,
                                            double assignments, double etp) {
  constexpr uint32_t kGemmInputs = static_cast<uint32_t>(OffloadModule::kQkvLinear) |
                                   static_cast<uint32_t>(OffloadModule::kAttnProj) |
                                   static_cast<uint32_t>(OffloadModule::kExpertFc1);
  const uint32_t moved = modules & ModulesWithStoredInput(recompute, m.config.uses_mla());
  double bytes = 0;
  const auto& dense = m.dense_layer.offload_module_bytes;
  const auto& moe = m.moe_layer.offload_module_bytes;
  for (size_t i = 0; i < dense.size(); ++i) {
    const uint32_t bit = 1u << i;
    if ((moved & bit) == 0) continue;
    // The layer mix's bytes, as ModelShape::LayerField mixes a field.
    double module = moe_share <= 0   ? dense[i]
                    : moe_share >= 1 ? moe[i]
                                     : dense[i] + moe_share * (moe[i] - dense[i]);
    if (format != NumberFormat::kBf16 && (kGemmInputs & bit) != 0) module /= 2;
    if (bit == static_cast<uint32_t>(OffloadModule::kExpertFc1)) module *= etp;
    bytes += (kMoeOffloadModules & bit) != 0 ? assignments * module : tokens * module;
  }
  return bytes;
}

// The micro-batches the EP all-to-all overlap adds to those in flight on every stage: it pairs
// each backward with the next micro-batch's forward, so the warm-up runs one more model chunk
// forward (Megatron-LM, pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving: num_warmup_microbatches += 1 with
// overlap_moe_expert_parallel_comm): one chunk, 1/vpp of the stage, more held. Only the
// interleaved schedule with more micro-batches than stages holds it.
double A2aOverlapExtraInFlight(const Layout& l, int64_t micro_batches) {
  return l.pp > 1 && l.vpp > 1 && micro_batches > l.pp ? 1 / static_cast<double>(l.vpp) : 0.0;
}

}  // namespace

StageComposition ComposeStage(const ModelShape& m, const PerfJob& job, bool mtp_placed,
                              int64_t layers, int64_t moe_layers, int64_t mtp_layers) {
  const ModelConfig& c = m.config;
  StageComposition s;
  s.layers = layers;
  s.moe_layers = moe_layers;
  const double share = static_cast<double>(layers) / static_cast<double>(m.layer_passes);
  // Layers whose activations are held: with segmented backprop, one segment's loops; and the
  // stage's share of the MTP layers, which run once (after the loops: in the last segment).
  s.segments = SegmentsOf(c, job);
  const auto layers_of = [&](int64_t loops) {  // exact for whole multiples of c.loops
    return loops == c.loops ? static_cast<double>(layers)
                            : static_cast<double>(layers * loops) / static_cast<double>(c.loops);
  };
  s.mtp_held =
      mtp_placed ? static_cast<double>(mtp_layers) : static_cast<double>(c.mtp_layers) * share;
  s.segment_layers = layers_of(s.segments.loops);
  s.held_layers = s.segment_layers + s.mtp_held;
  s.last_segment_layers = layers_of(s.segments.last_loops);
  s.all_loops_layers = layers_of(c.loops);
  s.repeated_loops_layers = layers_of(c.loops - s.segments.last_loops);
  // The held layers' mix: the segment's share of the stage's MoE layers, and the MTP layers
  // when they are MoE (the same sums for both counts, so a stage of MoE layers only is 1).
  const double held_share = layers > 0 ? s.segment_layers / static_cast<double>(layers) : 0.0;
  const double mix_layers = static_cast<double>(layers) * held_share + s.mtp_held;
  s.moe_share =
      mix_layers > 0 ? (static_cast<double>(moe_layers) * held_share +
                        (c.mtp_moe_layers() > 0 ? s.mtp_held : 0.0)) /
                           mix_layers
                     : 0.0;
  const auto layer = [&](double LayerActivations::*field) {
    return m.LayerField(s.moe_share, field);
  };
  s.selective_saved_bytes_per_token = layer(&LayerActivations::selective_saved_bytes_per_token);
  s.moe_recompute_saved_bytes_per_token =
      layer(&LayerActivations::moe_recompute_saved_bytes_per_token);
  s.routed_input_bytes_per_assignment =
      layer(&LayerActivations::routed_input_bytes_per_assignment);
  s.expert_act_bytes_per_assignment = layer(&LayerActivations::expert_act_bytes_per_assignment);
  s.fp8_saved_bytes_per_assignment = layer(&LayerActivations::fp8_saved_bytes_per_assignment);
  s.mlp_act_bytes_per_token = layer(&LayerActivations::mlp_act_bytes_per_token);
  s.fp8_saved_bytes_per_token = layer(&LayerActivations::fp8_saved_bytes_per_token);
  // A stage of pp_layout may hold no decoder or MTP layer (Megatron-Core's embedding-only "E" or
  // loss-only "L" stages, held_layers 0): it gathers no layer's weights and dispatches no tokens.
  s.holds_moe_layers =
      c.is_moe() &&
      (moe_layers > 0 || (c.mtp_moe_layers() > 0 && (mtp_placed ? mtp_layers > 0 : layers > 0)));
  const StageParams params = StageLayerParams(m, layers, moe_layers);
  s.dense_params = params.dense;
  s.expert_params = params.expert;
  // The largest layer the stage holds (what FSDP gathers): with both kinds, the shared part of
  // every layer and the larger of a dense FFN and a MoE block (the stage holding them).
  s.largest_layer_params = m.layer_params / static_cast<double>(c.layers);
  if (c.is_moe() && c.moe_layers() < c.layers) {
    const double moe_block = m.moe_block_params / static_cast<double>(c.moe_layers());
    const double dense_ffn = m.dense_ffn_params / static_cast<double>(c.dense_ffn_layers());
    s.largest_layer_params =
        (m.layer_params - m.moe_block_params - m.dense_ffn_params) /
            static_cast<double>(c.layers) +
        std::max(moe_layers > 0 ? moe_block : 0.0, layers > moe_layers ? dense_ffn : 0.0);
  }
  return s;
}

StageCompositions ComposeStages(const ModelShape& m, const PerfJob& job,
                                const PipelineSplit& split, int64_t pp) {
  StageCompositions out;
  const auto add = [&](int64_t rank, int64_t layers, int64_t moe, int64_t mtp) {
    StageComposition& s = out.ranks[static_cast<size_t>(out.count++)];
    s = ComposeStage(m, job, split.mtp_placed, layers, moe, mtp);
    s.rank = rank;
  };
  add(0, split.first, split.first_moe, split.first_mtp);
  for (int i = 0; i < split.peak_candidate_count; ++i) {
    const PipelineSplit::PeakCandidate& r = split.peak_candidates[static_cast<size_t>(i)];
    add(r.rank, r.layers, r.moe, r.mtp);
  }
  if (pp > 1) add(pp - 1, split.last, split.last_moe, split.last_mtp);
  return out;
}

namespace {

// The memory of pipeline stage `s.rank` (0-based), of composition `s`, but for the activations:
// everything that does not depend on the recompute policy.
StageMemoryParts StageMemoryWithoutActivations(const ModelShape& m, const Layout& l,
                                               const PerfJob& job, const PerfProfile& profile,
                                               const LayoutDerivation& x,
                                               const StageComposition& s) {
  const ModelConfig& c = m.config;
  const int64_t layers = s.layers;
  const int64_t stage = s.rank;
  StageMemoryParts parts;
  MemoryBreakdown& mem = parts.memory;
  mem.peak_stage_rank = stage;
  mem.peak_stage_layers = layers;
  mem.peak_stage_moe_layers = s.moe_layers;
  const BackpropSegments& segments = s.segments;
  const double mtp_held = s.mtp_held;
  const double segment_layers = s.segment_layers;
  parts.held_layers = s.held_layers;
  parts.moe_share = s.moe_share;
  parts.selective_saved_bytes_per_token = s.selective_saved_bytes_per_token;
  parts.moe_recompute_saved_bytes_per_token = s.moe_recompute_saved_bytes_per_token;
  const bool holds_moe_layers = s.holds_moe_layers;
  const double tp = static_cast<double>(l.tp);
  const double fsdp = static_cast<double>(l.fsdp);
  // Parameters per GPU before data-parallel sharding; the first stage also holds the embedding
  // and the last the lm_head, half of embedding_params each (both when pp = 1).
  const double emb_share = l.pp == 1 ? 1.0 : stage == 0 || stage == l.pp - 1 ? 0.5 : 0.0;
  const double dense_gpu = (s.dense_params + m.embedding_params * emb_share) / tp;
  const double expert_gpu = s.expert_params / static_cast<double>(l.ep * l.etp);
  // FSDP shards the dense weights over fsdp·cp (Megatron-FSDP's dp_cp mesh dimension: the cp
  // ranks hold the same weights); ZeRO-1 shards the optimizer states over dp·cp.
  const double cp = static_cast<double>(l.cp);
  const double dense_state_shards =
      l.fsdp > 1 ? fsdp * cp : static_cast<double>(l.dp * l.cp);
  const double expert_state_shards =
      l.fsdp > 1 ? x.expert_fsdp : static_cast<double>(l.expert_dp());
  const double dense_w_shards = l.fsdp > 1 ? fsdp * cp : 1.0;
  const double expert_w_shards = l.fsdp > 1 ? x.expert_fsdp : 1.0;
  mem.weights_bytes =
      kWeightBytes * (dense_gpu / dense_w_shards + expert_gpu / expert_w_shards);
  mem.gradients_bytes = profile.grad_bytes_per_param * (dense_gpu / dense_w_shards + expert_gpu / expert_w_shards);
  mem.optimizer_bytes =
      profile.optimizer_bytes_per_param * (dense_gpu / dense_state_shards + expert_gpu / expert_state_shards);
  if (l.fsdp > 1 && parts.held_layers > 0) {
    // Two layers of gathered weights (the current one and the prefetched next, the largest the
    // stage holds); gradients are reduce-scattered as they are produced.
    const double layer_dense = s.largest_layer_params / tp;
    // A stage of dense layers only gathers no expert.
    const double layer_expert = holds_moe_layers
                                    ? m.expert_params / static_cast<double>(c.moe_layers()) /
                                          static_cast<double>(l.ep * l.etp)
                                    : 0;
    const double expert_part = x.expert_fsdp > 1 ? layer_expert / static_cast<double>(l.moe_chunk)
                                                 : 0;
    mem.gather_buffer_bytes = 2 * kWeightBytes * (layer_dense + expert_part);
  }
  // Activations of one layer pass for one micro-batch on this rank.
  const double t = x.tokens_mb_rank;
  if (segments.segments > 1 && layers > 0) {
    parts.segment_checkpoint_bytes = static_cast<double>(segments.segments - 1) * t *
                                     static_cast<double>(c.d_model) * kActBytes;
  }
  const double k = static_cast<double>(c.top_k);
  // Expert tensor parallelism: each rank keeps the etp − 1 other ranks' dispatched tokens too,
  // all-gathered as its fc1 input (their fp8 copies under fp8).
  parts.etp = static_cast<double>(l.etp);
  const double gathered = parts.etp - 1;
  const double routed_input = s.routed_input_bytes_per_assignment;
  const double expert_act = s.expert_act_bytes_per_assignment + gathered * routed_input;
  const double fp8_saved = s.fp8_saved_bytes_per_assignment + gathered * routed_input / 2;
  parts.per_layer_full =
      t * (m.attention_act_bytes_per_token + s.mlp_act_bytes_per_token + k * x.pad * expert_act);
  if (job.format != NumberFormat::kBf16) {
    parts.per_layer_full -= t * (s.fp8_saved_bytes_per_token + k * x.pad * fp8_saved);
  }
  parts.routed_bytes_per_token =
      t * k * x.pad * (job.format != NumberFormat::kBf16 ? expert_act - fp8_saved : expert_act);
  // Offloaded layers: each segment's forward copies its first offload_layers out. The forward
  // keeps only the last segment's activations; the backward runs each earlier segment's forward
  // again, which offloads anew before that segment's backward reads its layers back.
  const double offload_layers = static_cast<double>(l.offload_layers);
  parts.offloaded_layers = std::min(offload_layers, parts.held_layers);
  parts.offloaded_passes = parts.offloaded_layers;
  if (segments.segments > 1) {
    parts.recomputed_offloaded_layers =
        static_cast<double>(segments.segments - 1) * std::min(offload_layers, segment_layers);
    parts.offloaded_passes = std::min(offload_layers, s.last_segment_layers + mtp_held) +
                             parts.recomputed_offloaded_layers;
  }
  if (l.offload_modules != 0) {
    // Every layer pass is copied out once a micro-batch; segmented backprop copies the repeated
    // segments out again.
    parts.offload_modules = l.offload_modules;
    parts.module_offload_assignments = k * x.pad;
    parts.module_offload_passes = s.all_loops_layers + mtp_held;
    parts.module_recomputed_passes = s.repeated_loops_layers;
  }
  parts.in_flight = 1;
  if (l.pp > 1) {
    parts.in_flight = static_cast<double>(std::min<int64_t>(x.micro_batches, l.pp - stage));
    if (l.vpp > 1 && x.micro_batches > l.pp) {
      parts.in_flight *= 1 + static_cast<double>(l.pp - 1) / static_cast<double>(l.pp * l.vpp);
      if (l.a2a_overlap > 0) parts.in_flight += A2aOverlapExtraInFlight(l, x.micro_batches);
    }
  }
  // Logits (bf16) and their fp32 softmax, vocabulary split over tp, on the last stage (the only
  // one when pp = 1).
  if (stage == l.pp - 1) {
    mem.logits_bytes = t * static_cast<double>(c.vocab) * (2 + 4) * profile.logits_fraction;
  }
  // All-to-all send and receive buffers of one MoE layer.
  if (holds_moe_layers) mem.dispatch_bytes = 2 * t * k * x.pad * m.routed_width * kActBytes;
  mem.reserve_bytes = profile.memory_reserve_gb * 1e9;
  parts.fixed_before_activations_bytes =
      mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes + mem.gather_buffer_bytes;
  return parts;
}

// What of a stage's memory depends on the recompute policy: its activations in HBM and in host
// memory, the bytes one micro-batch copies to host memory, and its peak.
struct StageActivations {
  double activation_bytes = 0;
  double host_activation_bytes = 0;
  double offload_bytes_per_micro_batch = 0;
  double offload_recomputed_bytes_per_micro_batch = 0;
  double peak_bytes = 0;
};

// The stage of `parts` with its activations under `recompute`.
StageActivations StageActivationsUnder(const ModelShape& m, const PerfJob& job,
                                       const PerfProfile& profile, const LayoutDerivation& x,
                                       const StageMemoryParts& parts, Recompute recompute) {
  const ModelConfig& c = m.config;
  StageActivations a;
  const double t = x.tokens_mb_rank;
  const double per_layer_full = parts.per_layer_full;
  double per_layer = per_layer_full;
  switch (recompute) {
    case Recompute::kNone: break;
    case Recompute::kSelective:
      per_layer = std::max(per_layer_full - t * m.core_attention_saved_bytes_per_token, 0.0);
      break;
    case Recompute::kModules:
      per_layer =
          std::max(per_layer_full - t * parts.selective_saved_bytes_per_token * x.pad, 0.0);
      break;
    case Recompute::kMoe:
      // The MoE layer is recomputed from its input: none of its routed activations stay.
      per_layer = std::max(per_layer_full - t * parts.moe_recompute_saved_bytes_per_token -
                               parts.routed_bytes_per_token,
                           0.0);
      break;
    case Recompute::kFull: per_layer = t * kActBytes * static_cast<double>(c.d_model); break;
  }
  per_layer *= profile.activation_factor;
  // Fine-grained offload moves the modules' saved inputs of every held layer to host memory; one
  // layer's copy is in transit.
  const double module =
      parts.offload_modules != 0 && parts.held_layers > 0
          ? std::min(per_layer,
                     ModuleOffloadBytes(m, parts.moe_share, parts.offload_modules,
                                        recompute, job.format, t,
                                        t * parts.module_offload_assignments, parts.etp) *
                         profile.activation_factor)
          : 0.0;
  if (module > 0) {
    a.activation_bytes = (per_layer - module) * parts.held_layers * parts.in_flight + module;
    a.host_activation_bytes = module * parts.held_layers * parts.in_flight;
    a.offload_bytes_per_micro_batch = module * parts.module_offload_passes;
    a.offload_recomputed_bytes_per_micro_batch = module * parts.module_recomputed_passes;
  } else {
    a.activation_bytes = per_layer * (parts.held_layers - parts.offloaded_layers) * parts.in_flight;
  }
  if (parts.offloaded_layers > 0) {
    // Offloaded layers' activations wait in host memory; one layer's copy is in transit (its
    // device buffer freed once the copy ends, the next layer's filled meanwhile).
    a.activation_bytes += per_layer;
    a.host_activation_bytes = per_layer * parts.offloaded_layers * parts.in_flight;
    a.offload_bytes_per_micro_batch = per_layer * parts.offloaded_passes;
    a.offload_recomputed_bytes_per_micro_batch = per_layer * parts.recomputed_offloaded_layers;
  }
  // Segmented backprop's checkpoints: each earlier segment's input, for every micro-batch held.
  a.activation_bytes += parts.segment_checkpoint_bytes * parts.in_flight;
  // Full recompute rebuilds one layer's activations at a time in the backward (none on a stage
  // without layers).
  if (recompute == Recompute::kFull && parts.held_layers > 0) {
    a.activation_bytes += per_layer_full;
  }
  // The sum in MemoryBreakdown's order (fixed_before_activations_bytes holds its first four).
  const MemoryBreakdown& mem = parts.memory;
  a.peak_bytes = parts.fixed_before_activations_bytes + a.activation_bytes + mem.logits_bytes +
                 mem.dispatch_bytes + mem.reserve_bytes;
  return a;
}

// A stage's bytes that do not scale with a layer's activations.
double FixedBytes(const MemoryBreakdown& m) {
  return m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.gather_buffer_bytes +
         m.logits_bytes + m.dispatch_bytes + m.reserve_bytes;
}

// How many layers' activations (of one micro-batch) a stage holds in HBM under every recompute
// policy (StageActivationsUnder): the held layers of each micro-batch in flight less the
// offloaded ones, and one offloaded layer in transit.
double DeviceActivationLayers(const StageMemoryParts& p) {
  return (p.held_layers - p.offloaded_layers) * p.in_flight + (p.offloaded_layers > 0 ? 1 : 0);
}

}  // namespace

// The stages that can hold the peak: the first stage holds the embedding and the most in-flight
// micro-batches, and each later rank no more than an earlier one, so a middle stage can only be
// the peak when it holds more layers of some kind than every earlier rank (SplitPipeline's
// peak_candidates). The last stage, one micro-batch in flight, holds the output
// layer's logits: it is compared unless its fixed bytes, its activation layers, its offloaded
// layers and, at another layer mix, its layer's bytes under every policy are all at most the
// first stage's, when no recompute policy can put it above.
LayoutMemory::LayoutMemory(const ModelShape& m, const Layout& l, const PerfJob& job,
                           const PerfProfile& profile, const LayoutDerivation& x)
    : model_(m), job_(job), profile_(profile), derivation_(x) {
  // The stages' compositions: the search's, computed once per split, or computed here.
  std::optional<StageCompositions> composed;
  if (x.compositions == nullptr) composed.emplace(ComposeStages(m, job, x.split, l.pp));
  const StageCompositions& stages = x.compositions != nullptr ? *x.compositions : *composed;
  for (int i = 0; i < stages.count; ++i) {
    stages_[i] = StageMemoryWithoutActivations(m, l, job, profile, x,
                                               stages.ranks[static_cast<size_t>(i)]);
  }
  stage_count_ = stages.count;
  computed_count_ = stage_count_;
  if (HasLastStage() && !LastStageCanPeak()) --stage_count_;
  overlap_extra_in_flight_ =
      l.a2a_overlap > 0 ? 0.0 : A2aOverlapExtraInFlight(l, x.micro_batches);
}

bool LayoutMemory::LastStageCanPeak() const {
  const StageMemoryParts& first = stages_[0];
  const StageMemoryParts& last = stages_[computed_count_ - 1];
  return FixedBytes(last.memory) > FixedBytes(first.memory) ||
         DeviceActivationLayers(last) > DeviceActivationLayers(first) ||
         last.offloaded_layers * last.in_flight > first.offloaded_layers * first.in_flight ||
         last.offloaded_passes > first.offloaded_passes ||
         last.module_offload_passes > first.module_offload_passes ||
         (last.moe_share != first.moe_share && LayerCanHoldMore(last, first));
}

bool LayoutMemory::LayerCanHoldMore(const StageMemoryParts& a, const StageMemoryParts& b) const {
  // A layer's bytes under each policy (StageActivationsUnder): the full set, less what selective
  // (the same for every mix), module or MoE recompute frees; full recompute keeps the same input
  // at every mix. Module offload moves a mix-dependent part to host memory: compared whenever it
  // is on.
  const double t = derivation_.tokens_mb_rank;
  const double pad = derivation_.pad;
  const auto modules = [&](const StageMemoryParts& p) {
    return p.per_layer_full - t * p.selective_saved_bytes_per_token * pad;
  };
  const auto moe = [&](const StageMemoryParts& p) {
    return p.per_layer_full - t * p.moe_recompute_saved_bytes_per_token -
           p.routed_bytes_per_token;
  };
  return a.offload_modules != 0 || a.per_layer_full > b.per_layer_full ||
         modules(a) > modules(b) || moe(a) > moe(b);
}

LayoutMemory LayoutMemory::WithA2aOverlap() const {
  LayoutMemory overlapped = *this;
  if (overlap_extra_in_flight_ == 0) return overlapped;
  overlapped.overlap_extra_in_flight_ = 0;
  for (int i = 0; i < computed_count_; ++i) {
    overlapped.stages_[i].in_flight += overlap_extra_in_flight_;
  }
  if (HasLastStage()) {
    overlapped.stage_count_ = overlapped.LastStageCanPeak() ? computed_count_ : computed_count_ - 1;
  }
  return overlapped;
}

MemoryBreakdown LayoutMemory::For(Recompute recompute) const {
  StageActivations peak =
      StageActivationsUnder(model_, job_, profile_, derivation_, stages_[0], recompute);
  int peak_stage = 0;
  // Offload: the host holds the most any stage offloads (not the HBM peak stage's), and the
  // copies are timed on the stage that moves the most.
  double host = peak.host_activation_bytes, copied = peak.offload_bytes_per_micro_batch;
  double copied_in_backward = peak.offload_recomputed_bytes_per_micro_batch;
  for (int i = 1; i < stage_count_; ++i) {
    const StageActivations stage =
        StageActivationsUnder(model_, job_, profile_, derivation_, stages_[i], recompute);
    host = std::max(host, stage.host_activation_bytes);
    if (stage.offload_bytes_per_micro_batch > copied) {
      copied = stage.offload_bytes_per_micro_batch;
      copied_in_backward = stage.offload_recomputed_bytes_per_micro_batch;
    }
    if (stage.peak_bytes > peak.peak_bytes) {
      peak = stage;
      peak_stage = i;
    }
  }
  MemoryBreakdown memory = stages_[peak_stage].memory;
  memory.activation_bytes = peak.activation_bytes;
  memory.peak_bytes = peak.peak_bytes;
  memory.host_activation_bytes = host;
  memory.offload_bytes_per_micro_batch = copied;
  memory.offload_recomputed_bytes_per_micro_batch = copied_in_backward;
  return memory;
}

namespace {

MemoryBreakdown PeakStageMemory(const ModelShape& m, const Layout& l, const PerfJob& job,
                                const PerfProfile& profile, const LayoutDerivation& x) {
  return LayoutMemory(m, l, job, profile, x).For(l.recompute);
}

}  // namespace

uint32_t ModulesWithStoredInput(Recompute recompute, bool mla) {
  constexpr uint32_t kAll = (1u << std::size(kOffloadModuleNames)) - 1;
  const auto bit = [](OffloadModule m) { return static_cast<uint32_t>(m); };
  switch (recompute) {
    case Recompute::kNone:
    case Recompute::kSelective: return kAll;
    case Recompute::kModules:
      return kAll & ~bit(OffloadModule::kQkvLinear) & ~(mla ? bit(OffloadModule::kCoreAttn) : 0u);
    case Recompute::kMoe: return kAll & ~bit(OffloadModule::kQkvLinear) & ~kMoeOffloadModules;
    case Recompute::kFull: return 0;
  }
  return 0;
}

bool FitsDevice(const MemoryBreakdown& memory, const HardwareSpec& device) {
  return memory.peak_bytes <= device.hbm_gb * 1e9 &&
         memory.host_activation_bytes <= device.host_memory_gb * 1e9;
}

MemoryBreakdown EstimateMemory(const ModelShape& m, const Cluster& cluster, const Layout& l,
                               const PerfJob& job, const PerfProfile& profile) {
  (void)cluster;
  return PeakStageMemory(m, l, job, profile, DeriveLayout(m, l, job));
}


double PipelineBubbleSeconds(int64_t pp, int64_t vpp, int64_t micro_batches, double t) {
  const double p = static_cast<double>(pp);
  const double v = static_cast<double>(vpp);
  const double m = static_cast<double>(micro_batches);
  if (micro_batches >= pp) return (p - 1) * t / v;
  return (p - m) * t + (m - 1) * t / v;
}

double A2aOverlapPairedShare(int64_t pp, int64_t vpp, int64_t micro_batches) {
  if (micro_batches < 1) return 0;
  if (pp == 1) return static_cast<double>(micro_batches - 1) / static_cast<double>(micro_batches);
  const int64_t total = micro_batches * vpp;
  const int64_t warmup = std::min(total, (pp - 1) * 2 + (vpp - 1) * pp);
  return static_cast<double>(total - warmup) / static_cast<double>(total);
}

double LayoutDroppedFraction(const ModelShape& m, const Layout& l, const PerfJob& job,
                             const DropParams& drop) {
  const ModelConfig& c = m.config;
  if (!c.is_moe()) return 0;
  const double k = static_cast<double>(c.top_k);
  const double E = static_cast<double>(c.experts);
  const double tokens = static_cast<double>(l.mbs * job.seq_len / l.cp) / static_cast<double>(l.tp);
  const int64_t L = std::min<int64_t>(job.seq_len / l.cp, static_cast<int64_t>(tokens));
  double dropped = 0;
  if (UsesCapacity(job.routing, l)) {
    DropGroup g{tokens * k / E, job.capacity_factor, std::max<int64_t>(L, 1), 1, c.experts,
                c.top_k};
    dropped = DroppedFraction(g, drop);
  }
  if (CapsTokens(job.routing) && l.expert_fsdp() > 1 && l.moe_chunk > 1) {
    // Each chunk pools the capacity of the rank's E/(ep·C) experts it gathers; a per-expert or
    // per-cell cap (ep > 1) still applies, so the chunks drop no fewer than it does.
    const int64_t pooled = c.experts / (l.ep * l.moe_chunk);
    DropGroup g{tokens * k * static_cast<double>(pooled) / E, job.capacity_factor,
                std::max<int64_t>(L, 1), pooled, c.experts, c.top_k};
    dropped = std::max(dropped, DroppedFraction(g, drop));
  }
  return dropped;
}

double RemoteDomainsPerToken(int64_t experts, int64_t top_k, int64_t domains) {
  if (domains <= 1) return 0;
  // The chance that none of the token's k distinct experts is one of a domain's E/n experts,
  // C(E − E/n, k) / C(E, k), as a product; the expected count of the n − 1 remote domains hit.
  const double e = static_cast<double>(experts);
  const double per_domain = e / static_cast<double>(domains);
  // Numerators and denominators multiply in blocks of 16 with one division per block (the search
  // evaluates this per layout): each block's products stay below 1e308 for E < 1e19.
  double miss = 1;
  for (int64_t start = 0; start < top_k; start += 16) {
    double num = 1, den = 1;
    for (int64_t i = start; i < std::min<int64_t>(top_k, start + 16); ++i) {
      const double di = static_cast<double>(i);
      num *= std::max(0.0, e - per_domain - di);
      den *= e - di;
    }
    miss *= num / den;
  }
  return static_cast<double>(domains - 1) * (1 - miss);
}

ExpertDispatchTraffic ExpertDispatchBytes(int64_t experts, int64_t top_k, int64_t ep, int64_t etp,
                                          int64_t domain_gpus, bool hierarchical) {
  ExpertDispatchTraffic t;
  const double k = static_cast<double>(top_k);
  const int64_t span = ep * etp;
  if (span <= domain_gpus || domain_gpus < 1) {
    // One scale-up domain: every copy but the one that stays on the rank crosses NVLink.
    t.scale_up_copies_per_token = k * static_cast<double>(ep - 1) / static_cast<double>(ep);
    return t;
  }
  const int64_t domains = (span + domain_gpus - 1) / domain_gpus;
  const double n = static_cast<double>(domains);
  const double ranks_per_domain = static_cast<double>(ep) / n;
  // The copies bound for the sender's own domain (other ranks) cross NVLink either way.
  const double local_copies = k * (ranks_per_domain - 1) / static_cast<double>(ep);
  if (hierarchical) {
    // Each token goes once to each remote domain that holds one of its experts and is
    // forwarded there over NVLink (DeepEP's internode dispatch; combine the same, reversed).
    t.scale_out_copies_per_token = RemoteDomainsPerToken(experts, top_k, domains);
    const double remote_copies = k * (n - 1) / n;
    t.scale_up_copies_per_token = local_copies + remote_copies;  // forwarded on arrival
  } else {
    t.scale_out_copies_per_token = k * (n - 1) / n;
    t.scale_up_copies_per_token = local_copies;
  }
  return t;
}

StepEstimate EvaluateStep(const ModelShape& m, const Cluster& cluster, const Layout& l,
                          const PerfJob& job, const SharedPerfParams& sh,
                          const PerfProfile& profile, const DropParams* drop) {
  return EvaluateStep(m, cluster, l, job, sh, profile, drop, nullptr);
}

StepEstimate EvaluateStep(const ModelShape& m, const Cluster& cluster, const Layout& l,
                          const PerfJob& job, const SharedPerfParams& sh,
                          const PerfProfile& profile, const DropParams* drop,
                          const MemoryBreakdown* memory) {
  return LayoutStep(m, cluster, l, job, sh, profile, DeriveLayout(m, l, job))
      .Evaluate(l.recompute, memory, drop);
}

LayoutStep::LayoutStep(const ModelShape& m, const Cluster& cluster, const Layout& l,
                       const PerfJob& job, const SharedPerfParams& sh, const PerfProfile& profile,
                       const LayoutDerivation& x)
    : m_(m), cluster_(cluster), l_(l), job_(job), sh_(sh), profile_(profile), x_(x) {
  const ModelConfig& c = m.config;
  const HardwareSpec& hw = cluster.device;
  N_ = static_cast<double>(l.gpus());
  tokens_step_ = static_cast<double>(job.global_batch * job.seq_len);
  mb_ = static_cast<double>(x.micro_batches);
  const double stage_group = static_cast<double>(l.stage_group());

  // Compute. Per GPU: the stage's share of the layers, split over the stage's ranks.
  bf16_ = hw.peak_bf16_tflops * 1e12;
  gemm_peak_ = bf16_;
  const double fp8_peak =
      job.format == NumberFormat::kMxfp8 ? hw.peak_mxfp8_tflops : hw.peak_fp8_tflops;
  if (job.format != NumberFormat::kBf16 && fp8_peak > 0) {
    gemm_peak_ = bf16_ * (1 + sh.fp8_gain * (fp8_peak / hw.peak_bf16_tflops - 1));
  }
  const double eff = profile.gemm_efficiency;
  stage_tokens_ = tokens_step_ / stage_group;  // tokens each rank of a stage handles
  // Dense GEMMs: typical GEMM of a micro-batch is tokens_mb_rank·tp rows × d × (q_dim/tp).
  const double dense_gemm_size =
      2 * x.tokens_mb_seq * static_cast<double>(c.d_model) * m.q_dim / static_cast<double>(l.tp);
  dense_gemm_size_ = std::max(dense_gemm_size, 1.0);
  auto shape_eff = [&](double smallest) {
    return eff * smallest / (smallest + sh.gemm_half_size);
  };
  const double dense_smallest =
      std::min({x.tokens_mb_seq, static_cast<double>(c.d_model), m.q_dim / static_cast<double>(l.tp)});
  dense_rate_ = gemm_peak_ * shape_eff(dense_smallest);
  if (l.pp > 1) {
    // Rank pp−1's output layer, forward and backward (no recompute repeats it), and its placed
    // MTP layers' passes through it (in the stage's time when it is the slowest rank).
    const double mtp_passes = !x.split.slowest_is_last() && x.split.mtp_placed
                                  ? static_cast<double>(x.split.last_mtp)
                                  : 0.0;
    const double head_flops = stage_tokens_ * m.head_flops_per_token * 3 * (1 + mtp_passes);
    output_layer_seconds_ =
        head_flops / dense_rate_ + mb_ * 3 * (1 + mtp_passes) * sh.gemm_latency_seconds;
  }
  // Routed-expert GEMMs: each expert sees ep·tokens_mb_rank·k/E rows per micro-batch.
  layers_stage_moe_ = static_cast<double>(x.moe_layers_stage) + x.mtp_moe_layers_stage;
  if (c.is_moe()) {
    const double rows = static_cast<double>(l.ep * l.etp) * x.tokens_mb_rank *
                        static_cast<double>(c.top_k) * x.pad / static_cast<double>(c.experts);
    // Grouped GEMMs: one kernel per weight matrix and pass for all of the rank's experts, each
    // expert's GEMM rows × routed_width × expert_width/etp, efficiency by its smallest dimension;
    // with expert tensor parallelism the rows are the etp group's tokens, all-gathered.
    const double smallest =
        std::min({rows, m.routed_width,
                  static_cast<double>(c.expert_width) / static_cast<double>(l.etp)});
    expert_rate_ = gemm_peak_ * shape_eff(smallest);
    const double local_experts = static_cast<double>(c.experts) / static_cast<double>(l.ep);
    // fp8: each expert's GEMM input is quantized on its own (SharedPerfParams::
    // fp8_quantize_seconds).
    const double per_expert = profile.expert_group_seconds +
                              (job.format != NumberFormat::kBf16 ? sh.fp8_quantize_seconds : 0.0);
    expert_kernel_seconds_ = sh.gemm_latency_seconds + local_experts * per_expert;
    expert_tile_factor_ = GroupedGemmTileFactor(rows, local_experts,
                                                profile.grouped_gemm_row_tile, job.routing);
  }
  if (c.attention_sinks && !profile.fused_attention_sinks) {
    sinks_rate_ = bf16_ * shape_eff(static_cast<double>(c.resolved_head_dim()));
  }
  // Memory-bound kernels: elementwise_passes bf16 reads/writes of the layer's activations.
  if (hw.hbm_tb_per_s > 0 && sh.elementwise_passes > 0) {
    // The slowest rank's layers, at their mix of MoE and dense-FFN layers.
    const double stage_layers = static_cast<double>(x.layers_stage) + x.mtp_layers_stage;
    const double moe_share = stage_layers > 0 ? layers_stage_moe_ / stage_layers : 0.0;
    const double width =
        m.LayerField(moe_share, &LayerActivations::elementwise_width_per_token) +
        static_cast<double>(c.top_k) * x.pad *
            m.LayerField(moe_share, &LayerActivations::elementwise_width_per_assignment);
    elementwise_bytes_ =
        stage_tokens_ * stage_layers * width * kActBytes * sh.elementwise_passes;
  }

  // Communication: the time of one call of each collective (its bytes over its link, plus the
  // latency), or the whole of those whose calls do not depend on the recompute policy.
  const double scale_up_efficiency =
      profile.scale_up_efficiency > 0 ? profile.scale_up_efficiency : sh.scale_up_efficiency;
  // The GPUs each collective's group spans (the EP all-to-all's NIC part: scale_out_[kEp] is set
  // by which of its two parts is slower), and whether that crosses the scale-out network.
  const int64_t span[kCollectives] = {l.tp,          l.tp * l.cp,     l.ep * l.etp,
                                      l.tp * l.cp * l.fsdp, l.gpus() / l.pp, l.gpus()};
  for (int i = 0; i < kCollectives; ++i) scale_out_[i] = span[i] > hw.domain_gpus();
  auto bandwidth = [&](int64_t group) {
    const bool up = group <= hw.domain_gpus();
    return cluster.BandwidthForSpan(group) *
           (up ? scale_up_efficiency : sh.scale_out_efficiency);
  };
  // Per GPU over the scale-up links (one lookup per layout: the search evaluates millions).
  const double scale_up_bytes_per_s = cluster.BandwidthForSpan(1) * scale_up_efficiency;
  // Rings (all-gather, reduce-scatter, all-reduce) of a group `size` GPUs `stride` ranks apart,
  // whose span's bandwidth (bandwidth(size · stride)) is `span_bytes_per_s`.
  auto ring_seconds = [&](double bytes, int64_t size, int64_t stride, double span_bytes_per_s) {
    if (size * stride <= hw.domain_gpus()) return bytes / span_bytes_per_s;
    return RingSeconds(bytes, size, stride, hw.domain_gpus(), scale_up_bytes_per_s,
                       span_bytes_per_s);
  };
  const double lat = sh.collective_latency_seconds;
  // A group of one rank runs no collective.
  auto ring_latency = [&](int64_t size, int64_t stride) {
    return size > 1 ? RingLatencySeconds(size, stride, hw.domain_gpus(), lat) : 0.0;
  };
  layers_stage_ = static_cast<double>(x.layers_stage) + x.mtp_layers_stage;
  const double d = static_cast<double>(c.d_model);
  if (l.tp > 1) {
    const double tp = static_cast<double>(l.tp);
    const double bytes = x.tokens_mb_seq * d * kActBytes * (tp - 1) / tp;
    tp_call_seconds_ = bytes / bandwidth(span[kTp]) + lat;
  }
  if (c.is_moe() && l.etp > 1) {
    // Expert tensor parallelism: each etp group all-gathers the tokens dispatched to it and
    // reduce-scatters the expert outputs, forward and backward (+2 with full recompute).
    const double etp = static_cast<double>(l.etp);
    const double bytes = x.tokens_mb_rank * static_cast<double>(c.top_k) * x.pad *
                         m.routed_width * kActBytes * (etp - 1);
    etp_call_seconds_ = bytes / bandwidth(l.etp) + lat;
  }
  if (l.cp > 1) {
    const double cp = static_cast<double>(l.cp);
    const double bytes = x.tokens_mb_seq * 2 * m.kv_dim * kActBytes * (cp - 1) /
                         static_cast<double>(l.tp);
    cp_call_seconds_ = bytes / bandwidth(span[kCp]) + lat;
  }
  if (c.is_moe() && l.ep > 1) {
    const ExpertDispatchTraffic traffic =
        ExpertDispatchBytes(c.experts, c.top_k, l.ep, l.etp, hw.domain_gpus(),
                            ResolveDispatch(l.dispatch, profile.hierarchical_dispatch) ==
                                Dispatch::kHierarchical);
    const double token_bytes = x.tokens_mb_rank * x.pad * m.routed_width * kActBytes;
    const double up_seconds =
        token_bytes * traffic.scale_up_copies_per_token / scale_up_bytes_per_s;
    const double out_seconds =
        traffic.scale_out_copies_per_token > 0
            ? token_bytes * traffic.scale_out_copies_per_token / bandwidth(span[kEp])
            : 0.0;
    // The NVLink and NIC parts of one all-to-all run at once (NCCL's peer sends; DeepEP's
    // RDMA sends and NVLink forwards, pipelined in chunks): the slower one sets its time.
    ep_call_seconds_ = std::max(up_seconds, out_seconds) + lat;
    scale_out_[kEp] = out_seconds > up_seconds;
  }
  overlap_fsdp_ = profile.overlap_fsdp >= 0 ? profile.overlap_fsdp : sh.overlap_fsdp;
  overlap_ep_ = EpOverlapShare();
  const double emb_share = l.pp == 1 ? 1.0 : 0.5;
  const StageParams params = StageLayerParams(m, x.layers_stage, x.moe_layers_stage);
  const double dense_gpu =
      (params.dense + m.embedding_params * emb_share) / static_cast<double>(l.tp);
  const double expert_gpu = params.expert / static_cast<double>(l.ep * l.etp);
  if (l.fsdp > 1) {
    // The dense weights are sharded over fsdp·cp ranks tp apart (Megatron-FSDP's dp_cp group).
    const double f = static_cast<double>(l.fsdp * l.cp);
    const double dense_bytes = 3 * dense_gpu * kWeightBytes * (f - 1) / f;  // AG, AG, RS
    // Each call's latency: NCCL's ring over the group.
    double latency = 3 * layers_stage_ * ring_latency(l.fsdp * l.cp, l.tp);
    double seconds = ring_seconds(dense_bytes, l.fsdp * l.cp, l.tp, bandwidth(span[kFsdp]));
    if (x.expert_fsdp > 1) {
      // The experts' shards are gathered over their own ring, expert_fsdp ranks ep·etp apart
      // (spanning the same GPUs): with ep·etp filling a scale-up domain it has one member per
      // domain, a flat ring at the NIC's speed however many of the dense ring's share a domain.
      const double expert_bytes =
          3 * expert_gpu * kWeightBytes * (x.expert_fsdp - 1) / x.expert_fsdp;
      seconds += ring_seconds(expert_bytes, l.expert_fsdp(), l.ep * l.etp, bandwidth(span[kFsdp]));
      latency += 3 * layers_stage_moe_ * static_cast<double>(l.moe_chunk) *
                 ring_latency(l.expert_fsdp(), l.ep * l.etp);
    }
    fsdp_seconds_ = mb_ * (seconds + latency);
  }
  // The gradients of replicated weights are reduced across their replicas: the dp replicas of
  // an FSDP shard; without FSDP, the dense weights' dp·cp ranks and the experts' expert-dp ranks
  // (dp = 1 with cp > 1, or tp wider than ep·etp, still reduces).
  if (l.fsdp > 1 ? l.dp > 1 : l.dp * l.cp > 1 || l.expert_dp() > 1) {
    const double dpn = static_cast<double>(l.dp);
    // Every data-parallel group (dense, or the experts' over expert-dp) spans gpus / pp.
    const double dp_bytes_per_s = bandwidth(span[kDp]);
    if (l.fsdp > 1) {
      // Hybrid: all-reduce of each FSDP shard across the dp replicas.
      const double shard = dense_gpu / static_cast<double>(l.fsdp * l.cp) +
                           expert_gpu / x.expert_fsdp;
      dp_seconds_ = ring_seconds(2 * shard * kWeightBytes * (dpn - 1) / dpn, l.dp,
                                 l.tp * l.cp * l.fsdp, dp_bytes_per_s) +
                    2 * layers_stage_ * ring_latency(l.dp, l.tp * l.cp * l.fsdp);
    } else {
      // ZeRO-1: fp32 gradient reduce-scatter and bf16 parameter all-gather over dp·cp
      // (experts over their expert-data-parallel group).
      // The dense group is dp·cp ranks tp apart; the experts' is expert-dp ranks ep·etp apart.
      const double g = static_cast<double>(l.dp * l.cp);
      const double edp = static_cast<double>(l.expert_dp());
      dp_seconds_ = ring_seconds(dense_gpu * (kGradBytes + kWeightBytes) * (g - 1) / g,
                                 l.dp * l.cp, l.tp, dp_bytes_per_s) +
                    (edp > 1 ? ring_seconds(expert_gpu * (kGradBytes + kWeightBytes) * (edp - 1) /
                                                edp,
                                            l.expert_dp(), l.ep * l.etp, dp_bytes_per_s)
                             : 0) +
                    // Per layer's bucket, a reduce-scatter and an all-gather over the dense
                    // group, plus the network steps of the experts' own group.
                    2 * layers_stage_ * ring_latency(l.dp * l.cp, l.tp) +
                    (edp > 1 ? 2 * layers_stage_moe_ *
                                   (ring_latency(l.expert_dp(), l.ep * l.etp) - lat)
                             : 0);
    }
  }
  if (l.pp > 1) {
    const double bytes = x.tokens_mb_rank * d * kActBytes;
    const double calls = mb_ * 2 * static_cast<double>(l.vpp);
    pp_seconds_ = calls * (bytes / bandwidth(span[kPp]) + lat);
  }
}

double LayoutStep::EpOverlapShare() const {
  if (l_.a2a_overlap == 0) return profile_.overlap_ep;
  // Merged forward and backward: each paired pass hides its all-to-all under the other
  // micro-batch's compute, up to the most a schedule hides (kMaxOverlapShare); the unpaired
  // warm-up and cool-down passes keep the stack's ordinary overlap.
  const double paired = A2aOverlapPairedShare(l_.pp, l_.vpp, x_.micro_batches);
  return std::max(profile_.overlap_ep,
                  paired * kMaxOverlapShare + (1 - paired) * profile_.overlap_ep);
}

LayoutStep LayoutStep::WithA2aOverlap() const {
  LayoutStep overlapped = *this;
  overlapped.l_.a2a_overlap = 1;
  overlapped.overlap_ep_ = overlapped.EpOverlapShare();
  return overlapped;
}

StepEstimate LayoutStep::Evaluate(Recompute recompute, const MemoryBreakdown* memory,
                                  const DropParams* drop) const {
  const ModelShape& m = m_;
  const ModelConfig& c = m.config;
  const HardwareSpec& hw = cluster_.device;
  const Layout& l = l_;
  const LayoutDerivation& x = x_;
  const SharedPerfParams& sh = sh_;
  const PerfProfile& profile = profile_;
  StepEstimate e;
  StepBreakdown& tb = e.time;
  // What one MoE layer pass costs the step beyond its FLOPs: its expert kernels' fixed cost, its
  // exposed all-to-all and expert-TP traffic, the host's wait after its token-count sync (what
  // ranks pipeline stages holding other mixes of layers than the slowest rank, below).
  double moe_layer_fixed_seconds = 0;
  const double share = x.stage_share;
  const double last_stage_head = x.head_on_stage ? 1.0 : 0.0;  // lm_head on the stage (pp = 1)
  const double layer_mult = (recompute == Recompute::kFull ? 4.0 : 3.0) + x.segment_recompute;
  // The trunk's FLOPs by the rank's share of its layers; the MTP modules' by its share of them.
  const double mtp_share = x.mtp_share;
  // The trunk's dense FFNs by the rank's share of the dense-FFN layers, its MoE blocks and
  // routed experts by its share of the MoE layers (the layer share for a model of one kind).
  const double trunk_dense_flops =
      m.dense_flops_per_token * share +
      m.dense_ffn_flops_per_token * (x.dense_stage_share - share) +
      m.moe_block_flops_per_token * (x.moe_stage_share - share);
  const double dense_flops =
      stage_tokens_ *
      ((trunk_dense_flops + m.mtp_dense_flops_per_token * mtp_share) * layer_mult +
       m.head_flops_per_token * 3 * last_stage_head);
  const double dense_gemm_count = dense_flops / dense_gemm_size_;
  tb.dense_gemm_seconds = dense_flops / dense_rate_ + dense_gemm_count * sh.gemm_latency_seconds;
  if (c.is_moe()) {
    // Recomputing the MoE layer runs its expert GEMMs forward once more.
    const double expert_mult = layer_mult + (recompute == Recompute::kMoe ? 1.0 : 0.0);
    const double expert_flops =
        stage_tokens_ *
        (m.expert_flops_per_token * x.moe_stage_share +
         m.mtp_expert_flops_per_token * mtp_share) *
        expert_mult * x.pad * expert_tile_factor_;
    const double kernels_per_layer = mb_ * (c.glu ? 3.0 : 2.0) * expert_mult;
    moe_layer_fixed_seconds += kernels_per_layer * expert_kernel_seconds_;
    tb.expert_gemm_seconds = expert_flops / expert_rate_ +
                             kernels_per_layer * layers_stage_moe_ * expert_kernel_seconds_;
    if (recompute == Recompute::kMoe) tb.recompute_seconds = tb.expert_gemm_seconds / expert_mult;
  }
  // Flash attention recomputes its scores inside its own backward (counted in 3×); full and
  // core-attention (selective) recompute repeat the attention forward.
  const double attn_mult =
      (recompute == Recompute::kFull || recompute == Recompute::kSelective ? 4.0 : 3.0) +
      x.segment_recompute;
  if (c.attention_sinks && !profile.fused_attention_sinks) {
    // Unfused attention: every layer computes each head's whole s×s score matrix (no causal
    // skip, no window) as two batched bf16 GEMMs (QKᵀ, PV) contracting over the head dimension,
    // and writes and reads the matrix in HBM (scores, softmax, their gradients).
    const double keys = static_cast<double>(job_.seq_len);
    const double layer_share = static_cast<double>(m.layer_passes) * share * attn_mult / 3.0;
    const double gemm_flops = stage_tokens_ * 3 * 4 * keys * m.q_dim * layer_share;
    const double score_bytes = stage_tokens_ * keys * static_cast<double>(c.heads) * kActBytes *
                               sh.unfused_attention_passes * layer_share;
    tb.attention_seconds =
        gemm_flops / sinks_rate_ + (hw.hbm_tb_per_s > 0 ? score_bytes / (hw.hbm_tb_per_s * 1e12) : 0);
  } else {
    tb.attention_seconds = stage_tokens_ *
                           (m.attention_kernel_flops_per_token * share +
                            m.mtp_attention_kernel_flops_per_token * mtp_share) *
                           attn_mult / (bf16_ * sh.attention_efficiency);
  }
  if (recompute == Recompute::kSelective) tb.recompute_seconds = tb.attention_seconds / 4.0;
  if (recompute == Recompute::kModules) {
    // Module recompute's GEMMs: the MLA up-projections (its norms and activation functions are
    // memory-bound kernels, charged with the memory-bound passes below).
    tb.recompute_seconds =
        stage_tokens_ * m.selective_recompute_flops_per_token * share /
        (gemm_peak_ * profile.gemm_efficiency);
    tb.dense_gemm_seconds += tb.recompute_seconds;
  }
  if (hw.hbm_tb_per_s > 0 && sh.elementwise_passes > 0) {
    // elementwise_passes counts a repeated forward (kElementwiseRecomputePasses) that module, MoE
    // and full recompute run (the norms and activation functions again, once) and no recompute
    // or core-attention recompute does not; a looped model's segmented backprop repeats the
    // forward of each earlier segment on top.
    const bool repeats_forward = recompute == Recompute::kModules ||
                                 recompute == Recompute::kMoe || recompute == Recompute::kFull;
    const double passes =
        sh.elementwise_passes - (repeats_forward ? 0.0 : kElementwiseRecomputePasses);
    tb.elementwise_seconds = elementwise_bytes_ / sh.elementwise_passes * std::max(0.0, passes) *
                             (1.0 + x.segment_recompute / 3.0) / (hw.hbm_tb_per_s * 1e12);
    // The repeated passes are recompute time (full recompute's share is counted below).
    if (recompute == Recompute::kModules || recompute == Recompute::kMoe) {
      tb.recompute_seconds += tb.elementwise_seconds * kElementwiseRecomputePasses / passes;
    }
  }
  if (c.attention_sinks && profile.untraced_sink_model_cost) {
    // Per token and layer pass, forward and backward (a repeated forward a third more).
    tb.untraced_seconds = stage_tokens_ * static_cast<double>(m.layer_passes) * share *
                          layer_mult / 3.0 * sh.untraced_sink_model_seconds;
  }
  tb.compute_seconds = tb.dense_gemm_seconds + tb.expert_gemm_seconds + tb.attention_seconds +
                       tb.elementwise_seconds + tb.untraced_seconds;
  if (recompute == Recompute::kFull) tb.recompute_seconds = tb.compute_seconds / layer_mult;
  tb.recompute_seconds += tb.compute_seconds * x.segment_recompute / layer_mult;

  // Communication.
  const double recompute_fwd = (recompute == Recompute::kFull ? 1.0 : 0.0) + x.segment_recompute;
  // MoE recompute repeats the MoE layer's forward: its dispatch, combine and token-count sync.
  const double moe_recompute_fwd = recompute_fwd + (recompute == Recompute::kMoe ? 1.0 : 0.0);
  if (l.tp > 1) {
    const double calls = mb_ * layers_stage_ * (10 + 4 * recompute_fwd);
    tb.tp_seconds = calls * tp_call_seconds_;
  }
  const double moe_calls_per_layer = mb_ * (4 + 2 * moe_recompute_fwd);
  if (c.is_moe() && l.etp > 1) {
    tb.tp_seconds += moe_calls_per_layer * layers_stage_moe_ * etp_call_seconds_;
    moe_layer_fixed_seconds += moe_calls_per_layer * etp_call_seconds_ * (1 - sh.overlap_tp);
  }
  if (l.cp > 1) {
    const double calls = mb_ * layers_stage_ * (3 + recompute_fwd);
    tb.cp_seconds = calls * cp_call_seconds_;
  }
  if (c.is_moe() && l.ep > 1) {
    tb.ep_seconds = moe_calls_per_layer * layers_stage_moe_ * ep_call_seconds_;
    moe_layer_fixed_seconds += moe_calls_per_layer * ep_call_seconds_ * (1 - overlap_ep_);
  }
  tb.fsdp_seconds = fsdp_seconds_;
  tb.dp_seconds = dp_seconds_;
  tb.pp_seconds = pp_seconds_;
  const double comm[kCollectives] = {tb.tp_seconds,   tb.cp_seconds, tb.ep_seconds,
                                     tb.fsdp_seconds, tb.dp_seconds, tb.pp_seconds};
  const double overlap[kCollectives] = {sh.overlap_tp,  sh.overlap_cp, overlap_ep_,
                                        overlap_fsdp_, sh.overlap_dp, sh.overlap_pp};
  double exposed = 0, hidden_up = 0, hidden_out = 0;
  for (int i = 0; i < kCollectives; ++i) {
    exposed += comm[i] * (1 - overlap[i]);
    (scale_out_[i] ? hidden_out : hidden_up) += comm[i] * overlap[i];
  }
  // The overlapped stretch lasts as long as the longest of its sides: the hidden communication
  // on the scale-up links, that on the NICs (the two run at once, as the compute does), or the
  // compute slowed by the SMs and HBM bandwidth the hidden communication's kernels hold (the EP
  // dispatcher's, NCCL's channels). The longest is charged, so hiding more never lengthens the
  // step: past the compute it saves nothing, and the contention it adds is then already under
  // the communication.
  const double hidden = std::max(hidden_up, hidden_out);
  exposed += std::max(hidden - tb.compute_seconds,
                      sh.overlap_contention * std::min(hidden_up + hidden_out, tb.compute_seconds));
  tb.exposed_comm_seconds = exposed;
  if (c.is_moe() && profile.moe_host_sync) {
    // The host's issue time after each MoE layer's token-count sync, which the GPU waits for.
    const double per_layer = mb_ * (1 + moe_recompute_fwd / 3) * sh.moe_sync_seconds;
    tb.host_seconds = per_layer * layers_stage_moe_;
    moe_layer_fixed_seconds += per_layer;
  }
  tb.overhead_seconds = profile.step_overhead_seconds;
  e.memory = memory != nullptr ? *memory : LayoutMemory(m, l, job_, profile, x).For(recompute);
  if (e.memory.offload_bytes_per_micro_batch > 0) {
    // Activation offload: each micro-batch's offloaded activations go to host memory during its
    // forward and come back during its backward, on copy engines beside the compute (Transformer
    // Engine's CPU offload; XLA's host offload). Each direction is hidden under the compute of
    // its phase (forward: one pass of layer_mult; backward: the rest) and what exceeds it is
    // exposed. Segments recomputed by segmented backprop copy out during the backward, beside
    // the copies back (the host link is full duplex). A device without host_link_gb_per_s is
    // refused before (CheckLayout on the device, layout.h).
    const double link_bytes_per_s = hw.host_link_gb_per_s * 1e9 * kHostLinkEfficiency;
    const double each_way = mb_ * e.memory.offload_bytes_per_micro_batch / link_bytes_per_s;
    const double out_in_forward =
        each_way - mb_ * e.memory.offload_recomputed_bytes_per_micro_batch / link_bytes_per_s;
    const double forward = tb.compute_seconds / layer_mult;
    tb.offload_seconds = 2 * each_way;
    tb.exposed_offload_seconds = std::max(0.0, out_in_forward - forward) +
                                 std::max(0.0, each_way - (tb.compute_seconds - forward));
  }
  double pipelined =
      tb.compute_seconds + exposed + tb.host_seconds + tb.exposed_offload_seconds;
  e.slowest_stage_layers = x.layers_stage;
  e.slowest_stage_moe_layers = x.moe_layers_stage;
  e.slowest_stage_mtp_layers = x.mtp_layers_stage;
  e.slowest_stage_holds_output_layer = x.head_on_stage;
  if (l.pp > 1) {
    // The ranks that can take longest (PipelineSplit::rank_loads), each timed as the slowest
    // rank's time without its MoE layers' fixed cost, scaled by the cost of the rank's layers
    // (exact when it holds the same layers, the common even split), plus that fixed cost of each
    // of its own MoE layer passes, plus on rank pp−1 the output layer's GEMMs
    // (output_layer_seconds_). The longest sets the step: its breakdown is the slowest rank's
    // scaled, the output layer among the dense GEMMs.
    const double head_seconds = output_layer_seconds_;
    tb.output_layer_seconds = head_seconds;
    // The slowest rank's time that scales with the cost of its layers.
    const double cost_scaled =
        std::max(0.0, pipelined - moe_layer_fixed_seconds * layers_stage_moe_);
    const PipelineSplit::RankLoad* longest = nullptr;
    double longest_seconds = pipelined;
    for (int i = 0; i < x.split.rank_load_count; ++i) {
      const PipelineSplit::RankLoad& r = x.split.rank_loads[i];
      const double seconds =
          (r.slowest_layers ? pipelined
                            : cost_scaled * r.load_ratio + moe_layer_fixed_seconds * r.moe_passes) +
          (r.is_last ? head_seconds : 0.0);
      if (seconds > longest_seconds) {
        longest = &r;
        longest_seconds = seconds;
      }
    }
    // The fill and drain are the other ranks' time: the mean rank's, not the longest's.
    const double pp_others = static_cast<double>(l.pp - 1);
    const double all_ranks_seconds =
        cost_scaled * (1 + pp_others * x.other_load_ratio) +
        moe_layer_fixed_seconds * static_cast<double>(x.split.total_moe) + head_seconds;
    const double others_seconds = std::max(0.0, all_ranks_seconds - longest_seconds) / pp_others;
    if (longest != nullptr) {
      const bool last = longest->is_last;
      const double layers_seconds = longest_seconds - (last ? head_seconds : 0.0);
      if (longest->rank != x.split.slowest_rank) {
        if (!longest->slowest_layers && pipelined > 0) {
          const double scale = layers_seconds / pipelined;
          for (double* t :
               {&tb.dense_gemm_seconds, &tb.expert_gemm_seconds, &tb.attention_seconds,
                &tb.elementwise_seconds, &tb.untraced_seconds, &tb.compute_seconds,
                &tb.recompute_seconds,
                &tb.tp_seconds, &tb.cp_seconds, &tb.ep_seconds, &tb.exposed_comm_seconds,
                &tb.host_seconds, &tb.offload_seconds, &tb.exposed_offload_seconds}) {
            *t *= scale;
          }
        }
        e.slowest_stage_layers = longest->layers;
        e.slowest_stage_moe_layers = longest->moe;
        if (x.split.mtp_placed) e.slowest_stage_mtp_layers = static_cast<double>(longest->mtp);
      }
      if (last) {
        tb.dense_gemm_seconds += head_seconds;
        tb.compute_seconds += head_seconds;
        e.slowest_stage_holds_output_layer = true;
      }
      pipelined = longest_seconds;
    }
    tb.bubble_seconds =
        PipelineBubbleSeconds(l.pp, l.vpp, x.micro_batches, others_seconds / mb_);
  }
  e.step_seconds = pipelined + tb.bubble_seconds + tb.overhead_seconds;
  e.micro_batches = x.micro_batches;
  e.tokens_per_s_per_gpu = tokens_step_ / e.step_seconds / N_;
  e.model_flops_per_step = m.model_flops_per_token * tokens_step_;
  e.mfu = e.model_flops_per_step / (e.step_seconds * bf16_ * N_);
  e.mfu_causal = m.causal_model_flops_per_token * tokens_step_ / (e.step_seconds * bf16_ * N_);
  e.capacity_bytes = hw.hbm_gb * 1e9;
  e.host_capacity_bytes = hw.host_memory_gb * 1e9;
  e.fits = FitsDevice(e.memory, hw);
  if (drop != nullptr) e.dropped_fraction = LayoutDroppedFraction(m, l, job_, *drop);
  return e;
}

}  // namespace mosaic
