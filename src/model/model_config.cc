#include "mosaic/model/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "mosaic/util/enum_names.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/text_input.h"

namespace mosaic {

std::string_view ToString(NormKind kind) {
  switch (kind) {
    case NormKind::kRmsNorm: return "rmsnorm";
    case NormKind::kLayerNorm: return "layernorm";
    case NormKind::kGatedNorm: return "gatednorm";
  }
  return "?";
}

std::string_view ToString(QkNorm kind) {
  switch (kind) {
    case QkNorm::kNone: return "none";
    case QkNorm::kPerHead: return "per_head";
    case QkNorm::kFull: return "full";
  }
  return "?";
}

std::optional<NormKind> NormKindFromString(std::string_view text) {
  return EnumFromString<NormKind>(text,
                                  {NormKind::kRmsNorm, NormKind::kLayerNorm, NormKind::kGatedNorm});
}

std::optional<QkNorm> QkNormFromString(std::string_view text) {
  return EnumFromString<QkNorm>(text, {QkNorm::kNone, QkNorm::kPerHead, QkNorm::kFull});
}

std::string_view ToString(FieldType type) {
  switch (type) {
    case FieldType::kInt: return "integer";
    case FieldType::kBool: return "boolean";
    case FieldType::kDouble: return "number";
    case FieldType::kString: return "string";
  }
  return "?";
}

int64_t ModelConfig::resolved_head_dim() const {
  if (head_dim > 0) return head_dim;
  return heads > 0 ? d_model / heads : 0;
}

int64_t ModelConfig::resolved_shared_expert_width() const {
  return shared_expert_width > 0 ? shared_expert_width : expert_width;
}

bool ModelConfig::is_global_layer(int64_t layer) const {
  if (sliding_window <= 0) return true;
  if (global_every > 0 && (layer + 1) % global_every == 0) return true;
  return last_layer_global && layer == layers - 1;
}

int64_t ModelConfig::global_layer_count() const {
  int64_t count = 0;
  for (int64_t i = 0; i < layers; ++i) count += is_global_layer(i) ? 1 : 0;
  return count;
}

int64_t ModelConfig::kv_heads_of_layer(int64_t layer) const {
  const int64_t base = kv_heads > 0 ? kv_heads : heads;
  if (is_global_layer(layer)) return kv_heads_global > 0 ? kv_heads_global : base;
  return kv_heads_local > 0 ? kv_heads_local : base;
}

int64_t ModelConfig::kv_heads_stored_of_layer(int64_t layer) const {
  return kv_heads_stored > 0 ? kv_heads_stored : kv_heads_of_layer(layer);
}

ModelConfig ModelConfig::MtpLayerConfig(int64_t vocab_of_layer) const {
  const int64_t last = layers - 1;
  ModelConfig m = *this;
  m.layers = 1;
  m.loops = 1;
  m.mtp_layers = 0;
  m.vocab = vocab_of_layer;
  m.embedding_norm = false;
  m.dense_layers = is_moe_layer(last) ? 0 : 1;
  m.interleave_moe_layer_step = 1;
  m.global_every = is_global_layer(last) ? 1 : 0;  // layer 0 global iff the last one is
  m.last_layer_global = false;
  return m;
}

namespace {

// Storage of each field: exactly one member pointer is set, or none for the two enums.
struct FieldBinding {
  ModelField field;
  int64_t ModelConfig::*int_member = nullptr;
  bool ModelConfig::*bool_member = nullptr;
  double ModelConfig::*double_member = nullptr;
  std::string ModelConfig::*string_member = nullptr;
};

FieldBinding Int(std::string_view name, int64_t ModelConfig::*member, std::string_view help) {
  return {{name, FieldType::kInt, help}, member};
}
FieldBinding Bool(std::string_view name, bool ModelConfig::*member, std::string_view help) {
  return {{name, FieldType::kBool, help}, nullptr, member};
}
FieldBinding Double(std::string_view name, double ModelConfig::*member, std::string_view help) {
  return {{name, FieldType::kDouble, help}, nullptr, nullptr, member};
}
FieldBinding String(std::string_view name, std::string ModelConfig::*member,
                    std::string_view help) {
  return {{name, FieldType::kString, help}, nullptr, nullptr, nullptr, member};
}
FieldBinding Enum(std::string_view name, std::string_view help) {
  return {{name, FieldType::kString, help}};
}

const std::vector<FieldBinding>& Bindings() {
  using M = ModelConfig;
  static const std::vector<FieldBinding> kBindings = {
      String("name", &M::name, "model name"),
      String("family", &M::family, "\"\" or \"marin-ladder\" (derive fields from d_model)"),
      String("source", &M::source, "where the numbers come from"),
      Int("d_model", &M::d_model, "hidden size"),
      Int("layers", &M::layers, "layers per pass of the block"),
      Int("heads", &M::heads, "query heads"),
      Int("head_dim", &M::head_dim, "head dimension (0: d_model / heads)"),
      Int("kv_heads", &M::kv_heads, "KV heads (0: heads)"),
      Int("kv_heads_local", &M::kv_heads_local, "KV heads of windowed layers (0: kv_heads)"),
      Int("kv_heads_global", &M::kv_heads_global, "KV heads of global layers (0: kv_heads)"),
      Int("kv_heads_stored", &M::kv_heads_stored,
          "KV heads stored on every layer when it differs from those used (0: the layer's own)"),
      Int("sliding_window", &M::sliding_window, "window of local layers in tokens (0: none)"),
      Int("global_every", &M::global_every, "layer i is global iff (i+1) % global_every == 0"),
      Bool("chunked_window", &M::chunked_window,
           "windowed layers attend within fixed chunks of sliding_window tokens (Llama 4)"),
      Bool("last_layer_global", &M::last_layer_global, "the last layer is global too"),
      Int("max_seq_len", &M::max_seq_len, "the config's maximum sequence length"),
      Int("q_lora_rank", &M::q_lora_rank, "MLA query compression rank (0: none)"),
      Int("kv_lora_rank", &M::kv_lora_rank, "MLA KV compression rank (0: no MLA)"),
      Int("qk_nope_head_dim", &M::qk_nope_head_dim, "MLA per-head q/k dims without RoPE"),
      Int("qk_rope_head_dim", &M::qk_rope_head_dim, "MLA per-head q/k dims with RoPE"),
      Int("v_head_dim", &M::v_head_dim, "MLA per-head value dims"),
      Int("vocab", &M::vocab, "vocabulary size"),
      Bool("tied_embeddings", &M::tied_embeddings, "lm_head shares the embedding"),
      Bool("glu", &M::glu, "gated MLPs (3 matrices) instead of 2"),
      Int("dense_layers", &M::dense_layers, "leading layers with a dense FFN"),
      Int("interleave_moe_layer_step", &M::interleave_moe_layer_step,
          "after the dense_layers, every n-th layer is MoE and the others dense (1: all MoE)"),
      Int("dense_ffn_width", &M::dense_ffn_width, "dense FFN width"),
      Int("experts", &M::experts, "routed experts (0: dense model)"),
      Int("top_k", &M::top_k, "routed experts per token"),
      Int("expert_width", &M::expert_width, "routed expert hidden width"),
      Int("shared_experts", &M::shared_experts, "always-active experts"),
      Int("shared_expert_width", &M::shared_expert_width, "shared expert width (0: expert_width)"),
      Int("latent_dim", &M::latent_dim, "LatentMoE latent width (0: off)"),
      Double("capacity_factor", &M::capacity_factor, "routing capacity factor (0: dropless)"),
      Enum("norm", "rmsnorm | layernorm | gatednorm"),
      Int("gated_norm_rank", &M::gated_norm_rank, "GatedNorm gate rank"),
      Bool("embedding_norm", &M::embedding_norm, "a norm after the embedding"),
      Enum("qk_norm", "none | per_head | full"),
      Bool("attention_bias", &M::attention_bias, "biases on q, k, v, o"),
      Bool("attention_sinks", &M::attention_sinks, "one sink logit per query head"),
      Bool("attention_gate", &M::attention_gate, "per-head attention output gate (d x H)"),
      Bool("mlp_bias", &M::mlp_bias, "biases on FFN and expert matrices"),
      Bool("router_bias", &M::router_bias, "one bias per routed expert"),
      Int("short_conv_kernel", &M::short_conv_kernel,
          "depthwise conv kernel on k, v, attention and MLP outputs (0: none)"),
      Int("loops", &M::loops, "times the block of layers is applied"),
      Int("mtp_layers", &M::mtp_layers,
          "multi-token-prediction modules (DeepSeek-V3: 1), each a 2d→d projection and one layer "
          "like the last, sharing the embedding and output head (0: none)"),
  };
  return kBindings;
}

const FieldBinding* FindBinding(std::string_view name) {
  for (const FieldBinding& binding : Bindings()) {
    if (binding.field.name == name) return &binding;
  }
  return nullptr;
}

std::vector<std::string> FieldNames() {
  std::vector<std::string> names;
  for (const FieldBinding& binding : Bindings()) names.emplace_back(binding.field.name);
  return names;
}

std::string Quoted(std::string_view text) { return fmt::format("'{}'", text); }

}  // namespace

std::span<const ModelField> ModelFields() {
  static const std::vector<ModelField> kFields = [] {
    std::vector<ModelField> fields;
    for (const FieldBinding& binding : Bindings()) fields.push_back(binding.field);
    return fields;
  }();
  return kFields;
}

std::optional<std::string> SetModelField(ModelConfig& config, std::string_view name,
                                         std::string_view text) {
  const FieldBinding* binding = FindBinding(name);
  if (binding == nullptr) {
    std::vector<std::string> names = FieldNames();
    return fmt::format("unknown model field {}{}", Quoted(name), DidYouMean(name, names));
  }
  if (binding->int_member != nullptr) {
    int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      return fmt::format("{} = {}. Violated constraint: {} is an integer", name, Quoted(text),
                         name);
    }
    config.*binding->int_member = value;
  } else if (binding->bool_member != nullptr) {
    if (text != "true" && text != "false") {
      return fmt::format("{} = {}. Violated constraint: {} is true or false", name, Quoted(text),
                         name);
    }
    config.*binding->bool_member = text == "true";
  } else if (binding->double_member != nullptr) {
    const std::optional<double> value = ParseDecimal(text);
    if (!value || !std::isfinite(*value)) {
      return fmt::format("{} = {}. Violated constraint: {} is a finite number", name, Quoted(text),
                         name);
    }
    config.*binding->double_member = *value;
  } else if (binding->string_member != nullptr) {
    config.*binding->string_member = std::string(text);
  } else if (name == "norm") {
    std::optional<NormKind> kind = NormKindFromString(text);
    if (!kind) {
      return fmt::format("norm = {}. Violated constraint: norm is one of rmsnorm, layernorm, "
                         "gatednorm",
                         Quoted(text));
    }
    config.norm = *kind;
  } else if (name == "qk_norm") {
    std::optional<QkNorm> kind = QkNormFromString(text);
    if (!kind) {
      return fmt::format("qk_norm = {}. Violated constraint: qk_norm is one of none, per_head, "
                         "full",
                         Quoted(text));
    }
    config.qk_norm = *kind;
  }
  return std::nullopt;
}

std::optional<std::string> GetModelField(const ModelConfig& config, std::string_view name) {
  const FieldBinding* binding = FindBinding(name);
  if (binding == nullptr) return std::nullopt;
  if (binding->int_member != nullptr) return std::to_string(config.*binding->int_member);
  if (binding->bool_member != nullptr) return config.*binding->bool_member ? "true" : "false";
  if (binding->double_member != nullptr) return fmt::format("{}", config.*binding->double_member);
  if (binding->string_member != nullptr) return config.*binding->string_member;
  if (name == "norm") return std::string(ToString(config.norm));
  return std::string(ToString(config.qk_norm));
}

int64_t MinFieldValue(std::string_view name) {
  if (name == "d_model" || name == "layers" || name == "heads" || name == "vocab" ||
      name == "loops" || name == "interleave_moe_layer_step") {
    return 1;
  }
  return 0;
}

int64_t MaxFieldValue(std::string_view name) {
  if (name == "layers" || name == "dense_layers" || name == "loops" ||
      name == "interleave_moe_layer_step" || name == "mtp_layers") {
    return kMaxModelLayers;
  }
  if (name == "max_seq_len") return kMaxSeqLen;
  return kMaxModelDimension;
}

std::optional<Violation> Validate(const ModelConfig& c) {
  auto violation = [](std::string_view field, auto value, std::string rule) {
    return Violation{std::string(field), fmt::format("{}", value), std::move(rule)};
  };
  // Counts are non-negative (some at least 1) and bounded so that every count stays exact in
  // 128-bit arithmetic; each field has one range, and a value outside is told that range's bound.
  for (const FieldBinding& binding : Bindings()) {
    if (binding.int_member == nullptr) continue;
    const std::string_view name = binding.field.name;
    const int64_t value = c.*binding.int_member;
    const int64_t minimum = MinFieldValue(name);
    if (value < minimum) return violation(name, value, fmt::format("{} >= {}", name, minimum));
    const int64_t limit = MaxFieldValue(name);
    if (value > limit) return violation(name, value, fmt::format("{} <= {}", name, limit));
  }
  if (c.uses_mla()) {
    if (c.qk_nope_head_dim + c.qk_rope_head_dim <= 0) {
      return violation("qk_nope_head_dim", c.qk_nope_head_dim,
                       "qk_nope_head_dim + qk_rope_head_dim > 0 with kv_lora_rank > 0");
    }
    if (c.v_head_dim <= 0) {
      return violation("v_head_dim", c.v_head_dim, "v_head_dim > 0 with kv_lora_rank > 0");
    }
  } else {
    if (c.head_dim == 0 && c.d_model % c.heads != 0) {
      return violation("d_model", c.d_model,
                       fmt::format("d_model divisible by heads ({}) when head_dim is not set",
                                   c.heads));
    }
    for (auto [field, kv] : {std::pair<std::string_view, int64_t>{"kv_heads", c.kv_heads},
                             {"kv_heads_local", c.kv_heads_local},
                             {"kv_heads_global", c.kv_heads_global},
                             {"kv_heads_stored", c.kv_heads_stored}}) {
      if (kv > c.heads) {
        return violation(field, kv, fmt::format("{} <= heads ({})", field, c.heads));
      }
      if (kv > 0 && field != "kv_heads_stored" && c.heads % kv != 0) {
        return violation(field, kv, fmt::format("heads ({}) divisible by {}", c.heads, field));
      }
    }
  }
  if (c.dense_layers > c.layers) {
    return violation("dense_layers", c.dense_layers, fmt::format("dense_layers <= layers ({})",
                                                                 c.layers));
  }
  if (c.is_moe()) {
    if (c.interleave_moe_layer_step > std::max<int64_t>(c.layers - c.dense_layers, 1)) {
      return violation("interleave_moe_layer_step", c.interleave_moe_layer_step,
                       fmt::format("interleave_moe_layer_step <= layers − dense_layers ({})",
                                   c.layers - c.dense_layers));
    }
    if (c.top_k < 1 || c.top_k > c.experts) {
      return violation("top_k", c.top_k, fmt::format("1 <= top_k <= experts ({})", c.experts));
    }
    if (c.expert_width <= 0) return violation("expert_width", c.expert_width, "expert_width > 0");
    if (c.latent_dim > c.d_model) {
      return violation("latent_dim", c.latent_dim,
                       fmt::format("latent_dim <= d_model ({})", c.d_model));
    }
  } else {
    if (c.dense_layers != c.layers) {
      return violation("dense_layers", c.dense_layers,
                       fmt::format("dense_layers = layers ({}) in a dense model (experts = 0)",
                                   c.layers));
    }
    if (c.interleave_moe_layer_step != 1) {
      return violation("interleave_moe_layer_step", c.interleave_moe_layer_step,
                       "interleave_moe_layer_step = 1 in a dense model (experts = 0)");
    }
    for (auto [field, value] : {std::pair<std::string_view, int64_t>{"top_k", c.top_k},
                                {"shared_experts", c.shared_experts},
                                {"latent_dim", c.latent_dim}}) {
      if (value != 0) {
        return violation(field, value, fmt::format("{} = 0 in a dense model (experts = 0)", field));
      }
    }
  }
  if (c.dense_ffn_layers() > 0 && c.dense_ffn_width <= 0) {
    return violation("dense_ffn_width", c.dense_ffn_width,
                     "dense_ffn_width > 0 when some layer is dense (dense_layers > 0 or "
                     "interleave_moe_layer_step > 1)");
  }
  if (c.capacity_factor < 0) {
    return violation("capacity_factor", c.capacity_factor, "capacity_factor >= 0");
  }
  if (c.capacity_factor > kMaxCapacityFactor) {
    return violation("capacity_factor", c.capacity_factor,
                     fmt::format("capacity_factor <= {:g}", kMaxCapacityFactor));
  }
  if (c.norm == NormKind::kGatedNorm && c.gated_norm_rank <= 0) {
    return violation("gated_norm_rank", c.gated_norm_rank, "gated_norm_rank > 0 with gatednorm");
  }
  if (c.chunked_window && c.sliding_window <= 0) {
    return violation("chunked_window", "true", "chunked_window only with a sliding_window > 0");
  }
  if (c.sliding_window > 0 && c.global_every == 1) {
    return violation("global_every", c.global_every,
                     "global_every != 1 with a sliding window (every layer would be global)");
  }
  if (!c.uses_mla() && c.kv_heads_stored > 0) {
    int64_t used = 0;
    for (int64_t layer = 0; layer < c.layers; ++layer) {
      used = std::max(used, c.kv_heads_of_layer(layer));
    }
    if (c.kv_heads_stored < used) {
      return violation("kv_heads_stored", c.kv_heads_stored,
                       fmt::format("kv_heads_stored >= the most KV heads a layer uses ({})", used));
    }
  }
  if (!c.family.empty() && c.family != "marin-ladder") {
    return violation("family", c.family, "family is \"\" or \"marin-ladder\"");
  }
  return std::nullopt;
}

std::vector<std::string> UnusedFieldNotes(const ModelConfig& c) {
  std::vector<std::string> notes;
  auto unused = [&](std::string_view field, auto value, std::string_view because) {
    notes.push_back(fmt::format("{} = {} has no effect: {}", field, value, because));
  };
  if (!c.uses_mla()) {
    for (auto [field, value] : {std::pair<std::string_view, int64_t>{"q_lora_rank", c.q_lora_rank},
                                {"qk_nope_head_dim", c.qk_nope_head_dim},
                                {"qk_rope_head_dim", c.qk_rope_head_dim},
                                {"v_head_dim", c.v_head_dim}}) {
      if (value != 0) unused(field, value, "multi-head latent attention needs kv_lora_rank > 0");
    }
  }
  if (c.sliding_window <= 0) {
    constexpr std::string_view kAllGlobal = "every layer is global without a sliding_window";
    if (c.kv_heads_local != 0) unused("kv_heads_local", c.kv_heads_local, kAllGlobal);
    if (c.global_every != 0) unused("global_every", c.global_every, kAllGlobal);
    if (c.last_layer_global) unused("last_layer_global", "true", kAllGlobal);
  }
  if (c.norm != NormKind::kGatedNorm && c.gated_norm_rank != 0) {
    unused("gated_norm_rank", c.gated_norm_rank, "norm is not \"gatednorm\"");
  }
  if (c.shared_experts == 0 && c.shared_expert_width != 0) {
    unused("shared_expert_width", c.shared_expert_width, "shared_experts = 0");
  }
  if (c.dense_ffn_layers() == 0 && c.dense_ffn_width != 0) {
    unused("dense_ffn_width", c.dense_ffn_width,
           "no layer is dense (dense_layers = 0, interleave_moe_layer_step = 1)");
  }
  return notes;
}

}  // namespace mosaic
