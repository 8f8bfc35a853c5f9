// Forward FLOPs per token by the Levanter analytic estimate (levanter: lm_flops_per_token in
// src/levanter/utils/flop_utils.py, as used by Marin's MoE ladder; docs/accounting.md), in three
// named conventions:
//
//   kLevanterTable  what the seed-000 ladder table used: the attention span is the model config's
//                   max_seq_len (8192 for the ladder) although training ran at 4096, and the number
//                   of global layers is L // global_every (5 for d2048, which really has 6).
//   kFullSquare     "full-square" (formerly "physical", still accepted): the span is the training
//                   sequence length and the global layers are counted from the real layer pattern
//                   (global_every and last_layer_global); every query meets every key of the
//                   sequence, the whole s×s square, as PaLM (arXiv 2204.02311, appendix B) and
//                   Levanter count.
//   kCausal         "causal": as kFullSquare, but the scores cover only the band below the
//                   diagonal, as a causal kernel computes and as MaxText and Megatron-LM now
//                   count: half the square for a global layer (AttentionScoreFlops(s) / 2,
//                   rounded down), s·w − w²/2 per sequence for a window w < s (a mean span of
//                   w − w²/(2s) per token), and half the square for a window of s or more (Llama
//                   4's chunks of 8192 at 8192 tokens; MaxText's count of Llama 4 Scout agrees).
//
// All count a matmul of m×n weights as 2·m·n FLOPs per token, attention over a span s as
// s·(2·H·qk_hd + 2·H·v_hd + 3·H) (QKᵀ, PV, softmax), the router as 2·d·E when
// E > 1, the lm_head as 2·d·V, and ignore norms, gates, biases and convolutions. Looped models pay
// the layer stack `loops` times. Each multi-token-prediction module (mtp_layers; DeepSeek-V3,
// arXiv 2412.19437 section 2.2) adds, once per token, its 2d → d projection (4·d²), one layer like
// the trunk's last and the logits over the shared head (2·d·V), each counted with its kind.
// Training FLOPs are 3× forward (forward + backward).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "mosaic/model/model_config.h"

namespace mosaic {

enum class FlopConvention {
  kLevanterTable,
  kFullSquare,
  kCausal,
  kPhysical = kFullSquare,  // the former name of kFullSquare
};

// "levanter-table", "full-square", "causal"
std::string_view ToString(FlopConvention convention);
// Also accepts "physical", the former name of "full-square".
std::optional<FlopConvention> FlopConventionFromString(std::string_view text);

struct FlopOptions {
  FlopConvention convention = FlopConvention::kPhysical;
  // Training sequence length in tokens. kFullSquare and kCausal use it as the attention span;
  // kLevanterTable
  // uses config.max_seq_len instead and falls back to this when max_seq_len is 0.
  int64_t seq_len = 4096;
};

// Forward FLOPs per token by component; all exact integers.
struct FlopCount {
  FlopConvention convention = FlopConvention::kPhysical;
  int64_t attention_span_tokens = 0;  // the span s used for global layers
  int64_t global_layers = 0;          // global layers counted (per pass of the block)
  int64_t mlp_flops = 0;              // routed + shared experts and dense FFNs
  int64_t router_flops = 0;
  int64_t latent_projection_flops = 0;
  int64_t attention_projection_flops = 0;  // q, k, v (or MLA) and output projections
  int64_t attention_score_flops = 0;       // QKᵀ, softmax, PV
  int64_t lm_head_flops = 0;              // the trunk's and each MTP module's logits
  int64_t mtp_projection_flops = 0;        // MTP modules' 2d → d projections (D·4·d²)
  int64_t forward_flops_per_token = 0;     // sum of the above (layers × loops, + MTP once)

  // 3 × forward: the Levanter training estimate (forward + backward).
  double train_flops_per_token() const { return 3.0 * static_cast<double>(forward_flops_per_token); }
};

// Computes the forward FLOPs per token of `config` (which must pass Validate).
FlopCount CountFlops(const ModelConfig& config, const FlopOptions& options);

}  // namespace mosaic
