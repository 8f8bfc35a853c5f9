#include "mosaic/model/param_count.h"

#include <fmt/format.h>

#include "mosaic/util/wide_int.h"

namespace mosaic {

std::string_view ToString(ParamCategory category) {
  switch (category) {
    case ParamCategory::kEmbedding: return "embedding";
    case ParamCategory::kLmHead: return "lm_head";
    case ParamCategory::kMatmul: return "matmul";
    case ParamCategory::kSmall: return "small";
  }
  return "?";
}

namespace {

using Wide = WideInt;

// Parameters of one normalisation layer over `width` features.
Wide NormParams(const ModelConfig& c, Wide width) {
  switch (c.norm) {
    case NormKind::kRmsNorm: return width;
    case NormKind::kLayerNorm: return 2 * width;
    case NormKind::kGatedNorm: return width + 2 * width * c.gated_norm_rank;
  }
  return 0;
}

// Matrices per MLP: 3 for gated (SwiGLU: gate, up, down), 2 otherwise.
Wide MlpMatrices(const ModelConfig& c) { return c.glu ? 3 : 2; }

// Bias parameters of one MLP of hidden width `width` over `io` features.
Wide MlpBiasParams(const ModelConfig& c, Wide io, Wide width) {
  return c.mlp_bias ? (MlpMatrices(c) - 1) * width + io : 0;
}

}  // namespace

ParamCount CountParams(const ModelConfig& c) {
  ParamCount count;
  const Wide d = c.d_model;
  const Wide H = c.heads;
  const Wide hd = c.resolved_head_dim();
  auto add = [&](std::string name, ParamCategory category, Wide total, Wide active,
                 std::string formula) {
    if (total == 0) return;
    count.components.push_back({name, category, NarrowToInt64(total, name + " total_params"),
                                NarrowToInt64(active, name + " active_params"),
                                std::move(formula)});
  };

  add("embedding", ParamCategory::kEmbedding, c.vocab * d, c.vocab * d, "V·d");
  if (c.embedding_norm) {
    add("embedding_norm", ParamCategory::kSmall, NormParams(c, d), NormParams(c, d),
        fmt::format("norm({})", ToString(c.norm)));
  }

  // Attention. Stored k/v weights use kv_heads_stored when set (Marin hero: 12 on every layer).
  Wide attention = 0;
  Wide attention_small = 0;
  Wide convs = 0;
  std::string attention_formula;
  for (Wide i = 0; i < c.layers; ++i) {
    if (c.uses_mla()) {
      const Wide qk_hd = c.qk_nope_head_dim + c.qk_rope_head_dim;
      const Wide q = c.q_lora_rank > 0 ? d * c.q_lora_rank + c.q_lora_rank * H * qk_hd
                                          : d * H * qk_hd;
      const Wide kv_a = d * (c.kv_lora_rank + c.qk_rope_head_dim);
      const Wide kv_b = c.kv_lora_rank * H * (c.qk_nope_head_dim + c.v_head_dim);
      const Wide o = H * c.v_head_dim * d;
      attention += q + kv_a + kv_b + o;
      attention_small += c.kv_lora_rank + (c.q_lora_rank > 0 ? c.q_lora_rank : 0);  // RMSNorms
      if (c.attention_bias) attention_small += H * qk_hd + c.kv_lora_rank + c.qk_rope_head_dim + d;
      attention_formula = "L·(q_lora + kv_a + kv_b + o) [MLA]";
    } else {
      const Wide kv = c.kv_heads_stored_of_layer(i);
      attention += 2 * d * H * hd + 2 * d * kv * hd;
      if (c.attention_bias) attention_small += H * hd + 2 * kv * hd + d;
      if (c.qk_norm == QkNorm::kPerHead) attention_small += 2 * hd;
      if (c.qk_norm == QkNorm::kFull) attention_small += H * hd + kv * hd;
      if (c.short_conv_kernel > 0) convs += c.short_conv_kernel * (2 * kv * hd + 2 * d);
      attention_formula = "Σ_layers (2·d·H·hd + 2·d·kv_stored·hd)";
    }
    if (c.attention_sinks) attention_small += H;
    if (c.attention_gate) attention_small += d * H;
  }
  add("attention", ParamCategory::kMatmul, attention, attention, attention_formula);
  add("attention_small", ParamCategory::kSmall, attention_small, attention_small,
      "biases, sinks, q/k norms, MLA norms, output gates");
  add("short_convs", ParamCategory::kSmall, convs, convs,
      "L·kernel·(2·kv_stored·hd + 2·d) (k, v, attention out, MLP out)");

  // Norms: two per layer (before attention and before the FFN) and one at the end.
  const Wide norms = (2 * c.layers + 1) * NormParams(c, d);
  add("norms", ParamCategory::kSmall, norms, norms,
      fmt::format("(2·L + 1)·norm({})", ToString(c.norm)));

  // Dense FFN layers.
  if (c.dense_ffn_layers() > 0) {
    const Wide F = c.dense_ffn_width;
    const Wide dense = c.dense_ffn_layers() * MlpMatrices(c) * d * F;
    add("dense_ffn", ParamCategory::kMatmul, dense, dense,
        fmt::format("L_dense·{}·d·F", MlpMatrices(c)));
    const Wide bias = c.dense_ffn_layers() * MlpBiasParams(c, d, F);
    add("dense_ffn_bias", ParamCategory::kSmall, bias, bias, "L_dense·bias(F)");
  }

  // MoE layers.
  const Wide moe_layers = c.moe_layers();
  if (moe_layers > 0) {
    const Wide E = c.experts;
    const Wide k = c.top_k;
    const Wide I = c.expert_width;
    const Wide expert_io = c.latent_dim > 0 ? c.latent_dim : d;  // LatentMoE experts run in ℓ
    const Wide router = moe_layers * d * E;
    add("router", ParamCategory::kMatmul, router, router, "L_moe·d·E");
    if (c.router_bias) {
      add("router_bias", ParamCategory::kSmall, moe_layers * E, moe_layers * E, "L_moe·E");
    }
    if (c.latent_dim > 0) {
      const Wide projections = moe_layers * 2 * d * c.latent_dim;
      add("latent_projections", ParamCategory::kMatmul, projections, projections,
          "L_moe·2·d·ℓ (d → ℓ and ℓ → d)");
      // LatentMoE's latent norm is a plain RMSNorm whatever the model's other norms are.
      const Wide latent_norm = moe_layers * c.latent_dim;
      add("latent_norm", ParamCategory::kSmall, latent_norm, latent_norm, "L_moe·ℓ (RMSNorm)");
    }
    const Wide per_expert = MlpMatrices(c) * expert_io * I;
    add("routed_experts", ParamCategory::kMatmul, moe_layers * E * per_expert,
        moe_layers * k * per_expert,
        fmt::format("L_moe·E·{}·{}·I (active: k of E)", MlpMatrices(c),
                    c.latent_dim > 0 ? "ℓ" : "d"));
    const Wide per_expert_bias = MlpBiasParams(c, expert_io, I);
    add("routed_expert_bias", ParamCategory::kSmall, moe_layers * E * per_expert_bias,
        moe_layers * k * per_expert_bias, "L_moe·E·bias(I) (active: k of E)");
    if (c.shared_experts > 0) {
      const Wide Is = c.resolved_shared_expert_width();
      const Wide shared = moe_layers * c.shared_experts * MlpMatrices(c) * d * Is;
      add("shared_experts", ParamCategory::kMatmul, shared, shared,
          fmt::format("L_moe·n_shared·{}·d·I_shared", MlpMatrices(c)));
      const Wide bias = moe_layers * c.shared_experts * MlpBiasParams(c, d, Is);
      add("shared_expert_bias", ParamCategory::kSmall, bias, bias, "L_moe·n_shared·bias(I_shared)");
    }
  }

  if (!c.tied_embeddings) {
    add("lm_head", ParamCategory::kLmHead, c.vocab * d, c.vocab * d, "V·d");
  }

  // Multi-token prediction: D modules, each one layer like the last (counted as a one-layer model
  // without embedding or head, whose final norm is the module's), the 2d → d projection and the
  // norms of the hidden state and of the embedding. The embedding and head are shared.
  if (c.mtp_layers > 0) {
    const Wide D = c.mtp_layers;
    add("mtp_projection", ParamCategory::kMatmul, D * 2 * d * d, D * 2 * d * d, "D·2·d·d");
    for (const ParamComponent& layer : CountParams(c.MtpLayerConfig(0)).components) {
      Wide total = D * layer.total_params;
      Wide active = D * layer.active_params;
      std::string formula = "D·(" + layer.formula + ") [L = 1]";
      if (layer.name == "norms") {
        total += D * 2 * NormParams(c, d);
        active += D * 2 * NormParams(c, d);
        formula = fmt::format("D·5·norm({}) (layer, final, hidden, embedding)", ToString(c.norm));
      }
      add("mtp_" + layer.name, layer.category, total, active, formula);
    }
  }

  // Sums in 128 bits; every component is non-negative, so the totals bound every partial sum.
  Wide total = 0, active = 0, embedding = 0, total_matmul = 0, active_matmul = 0;
  Wide active_matmul_no_embedding = 0;
  for (const ParamComponent& component : count.components) {
    total += component.total_params;
    active += component.active_params;
    switch (component.category) {
      case ParamCategory::kEmbedding:
      case ParamCategory::kLmHead:
        embedding += component.total_params;
        total_matmul += component.total_params;
        active_matmul += component.active_params;
        break;
      case ParamCategory::kMatmul:
        active_matmul_no_embedding += component.active_params;
        total_matmul += component.total_params;
        active_matmul += component.active_params;
        break;
      case ParamCategory::kSmall:
        break;
    }
  }
  count.total_params = NarrowToInt64(total, "total_params");
  count.active_params = NarrowToInt64(active, "active_params");
  count.embedding_params = NarrowToInt64(embedding, "embedding_params");
  count.total_params_matmul = NarrowToInt64(total_matmul, "total_params_matmul");
  count.active_params_matmul = NarrowToInt64(active_matmul, "active_params_matmul");
  count.active_params_matmul_no_embedding =
      NarrowToInt64(active_matmul_no_embedding, "active_params_matmul_no_embedding");
  count.active_params_no_embedding = count.active_params - count.embedding_params;
  count.sparsity = 1.0 - static_cast<double>(count.active_params) /
                             static_cast<double>(count.total_params);
  return count;
}

}  // namespace mosaic
