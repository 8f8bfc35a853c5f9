#include "mosaic/model/model_config.h"

#include <gtest/gtest.h>

#include "mosaic/model/model_loader.h"
#include "mosaic/util/error.h"

namespace mosaic {
namespace {

ModelConfig Mixtral() { return LoadModel("mixtral-8x7b").config; }

TEST(Validate, AcceptsEveryPreset) {
  for (const std::string& name : PresetNames()) {
    EXPECT_EQ(Validate(LoadModel(name).config), std::nullopt) << name;
  }
}

struct BadCase {
  const char* field;
  const char* value;
  const char* expected_rule;
};

class ValidateRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ValidateRejects, NamesFieldValueAndRule) {
  ModelConfig config = Mixtral();
  ASSERT_EQ(SetModelField(config, GetParam().field, GetParam().value), std::nullopt);
  std::optional<Violation> violation = Validate(config);
  ASSERT_TRUE(violation.has_value());
  EXPECT_EQ(violation->field, GetParam().field);
  EXPECT_EQ(violation->value, GetParam().value);
  EXPECT_EQ(violation->rule, GetParam().expected_rule);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, ValidateRejects,
    ::testing::Values(BadCase{"top_k", "9", "1 <= top_k <= experts (8)"},
                      BadCase{"top_k", "0", "1 <= top_k <= experts (8)"},
                      BadCase{"d_model", "4100",
                              "d_model divisible by heads (32) when head_dim is not set"},
                      BadCase{"experts", "-2", "experts >= 0"},
                      BadCase{"kv_heads", "5", "heads (32) divisible by kv_heads"},
                      BadCase{"kv_heads", "64", "kv_heads <= heads (32)"},
                      BadCase{"dense_layers", "33", "dense_layers <= layers (32)"},
                      BadCase{"latent_dim", "8192", "latent_dim <= d_model (4096)"},
                      BadCase{"loops", "0", "loops >= 1"},
                      // One rule per field: a count below its minimum is told that minimum, not
                      // the ">= 0" every count has (loops = -1 said "loops >= 0").
                      BadCase{"loops", "-1", "loops >= 1"},
                      BadCase{"heads", "-1", "heads >= 1"},
                      BadCase{"heads", "0", "heads >= 1"},
                      BadCase{"interleave_moe_layer_step", "-3", "interleave_moe_layer_step >= 1"},
                      BadCase{"loops", "1048577", "loops <= 1048576"},
                      BadCase{"capacity_factor", "-1", "capacity_factor >= 0"},
                      BadCase{"capacity_factor", "2000", "capacity_factor <= 1000"}));

// kv_heads_stored is what every layer stores: fewer than a layer uses is no model (3 stored of
// 8 used lowered the total).
TEST(Validate, StoredKvHeadsCoverTheHeadsUsed) {
  ModelConfig config = Mixtral();  // 8 KV heads on every layer
  ASSERT_EQ(SetModelField(config, "kv_heads_stored", "3"), std::nullopt);
  const std::optional<Violation> violation = Validate(config);
  ASSERT_TRUE(violation.has_value());
  EXPECT_EQ(violation->field, "kv_heads_stored");
  EXPECT_EQ(violation->rule, "kv_heads_stored >= the most KV heads a layer uses (8)");
  ASSERT_EQ(SetModelField(config, "kv_heads_stored", "8"), std::nullopt);
  EXPECT_EQ(Validate(config), std::nullopt);
}

// A field that shapes nothing is named, not refused: an override leaves it behind by design.
TEST(UnusedFieldNotes, NameFieldsThatShapeNothing) {
  for (const std::string& name : PresetNames()) {
    EXPECT_TRUE(UnusedFieldNotes(LoadModel(name).config).empty()) << name;
  }
  ModelConfig config = Mixtral();
  for (const auto& [field, value] :
       {std::pair{"q_lora_rank", "64"}, std::pair{"global_every", "2"},
        std::pair{"last_layer_global", "true"}, std::pair{"gated_norm_rank", "16"},
        std::pair{"shared_expert_width", "100"}, std::pair{"dense_ffn_width", "4096"}}) {
    ASSERT_EQ(SetModelField(config, field, value), std::nullopt) << field;
  }
  EXPECT_EQ(UnusedFieldNotes(config),
            (std::vector<std::string>{
                "q_lora_rank = 64 has no effect: multi-head latent attention needs "
                "kv_lora_rank > 0",
                "global_every = 2 has no effect: every layer is global without a sliding_window",
                "last_layer_global = true has no effect: every layer is global without a "
                "sliding_window",
                "gated_norm_rank = 16 has no effect: norm is not \"gatednorm\"",
                "shared_expert_width = 100 has no effect: shared_experts = 0",
                "dense_ffn_width = 4096 has no effect: no layer is dense (dense_layers = 0, "
                "interleave_moe_layer_step = 1)"}));
  EXPECT_EQ(Validate(config), std::nullopt);
}

TEST(SetModelField, ReportsTypeErrors) {
  ModelConfig config;
  EXPECT_EQ(SetModelField(config, "layers", "ten"),
            "layers = 'ten'. Violated constraint: layers is an integer");
  EXPECT_EQ(SetModelField(config, "glu", "yes"),
            "glu = 'yes'. Violated constraint: glu is true or false");
  EXPECT_EQ(SetModelField(config, "norm", "batchnorm"),
            "norm = 'batchnorm'. Violated constraint: norm is one of rmsnorm, layernorm, gatednorm");
  EXPECT_EQ(SetModelField(config, "expert_widht", "3"),
            "unknown model field 'expert_widht' (did you mean 'expert_width'?)");
}

// An unknown field of a model file is located at the key, with the caret under it (it was under
// the value).
TEST(LoadModelFromToml, AnUnknownFieldIsLocatedAtItsKey) {
  try {
    LoadModelFromToml("name = \"x\"\nexpert_widht = 12\n", "m.toml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.toml:2:1: unknown model field 'expert_widht' (did you mean 'expert_width'?)\n"
              "  expert_widht = 12\n"
              "  ^");
  }
}

// A required field the file leaves out is named as missing, not reported as a 0 it never wrote;
// a 0 it wrote is quoted with its place.
TEST(LoadModelFromToml, AFieldLeftOutIsMissing) {
  try {
    LoadModelFromToml("name = \"x\"\n", "m.toml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "m.toml: d_model is missing. Violated constraint: d_model >= 1");
  }
  try {
    LoadModelFromToml("name = \"x\"\nd_model = 0\n", "m.toml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("m.toml:2:11: d_model = 0. Violated constraint: d_model "
                                          ">= 1",
                                          0),
              0u)
        << e.what();
  }
}

TEST(LoadModelFromToml, OverridesAreNamedWhereTheyWereWritten) {
  // A rule broken at a field of the file after overrides names each override by its origin: a
  // flag as "--set", one from another file (a study's arm, a space's axes) at its location.
  const std::vector<FieldOverride> overrides = {
      {"experts", "2", {"study.toml", 11, 19, ""}}, {"d_model", "768", {}}};
  try {
    LoadModel("marin-ladder", overrides);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("top_k = 4. Violated constraint: 1 <= top_k <= experts "
                                         "(2) (after experts=2 (study.toml:11:19), --set "
                                         "d_model=768)"),
              std::string::npos)
        << e.what();
  }
  // A field two overrides set names where the first was written.
  const std::vector<FieldOverride> twice = {{"experts", "4", {"study.toml", 36, 19, ""}},
                                            {"experts", "192", {"study.toml", 60, 19, ""}}};
  try {
    LoadModel("marin-ladder", twice);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("study.toml:60:19: experts is set twice (to 4 at "
                                         "study.toml:36:19 and to 192)"),
              std::string::npos)
        << e.what();
  }
}

TEST(SetModelField, RoundTripsThroughGet) {
  ModelConfig config;
  for (const ModelField& field : ModelFields()) {
    std::optional<std::string> value = GetModelField(config, field.name);
    ASSERT_TRUE(value.has_value()) << field.name;
    EXPECT_EQ(SetModelField(config, field.name, *value), std::nullopt) << field.name;
  }
}

// GPT-OSS alternates: layer 0 windowed, layer 1 global, ...
TEST(ModelConfig, LayerPattern) {
  const ModelConfig config = LoadModel("gpt-oss-120b").config;
  EXPECT_FALSE(config.is_global_layer(0));
  EXPECT_TRUE(config.is_global_layer(1));
  EXPECT_EQ(config.global_layer_count(), 18);
  // The hero stores 12 KV heads on every layer but uses 6 on global layers.
  const ModelConfig hero = LoadModel("marin-hero-fsdp").config;
  EXPECT_EQ(hero.kv_heads_of_layer(5), 6);
  EXPECT_EQ(hero.kv_heads_stored_of_layer(5), 12);
  EXPECT_EQ(hero.kv_heads_of_layer(0), 12);
}

// interleave_moe_layer_step n: after the leading dense layers, every n-th layer is MoE (Llama 4
// Maverick's config places the MoE on layers 1, 3, …, 47 with n = 2).
TEST(ModelConfig, InterleavedMoeLayers) {
  const ModelConfig maverick = LoadModel("llama4-maverick").config;
  EXPECT_EQ(maverick.interleave_moe_layer_step, 2);
  EXPECT_EQ(maverick.moe_layers(), 24);
  EXPECT_EQ(maverick.dense_ffn_layers(), 24);
  EXPECT_FALSE(maverick.is_moe_layer(0));
  EXPECT_TRUE(maverick.is_moe_layer(1));
  EXPECT_TRUE(maverick.is_moe_layer(47));
  // With leading dense layers (DeepSeek's first_k_dense_replace) the step counts after them.
  ModelConfig c = LoadModel("deepseek-v3").config;
  ASSERT_EQ(SetModelField(c, "layers", "10"), std::nullopt);
  ASSERT_EQ(SetModelField(c, "dense_layers", "2"), std::nullopt);
  ASSERT_EQ(SetModelField(c, "interleave_moe_layer_step", "3"), std::nullopt);
  EXPECT_EQ(GetModelField(c, "interleave_moe_layer_step"), "3");
  int64_t moe = 0;
  for (int64_t i = 0; i < c.layers; ++i) moe += c.is_moe_layer(i) ? 1 : 0;
  EXPECT_EQ(moe, c.moe_layers());
  EXPECT_EQ(c.moe_layers(), 2);  // layers 4 and 7
  EXPECT_TRUE(c.is_moe_layer(4));
  EXPECT_TRUE(c.is_moe_layer(7));
  EXPECT_EQ(c.dense_ffn_layers(), 8);
  EXPECT_EQ(Validate(c), std::nullopt);
}

TEST(Validate, InterleaveStepRules) {
  ModelConfig c = LoadModel("qwen3-235b-a22b").config;
  c.interleave_moe_layer_step = 0;
  ASSERT_TRUE(Validate(c));
  EXPECT_EQ(Validate(c)->rule, "interleave_moe_layer_step >= 1");
  c.interleave_moe_layer_step = 2;  // 47 of 94 layers would be dense, with no width given
  ASSERT_TRUE(Validate(c));
  EXPECT_EQ(Validate(c)->field, "dense_ffn_width");
  c.dense_ffn_width = 12288;
  EXPECT_EQ(Validate(c), std::nullopt);
  c.interleave_moe_layer_step = 95;
  ASSERT_TRUE(Validate(c));
  EXPECT_EQ(Validate(c)->rule, "interleave_moe_layer_step <= layers − dense_layers (94)");
  ModelConfig dense = LoadModel("llama3-70b").config;
  dense.interleave_moe_layer_step = 2;
  ASSERT_TRUE(Validate(dense));
  EXPECT_EQ(Validate(dense)->field, "interleave_moe_layer_step");
}
}  // namespace
}  // namespace mosaic
