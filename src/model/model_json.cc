#include "mosaic/model/model_json.h"

#include "mosaic/util/wide_int.h"

namespace mosaic {
namespace {

nlohmann::ordered_json FlopsJson(const FlopCount& f, double tokens) {
  nlohmann::ordered_json j;
  j["convention"] = ToString(f.convention);
  j["attention_span_tokens"] = f.attention_span_tokens;
  j["global_layers"] = f.global_layers;
  j["forward_flops_per_token"] = f.forward_flops_per_token;
  j["mlp_flops_per_token"] = f.mlp_flops;
  j["router_flops_per_token"] = f.router_flops;
  j["latent_projection_flops_per_token"] = f.latent_projection_flops;
  j["attention_projection_flops_per_token"] = f.attention_projection_flops;
  j["attention_score_flops_per_token"] = f.attention_score_flops;
  j["lm_head_flops_per_token"] = f.lm_head_flops;
  j["mtp_projection_flops_per_token"] = f.mtp_projection_flops;
  j["train_flops_per_token"] = f.train_flops_per_token();
  if (tokens > 0) j["train_flops"] = f.train_flops_per_token() * tokens;
  return j;
}

}  // namespace

int64_t SixNFlopsPerToken(const ModelConfig& config, const ParamCount& p) {
  WideInt mtp = 0;
  for (const ParamComponent& component : p.components) {
    if (component.name.starts_with("mtp_")) mtp += component.active_params;
  }
  const WideInt trunk = WideInt{p.active_params_no_embedding} - mtp;
  return NarrowToInt64(6 * (trunk * config.loops + mtp), "six_n_flops_per_token");
}

nlohmann::ordered_json ModelJson(const ModelSpec& spec, int64_t seq_len, double tokens) {
  const ParamCount p = CountParams(spec.config);
  const FlopCount physical = CountFlops(spec.config, {FlopConvention::kPhysical, seq_len});
  const FlopCount causal = CountFlops(spec.config, {FlopConvention::kCausal, seq_len});
  const FlopCount table = CountFlops(spec.config, {FlopConvention::kLevanterTable, seq_len});
  nlohmann::ordered_json j;
  j["name"] = spec.config.name;
  j["origin"] = spec.origin;
  j["source"] = spec.config.source;
  j["total_params"] = p.total_params;
  j["active_params"] = p.active_params;
  j["active_params_no_embedding"] = p.active_params_no_embedding;
  j["active_params_matmul_no_embedding"] = p.active_params_matmul_no_embedding;
  j["total_params_matmul"] = p.total_params_matmul;
  j["active_params_matmul"] = p.active_params_matmul;
  j["embedding_params"] = p.embedding_params;
  j["sparsity"] = p.sparsity;
  nlohmann::ordered_json components = nlohmann::ordered_json::array();
  for (const ParamComponent& c : p.components) {
    components.push_back({{"name", c.name},
                          {"category", ToString(c.category)},
                          {"total_params", c.total_params},
                          {"active_params", c.active_params},
                          {"formula", c.formula}});
  }
  j["components"] = components;
  j["seq_len"] = seq_len;
  j["flops"] = {{"physical", FlopsJson(physical, tokens)},
                {"causal", FlopsJson(causal, tokens)},
                {"levanter_table", FlopsJson(table, tokens)}};
  const int64_t six_n = SixNFlopsPerToken(spec.config, p);
  j["six_n_flops_per_token"] = six_n;
  if (tokens > 0) {
    j["tokens"] = tokens;
    j["six_n_train_flops"] = static_cast<double>(six_n) * tokens;
  }
  j["notes"] = UnusedFieldNotes(spec.config);
  if (!spec.derivation.empty()) j["derivation"] = spec.derivation;
  if (!spec.overrides.empty()) j["overrides"] = spec.overrides;
  return j;
}

}  // namespace mosaic
