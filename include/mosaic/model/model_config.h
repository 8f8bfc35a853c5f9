// The architecture of a (possibly sparse, possibly looped) decoder-only transformer, as far as
// parameter and FLOP accounting needs it. Field names are the ones used in TOML model files and on
// the command line (`--set FIELD=VALUE`); ModelFields() lists each with its meaning, once.
//
// A layer is: norm → attention (multi-head/grouped-query, optionally windowed, or multi-head latent
// attention) → norm → feed-forward (dense for the first `dense_layers` layers, else a routed MoE with
// optional shared experts and an optional LatentMoE projection; with interleave_moe_layer_step = n
// only every n-th layer after them is MoE and the others are dense, as Llama 4 Maverick's config
// places them: layer i >= dense_layers is MoE iff (i − dense_layers + 1) % n == 0). The stack of
// `layers` layers is applied `loops` times (looped / recurrent-depth models: parameters once,
// compute `loops` times).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic {

// Normalisation layer type. kGatedNorm is Marin's GatedNorm: an RMSNorm weight (d) plus a low-rank
// gate of rank `gated_norm_rank` (two matrices d×r and r×d): d + 2·d·r parameters.
enum class NormKind { kRmsNorm, kLayerNorm, kGatedNorm };

// Query/key normalisation. kPerHead: one weight vector of head_dim shared by all heads, for q and for
// k (Qwen3). kFull: weights over all query dims and all key dims (OLMoE). kNone: none.
enum class QkNorm { kNone, kPerHead, kFull };

std::string_view ToString(NormKind kind);
std::string_view ToString(QkNorm kind);
std::optional<NormKind> NormKindFromString(std::string_view text);
std::optional<QkNorm> QkNormFromString(std::string_view text);

// The largest capacity factor a model or a job may give (`--capacity-factor` has the same cap):
// at E/k every expert could take every token, so any larger factor changes nothing.
inline constexpr double kMaxCapacityFactor = 1000;

struct ModelConfig {
  std::string name;    // preset or file name, for reports
  std::string family;  // "" or "marin-ladder" (fields derived from d_model; see model/family.h)
  std::string source;  // where the numbers come from (paper, config file), for reports

  // Trunk.
  int64_t d_model = 0;          // hidden size d
  int64_t layers = 0;           // L, layers per pass of the block
  int64_t heads = 0;            // query heads H
  int64_t head_dim = 0;         // hd; 0 means d_model / heads
  int64_t kv_heads = 0;         // KV heads of every layer; 0 means heads (multi-head attention)
  int64_t kv_heads_local = 0;   // KV heads of windowed layers; 0 means kv_heads
  int64_t kv_heads_global = 0;  // KV heads of global layers; 0 means kv_heads
  int64_t kv_heads_stored = 0;  // KV heads whose k/v weights are stored on every layer when that
                                // differs from the heads used (Marin hero); 0 means the layer's own
  int64_t sliding_window = 0;   // W tokens for windowed layers; 0 means every layer is global
  int64_t global_every = 0;     // layer i (0-based) is global iff (i+1) % global_every == 0
  // The windowed layers attend within fixed chunks of sliding_window tokens (Llama 4's
  // attention_chunk_size: a query meets the keys of its own chunk only), not a window sliding
  // with the query. The same below one chunk; past it a chunk's band is w²/2 keys, not s·w − w²/2.
  bool chunked_window = false;
  bool last_layer_global = false;  // the last layer is global as well
  int64_t max_seq_len = 0;      // the model config's maximum length (Levanter's table FLOPs use it)

  // Multi-head latent attention (DeepSeek-V2/V3); active when kv_lora_rank > 0.
  int64_t q_lora_rank = 0;  // 0 means queries are projected directly from d
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  // Embeddings.
  int64_t vocab = 0;
  bool tied_embeddings = false;  // lm_head shares the embedding matrix

  // Feed-forward.
  bool glu = true;                  // gated (SwiGLU) MLPs: 3 matrices, else 2
  int64_t dense_layers = 0;         // leading layers with a dense FFN instead of the MoE
                                    // (DeepSeek's first_k_dense_replace)
  int64_t interleave_moe_layer_step = 1;  // after them, every n-th layer is MoE, the others
                                          // dense (Hugging Face Llama 4's field of this name;
                                          // Megatron's --moe-layer-freq n counts from layer 0)
  int64_t dense_ffn_width = 0;      // width of the dense FFN
  int64_t experts = 0;              // routed experts E; 0 means a dense model
  int64_t top_k = 0;                // routed experts per token k
  int64_t expert_width = 0;         // routed expert hidden width I
  int64_t shared_experts = 0;       // always-active experts
  int64_t shared_expert_width = 0;  // their width; 0 means expert_width
  int64_t latent_dim = 0;           // LatentMoE ℓ: routed tokens projected d → ℓ (RMSNorm on ℓ),
                                    // experts run in ℓ, then ℓ → d (arXiv 2601.18089); 0 = off
  double capacity_factor = 0;       // routing capacity factor of the recipe; 0 = dropless/unset
                                    // (at most kMaxCapacityFactor)

  // Small parameters.
  NormKind norm = NormKind::kRmsNorm;
  int64_t gated_norm_rank = 0;      // rank r of GatedNorm
  bool embedding_norm = false;      // a norm right after the embedding
  QkNorm qk_norm = QkNorm::kNone;
  bool attention_bias = false;      // biases on q, k, v and o projections
  bool attention_sinks = false;     // one learned sink logit per query head (GPT-OSS)
  bool attention_gate = false;      // per-head output gate, a d×H matrix per layer
  bool mlp_bias = false;            // biases on expert and dense FFN matrices
  bool router_bias = false;         // one bias per routed expert (load-balancing bias)
  int64_t short_conv_kernel = 0;    // depthwise causal convolutions of this kernel on k, v, the
                                    // attention output and the MLP output; 0 = none

  // Looped / recurrent-depth models: the block of `layers` layers is applied `loops` times.
  int64_t loops = 1;

  // Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 section 2.2): D sequential modules, the
  // k-th predicting token i + k + 1. Each has an RMSNorm of the previous depth's hidden state and
  // one of the next token's embedding, a projection of their concatenation (2d → d), one
  // transformer layer like the trunk's last (MoE when that layer is) and a final norm; the
  // embedding and output head are the trunk's, shared (the Hugging Face checkpoint stores its own
  // copies of both: DeepSeek-V3's "685B" = 671B + the MTP module with them). Run once per token
  // during training, whatever `loops` is. 0 = no MTP.
  int64_t mtp_layers = 0;

  // Derived quantities (after defaults are resolved).
  bool is_moe() const { return experts > 0; }
  bool uses_mla() const { return kv_lora_rank > 0; }
  int64_t resolved_head_dim() const;
  int64_t resolved_shared_expert_width() const;
  int64_t moe_layers() const {
    return is_moe() ? (layers - dense_layers) / interleave_moe_layer_step : 0;
  }
  // Multi-token-prediction layers with the routed MoE: all of them when the trunk's last layer
  // has it (MtpLayerConfig), else none.
  int64_t mtp_moe_layers() const { return is_moe_layer(layers - 1) ? mtp_layers : 0; }
  // Layers whose FFN is dense: the leading dense_layers and the interleaved non-MoE layers.
  int64_t dense_ffn_layers() const { return layers - moe_layers(); }
  // True iff layer i (0-based) has the routed MoE.
  bool is_moe_layer(int64_t layer) const {
    return is_moe() && layer >= dense_layers &&
           (layer - dense_layers + 1) % interleave_moe_layer_step == 0;
  }
  // True iff layer i (0-based) attends globally (see the field comments for the rule).
  bool is_global_layer(int64_t layer) const;
  int64_t global_layer_count() const;
  // KV heads used by layer i in the attention computation.
  int64_t kv_heads_of_layer(int64_t layer) const;
  // KV heads whose weights layer i stores (kv_heads_stored when set).
  int64_t kv_heads_stored_of_layer(int64_t layer) const;
  // The transformer layer of one multi-token-prediction module as a one-layer model: the trunk's
  // last layer (its FFN kind, MoE or dense, and its attention, global or windowed, with that
  // kind's KV heads), one pass, no MTP, and `vocab` as given (0: no embedding or head).
  ModelConfig MtpLayerConfig(int64_t vocab) const;
};

// Upper bounds of integer fields, far above any real model, that keep every parameter and FLOP
// count exact (products of up to six fields fit in 128 bits before narrowing to 64).
inline constexpr int64_t kMaxModelDimension = int64_t{1} << 24;  // widths, heads, experts, vocab
inline constexpr int64_t kMaxModelLayers = int64_t{1} << 20;     // layers, dense_layers, loops,
                                                                 // mtp_layers
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 30;          // max_seq_len and training seq_len

// The bounds Validate applies to integer field `name`, the one range each is checked against:
// at least 1 for the counts a model cannot do without (d_model, layers, heads, vocab, loops,
// interleave_moe_layer_step), else at least 0; at most kMaxModelLayers, kMaxSeqLen or
// kMaxModelDimension.
int64_t MinFieldValue(std::string_view name);
int64_t MaxFieldValue(std::string_view name);

// A broken rule found by Validate: the field, its value as text, and the rule.
struct Violation {
  std::string field;
  std::string value;
  std::string rule;
};

// Checks every field and cross-field rule (counts non-negative, d_model divisible by heads when
// head_dim is derived, heads divisible by KV heads, 1 <= top_k <= experts, ...). Returns the first
// violation, or nullopt when the config is valid.
std::optional<Violation> Validate(const ModelConfig& config);

// Fields set to something that shapes nothing in this configuration, one sentence each
// ("q_lora_rank = 64 has no effect: multi-head latent attention needs kv_lora_rank > 0"): the MLA
// dimensions without kv_lora_rank, the windowed layers' fields without a sliding_window,
// gated_norm_rank without GatedNorm, shared_expert_width without shared experts, dense_ffn_width
// without a dense layer. Not errors: an override (--set sliding_window=0, a swept axis) leaves
// them behind by design; `mosaic model` prints them (text and JSON "notes") so that a slip in a
// file is seen.
std::vector<std::string> UnusedFieldNotes(const ModelConfig& config);

// One entry of the field table: the single source of truth for names, types and help.
enum class FieldType { kInt, kBool, kDouble, kString };
std::string_view ToString(FieldType type);  // "integer", "boolean", "number", "string"
struct ModelField {
  std::string_view name;
  FieldType type;
  std::string_view help;
};

// Every field settable from TOML or `--set`, in declaration order.
std::span<const ModelField> ModelFields();

// Sets field `name` of `config` from `text` (e.g. "128", "true", "1.25", "rmsnorm").
// Returns an error message naming the field, value and expected type on failure; nullopt on success.
// An unknown name is reported with "did you mean".
std::optional<std::string> SetModelField(ModelConfig& config, std::string_view name,
                                         std::string_view text);

// The value of field `name` as text (integers exactly, doubles round-trip); nullopt if unknown.
std::optional<std::string> GetModelField(const ModelConfig& config, std::string_view name);

}  // namespace mosaic
