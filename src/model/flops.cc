#include "mosaic/model/flops.h"

#include <algorithm>

namespace mosaic {

std::string_view ToString(FlopConvention convention) {
  switch (convention) {
    case FlopConvention::kLevanterTable: return "levanter-table";
    case FlopConvention::kPhysical: return "physical";
  }
  return "?";
}

std::optional<FlopConvention> FlopConventionFromString(std::string_view text) {
  for (FlopConvention c : {FlopConvention::kLevanterTable, FlopConvention::kPhysical}) {
    if (ToString(c) == text) return c;
  }
  return std::nullopt;
}

namespace {

// Per-layer projection FLOPs of q, k, v (2 per weight), with the KV heads used by the layer.
int64_t QkvFlops(const ModelConfig& c, int64_t kv_heads) {
  const int64_t d = c.d_model;
  const int64_t H = c.heads;
  if (c.uses_mla()) {
    const int64_t qk_hd = c.qk_nope_head_dim + c.qk_rope_head_dim;
    const int64_t q = c.q_lora_rank > 0 ? d * c.q_lora_rank + c.q_lora_rank * H * qk_hd
                                        : d * H * qk_hd;
    const int64_t kv = d * (c.kv_lora_rank + c.qk_rope_head_dim) +
                       c.kv_lora_rank * H * (c.qk_nope_head_dim + c.v_head_dim);
    return 2 * (q + kv);
  }
  const int64_t hd = c.resolved_head_dim();
  return 2 * d * (H * hd + 2 * kv_heads * hd);
}

int64_t OutputProjectionFlops(const ModelConfig& c) {
  const int64_t v_hd = c.uses_mla() ? c.v_head_dim : c.resolved_head_dim();
  return 2 * c.heads * v_hd * c.d_model;
}

// QKᵀ, softmax and PV over a span of `span` tokens, per token.
int64_t AttentionScoreFlops(const ModelConfig& c, int64_t span) {
  const int64_t H = c.heads;
  const int64_t qk_hd = c.uses_mla() ? c.qk_nope_head_dim + c.qk_rope_head_dim
                                     : c.resolved_head_dim();
  const int64_t v_hd = c.uses_mla() ? c.v_head_dim : c.resolved_head_dim();
  return span * (2 * H * qk_hd + 2 * H * v_hd + 3 * H);
}

}  // namespace

FlopCount CountFlops(const ModelConfig& c, const FlopOptions& options) {
  FlopCount f;
  f.convention = options.convention;
  const int64_t d = c.d_model;
  const int64_t L = c.layers;
  const bool table = options.convention == FlopConvention::kLevanterTable;
  const int64_t S = table && c.max_seq_len > 0 ? c.max_seq_len : options.seq_len;
  const int64_t W = c.sliding_window;
  f.attention_span_tokens = S;

  // Attention. Levanter: G = L // global_every global layers at span S, the rest at span W, when
  // 0 < W < S; otherwise every layer at span S.
  int64_t projections = 0;
  int64_t scores = 0;
  if (table) {
    // The table convention's KV heads: kv_heads_global for the G global layers, kv_heads_local
    // for the rest, whatever the real layer pattern.
    const int64_t kv_base = c.kv_heads > 0 ? c.kv_heads : c.heads;
    const int64_t kv_global = c.kv_heads_global > 0 ? c.kv_heads_global : kv_base;
    const int64_t kv_local = c.kv_heads_local > 0 ? c.kv_heads_local : kv_base;
    if (W > 0 && W < S) {
      const int64_t G = c.global_every > 0 ? L / c.global_every : 0;
      f.global_layers = G;
      projections = G * QkvFlops(c, kv_global) + (L - G) * QkvFlops(c, kv_local);
      scores = G * AttentionScoreFlops(c, S) + (L - G) * AttentionScoreFlops(c, W);
    } else {
      f.global_layers = L;
      for (int64_t i = 0; i < L; ++i) projections += QkvFlops(c, c.kv_heads_of_layer(i));
      scores = L * AttentionScoreFlops(c, S);
    }
  } else {
    for (int64_t i = 0; i < L; ++i) {
      const bool global = c.is_global_layer(i);
      f.global_layers += global ? 1 : 0;
      projections += QkvFlops(c, c.kv_heads_of_layer(i));
      scores += AttentionScoreFlops(c, global ? S : std::min(W, S));
    }
  }
  projections += L * OutputProjectionFlops(c);

  // Feed-forward: 2·(matrices)·d·width per active expert or dense FFN.
  const int64_t matrices = c.glu ? 3 : 2;
  int64_t mlp = c.dense_layers * 2 * matrices * d * c.dense_ffn_width;
  int64_t router = 0;
  int64_t latent = 0;
  if (c.is_moe()) {
    const int64_t moe_layers = c.moe_layers();
    const int64_t expert_io = c.latent_dim > 0 ? c.latent_dim : d;
    mlp += moe_layers * (2 * matrices * expert_io * c.expert_width * c.top_k +
                         2 * matrices * d * c.resolved_shared_expert_width() * c.shared_experts);
    router = c.experts > 1 ? moe_layers * 2 * d * c.experts : 0;
    latent = moe_layers * 2 * 2 * d * c.latent_dim;
  }

  f.mlp_flops = mlp * c.loops;
  f.router_flops = router * c.loops;
  f.latent_projection_flops = latent * c.loops;
  f.attention_projection_flops = projections * c.loops;
  f.attention_score_flops = scores * c.loops;
  f.lm_head_flops = 2 * d * c.vocab;
  f.forward_flops_per_token = f.mlp_flops + f.router_flops + f.latent_projection_flops +
                              f.attention_projection_flops + f.attention_score_flops +
                              f.lm_head_flops;
  return f;
}

}  // namespace mosaic
