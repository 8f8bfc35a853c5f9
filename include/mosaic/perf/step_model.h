// The analytic model of one training step (docs/perf_model.md): for a model, a cluster, a layout
// and a job, the step time and its breakdown, tokens/s per GPU, MFU, peak memory per GPU and its
// breakdown, and the share of routed assignments dropped.
//
// Time (per GPU, the slowest pipeline stage: of the ranks SplitPipeline (layout.h) names, the
// one whose layers have the most forward FLOPs (layer_costs), of those the one holding the most
// MoE layers; its expert work, MoE blocks and dense FFNs are charged by the MoE and dense-FFN
// layers it holds, its attention by its layer passes, its activation widths at its own mix of
// layers. With pp > 1 rank 0, the costliest middle rank and the last rank
// (PipelineSplit::rank_loads) are each timed as the slowest rank's time less its MoE layers'
// fixed cost (their expert kernels' fixed cost, exposed all-to-all and expert-TP traffic and host
// syncs), scaled by the cost of the rank's layers, plus that fixed cost of each of the rank's
// own MoE layer passes; the last rank also runs the output layer's GEMM, forward and backward
// (2.4 layers' FLOPs for Qwen3-235B, 4.3 for gpt-oss-120b). The longest of them sets the step,
// with its layers (and the output layer) in the breakdown, and the bubble weighs the other ranks
// the same way; pp_last, pp_loss = 1 and a pp_layout's 'L' stage move layers off the last rank
// as Megatron-Core does):
//   compute   forward + backward = 3 × forward FLOPs (+1 forward of the layers for full
//             recompute, +1 attention forward for selective (core attention), +the MLA
//             up-projections for Megatron-Core's module recompute, +1 forward of the routed
//             experts (their GEMMs, dispatch, combine and host sync) for MoE recompute, + (loops −
//             S_last)/loops of a
//             forward of the layers for segmented backprop of a looped model, S_last the loops of
//             its last segment, which is not repeated), split
//             by kind: dense GEMMs, routed-expert GEMMs (rows = the tokens each expert sees per
//             micro-batch), attention scores (the causal count a flash kernel computes, at
//             attention_efficiency of the bf16 peak), memory-bound kernels (elementwise_passes
//             over each layer's activations at the HBM bandwidth, less the repeated forward,
//             kElementwiseRecomputePasses, without module, MoE or full recompute). A GEMM class
//             takes F/(peak·eff·s/(s + gemm_half_size)) + n_gemm·latency, s its smallest dimension
//             (Calculon's efficiency-vs-size curve); grouped expert GEMMs add the profile's
//             expert_group per local expert per kernel (+fp8_quantize in fp8 and MXFP8, each
//             expert's input quantized on its own), and a row-tiled grouped GEMM
//             (grouped_gemm_row_tile: megablox) GroupedGemmTileFactor times their FLOPs; fp8 GEMMs
//             run at
//             peak_bf16·(1 + fp8_gain·(peak_fp8/peak_bf16 − 1)) (peak_mxfp8 for mxfp8).
//             Attention with learned sinks in a stack without a fused kernel runs
//             unfused: full s×s scores per head as bf16 GEMMs over the head dimension plus
//             unfused_attention_passes of the score matrix through HBM. A model with sinks on a
//             stack that pays its untraced cost (untraced_sink_model_cost) adds
//             untraced_sink_model_seconds per token per layer pass (forward + backward; ×4/3
//             with full recompute).
//   comms     per collective: bytes per GPU / (bandwidth of the smallest domain holding the group
//             × link efficiency) + calls × latency. TP: 10 all-gather/reduce-scatter of the
//             micro-batch's activations per layer (sequence parallel, Megatron-Core: 2 AG + 2 RS
//             forward, the same backward, and in backward an all-gather of each column-parallel
//             linear's input, stored sharded over the sequence); etp: the same for the routed
//             experts' GEMMs over the etp group (an all-gather of the dispatched tokens and a
//             reduce-scatter of the expert outputs per pass, forward and backward). CP: the
//             ring of Megatron-Core's p2p context parallelism passes (cp − 1) KV blocks per layer
//             forward and the KV blocks and their gradients backward (3 volumes of KV; +1 with
//             full recompute) over the tp·cp span: at the scale-out bandwidth when the ring
//             crosses nodes (tp·cp > the scale-up domain). EP: 4 all-to-alls per MoE layer
//             (dispatch and combine, forward and backward) of tokens·width·bytes per copy
//             (width = latent_dim with LatentMoE; ×cf when buffers are padded), the copies per
//             token split by link as ExpertDispatchBytes below: inside one scale-up domain
//             k·(EP−1)/EP over NVLink; across domains the copies to other domains over the NIC,
//             once per remote domain with a hierarchical dispatcher (DeepEP; the layout's
//             `dispatch`, else the profile's hierarchical_dispatch), and the NVLink and
//             NIC parts at once. FSDP and DP rings across domains as RingSeconds below (each
//             member's NIC carries 1/m of the traffic). FSDP: weights
//             all-gathered in forward and backward and gradients reduce-scattered, per micro-batch,
//             (F−1)/F of the stage's shard; experts in moe_chunk sequential pieces. DP (ZeRO-1):
//             gradient reduce-scatter (fp32) + parameter all-gather once per step; hybrid
//             FSDP+DP: an all-reduce of each FSDP shard across DP. PP: activations between stages.
//             Each collective hides `overlap` of itself under compute (shared; the profile's
//             for the EP all-to-all, PerfProfile::overlap_ep, and for FSDP when it sets one).
//             The overlapped stretch lasts the longest of the hidden traffic on the scale-up
//             links, that on the NICs (the two run at once) and the compute slowed by
//             overlap_contention of the hidden communication beside it (the kernels that move it
//             hold SMs and HBM bandwidth), so exposed += max(max(hidden up, hidden out) −
//             compute, contention·min(hidden up + hidden out, compute)): hiding more never
//             lengthens the step.
//             With a2a_overlap (Megatron-Core's merged forward and backward of two micro-batches)
//             the EP all-to-all of the paired passes (A2aOverlapPairedShare) hides 0.95, the most
//             a schedule hides; the warm-up and cool-down passes keep the profile's overlap_ep.
//   host      stacks whose MoE layer syncs the host on the token counts (moe_host_sync) wait
//             moe_sync per MoE layer pass per micro-batch (×4/3 with full or MoE recompute).
//   bubble    PipelineBubbleSeconds below with t̄ = the pipelined time (compute + exposed comms +
//             host) / m scaled to the mean layer passes of the other pp − 1 ranks: (pp − 1)·t̄/vpp
//             for 1F1B with vpp virtual stages when m >= pp (fill and drain run the other ranks'
//             chunks; with even stages t̄ = t).
//   overhead  step_overhead, fixed per step.
// Memory (per GPU, the peak pipeline stage: stage i of 1F1B holds min(m, pp − i) micro-batches;
// the first stage (with the embedding), the first rank holding the most layers (of those, the
// most MoE layers) and the last stage (with the output layer) are compared, per SplitPipeline's
// layer counts; each holds the parameters of its own layers, dense FFNs and MoE blocks by kind):
//   weights (bf16) 2 B, gradients and optimizer states per the profile (Megatron: fp32 main
//   gradients 4 B, Adam's fp32 master + 2 moments 12 B) per parameter; non-expert parameters split by tp·pp and, under FSDP, by fsdp (optimizer states by
//   dp·cp·fsdp under ZeRO-1); expert parameters split by pp·ep·etp and by their FSDP shard; FSDP
//   gather buffers (two layers, experts per moe_chunk); activations per layer by recompute policy
//   (Korthikanti et al. 2022 with flash attention, MoE terms sized by k·cf) × layers held × in-flight
//   micro-batches (min(m, pp), × (1 + (pp − 1)/(pp·vpp)) with interleaving and m > pp: at m = pp
//   the interleaved warm-up already holds every chunk of every micro-batch; + 1/vpp with
//   a2a_overlap, whose warm-up runs one more chunk forward: Megatron-LM schedules.py); looped
//   models hold every loop of the graph unless backprop is segmented (one segment's loops, and
//   the input of each earlier segment, t·d bf16, for its forward repeated in the backward);
//   logits; all-to-all buffers; a reserve.
// MFU = model FLOPs / (time × peak_bf16 × GPUs), model FLOPs = 3 × CountFlops(kFullSquare) per
// token (the whole s×s attention square, as PaLM and Levanter count; recompute not counted);
// mfu_causal counts half the square of global layers (kCausal, as MaxText and Megatron-LM count).
// Compare a published MFU with the one of the same convention.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_config.h"
#include "mosaic/perf/dropping.h"
#include "mosaic/perf/layout.h"
#include "mosaic/perf/profile.h"

namespace mosaic {

enum class NumberFormat { kBf16, kFp8, kMxfp8 };
std::string_view ToString(NumberFormat format);  // "bf16", "fp8", "mxfp8"
std::optional<NumberFormat> NumberFormatFromString(std::string_view text);

// How routed tokens meet expert capacity.
//   kDropless       no capacity: nothing dropped, buffers sized by the real load (k·tokens)
//   kBalanced       benchmark routing forced to an even load (NVIDIA's published rows)
//   kCapacity       Megatron: capacity per expert per EP rank ceil(T·k·cf/E), padded buffers
//   kFixedCells     Marin EP "fixed all-to-all": each (sender shard, expert) cell holds
//                   ceil(cf·T·k/E) rows, padded; idle cells cannot lend rows
// With FSDP-sharded experts and moe_chunk = C > 1 under a capping policy (capacity,
// fixed-cells), each chunk of E/C experts pools its capacity, cf times its fair share (Marin's FSDP
// moe_chunk ran at cf 1.0 per chunk); under dropless and balanced routing the chunks only
// schedule the expert-weight gathers and nothing is dropped.
enum class RoutingPolicy { kDropless, kBalanced, kCapacity, kFixedCells };
std::string_view ToString(RoutingPolicy policy);  // "dropless", "balanced", "capacity", "fixed-cells"
std::optional<RoutingPolicy> RoutingPolicyFromString(std::string_view text);
// Whether a policy caps expert rows at a capacity factor (capacity, fixed-cells); dropless and
// balanced routing cap nothing.
bool CapsTokens(RoutingPolicy policy);

// The work a row-tiled grouped GEMM does for a rank's local experts over the work of their rows
// (>= 1): `local_experts` groups of `rows_per_expert` rows laid one after another, computed in
// tiles of `row_tile` rows, of which a tile an expert's rows start inside is computed once more
// for that expert (PerfProfile::grouped_gemm_row_tile; megablox's make_group_metadata). Dropless
// routing's experts receive unequal rows, so every expert but the first starts inside a tile;
// balanced, capacity and fixed-cells experts start at multiples of rows_per_expert, inside a tile
// unless that multiple is one of row_tile (rows_per_expert rounded to whole rows). 1 for a
// row_tile of 0 or a single local expert.
double GroupedGemmTileFactor(double rows_per_expert, double local_experts, double row_tile,
                             RoutingPolicy routing);

struct PerfJob {
  int64_t global_batch = 0;       // sequences per step
  int64_t seq_len = 0;            // tokens per sequence
  NumberFormat format = NumberFormat::kBf16;
  RoutingPolicy routing = RoutingPolicy::kDropless;
  double capacity_factor = 1.0;   // used by kCapacity and kFixedCells
  int64_t bp_segment_loops = 0;   // looped models: loops per backprop segment; 0 = one graph
  // kCapacity: whether each expert's input is padded to its capacity (Megatron-Core's
  // --moe-pad-expert-input-to-capacity; static shapes, as MaxText's dropping has), so that every
  // expert computes and sends cf × its fair share. Without it (Megatron-Core's default) an expert
  // computes the tokens it keeps: min(cf, 1) × its fair share, the load charged as balanced, as
  // dropless routing's is. kFixedCells is always padded (fixed all-to-all cells).
  bool pad_to_capacity = true;
};

// The activations of one layer that depend on its kind (dense FFN or MoE), beside the attention
// block's (ModelShape): bf16 bytes per token or per routed (token, expert) assignment, after
// Korthikanti et al. (arXiv 2205.05198) with flash attention.
struct LayerActivations {
  double mlp_act_bytes_per_token = 0;          // norms, dense FFN or shared experts and router
  double expert_act_bytes_per_assignment = 0;  // per routed (token, expert) pair
  // Of those, the dispatched token that the expert's fc1 keeps as its input: what expert tensor
  // parallelism multiplies (each of the etp ranks keeps every token the group all-gathers, and
  // computes expert_width / etp of it, so the rest of the pair's bytes is split among them).
  double routed_input_bytes_per_assignment = 0;
  double selective_saved_bytes_per_token = 0;  // what module recompute frees per layer
  // What recomputing the norms and the whole MoE layer (Recompute::kMoe) frees per token and
  // layer beside the expert activations: both norm outputs and the MoE layer's own activations
  // (router logits, shared experts, latent projections), its input kept.
  double moe_recompute_saved_bytes_per_token = 0;
  // Width (elements) of the activations each token carries through one layer: the residual
  // stream, attention q/k/v and output, FFN and shared experts, and per routed assignment the
  // dispatched token and the expert's hidden; memory-bound kernels touch these.
  double elementwise_width_per_token = 0;
  double elementwise_width_per_assignment = 0;
  // With fp8 GEMMs (Transformer Engine) the saved inputs of each GEMM are its fp8 copies, one
  // byte instead of two: the bytes this frees per token per layer, and per routed assignment.
  double fp8_saved_bytes_per_token = 0;
  double fp8_saved_bytes_per_assignment = 0;
  // The saved input of each module of fine-grained activation offloading (Layout::
  // offload_modules, kOffloadModuleNames order), bf16 bytes per layer pass: per token for the
  // attention modules and mlp_norm, per routed assignment for expert_fc1 and moe_act. The GEMM
  // inputs among them (qkv_linear, attn_proj, expert_fc1) are stored in fp8, half these bytes,
  // under fp8 formats.
  std::array<double, 7> offload_module_bytes{};
};

// Model quantities the step model needs, computed once per (model, seq_len) so that evaluating a
// layout is a few hundred floating-point operations.
struct ModelShape {
  ModelConfig config;
  int64_t seq_len = 0;
  // Parameters.
  double expert_params = 0;        // routed experts (and their biases), all layers
  double layer_params = 0;         // every other parameter of the layer stack
  double embedding_params = 0;     // embedding + lm_head
  // Of those, what only some layers hold, so that a pipeline stage is charged the layers it
  // holds (models mixing dense-FFN and MoE layers: dense_layers, interleave_moe_layer_step): the
  // trunk's dense FFNs (part of layer_params), its MoE layers' routers, shared experts and
  // latent projections (part of layer_params), and its routed experts (part of expert_params).
  double dense_ffn_params = 0;
  double moe_block_params = 0;
  double trunk_expert_params = 0;
  // Forward FLOPs per token (kFullSquare at seq_len).
  // The trunk's parts (expert, attention kernel, dense) cover its layers × loops; the MTP modules'
  // parts are apart, so that a pipeline stage is charged the modules it holds (DeriveLayout's
  // mtp_share). forward = trunk parts + MTP parts + the trunk's head + the non-causal score half.
  double forward_flops_per_token = 0;
  double expert_flops_per_token = 0;     // the trunk's routed experts, all layers and loops
  double attention_score_flops_per_token = 0;  // every score FLOP (full square), MTP included
  // What a causal flash-attention kernel computes: the score FLOPs under FlopConvention::kCausal
  // (the blocks above the diagonal are skipped, so about half the square of a global layer;
  // FlashAttention-2, arXiv 2307.08691 section 3.1.1). Attention time is charged on these.
  double attention_kernel_flops_per_token = 0;  // the trunk's
  double head_flops_per_token = 0;       // the trunk's lm_head (2·d·V)
  double dense_flops_per_token = 0;      // the rest of the trunk's layer stack
  // Of dense_flops_per_token, the trunk's dense FFNs, and its MoE layers' shared experts,
  // routers and latent projections.
  double dense_ffn_flops_per_token = 0;
  double moe_block_flops_per_token = 0;
  // Forward FLOPs per token of one trunk layer pass of each kind (the attention's at the mean of
  // the layers), and one MTP layer's (its projection and block: the MTP modules' FLOPs over
  // their count, less its pass through the output layer, which LayoutStep::Evaluate charges with
  // the output layer's): what ranks the pipeline stages (SplitPipeline's LayerCosts).
  double dense_layer_flops_per_token = 0;
  double moe_layer_flops_per_token = 0;
  LayerCosts layer_costs() const {
    const double mtp_layers = static_cast<double>(config.mtp_layers);
    return {dense_layer_flops_per_token, moe_layer_flops_per_token,
            mtp_layers > 0 ? (mtp_expert_flops_per_token + mtp_attention_kernel_flops_per_token +
                              mtp_dense_flops_per_token) /
                                     mtp_layers -
                                 head_flops_per_token
                           : moe_layer_flops_per_token};
  }
  // All MTP modules together (DeepSeek-V3, arXiv 2412.19437 section 2.2): routed experts; the
  // causal attention kernel; the rest (projection, attention projections, shared experts, router
  // and the logits over the shared head). 0 without MTP.
  double mtp_expert_flops_per_token = 0;
  double mtp_attention_kernel_flops_per_token = 0;
  double mtp_dense_flops_per_token = 0;
  double model_flops_per_token = 0;      // 3 × forward: the MFU numerator per token
  double causal_model_flops_per_token = 0;  // the same under FlopConvention::kCausal
  // Shapes.
  int64_t layer_passes = 0;        // layers × loops
  int64_t moe_layer_passes = 0;    // MoE layers × loops
  double routed_width = 0;         // all-to-all payload width (latent_dim or d_model)
  double q_dim = 0, kv_dim = 0;    // query and key/value widths (mean KV over layers)
  double attention_act_bytes_per_token = 0;  // stored activations per layer, no recompute
  // What core-attention recompute (Recompute::kSelective) frees per layer: with flash attention
  // only the softmax statistics (fp32 log-sum-exp per head), as the output feeds the projection
  // and q, k, v are the recompute's inputs. Megatron measured 25.52 → 24.94 GB for it.
  double core_attention_saved_bytes_per_token = 0;
  // Forward FLOPs per token that module recompute repeats (Megatron-Core's module recompute:
  // norms, activation functions and, with MLA, the up-projections of the latent q and kv).
  double selective_recompute_flops_per_token = 0;
  // The rest of a layer's activations, as a dense-FFN layer holds them and as a MoE layer does
  // (the same for a model of one kind): a pipeline stage holds its own mix (LayerField).
  LayerActivations dense_layer;
  LayerActivations moe_layer;

  // One field of the activations per layer of a layer stack whose layers are `moe_share` MoE
  // layers (the rest dense-FFN layers): dense_layer's at 0, moe_layer's at 1, and between them
  // their weighted mean.
  double LayerField(double moe_share, double LayerActivations::*field) const {
    if (moe_share <= 0) return dense_layer.*field;
    if (moe_share >= 1) return moe_layer.*field;
    return dense_layer.*field + moe_share * (moe_layer.*field - dense_layer.*field);
  }
};

// Throws InputError when the model fails Validate or seq_len < 1.
ModelShape MakeModelShape(const ModelConfig& config, int64_t seq_len);

struct StepBreakdown {
  double compute_seconds = 0;
  double dense_gemm_seconds = 0;
  double expert_gemm_seconds = 0;
  double attention_seconds = 0;
  double elementwise_seconds = 0;  // memory-bound kernels at the HBM bandwidth
  double recompute_seconds = 0;    // included in compute_seconds
  // A sink model's untraced per-token cost (PerfProfile::untraced_sink_model_cost), included in
  // compute_seconds.
  double untraced_seconds = 0;
  // With pp > 1: the output layer's GEMMs (forward and backward) on the last rank, included in
  // dense_gemm_seconds when that rank sets the step, else in the bubble's other ranks' time; 0
  // with pp = 1, where the output layer is among the stage's dense GEMMs.
  double output_layer_seconds = 0;
  // Each collective's time before overlap, and what of it is exposed.
  double tp_seconds = 0, cp_seconds = 0, ep_seconds = 0, fsdp_seconds = 0, dp_seconds = 0,
         pp_seconds = 0;
  double exposed_comm_seconds = 0;
  double host_seconds = 0;      // host issue time the GPU waits for (MoE token-count syncs)
  // Activation offload (Layout::offload_layers): the copies to host memory and back before
  // overlap, and what of them the compute does not hide.
  double offload_seconds = 0;
  double exposed_offload_seconds = 0;
  double bubble_seconds = 0;
  double overhead_seconds = 0;  // fixed per step
};

struct MemoryBreakdown {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double gather_buffer_bytes = 0;
  double activation_bytes = 0;
  double logits_bytes = 0;
  double dispatch_bytes = 0;
  double reserve_bytes = 0;
  double peak_bytes = 0;  // the HBM's: everything above
  // Activation offload (Layout::offload_layers): the most activations any pipeline stage holds
  // in host memory (not part of peak_bytes), and the most bytes one micro-batch copies to host
  // memory (and back) through any stage's offloaded layers.
  double host_activation_bytes = 0;
  double offload_bytes_per_micro_batch = 0;
  // Of offload_bytes_per_micro_batch, the bytes copied out during the backward: the segments of
  // a looped model whose forward segmented backprop repeats there offload again (0 without).
  double offload_recomputed_bytes_per_micro_batch = 0;
  // The pipeline rank holding this peak (0-based), and its decoder layer passes and MoE ones.
  int64_t peak_stage_rank = 0;
  int64_t peak_stage_layers = 0;
  int64_t peak_stage_moe_layers = 0;
};

struct StepEstimate {
  double step_seconds = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;                      // fraction, full-square FLOPs (kFullSquare)
  double mfu_causal = 0;               // fraction, causal FLOPs (kCausal)
  double model_flops_per_step = 0;     // full-square
  int64_t micro_batches = 0;           // per pipeline per step
  // The slowest pipeline rank's decoder layer passes, and of those the MoE ones.
  int64_t slowest_stage_layers = 0;
  int64_t slowest_stage_moe_layers = 0;
  // Its MTP layers: those placed on it (by pp_layout, else all on rank pp−1); with pp = 1, all.
  double slowest_stage_mtp_layers = 0;
  // Whether it is the last rank, charged the output layer (lm_head) besides its layers.
  bool slowest_stage_holds_output_layer = false;
  StepBreakdown time;
  MemoryBreakdown memory;
  double capacity_bytes = 0;           // the device's HBM
  double host_capacity_bytes = 0;      // the device's host memory (0: not given)
  bool fits = false;                   // FitsDevice
  double dropped_fraction = 0;         // share of routed assignments dropped
};

// What the step and memory models derive from a layout and job before anything that depends on
// the layout's recompute policy (which none of it does): a search that evaluates one layout under
// several policies derives it once.
struct StageCompositions;

struct LayoutDerivation {
  double tokens_mb_rank = 0;      // tokens of one micro-batch on one rank after cp and tp splits
  double tokens_mb_seq = 0;       // tokens of one micro-batch on one cp rank (before the tp split)
  int64_t micro_batches = 0;      // per pipeline per step
  PipelineSplit split;            // layer passes per pipeline rank
  int64_t layers_stage = 0;       // layer passes on the slowest rank
  // Of those, the MoE layer passes (SplitPipeline's count for that rank).
  int64_t moe_layers_stage = 0;
  bool head_on_stage = false;     // the output layer is on the one stage (pp = 1)
  double other_load_ratio = 0;    // mean load of the other ranks / the slowest rank's (bubble)
  double segment_recompute = 0;   // forwards of the layer stack repeated by segmented backprop
  double stage_share = 0;         // layers_stage / layer_passes
  // The slowest rank's share of the MoE layer passes and of the dense-FFN layer passes (0 for a
  // kind the model has none of): what its expert, MoE-block and dense-FFN work is charged.
  double moe_stage_share = 0;
  double dense_stage_share = 0;
  // Multi-token-prediction layers charged to the slowest rank, spread like their FLOPs: the
  // stage's share of mtp_layers, and of those with the routed MoE.
  double mtp_layers_stage = 0;
  double mtp_moe_layers_stage = 0;
  double mtp_share = 0;           // mtp_layers_stage / mtp_layers: the rank's share of MTP FLOPs
  double pad = 1;                 // expert buffer padding (cf when padded, else 1)
  double expert_fsdp = 1;         // FSDP shard count of expert weights
  // ComposeStages(model, job, split, pp) when the caller keeps it (a search, once per split; it
  // must outlive the derivation's LayoutMemory); nullptr: LayoutMemory composes the stages.
  const StageCompositions* compositions = nullptr;
};

// The derivation of `layout` (which must pass CheckLayout) for `job`.
LayoutDerivation DeriveLayout(const ModelShape& model, const Layout& layout, const PerfJob& job);
// The same with the layout's SplitPipeline(layout, model.config) given (a search computes it once
// per pp and vpp).
LayoutDerivation DeriveLayout(const ModelShape& model, const Layout& layout, const PerfJob& job,
                              const PipelineSplit& split);

// Evaluates `layout`, which must pass CheckLayout. The dropped fraction uses `drop` (usually
// DefaultDropParams()); nullptr leaves it 0 (it does not change the step time).
StepEstimate EvaluateStep(const ModelShape& model, const Cluster& cluster, const Layout& layout,
                          const PerfJob& job, const SharedPerfParams& shared,
                          const PerfProfile& profile, const DropParams* drop);
// The same with the memory already estimated: `memory` is EstimateMemory's result for the same
// model, layout, job and profile (the search has it); nullptr estimates it.
StepEstimate EvaluateStep(const ModelShape& model, const Cluster& cluster, const Layout& layout,
                          const PerfJob& job, const SharedPerfParams& shared,
                          const PerfProfile& profile, const DropParams* drop,
                          const MemoryBreakdown* memory);

// The step model of one layout under each recompute policy, what does not depend on the policy
// (the derivation, GEMM efficiencies, each collective's time per call, the FSDP, data-parallel
// and pipeline traffic) computed once: Evaluate(r, memory, drop) is EvaluateStep of the layout
// with recompute r, to the bit. The model, cluster, job, shared parameters, profile and
// derivation must outlive it.
class LayoutStep {
 public:
  LayoutStep(const ModelShape& model, const Cluster& cluster, const Layout& layout,
             const PerfJob& job, const SharedPerfParams& shared, const PerfProfile& profile,
             const LayoutDerivation& derived);
  // `memory`: LayoutMemory's For(recompute), or nullptr to compute it.
  StepEstimate Evaluate(Recompute recompute, const MemoryBreakdown* memory,
                        const DropParams* drop) const;
  // The same layout with Megatron-Core's EP all-to-all overlap (a2a_overlap = 1), which changes
  // only the share of the all-to-all hidden: to the bit what the constructor gives for it.
  LayoutStep WithA2aOverlap() const;

 private:
  // The share of the EP all-to-all hidden under compute: the profile's, or with a2a_overlap the
  // paired passes' (A2aOverlapPairedShare).
  double EpOverlapShare() const;

  // The collectives, in the order of the per-collective arrays below and in Evaluate.
  enum Collective { kTp, kCp, kEp, kFsdp, kDp, kPp, kCollectives };

  const ModelShape& m_;
  const Cluster& cluster_;
  Layout l_;
  const PerfJob& job_;
  const SharedPerfParams& sh_;
  const PerfProfile& profile_;
  const LayoutDerivation& x_;
  double N_ = 0, tokens_step_ = 0, mb_ = 0, bf16_ = 0, gemm_peak_ = 0, stage_tokens_ = 0;
  double dense_gemm_size_ = 0, dense_rate_ = 0;  // rate: FLOP/s at the GEMM's efficiency
  // With pp > 1: the last rank's output-layer GEMMs, forward and backward (Evaluate).
  double output_layer_seconds_ = 0;
  double layers_stage_moe_ = 0, expert_rate_ = 0, expert_kernel_seconds_ = 0;
  double expert_tile_factor_ = 1;  // GroupedGemmTileFactor of the rank's expert GEMMs
  double sinks_rate_ = 0, elementwise_bytes_ = 0, layers_stage_ = 0;
  double tp_call_seconds_ = 0, etp_call_seconds_ = 0, cp_call_seconds_ = 0, ep_call_seconds_ = 0;
  double fsdp_seconds_ = 0, dp_seconds_ = 0, pp_seconds_ = 0;
  double overlap_ep_ = 0;    // share of the EP all-to-all hidden under compute
  double overlap_fsdp_ = 0;  // share of the FSDP gathers and reduce-scatters hidden
  // Whether each collective crosses the scale-out network; the others run over the scale-up links.
  bool scale_out_[kCollectives] = {};
};

// The share of a rank's micro-batch passes that Megatron-Core's EP all-to-all overlap can pair
// (the forward of one micro-batch merged with the backward of another): all but the forward-only
// warm-up and backward-only cool-down passes of the pipeline schedule. With the interleaved
// schedule the first rank warms up with (pp − 1)·2 + (vpp − 1)·pp virtual-chunk forwards of its
// micro_batches·vpp (megatron/core/pipeline_parallel/schedules.py,
// get_pp_rank_microbatches); without a pipeline the first forward and the last backward run
// alone: (micro_batches − 1) / micro_batches. 0 when nothing pairs.
double A2aOverlapPairedShare(int64_t pp, int64_t vpp, int64_t micro_batches);

// Idle time of a pipeline per step under 1F1B with `vpp` virtual stages per rank, `micro_batches`
// (m) micro-batches per pipeline and `t` the time of one micro-batch through one rank's layers
// (all its virtual chunks):
//   m >= pp:  (pp − 1)·t/vpp  (Narayanan et al. 2021, arXiv 2104.04473, section 2.2.1)
//   m <  pp:  (pp − m)·t + (m − 1)·t/vpp  (a simulation of the interleaved schedule: the ranks
//             wait for a micro-batch the pipeline does not have; (pp − 1)·t at m = 1, and
//             (pp − 1)·t at vpp = 1 for any m)
// Megatron-Core refuses interleaving unless m is a multiple of pp (CheckLayout), so m < pp with
// vpp > 1 reaches this only through a direct call.
double PipelineBubbleSeconds(int64_t pp, int64_t vpp, int64_t micro_batches, double t);

// Expected number of scale-up domains, other than the sender's, that one token's top_k distinct
// experts fall in when the experts are spread evenly over `domains` domains and routing is
// uniform (forced balance; a real router's locality only lowers it):
//   (domains − 1)·(1 − C(E − E/domains, k) / C(E, k)).
// 0 for one domain. Qwen3-235B (E = 128, k = 8) over 4 domains: 2.72, not the 6 remote copies
// of a flat all-to-all. DeepSeek-V3 bounds it by node-limited routing (M = 4 nodes,
// arXiv 2412.19437 section 2.1.2); mosaic's uniform count is the upper end.
double RemoteDomainsPerToken(int64_t experts, int64_t top_k, int64_t domains);

// The copies of each routed token one expert-parallel all-to-all moves per GPU, by link.
struct ExpertDispatchTraffic {
  double scale_up_copies_per_token = 0;   // over NVLink (or the device's scale-up links)
  double scale_out_copies_per_token = 0;  // over the NIC
};

// Seconds of a ring collective (all-gather, reduce-scatter, all-reduce) that moves `bytes` per GPU
// over a group of `size` GPUs `stride` ranks apart which spans several scale-up domains of
// `domain_gpus`: with m = domain_gpus / stride members in each domain (1 <= m <= size), NCCL
// runs m rings that each enter and leave a domain through another member's NIC (NCCL
// src/graph/connect.cc, ncclTopoPreset: each channel's ring has its own receiving and sending
// GPU per node), so a GPU sends 1/m of its traffic over its NIC and the rest over the scale-up
// links, at once: max(bytes / m / out, bytes·(m − 1)/m / up), bandwidths per GPU in bytes/s
// (link efficiencies applied). m = 1 (one member per domain) is the flat ring at NIC speed. A
// group that fills its last domain only partly (9 GPUs on nodes of 8) is bound by that domain:
// m is then its member count, size mod (domain_gpus / stride), since every ring passes through
// its GPUs' NICs.
double RingSeconds(double bytes, int64_t size, int64_t stride, int64_t domain_gpus,
                   double scale_up_bytes_per_s, double scale_out_bytes_per_s);

// NCCL's latency of one step of a ring over the network (Simple protocol: its default tuner
// constants, hwLatencies[NET][Ring][Simple], src/graph/tuning.cc), in seconds.
inline constexpr double kNetRingStepSeconds = 14e-6;

// Latency of one ring reduce-scatter or all-gather call over a group of `size` ranks `stride`
// apart on domains of `domain_gpus`: the call's fixed latency `call_seconds` plus one network step
// (kNetRingStepSeconds) per domain boundary the ring crosses, (domains − 1) with domains = size / m
// and m = clamp(domain_gpus / stride, 1, size) members in each (NCCL src/graph/tuning.cc: a ring's
// nNodes − 1 inter-node steps at the network latency; its steps inside a node are left in
// `call_seconds`). A group inside one domain pays `call_seconds`; a data-parallel ring over 2048
// nodes pays 29 ms a call, which the flat latency hid.
double RingLatencySeconds(int64_t size, int64_t stride, int64_t domain_gpus, double call_seconds);

// The all-to-all of an EP group of ep·etp ranks (consecutive ranks, Megatron-Core's expert rank
// order) on a device with `domain_gpus` GPUs per scale-up domain:
//   inside one domain      k·(ep − 1)/ep copies over NVLink, none over the NIC;
//   over n > 1 domains, flat (NCCL all-to-all: each copy straight to its rank)
//                          k·(n − 1)/n copies over the NIC, k·(ep/n − 1)/ep over NVLink;
//   hierarchical (`hierarchical`: DeepEP's internode kernels, Megatron-Core's flex dispatcher
//   with DeepEP or HybridEP; github.com/deepseek-ai/DeepEP, arXiv 2412.19437 section 3.2.2)
//                          RemoteDomainsPerToken copies over the NIC (one per remote domain, to
//                          the rank of the same local index), and over NVLink the local copies
//                          plus the forwarding of the k·(n − 1)/n that arrive.
ExpertDispatchTraffic ExpertDispatchBytes(int64_t experts, int64_t top_k, int64_t ep, int64_t etp,
                                          int64_t domain_gpus, bool hierarchical);

// Whether `memory` fits the device: its peak within the HBM and, with activation offload, the
// activations held on the host within host_memory_gb.
bool FitsDevice(const MemoryBreakdown& memory, const HardwareSpec& device);

// Only the memory part of EvaluateStep (for the search's early rejection). With activation
// offload (Layout::offload_layers = N), each micro-batch in flight keeps min(N, the stage's
// layers) layers' activations in host memory, and the HBM holds the others plus one offloaded
// layer's in transit (Transformer Engine double-buffers each offloaded layer's copy).
MemoryBreakdown EstimateMemory(const ModelShape& model, const Cluster& cluster,
                               const Layout& layout, const PerfJob& job,
                               const PerfProfile& profile);

// The fine-grained offload modules (OffloadModule bits) whose saved input `recompute` keeps, and
// so which offload_modules can move: module recompute (layernorm) and MoE-layer recompute
// (layernorm, moe) recompute the norms' outputs, qkv_linear's input; module recompute with MLA
// the expanded q, k and v (mla_up_proj), core_attn's input; MoE-layer recompute keeps none of
// the experts' inputs; full recompute keeps only the layer input, of no module.
uint32_t ModulesWithStoredInput(Recompute recompute, bool mla);

// Segmented backprop of a looped model (PerfJob::bp_segment_loops): segments of `loops` loops
// each but the last, which holds the rest; segments = 1 when the job runs all loops in one graph.
struct BackpropSegments {
  int64_t segments = 1;
  int64_t loops = 0;       // per segment but the last
  int64_t last_loops = 0;  // in the last segment
};

// What a pipeline stage's memory takes from its layers alone — its layer mix, not the layout's
// degrees: held layers, the MoE share of their activations and the per-token and per-assignment
// bytes at that mix (ModelShape::LayerField), its parameters before sharding (StageLayerParams
// by kind) and its largest layer's (what FSDP gathers). ComposeStages computes them for the ranks
// LayoutMemory compares; a search computes them once per pipeline split (LayoutDerivation::
// compositions) and every layout of that split reuses them.
struct StageComposition {
  int64_t rank = 0;              // the pipeline rank (0-based)
  int64_t layers = 0, moe_layers = 0;
  BackpropSegments segments;     // the job's segmented backprop
  double mtp_held = 0;           // MTP layers whose activations it holds
  double segment_layers = 0;     // decoder layer passes of one backprop segment
  double held_layers = 0;        // segment_layers + mtp_held
  // Decoder layer passes of the last segment's loops, of every loop, and of the loops the
  // backward repeats (segmented backprop).
  double last_segment_layers = 0, all_loops_layers = 0, repeated_loops_layers = 0;
  double moe_share = 0;          // the MoE share of the held layers
  // LayerActivations' fields at moe_share.
  double selective_saved_bytes_per_token = 0, moe_recompute_saved_bytes_per_token = 0;
  double routed_input_bytes_per_assignment = 0, expert_act_bytes_per_assignment = 0;
  double fp8_saved_bytes_per_assignment = 0, mlp_act_bytes_per_token = 0;
  double fp8_saved_bytes_per_token = 0;
  bool holds_moe_layers = false;  // a MoE decoder or MTP layer: expert gathers, dispatch buffers
  double dense_params = 0, expert_params = 0;  // its layers' parameters (no embedding)
  double largest_layer_params = 0;
};

// The ranks LayoutMemory compares for `split` of `pp` stages: rank 0, the peak candidates and
// (pp > 1) the last, in that order.
struct StageCompositions {
  std::array<StageComposition, PipelineSplit::kMaxPeakCandidates + 2> ranks{};
  int count = 0;
};

// The composition of a stage holding `layers` decoder layer passes (`moe_layers` of them MoE)
// and, when they are placed (`mtp_placed`: by pp_layout, else on rank pp−1), `mtp_layers` MTP
// layers (else, with pp = 1, the stage's share of the model's: all of them), under the job's segmented backprop. Counts are
// layer passes, parameters are counts of weights, bytes are per token or per routed assignment
// of one layer at the stage's MoE share (ModelShape::LayerField over LayerActivations: after
// Korthikanti et al., arXiv 2205.05198, with flash attention). `rank` is left 0. The model must
// pass Validate and the counts lie within its layer passes; nothing is thrown.
StageComposition ComposeStage(const ModelShape& model, const PerfJob& job, bool mtp_placed,
                              int64_t layers, int64_t moe_layers, int64_t mtp_layers);
// ComposeStage for each rank LayoutMemory compares in `split` of `pp` stages (StageCompositions),
// each with its rank.
StageCompositions ComposeStages(const ModelShape& model, const PerfJob& job,
                                const PipelineSplit& split, int64_t pp);

// One pipeline stage's memory apart from its activations, and what its activations scale with
// (the part of the memory model that does not depend on the recompute policy).

struct StageMemoryParts {
  MemoryBreakdown memory;       // all but activation_bytes and peak_bytes
  // The MoE share of the held layers, and what module and MoE recompute free of one of them at
  // that mix (ModelShape::LayerField).
  double moe_share = 0;
  double selective_saved_bytes_per_token = 0;
  double moe_recompute_saved_bytes_per_token = 0;
  // weights + gradients + optimizer + gather buffer bytes, added in MemoryBreakdown's order.
  double fixed_before_activations_bytes = 0;
  double per_layer_full = 0;    // bytes of one layer pass's activations for one micro-batch
  double held_layers = 0;       // layer passes whose activations are held
  // Segmented backprop: the input of each segment but the last (its residual stream, bf16), kept
  // for the backward to repeat that segment's forward; bytes per micro-batch (0 without).
  double segment_checkpoint_bytes = 0;
  double offloaded_layers = 0;  // of those, the ones held in host memory (offload_layers)
  double in_flight = 0;         // micro-batches in flight
  // Layer passes one micro-batch copies to host memory (and back): the offloaded layers of its
  // forward and, with segmented backprop, those of every segment whose forward the backward
  // repeats (recomputed_offloaded_layers of them, copied out during the backward).
  double offloaded_passes = 0;
  double recomputed_offloaded_layers = 0;
  // Fine-grained offload (Layout::offload_modules; 0: none): the modules, the routed
  // assignments per token (top_k × capacity padding), the layer passes one micro-batch copies
  // out (and back), and of those the ones segmented backprop copies out again in the backward.
  uint32_t offload_modules = 0;
  double module_offload_assignments = 0;
  // Routed activations of one layer pass per token on this rank (all routed pairs, expert tensor
  // parallelism's gathered inputs included, less what fp8 saves): what MoE-layer recompute frees
  // beside moe_recompute_saved_bytes_per_token.
  double routed_bytes_per_token = 0;
  double etp = 1;  // copies of each dispatched token a rank keeps (expert tensor parallelism)
  double module_offload_passes = 0;
  double module_recomputed_passes = 0;
};

// The memory of a layout under each recompute policy, the stages' parts that do not depend on it
// computed once: For(r) is EstimateMemory of the layout with recompute r, to the bit. The model,
// job, profile and derivation must outlive it.
class LayoutMemory {
 public:
  LayoutMemory(const ModelShape& model, const Layout& layout, const PerfJob& job,
               const PerfProfile& profile, const LayoutDerivation& derived);
  MemoryBreakdown For(Recompute recompute) const;
  // The memory of the same layout with Megatron-Core's EP all-to-all overlap (a2a_overlap = 1),
  // which holds one model chunk more in flight on every stage of an interleaved pipeline with more
  // micro-batches than stages: to the bit what the constructor gives for it.
  LayoutMemory WithA2aOverlap() const;

 private:
  // Whether the last stage (stages_[computed_count_ − 1]) can hold the peak: see the
  // constructor.
  bool LastStageCanPeak() const;
  // Whether a layer of stage `a` can hold more bytes than one of stage `b` under some recompute
  // policy (their mixes of MoE and dense layers differ).
  bool LayerCanHoldMore(const StageMemoryParts& a, const StageMemoryParts& b) const;
  // Whether a last stage apart from the first was computed (pp > 1: every pipeline computes
  // its first and last stages, one more only between them).
  bool HasLastStage() const { return computed_count_ > 1; }

  const ModelShape& model_;
  const PerfJob& job_;
  const PerfProfile& profile_;
  const LayoutDerivation& derivation_;
  // The first stage, a middle one that holds more layers, and (pp > 1) the last: computed_count_
  // of them, of which the first stage_count_ can hold the peak (all but a last stage that
  // cannot).
  StageMemoryParts stages_[PipelineSplit::kMaxPeakCandidates + 2];
  int computed_count_ = 0, stage_count_ = 0;
  double overlap_extra_in_flight_ = 0;   // what WithA2aOverlap adds to in_flight (0: nothing)
};

// The dropped share of routed assignments for the layout and job (0 when nothing can drop).
double LayoutDroppedFraction(const ModelShape& model, const Layout& layout, const PerfJob& job,
                             const DropParams& drop);

}  // namespace mosaic
