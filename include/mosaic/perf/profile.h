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

// Shared by every profile.
struct SharedPerfParams {
  double gemm_latency_seconds = 8e-6;       // fixed cost per GEMM kernel (a grouped expert GEMM
                                            // is one kernel for all of a rank's experts)
  double gemm_half_size = 128;              // a GEMM whose smallest dimension is s runs at
                                            // eff·s/(s + gemm_half_size): a Calculon-style
                                            // efficiency-vs-size curve (tile quantisation, waves)
  double elementwise_passes = 0;            // memory-bound kernels (norms, activation functions,
                                            // permute/unpermute, router, casts): bf16 reads and
                                            // writes of each layer's activations per token,
                                            // forward + backward, at the HBM bandwidth
  double attention_efficiency = 0.45;       // attention-score FLOPs (no causal halving) per peak
  double fp8_gain = 0.6;                    // share of the fp8 peak's extra speed that GEMMs realise
  double scale_up_efficiency = 0.7;         // achieved / nominal scale-up bandwidth
  double scale_out_efficiency = 0.7;        // achieved / nominal NIC bandwidth
  double collective_latency_seconds = 2e-5; // per collective call
  double overlap_tp = 0.2;                  // share of each collective hidden under compute
  double overlap_cp = 0.5;
  double overlap_ep = 0.3;
  double overlap_fsdp = 0.6;
  double overlap_dp = 0.8;
  double overlap_pp = 0.8;
  double layer_overhead_seconds = 0;        // host cost per layer per micro-batch (fwd+bwd); not
                                            // fitted (0): kernel costs are in the GEMM terms
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
  double logits_fraction = 1.0;     // share of the micro-batch's logits held at once (blockwise
                                    // cross-entropy holds a few blocks of the vocabulary)
  // The recompute policy the stack's published runs use, which calibration and validation apply
  // to its rows ("" = the least recompute that fits). Megatron-Bridge's recipes recompute modules
  // (norms, activation functions, MLA up-projections), never the full layer: "selective".
  std::string recompute;
  bool calibrated = false;
};

struct ProfileSet {
  SharedPerfParams shared;
  std::vector<PerfProfile> profiles;

  // The profile named `name`; throws InputError (did you mean) when unknown.
  const PerfProfile& Get(std::string_view name) const;
  // The profile for a device when the user names none: "megatron-<device>" when shipped, else an
  // uncalibrated "generic" profile with the defaults above.
  PerfProfile ForHardware(std::string_view hardware) const;
};

// Parses a profile file. Throws InputError (file:line:col) on syntax or unknown keys.
ProfileSet ParseProfiles(std::string_view toml_text, const std::string& origin);

// The shipped profiles (data/perf/profiles.toml), or those of `path` when it is not empty.
ProfileSet LoadProfiles(const std::string& path = "");

// TOML text of a profile set, as ParseProfiles reads it; `header` comment lines go first.
std::string ProfilesToToml(const ProfileSet& set, const std::string& header);

}  // namespace mosaic
