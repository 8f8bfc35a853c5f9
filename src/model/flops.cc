#include "mosaic/model/flops.h"

#include <algorithm>

#include <fmt/format.h>

#include "mosaic/util/enum_names.h"
#include "mosaic/util/error.h"
#include "mosaic/util/wide_int.h"

namespace mosaic {

std::string_view ToString(FlopConvention convention) {
  switch (convention) {
    case FlopConvention::kLevanterTable: return "levanter-table";
    case FlopConvention::kFullSquare: return "full-square";
    case FlopConvention::kCausal: return "causal";
  }
  return "?";
}

std::optional<FlopConvention> FlopConventionFromString(std::string_view text) {
  if (text == "physical") return FlopConvention::kFullSquare;
  return EnumFromString<FlopConvention>(
      text, {FlopConvention::kLevanterTable, FlopConvention::kFullSquare, FlopConvention::kCausal});
}

namespace {

using Wide = WideInt;

// Per-layer projection FLOPs of q, k, v (2 per weight), with the KV heads used by the layer.
Wide QkvFlops(const ModelConfig& c, Wide kv_heads) {
  const Wide d = c.d_model;
  const Wide H = c.heads;
  if (c.uses_mla()) {
    const Wide qk_hd = c.qk_nope_head_dim + c.qk_rope_head_dim;
    const Wide q = c.q_lora_rank > 0 ? d * c.q_lora_rank + c.q_lora_rank * H * qk_hd
                                        : d * H * qk_hd;
    const Wide kv = d * (c.kv_lora_rank + c.qk_rope_head_dim) +
                       c.kv_lora_rank * H * (c.qk_nope_head_dim + c.v_head_dim);
    return 2 * (q + kv);
  }
  const Wide hd = c.resolved_head_dim();
  return 2 * d * (H * hd + 2 * kv_heads * hd);
}

Wide OutputProjectionFlops(const ModelConfig& c) {
  const Wide v_hd = c.uses_mla() ? c.v_head_dim : c.resolved_head_dim();
  return 2 * c.heads * v_hd * c.d_model;
}

// QKᵀ, softmax and PV over a span of `span` tokens, per token.
Wide AttentionScoreFlops(const ModelConfig& c, Wide span) {
  const Wide H = c.heads;
  const Wide qk_hd = c.uses_mla() ? c.qk_nope_head_dim + c.qk_rope_head_dim
                                     : c.resolved_head_dim();
  const Wide v_hd = c.uses_mla() ? c.v_head_dim : c.resolved_head_dim();
  return span * (2 * H * qk_hd + 2 * H * v_hd + 3 * H);
}

}  // namespace

FlopCount CountFlops(const ModelConfig& c, const FlopOptions& options) {
  if (options.seq_len < 1 || options.seq_len > kMaxSeqLen) {
    throw InputError(fmt::format("seq_len = {}. Violated constraint: 1 <= seq_len <= {}",
                                 options.seq_len, kMaxSeqLen));
  }
  FlopCount f;
  f.convention = options.convention;
  const Wide d = c.d_model;
  const Wide L = c.layers;
  const bool table = options.convention == FlopConvention::kLevanterTable;
  const Wide S = table && c.max_seq_len > 0 ? c.max_seq_len : options.seq_len;
  const Wide W = c.sliding_window;
  f.attention_span_tokens = S;

  // Attention. Levanter: G = L // global_every global layers at span S, the rest at span W, when
  // 0 < W < S; otherwise every layer at span S.
  Wide projections = 0;
  Wide scores = 0;
  if (table) {
    // The table convention's KV heads: kv_heads_global for the G global layers, kv_heads_local
    // for the rest, whatever the real layer pattern.
    const Wide kv_base = c.kv_heads > 0 ? c.kv_heads : c.heads;
    const Wide kv_global = c.kv_heads_global > 0 ? c.kv_heads_global : kv_base;
    const Wide kv_local = c.kv_heads_local > 0 ? c.kv_heads_local : kv_base;
    if (W > 0 && W < S) {
      const Wide G = c.global_every > 0 ? L / c.global_every : 0;
      f.global_layers = G;
      projections = G * QkvFlops(c, kv_global) + (L - G) * QkvFlops(c, kv_local);
      scores = G * AttentionScoreFlops(c, S) + (L - G) * AttentionScoreFlops(c, W);
    } else {
      f.global_layers = L;
      for (Wide i = 0; i < L; ++i) projections += QkvFlops(c, c.kv_heads_of_layer(i));
      scores = L * AttentionScoreFlops(c, S);
    }
  } else {
    for (Wide i = 0; i < L; ++i) {
      const bool global = c.is_global_layer(i);
      f.global_layers += global ? 1 : 0;
      projections += QkvFlops(c, c.kv_heads_of_layer(i));
      // The keys a query meets: all S (full-square), or under a causal mask the band below the
      // diagonal, S²/2 keys per sequence for a global layer (S/2 per token) and W·S − W²/2 for
      // a window of W < S (W − W²/(2S) per token; a window of S or more is global). Chunks of
      // W (chunked_window): the whole chunk full-square, and under a causal mask the triangle
      // of each of the S / W whole chunks and of the part-chunk of the rest, r = S mod W.
      // (A global layer may have W = 0; S is at least 1, checked above.)
      const Wide span = global ? S : std::min(W, S);
      const bool chunks = !global && c.chunked_window && W > 0 && W < S;
      const Wide chunk_keys = chunks ? (S / W) * W * W + (S % W) * (S % W) : 0;  // per sequence
      if (options.convention == FlopConvention::kCausal) {
        const Wide keys = chunks ? chunk_keys : 2 * span * S - span * span;  // per sequence
        scores += AttentionScoreFlops(c, keys) / (2 * S);
      } else {
        scores += chunks ? AttentionScoreFlops(c, chunk_keys) / S : AttentionScoreFlops(c, span);
      }
    }
  }
  projections += L * OutputProjectionFlops(c);

  // Feed-forward: 2·(matrices)·d·width per active expert or dense FFN.
  const Wide matrices = c.glu ? 3 : 2;
  Wide mlp = c.dense_ffn_layers() * 2 * matrices * d * c.dense_ffn_width;
  Wide router = 0;
  Wide latent = 0;
  if (c.is_moe()) {
    const Wide moe_layers = c.moe_layers();
    const Wide expert_io = c.latent_dim > 0 ? c.latent_dim : d;
    mlp += moe_layers * (2 * matrices * expert_io * c.expert_width * c.top_k +
                         2 * matrices * d * c.resolved_shared_expert_width() * c.shared_experts);
    router = c.experts > 1 ? moe_layers * 2 * d * c.experts : 0;
    latent = moe_layers * 2 * 2 * d * c.latent_dim;
  }

  // Multi-token prediction, once per token whatever the loops: each module's layer (with its
  // logits over the shared head) under the same convention, and its 2d → d projection.
  Wide mtp_mlp = 0, mtp_router = 0, mtp_latent = 0, mtp_projections = 0, mtp_scores = 0;
  Wide mtp_head = 0, mtp_input_projection = 0;
  if (c.mtp_layers > 0) {
    const FlopCount m = CountFlops(c.MtpLayerConfig(c.vocab), options);
    const Wide D = c.mtp_layers;
    mtp_mlp = D * m.mlp_flops;
    mtp_router = D * m.router_flops;
    mtp_latent = D * m.latent_projection_flops;
    mtp_projections = D * m.attention_projection_flops;
    mtp_scores = D * m.attention_score_flops;
    mtp_head = D * m.lm_head_flops;
    mtp_input_projection = D * 2 * 2 * d * d;
  }

  const Wide loops = c.loops;
  f.mlp_flops = NarrowToInt64(mlp * loops + mtp_mlp, "mlp_flops_per_token");
  f.router_flops = NarrowToInt64(router * loops + mtp_router, "router_flops_per_token");
  f.latent_projection_flops =
      NarrowToInt64(latent * loops + mtp_latent, "latent_projection_flops_per_token");
  f.attention_projection_flops = NarrowToInt64(projections * loops + mtp_projections,
                                               "attention_projection_flops_per_token");
  f.attention_score_flops =
      NarrowToInt64(scores * loops + mtp_scores, "attention_score_flops_per_token");
  f.lm_head_flops = NarrowToInt64(2 * d * c.vocab + mtp_head, "lm_head_flops_per_token");
  f.mtp_projection_flops = NarrowToInt64(mtp_input_projection, "mtp_projection_flops_per_token");
  f.forward_flops_per_token = NarrowToInt64(
      Wide{f.mlp_flops} + f.router_flops + f.latent_projection_flops +
          f.attention_projection_flops + f.attention_score_flops + f.lm_head_flops +
          f.mtp_projection_flops,
      "forward_flops_per_token");
  return f;
}

}  // namespace mosaic
