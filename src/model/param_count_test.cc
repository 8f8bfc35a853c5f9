#include "mosaic/model/param_count.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "mosaic/model/model_loader.h"
#include "mosaic/util/number_format.h"

namespace mosaic {
namespace {

ParamCount CountPreset(const std::string& name) { return CountParams(LoadModel(name).config); }

ParamCount CountLadder(int64_t d_model) {
  const FieldOverride d{"d_model", std::to_string(d_model)};
  return CountParams(LoadModel("marin-ladder", std::span(&d, 1)).config);
}

// docs/accounting.md: "Exact integers behind it: active params 54,263,808 / 145,489,920 /
// 434,110,464 / 1,060,634,624" (the seed-000 table convention).
TEST(ParamCount, LadderTableActiveParamsAreExact) {
  EXPECT_EQ(CountLadder(768).active_params_matmul_no_embedding, 54'263'808);
  EXPECT_EQ(CountLadder(1024).active_params_matmul_no_embedding, 145'489'920);
  EXPECT_EQ(CountLadder(1536).active_params_matmul_no_embedding, 434'110'464);
  EXPECT_EQ(CountLadder(2048).active_params_matmul_no_embedding, 1'060'634'624);
}

// docs/accounting.md "The hero shapes": 359,643,629,568 total and 22,622,914,560 active with every
// small parameter; 359.47B / 22.45B from matmul weights alone; 171,853,824 small parameters;
// Marin's "20.9B" is the matmul-only count without embeddings.
TEST(ParamCount, MarinHeroFsdpIsExact) {
  const ParamCount p = CountPreset("marin-hero-fsdp");
  EXPECT_EQ(p.total_params, 359'643'629'568);
  EXPECT_EQ(p.active_params, 22'622'914'560);
  EXPECT_EQ(p.total_params - p.total_params_matmul, 171'853'824);
  EXPECT_EQ(FormatCount(static_cast<double>(p.total_params_matmul)), "359.5B");
  EXPECT_EQ(p.total_params_matmul, 359'471'775'744);
  EXPECT_EQ(p.active_params_matmul, 22'451'060'736);
  EXPECT_EQ(FormatCount(static_cast<double>(p.active_params_matmul_no_embedding)), "20.9B");
  // Printed digits of the seed: "359.6B total / 22.6B active".
  EXPECT_EQ(FormatCount(static_cast<double>(p.total_params)), "359.6B");
  EXPECT_EQ(FormatCount(static_cast<double>(p.active_params)), "22.6B");
  // Active = total − the 124 routed experts a token does not use, per layer.
  EXPECT_EQ(p.total_params - p.active_params, int64_t{48} * 124 * 3 * 6144 * 3072);
}

// The EP option: the FSDP hero plus, per MoE layer, the two latent projections (2·d·ℓ) and the
// latent RMSNorm (ℓ); routed expert parameters unchanged (128 × 3 × ℓ × d = 128 × 3 × d × d/2).
TEST(ParamCount, MarinHeroEpAddsOnlyTheLatentProjections) {
  const ParamCount fsdp = CountPreset("marin-hero-fsdp");
  const ParamCount ep = CountPreset("marin-hero-ep");
  const int64_t latent_per_layer = 2 * 6144 * 3072 + 3072;
  EXPECT_EQ(ep.total_params - fsdp.total_params, 48 * latent_per_layer);
  EXPECT_EQ(ep.active_params - fsdp.active_params, 48 * latent_per_layer);
  EXPECT_EQ(ep.total_params, 361'455'716'352);
}

// Publishers round and truncate: a preset's total matches its public figure within 1.6% of the
// printed number (docs/accounting.md). Active counts are printed under each publisher's own
// convention; they match when within 1.6% too, or when the printed digits are our value truncated
// (Qwen prints 3.35B as "3.3B").
constexpr double kPublishedRelTol = 0.016;

// "37B" -> {37e9, 0 decimals}; "3.3B" -> {3.3e9, 1 decimal}.
struct Printed {
  double value;
  int decimals;
  double unit;
};

Printed ParsePrinted(const std::string& text) {
  const double unit = text.back() == 'B' ? 1e9 : 1e6;
  const std::string digits = text.substr(0, text.size() - 1);
  const size_t point = digits.find('.');
  const int decimals = point == std::string::npos ? 0 : static_cast<int>(digits.size() - point - 1);
  return {std::stod(digits) * unit, decimals, unit};
}

bool WithinTolerance(int64_t value, const Printed& printed) {
  return std::fabs(static_cast<double>(value) - printed.value) / printed.value <= kPublishedRelTol;
}

bool TruncatesTo(int64_t value, const Printed& printed) {
  const double scale = std::pow(10.0, printed.decimals);
  const double truncated = std::floor(static_cast<double>(value) / printed.unit * scale) / scale;
  return std::fabs(truncated * printed.unit - printed.value) < 1e-6 * printed.value;
}

struct PublishedTotals {
  const char* preset;
  const char* total;   // printed total
  const char* active;  // printed active (inclusive)
  const char* source;
};

class PresetTotals : public ::testing::TestWithParam<PublishedTotals> {};

TEST_P(PresetTotals, MatchPublishedFigures) {
  const PublishedTotals& published = GetParam();
  const ParamCount p = CountPreset(published.preset);
  EXPECT_TRUE(WithinTolerance(p.total_params, ParsePrinted(published.total)))
      << published.preset << " total " << p.total_params << " vs " << published.total << " ("
      << published.source << ")";
  const Printed active = ParsePrinted(published.active);
  EXPECT_TRUE(WithinTolerance(p.active_params, active) || TruncatesTo(p.active_params, active))
      << published.preset << " active " << p.active_params << " vs " << published.active << " ("
      << published.source << ")";
}

INSTANTIATE_TEST_SUITE_P(
    Public, PresetTotals,
    ::testing::Values(
        PublishedTotals{"deepseek-v3", "671B", "37B", "arXiv 2412.19437"},
        PublishedTotals{"qwen3-235b-a22b", "235B", "22B", "Qwen3 report arXiv 2505.09388"},
        PublishedTotals{"qwen3-30b-a3b", "30.5B", "3.3B", "Qwen/Qwen3-30B-A3B model card"},
        PublishedTotals{"mixtral-8x7b", "46.7B", "12.9B", "arXiv 2401.04088"},
        PublishedTotals{"mixtral-8x22b", "141B", "39B", "mistral.ai announcement"},
        PublishedTotals{"olmoe-1b-7b", "6.9B", "1.3B", "arXiv 2409.02060"},
        PublishedTotals{"llama3-70b", "70.6B", "70.6B", "meta-llama/Meta-Llama-3-70B card"},
        PublishedTotals{"llama3-8b", "8B", "8B", "arXiv 2407.21783 Table 3"},
        PublishedTotals{"llama3-405b", "405B", "405B", "arXiv 2407.21783"},
        PublishedTotals{"llama4-maverick", "400B", "17B", "Meta Llama 4 announcement (2025)"}),
    [](const auto& info) {
      std::string name = info.param.preset;
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

// DeepSeek's 671B excludes the multi-token-prediction module; its "37B" is 37.5B truncated.
TEST(ParamCount, DeepSeekV3Digits) {
  const ParamCount p = CountPreset("deepseek-v3");
  EXPECT_EQ(p.total_params, 671'026'419'200);
  EXPECT_EQ(FormatCount(static_cast<double>(p.total_params)), "671.0B");
  EXPECT_EQ(static_cast<int64_t>(p.active_params / 100'000'000), 375);  // 37.5B truncated
}

// DeepSeek-V3's multi-token-prediction module (mtp_layers = 1; deepseek-ai/DeepSeek-V3
// README_WEIGHTS.md: enorm, hnorm, eh_proj, one hidden layer identical to the trunk's, the
// embedding and head shared). Its unique parameters, counted here exactly:
//   eh_proj 2·7168·7168 = 102,760,448; the MoE layer 11,507,270,656 (MLA 187,105,280 + its 2,048
//   norm weights, router 1,835,008 + 256 biases, 256 experts 11,274,289,152, shared expert
//   44,040,192); norms 5·7168 = 35,840: 11,610,068,224 in all.
// DeepSeek's README gives "11.5B unique", which is the layer without eh_proj (11.507B); the
// projection is in the checkpoint as model.layers.61.eh_proj.weight [7168, 14336].
TEST(ParamCount, DeepSeekV3MultiTokenPredictionModuleIsExact) {
  const FieldOverride mtp{"mtp_layers", "1"};
  const ParamCount with = CountParams(LoadModel("deepseek-v3", std::span(&mtp, 1)).config);
  const ParamCount without = CountPreset("deepseek-v3");
  EXPECT_EQ(with.total_params - without.total_params, 11'610'068'224);
  EXPECT_EQ(with.total_params, 682'636'487'424);
  EXPECT_EQ(with.embedding_params, without.embedding_params);  // shared, not counted again
  int64_t routed = 0, projection = 0, norms = 0;
  for (const ParamComponent& c : with.components) {
    if (c.name == "mtp_routed_experts") routed = c.total_params;
    if (c.name == "mtp_projection") projection = c.total_params;
    if (c.name == "mtp_norms") norms = c.total_params;
  }
  EXPECT_EQ(routed, int64_t{256} * 3 * 7168 * 2048);
  EXPECT_EQ(projection, int64_t{2} * 7168 * 7168);
  EXPECT_EQ(norms, 5 * 7168);
  // Active: the projection, attention, norms, router, 8 of 256 experts and the shared expert.
  EXPECT_EQ(with.active_params - without.active_params,
            102'760'448 + 187'105'280 + 2'048 + 35'840 + 1'835'008 + 256 +
                int64_t{8} * 3 * 7168 * 2048 + 44'040'192);
}

// OpenAI: 116.83B total, 5.13B active, the latter leaving out the input embedding only.
TEST(ParamCount, GptOss120bOpenAiConvention) {
  const ParamCount p = CountPreset("gpt-oss-120b");
  EXPECT_TRUE(WithinTolerance(p.total_params, ParsePrinted("116.83B")));
  const int64_t input_embedding = int64_t{201'088} * 2880;
  EXPECT_EQ(FormatCount(static_cast<double>(p.active_params - input_embedding)), "5.13B");
}

// Seed 004's facts give ~285M tied (the preset) and ~310M untied, not the "329M" of the name.
TEST(ParamCount, LoopedModelCountsParametersOnce) {
  const ParamCount tied = CountPreset("looped-moe-329m");
  EXPECT_EQ(FormatCount(static_cast<double>(tied.total_params)), "284.9M");
  const FieldOverride untie{"tied_embeddings", "false"};
  const ParamCount untied = CountParams(LoadModel("looped-moe-329m", std::span(&untie, 1)).config);
  EXPECT_EQ(FormatCount(static_cast<double>(untied.total_params)), "310.0M");
  const FieldOverride loops{"loops", "12"};
  EXPECT_EQ(CountParams(LoadModel("looped-moe-329m", std::span(&loops, 1)).config).total_params,
            tied.total_params);
}

TEST(ParamCount, DenseModelHasNoSparsity) {
  const ParamCount p = CountPreset("llama3-70b");
  EXPECT_EQ(p.total_params, p.active_params);
  EXPECT_EQ(p.sparsity, 0.0);
}

// Sparsity = inactive share of all parameters (MOSAIC): Mixtral 8x7B uses 2 of 8 experts.
TEST(ParamCount, SparsityIsInactiveShare) {
  const ParamCount p = CountPreset("mixtral-8x7b");
  EXPECT_DOUBLE_EQ(p.sparsity, 1.0 - static_cast<double>(p.active_params) /
                                         static_cast<double>(p.total_params));
  EXPECT_NEAR(p.sparsity, 0.7242, 1e-4);
}

// Llama 4 Maverick's text model, counted by hand from its config.json: 48 layers of GQA attention
// (q and o 5120×5120, k and v 5120×1024), 97 RMSNorms, 24 dense SwiGLU FFNs of width 16384, and
// 24 MoE layers (every second, interleave_moe_layer_step 2) of a 5120×128 router, 128 routed
// experts and one shared expert of width 8192; untied embeddings of 202048 × 5120.
TEST(ParamCount, Llama4MaverickInterleavesDenseAndMoeLayersExactly) {
  const ParamCount p = CountPreset("llama4-maverick");
  const int64_t attention = int64_t{48} * (2 * 5120 * 5120 + 2 * 5120 * 1024);
  const int64_t norms = 97 * 5120;
  const int64_t dense = 24 * int64_t{3} * 5120 * 16384;
  const int64_t expert = int64_t{3} * 5120 * 8192;
  const int64_t moe = 24 * (5120 * 128 + 128 * expert + expert);
  const int64_t embeddings = int64_t{2} * 202048 * 5120;
  EXPECT_EQ(p.total_params, attention + norms + dense + moe + embeddings);
  EXPECT_EQ(p.total_params, 400'711'848'960);
  // Active: one routed expert of 128 and the shared one per MoE layer.
  EXPECT_EQ(p.active_params, p.total_params - 24 * 127 * expert);
  EXPECT_EQ(p.active_params, 17'184'691'200);
}
// Llama 4 Scout's text model, counted by hand from its config.json: 48 layers of GQA attention
// (q and o 5120×5120, k and v 5120×1024), 97 RMSNorms, and 48 MoE layers (interleave_moe_layer_step
// 1) of a 5120×16 router, 16 routed experts and one shared expert of width 8192; untied
// embeddings of 202048 × 5120: 107.8B. Meta's "109B" is the multimodal model's (vision encoder
// and all); its "17B" active is the text model's.
TEST(ParamCount, Llama4ScoutCountsEveryLayerAsMoeExactly) {
  const ParamCount p = CountPreset("llama4-scout");
  const int64_t attention = int64_t{48} * (2 * 5120 * 5120 + 2 * 5120 * 1024);
  const int64_t norms = 97 * 5120;
  const int64_t expert = int64_t{3} * 5120 * 8192;
  const int64_t moe = 48 * (5120 * 16 + 16 * expert + expert);
  const int64_t embeddings = int64_t{2} * 202048 * 5120;
  EXPECT_EQ(p.total_params, attention + norms + moe + embeddings);
  EXPECT_EQ(p.total_params, 107'769'861'120);
  // Active: one routed expert of 16 and the shared one per layer.
  EXPECT_EQ(p.active_params, p.total_params - 48 * 15 * expert);
  EXPECT_EQ(FormatCount(static_cast<double>(p.active_params)), "17.2B");
}

// Llama 3.1 8B: 8,030,261,248 parameters, the count of meta-llama/Llama-3.1-8B's safetensors.
TEST(ParamCount, Llama3_8bMatchesItsCheckpoint) {
  EXPECT_EQ(CountPreset("llama3-8b").total_params, 8'030'261'248);
}
}  // namespace
}  // namespace mosaic
