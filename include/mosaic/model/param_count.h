// Exact parameter accounting of a ModelConfig: totals and active parameters by component, under
// the named conventions of "active params" (docs/accounting.md):
//   active_params                      every parameter a token touches, embedding and lm_head
//                                      included (Mixtral's 12.9B, OLMoE's 1.3B, Marin hero's 22.6B)
//   active_params_no_embedding         the same without the embedding and lm_head matrices
//   active_params_matmul_no_embedding  the seed-000 ladder table's convention: matmul weights only
//                                      (no embedding, lm_head, norms, gates, biases or convs),
//                                      router included (Marin's "20.9B" for the hero)
// All counts are exact 64-bit integers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mosaic/model/model_config.h"

namespace mosaic {

// What a component is, for the conventions above.
enum class ParamCategory {
  kEmbedding,  // input embedding matrix
  kLmHead,     // output projection to the vocabulary (absent when tied)
  kMatmul,     // weight matrices of attention, router, experts, FFNs, latent projections
  kSmall,      // norms, gates, biases, sinks, short convolutions
};

std::string_view ToString(ParamCategory category);

struct ParamComponent {
  std::string name;        // e.g. "routed_experts"
  ParamCategory category;
  int64_t total_params;    // stored parameters
  int64_t active_params;   // parameters one token touches in one forward pass
  std::string formula;     // how it was counted, e.g. "L_moe·E·3·d·I"
};

struct ParamCount {
  std::vector<ParamComponent> components;  // in layer order: embedding, attention, ..., lm_head
  int64_t total_params = 0;
  int64_t active_params = 0;
  int64_t active_params_no_embedding = 0;
  int64_t active_params_matmul_no_embedding = 0;
  int64_t total_params_matmul = 0;   // matmul weights with embedding and lm_head
  int64_t active_params_matmul = 0;  // matmul weights with embedding and lm_head
  int64_t embedding_params = 0;      // embedding + lm_head
  // Inactive share of all parameters per token, 1 − active_params / total_params (MOSAIC's
  // sparsity factor, seeds/003); 0 for a dense model.
  double sparsity = 0;
};

// Counts every parameter of `config` (which must pass Validate). Sources of the per-component
// formulas: docs/accounting.md (Marin hero decomposition), DeepSeek-V3 config.json (MLA),
// Hugging Face modeling files of Qwen3-MoE, OLMoE, GPT-OSS and Mixtral (biases, norms, sinks).
ParamCount CountParams(const ModelConfig& config);

}  // namespace mosaic
