// Efficiency profiles: the parameters of the step model that belong to a (hardware, software stack)
// pair and are calibrated, not assumed (docs/perf_model.md: the same layout on the same GB200 went
// from 494 to 970 TFLOP/s/GPU with software work). Parameters where the physics is shared across
// profiles (kernel latency, overlap fractions, link efficiency) are one value for all of them; each
// profile has its own peak GEMM efficiency and memory habits. Shipped in data/perf/profiles.toml,
// fitted by `mosaic perf calibrate` on the published rows (tests/fixtures/throughput).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mosaic {

// The most of a collective any schedule hides: the first and last layer's collectives have
// nothing to hide under. The bound of the fitted overlap fractions and the share Megatron-Core's
// paired all-to-all passes hide (step_model.h, a2a_overlap).
inline constexpr double kMaxOverlapShare = 0.95;

// The most of the EP all-to-all an eager stack hides without paired passes (PerfProfile::
// overlap_ep with moe_host_sync): dispatch, expert GEMMs and combine run in program order, each
// waiting for the one before, so only the shared experts' GEMMs (where overlapped) run beside it.
inline constexpr double kMaxEagerEpOverlapShare = 0.1;

// A profile share that the profile file leaves out, so that the shared value applies (a share
// read from a file is >= 0).
inline constexpr double kUnsetShare = -1;

// Of SharedPerfParams::elementwise_passes, the forward read and write that recompute repeats
// (module, MoE-layer and full recompute run the norms and activation functions again); a layout
// without such recompute runs the other passes only.
inline constexpr double kElementwiseRecomputePasses = 2;

// Shared by every profile.
struct SharedPerfParams {
  // A GEMM kernel's launch, prologue and tail: 2-10 µs end to end for small cuBLAS/CUTLASS
  // kernels on Hopper and Blackwell.
  double gemm_latency_seconds = 5e-6;
  // A GEMM whose smallest dimension is s runs at eff·s/(s + gemm_half_size): a Calculon-style
  // efficiency-vs-size curve (tile quantisation, waves). bf16 GEMMs with one side of 128 rows
  // (one tile) reach 55-65% of the large-GEMM rate on H100 and B200: a half size of about 64-128.
  double gemm_half_size = 128;
  // Memory-bound kernels (norms, SwiGLU, router, permute/unpermute, fp8 casts, residual adds):
  // bf16 reads and writes of each layer's activations per token at the HBM bandwidth. Forward
  // reads and writes once (2), backward reads input and output gradient and writes the input
  // gradient (3), module recompute repeats the forward (2), fp8 casts read and write (2): 9;
  // without module, MoE-layer or full recompute, 7 (kElementwiseRecomputePasses).
  double elementwise_passes = 9;
  double attention_efficiency = 0.45;       // causal flash-attention kernel FLOPs (the causal
                                            // count: blocks above the diagonal skipped) per bf16
                                            // peak, forward and backward together
  double fp8_gain = 0.6;                    // share of the fp8 peak's extra speed that GEMMs realise
  double scale_up_efficiency = 0.7;         // achieved / nominal scale-up bandwidth (NCCL)
  double scale_out_efficiency = 0.7;        // achieved / nominal NIC bandwidth
  double collective_latency_seconds = 2e-5; // per collective call
  double overlap_tp = 0.2;                  // share of each collective hidden under compute
  double overlap_cp = 0.5;
  // Marin's FSDP hero hid 53% of its collectives (marin-community/marin issue 8053).
  double overlap_fsdp = 0.53;
  double overlap_dp = 0.8;
  double overlap_pp = 0.8;
  // Share of the hidden communication's time that the compute beside it loses: the kernels that
  // move it hold SMs and HBM bandwidth while they run (the EP dispatcher's, DeepEP or HybridEP,
  // 20-32 SMs; NCCL's collectives one SM per channel, up to 32, and HBM for their reductions).
  // Charged on every hidden collective, it is what the fit wants: on the EP all-to-all alone it
  // left leave-one-out's RMS log error at 0.154 (median 6.6%), on the NVLink traffic and the
  // all-to-all at 0.152 (7.1%), on all of it 0.139 (5.8%), and the B200 profile's GEMM efficiency
  // rose from 0.52 to 0.71, near GB200's 0.66 (same chip). Marin's profiled FSDP hero
  // (marin-community/marin issue 8053) agrees: its traced exposure (3.17 s) is the model's
  // exposed time less this contention, which a trace books as compute.
  double overlap_contention = 0;
  // Host time the GPU waits for after each MoE layer's token-count sync, in stacks that sync
  // (PerfProfile::moe_host_sync): the GPU idles until the host has issued the layer's next
  // kernels, so the host's issue time adds to the GPU's instead of hiding under it. Per MoE layer
  // pass per micro-batch (forward + backward).
  double moe_sync_seconds = 0;
  // Unfused attention (PerfProfile::fused_attention_sinks = false with attention sinks): bf16
  // passes over each head's s×s score matrix per layer, forward + backward, at HBM bandwidth.
  // Not fitted (no measured stack runs it): 15, what Transformer Engine's
  // UnfusedDotProductAttention does to the matrix (the QKᵀ GEMM writes it, the scaled masked
  // softmax reads and writes it, the PV GEMM reads it: 4 forward; the probabilities' gradient
  // written, it and the probabilities read by the softmax backward, its output written and read
  // by the two GEMMs, the probabilities read for dV: 7 backward; the sink column concatenated
  // forward and split backward, a read and a write each: 4).
  double unfused_attention_passes = 15;
  // A model with attention sinks (gpt-oss) on a stack that pays its untraced per-token cost
  // (PerfProfile::untraced_sink_model_cost): seconds per token per layer pass, forward +
  // backward, added to the compute. Fitted on Megatron-Bridge's gpt-oss-120b rows at 4096
  // tokens (tests/fixtures/throughput); docs/guide.md, "Limits", says what of it is traced.
  // 0 when a file leaves it out.
  double untraced_sink_model_seconds = 0;
  // fp8 and MXFP8 only: per local expert and expert GEMM (weight matrix and pass) per
  // micro-batch, the cost of quantizing that expert's GEMM input on its own. Transformer Engine's
  // GroupedLinear quantizes each expert's slice separately (split_quantize: per-tensor current
  // scaling takes an amax kernel then a cast-transpose; MXFP8 a rowwise and a columnwise
  // quantize and a swizzle of the block scales), a few small kernels per expert whose launches
  // the GPU waits for after the MoE layer's host sync. 0 for bf16, and for a stack that quantizes
  // all experts in one kernel.
  double fp8_quantize_seconds = 0;
};

struct PerfProfile {
  std::string name;                 // "megatron-gb200"
  std::string hardware;             // device it was fitted on ("gb200-nvl72")
  std::string stack;                // software stack, for reports
  std::string source;               // what it was fitted on
  double gemm_efficiency = 0.6;     // peak share of large GEMMs
  double step_overhead_seconds = 0.5;  // fixed per step (optimizer, host, logging)
  double activation_factor = 1.0;   // stored activations relative to mosaic's fused-kernel count
  double memory_reserve_gb = 6;     // CUDA/XLA context, communication buffers, fragmentation
  double grad_bytes_per_param = 4;        // fp32 main gradients (Megatron)
  double optimizer_bytes_per_param = 12;  // Adam: fp32 master weights + two fp32 moments
  // Achieved / nominal scale-up bandwidth of this stack's collectives when it differs from the
  // shared (NCCL) value; 0 = the shared value. Marin's XLA collectives on GB200 NVL72 moved the
  // hero's FSDP traffic in 6.73 s of a 18.02 s step (marin-community/marin issue 8053): 0.35.
  double scale_up_efficiency = 0;
  // Per expert GEMM (each local expert, weight matrix and pass, per micro-batch): what one
  // expert's GEMM costs beyond its FLOPs. A stack that issues one GEMM per expert (Transformer
  // Engine's GroupedLinear over cuBLAS) pays each one's launch, which the GPU waits for after
  // the MoE layer's host sync, and its tail wave the concurrent streams do not fill; a grouped
  // kernel with a persistent tile scheduler, or a CUDA graph, pays almost nothing. It belongs to
  // the stack and its host (x86 DGX or Grace), so each profile has its own.
  double expert_group_seconds = 0;
  // Rows per tile of a grouped GEMM kernel that tiles the rows of all local experts together and
  // computes a whole tile again for each expert whose rows start inside one (megablox, MaxText's
  // TPU kernel: jax/experimental/pallas/ops/tpu/megablox/gmm.py, make_group_metadata, "each
  // group can have 0 or 1 initial partial tiles"; its forward, input-gradient and transposed
  // weight-gradient kernels alike). MaxText's tile_batch_seq, 512 in its base config and its
  // tpu-recipes configs. 0 for a stack whose grouped GEMM runs each expert's rows on their own
  // (Transformer Engine's GroupedLinear: one cuBLAS GEMM per expert), and when left out.
  double grouped_gemm_row_tile = 0;
  // Share of the FSDP parameter gathers and gradient reduce-scatters this stack hides under
  // compute when it differs from the shared value; left out of the profile (kUnsetShare here),
  // SharedPerfParams::overlap_fsdp (Marin's measured 53%); 0 hides none. Megatron-Core chunks
  // its data-parallel and FSDP communication by transformer layer, prefetching the next layer's
  // gathers and reduce-scattering the last one's gradients on their own streams, so that one
  // chunk per pass stays exposed (Megatron-Bridge, "Communication Overlap"; Megatron-FSDP's
  // overlap_param_gather and overlap_grad_reduce): kMaxOverlapShare.
  double overlap_fsdp = kUnsetShare;
  // Share of the EP all-to-all this stack hides under compute without the paired-pass overlap
  // (Layout::a2a_overlap). A stack that syncs the host on the routed token counts (moe_host_sync:
  // eager PyTorch, Megatron-Core) runs dispatch, expert GEMMs and combine in program order, each
  // waiting for the one before, so almost nothing runs beside the all-to-all: at most 10%, the
  // shared experts' GEMMs where overlapped. A compiled graph (XLA) schedules the all-to-all
  // asynchronously beside any independent work (with full recompute, the next layer's recomputed
  // forward during the backward). Fitted per profile (mosaic perf calibrate), bounded to
  // kMaxEagerEpOverlapShare with moe_host_sync and kMaxOverlapShare without; 0 when left out.
  double overlap_ep = 0;
  double logits_fraction = 1.0;     // share of the micro-batch's logits held at once (blockwise
                                    // cross-entropy holds a few blocks of the vocabulary)
  // The recompute policy the stack's published runs use, which calibration and validation apply
  // to its rows ("" = the least recompute that fits). Megatron-Bridge's recipes recompute modules
  // (norms, activation functions, MLA up-projections), never the full layer: "modules".
  std::string recompute;
  // Whether the MoE layer synchronises the host on the routed token counts (Megatron-Core's
  // dropless token dispatchers copy tokens-per-expert to the host for the grouped GEMM's shapes;
  // XLA's static shapes do not): SharedPerfParams::moe_sync_seconds applies only then.
  bool moe_host_sync = false;
  // Whether the stack has a fused attention kernel for learned softmax sinks (gpt-oss). Without
  // one, Transformer Engine runs UnfusedDotProductAttention (the whole s×s scores in HBM,
  // SharedPerfParams::unfused_attention_passes): FlashAttention rejects softmax_type =
  // learnable, and cuDNN's fused attention takes it from cuDNN 9.13.1 and Transformer Engine 2.8
  // (THD-packed sequences from cuDNN 9.18: NVIDIA/TransformerEngine issue 2318, verl-project/verl
  // issue 5224). Megatron-Bridge's pretraining runs (sbhd, Transformer Engine 2.8 and later) have
  // it.
  bool fused_attention_sinks = true;
  // Whether the stack pays the untraced per-token cost of a model with attention sinks
  // (SharedPerfParams::untraced_sink_model_seconds): charged the kernels the model counts,
  // Megatron-Bridge's gpt-oss-120b rows (8 rows on 4 devices, 4096 and 8192 tokens) run 20-56%
  // slower, by a time per token that does not grow with the sequence (docs/guide.md, "Limits").
  // Optional in a file (left out: false); the shipped Megatron profiles set it.
  bool untraced_sink_model_cost = false;
  // Whether the stack's expert dispatcher is hierarchical across scale-up domains: each token
  // crosses the scale-out network once per destination domain and is forwarded inside it over
  // NVLink (DeepEP's internode kernels; Megatron-Core's flex dispatcher with DeepEP or HybridEP,
  // as Megatron-Bridge's MoE performance recipes run: DeepEP on H100 and B200, HybridEP on
  // GB200), instead of one NIC copy per expert (NCCL all-to-all, XLA). Matters only when the EP
  // group spans several domains. A layout's `dispatch` key overrides it for one run (some
  // Megatron-Bridge recipes keep NCCL's all-to-all: Layout::dispatch).
  bool hierarchical_dispatch = false;
  // Whether the stack runs Megatron-Core's paired all-to-all overlap (Layout::a2a_overlap:
  // --overlap-moe-expert-parallel-comm, Megatron-Core 0.14 and later; Megatron-Bridge's MoE
  // recipes set moe_a2a_overlap). The layout search tries a2a_overlap=1 only under a profile
  // that runs it; a layout that asks for it under another is evaluated with a caution
  // (LayoutCautions, perf_request.h).
  bool paired_a2a_overlap = false;
  // Whether `mosaic perf calibrate` fitted this profile's speed to measured rows (the key
  // `calibrated = true` in a profile file, which calibrate writes); a profile set by hand, or
  // one that fixes memory habits only, is not.
  bool calibrated = false;
  // Whether that calibration also fitted the profile's per-expert cost and EP overlap: it had rows
  // of MoE models (the key `moe_calibrated`, which calibrate writes; left out of a file, the
  // value of `calibrated`). A profile fitted on dense models alone (maxtext-tpu-v5p) keeps them
  // as set by hand, and a MoE model's prediction on it says so (PerfCautions).
  bool moe_calibrated = false;
  // Whether that calibration also fitted the profile's EP overlap (overlap_ep): it had MoE rows
  // run with expert parallelism (ep > 1), the only rows whose all-to-all the overlap hides (the
  // key `ep_calibrated`, which calibrate writes; left out of a file, the value of
  // `moe_calibrated`). A profile fitted on MoE rows without EP (maxtext-tpu-v5p: Llama 4 Scout
  // with FSDP-sharded experts) keeps its EP overlap as set by hand, and a prediction with ep > 1
  // on it says so (PerfCautions).
  bool ep_calibrated = false;
};

// The name of the uncalibrated defaults of `hardware` ("generic-<hardware>", e.g.
// generic-tpu-v6e): the profile ForHardware returns for a device without a profile or sibling,
// and one `mosaic perf --profile` and `perf validate` name.
std::string GenericProfileName(std::string_view hardware);
// Whether `name` names uncalibrated defaults ("generic" or "generic-…"), which no profile file
// may use for a profile of its own.
bool IsGenericProfile(std::string_view name);

// How a profile's speed was obtained, as the text output says it: "calibrated on <hardware>";
// "uncalibrated defaults" (the generic profile of a device without a calibrated one or sibling);
// or "uncalibrated: set by hand for <hardware>" (a named profile without `calibrated = true`).
std::string CalibrationText(const PerfProfile& profile);

// The name of the device `profile` is for: its `hardware`, or the `name` inside the device file
// `hardware` names (a profile fitted on a device file). Throws InputError when that file cannot
// be read.
std::string DeviceNameOf(const PerfProfile& profile);

struct ProfileSet {
  SharedPerfParams shared;
  std::vector<PerfProfile> profiles;

  // The profile named `name`; throws InputError (did you mean) when unknown.
  const PerfProfile& Get(std::string_view name) const;
  // The profile for a device when the user names none, the first of: the device's Megatron
  // profile, its closest calibrated sibling's (CalibratedSibling; `hardware` then names the
  // sibling), another profile of the device, another of the sibling; else Generic(hardware).
  PerfProfile ForHardware(std::string_view hardware) const;
  // The uncalibrated defaults above for `hardware`, named GenericProfileName(hardware).
  PerfProfile Generic(std::string_view hardware) const;
  // The profile a run on `device` takes when `name` is asked for: ForHardware(device) for "";
  // Generic(device) for GenericProfileName(device); else Get(name). Throws InputError for
  // another device's uncalibrated defaults (a "generic…" name other than the device's), naming
  // `field` ("--profile", "file:line: profile"), the value and the device's own name, and Get's
  // for an unknown name. `mosaic perf --profile` and a held-out row's `profile` cell both go
  // through it.
  PerfProfile Resolve(std::string_view name, std::string_view device,
                      std::string_view field) const;
};

// The device whose profiles stand in for `hardware` when it has none: the same silicon and
// software stack with other memory or links. h200 (H100 with 141 GB at 4.8 TB/s) and h800 (H100
// with NVLink cut to 400 GB/s) → h100; gb200 → gb200-nvl72; gb300-nvl72 (Blackwell Ultra: the same
// Blackwell Tensor Cores and NVLink5 rack, more HBM and faster NICs) → gb200-nvl72. "" when there
// is none (the step model takes the device's own peaks, HBM and links from its hardware file
// either way).
std::string_view CalibratedSibling(std::string_view hardware);

// Parses a profile file. Throws InputError (file:line:col, key, value, rule) on syntax, unknown
// keys, a [shared] table that leaves a parameter out, a profile that leaves out any but
// overlap_fsdp and scale_up_efficiency (the shared value), a flag that is not a boolean, a text
// key that is not a string, a `hardware` that is neither a shipped device (HardwareNames) nor a
// device file that loads (LoadHardware), or a number outside its
// physical range (profile.cc, kSharedFields and kProfileFields, each with its reason): shares
// (overlaps, the fp8 gain, the logits held) in [0, 1]; rates that divide a time (GEMM, attention
// and link efficiencies) in [0.01, 1] (a profile's scale_up_efficiency also 0: the shared one);
// latencies and per-kernel costs up to 1-100 ms; the step overhead up to an hour; pass counts
// and the activation factor up to 100; bytes per parameter up to 16 (gradients) and 64
// (optimizer states).
ProfileSet ParseProfiles(std::string_view toml_text, const std::string& origin);

// The shipped profiles (data/perf/profiles.toml), or those of `path` when it is not empty.
ProfileSet LoadProfiles(const std::string& path = "");

// TOML text of a profile set, as ParseProfiles reads it; `header` comment lines go first.
std::string ProfilesToToml(const ProfileSet& set, const std::string& header);

}  // namespace mosaic
