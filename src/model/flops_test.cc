#include "mosaic/model/flops.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mosaic/model/model_loader.h"
#include "mosaic/model/param_count.h"

namespace mosaic {
namespace {

ModelConfig WithFields(const std::string& preset, std::vector<FieldOverride> fields) {
  return LoadModel(preset, std::span(fields.data(), fields.size())).config;
}

// Each multi-token-prediction module adds, once per token: one layer like the trunk's last (the
// difference between 61 and 60 layers of DeepSeek-V3, whose last layers are MoE), its logits over
// the shared head (2·d·V) and its 2d → d projection (4·d²).
TEST(Flops, MultiTokenPredictionAddsOneLastLayerAHeadAndAProjection) {
  for (const FlopConvention convention : {FlopConvention::kFullSquare, FlopConvention::kCausal}) {
    const FlopOptions options{convention, 4096};
    const int64_t base = CountFlops(WithFields("deepseek-v3", {}), options).forward_flops_per_token;
    const int64_t mtp =
        CountFlops(WithFields("deepseek-v3", {{"mtp_layers", "1"}}), options).forward_flops_per_token;
    const int64_t one_layer_less =
        CountFlops(WithFields("deepseek-v3", {{"layers", "60"}}), options).forward_flops_per_token;
    const int64_t d = 7168, vocab = 129280;
    EXPECT_EQ(mtp - base, (base - one_layer_less) + 2 * d * vocab + 4 * d * d)
        << ToString(convention);
    const int64_t two = CountFlops(WithFields("deepseek-v3", {{"mtp_layers", "2"}}), options)
                            .forward_flops_per_token;
    EXPECT_EQ(two - base, 2 * (mtp - base));
  }
  // Once per token: a looped model pays its block `loops` times and its MTP modules once.
  const FlopOptions options{FlopConvention::kFullSquare, 1024};
  const auto forward = [&](const char* loops, const char* mtp) {
    return CountFlops(WithFields("looped-moe-329m", {{"loops", loops}, {"mtp_layers", mtp}}),
                      options)
        .forward_flops_per_token;
  };
  EXPECT_EQ(forward("4", "1") - forward("4", "0"), forward("1", "1") - forward("1", "0"));
}

ModelConfig Ladder(int64_t d_model) {
  const FieldOverride d{"d_model", std::to_string(d_model)};
  return LoadModel("marin-ladder", std::span(&d, 1)).config;
}

// Forward FLOPs per token of the seed-000 ladder, by the formula of docs/accounting.md ("Training
// FLOPs (Levanter analytic estimate)") evaluated independently: levanter-table with S = 8192 and
// G = L // 4; physical with S = 4096 and the real global layers.
struct LadderFlops {
  int64_t d_model;
  int64_t levanter_table;
  int64_t physical;
};

class LadderForwardFlops : public ::testing::TestWithParam<LadderFlops> {};

TEST_P(LadderForwardFlops, MatchTheFormula) {
  const LadderFlops& expected = GetParam();
  const ModelConfig config = Ladder(expected.d_model);
  EXPECT_EQ(CountFlops(config, {FlopConvention::kLevanterTable, 4096}).forward_flops_per_token,
            expected.levanter_table);
  EXPECT_EQ(CountFlops(config, {FlopConvention::kPhysical, 4096}).forward_flops_per_token,
            expected.physical);
}

INSTANTIATE_TEST_SUITE_P(Seed000, LadderForwardFlops,
                         ::testing::Values(LadderFlops{768, 394'125'312, 368'812'032},
                                           LadderFlops{1024, 730'841'088, 680'214'528},
                                           LadderFlops{1536, 1'616'609'280, 1'515'356'160},
                                           LadderFlops{2048, 3'273'097'216, 3'119'120'384}));

// The table convention counts L // 4 = 5 global layers for d2048; 6 are global (3, 7, 11, 15, 19
// and the last, 21).
TEST(Flops, GlobalLayerCountsDifferByConvention) {
  const ModelConfig config = Ladder(2048);
  EXPECT_EQ(config.global_layer_count(), 6);
  EXPECT_EQ(CountFlops(config, {FlopConvention::kLevanterTable, 4096}).global_layers, 5);
  EXPECT_EQ(CountFlops(config, {FlopConvention::kPhysical, 4096}).global_layers, 6);
  EXPECT_EQ(CountFlops(config, {FlopConvention::kLevanterTable, 4096}).attention_span_tokens, 8192);
  EXPECT_EQ(CountFlops(config, {FlopConvention::kPhysical, 4096}).attention_span_tokens, 4096);
}

// Levanter's mlp term for Mixtral 8x7B (dense attention, no window): 2·3·d·I·k + 2·d·E per layer,
// and every layer at span S.
TEST(Flops, MixtralComponents) {
  const ModelConfig config = LoadModel("mixtral-8x7b").config;
  const FlopCount f = CountFlops(config, {FlopConvention::kPhysical, 4096});
  const int64_t d = 4096, L = 32, I = 14336, H = 32, kv = 8, hd = 128, V = 32000;
  EXPECT_EQ(f.mlp_flops, L * 2 * 3 * d * I * 2);
  EXPECT_EQ(f.router_flops, L * 2 * d * 8);
  EXPECT_EQ(f.attention_projection_flops, L * (2 * d * (H * hd + 2 * kv * hd) + 2 * d * d));
  EXPECT_EQ(f.attention_score_flops, L * 4096 * (4 * H * hd + 3 * H));
  EXPECT_EQ(f.lm_head_flops, 2 * d * V);
  EXPECT_EQ(f.global_layers, 32);
}

// LatentMoE: routed expert FLOPs equal the plain shape's (k·3·ℓ·d = k·3·d·d/2); each token adds the
// two projections, 2·2·d·ℓ per MoE layer (docs/accounting.md).
TEST(Flops, LatentMoeKeepsExpertFlopsAndAddsProjections) {
  const FlopCount fsdp = CountFlops(LoadModel("marin-hero-fsdp").config, {});
  const FlopCount ep = CountFlops(LoadModel("marin-hero-ep").config, {});
  EXPECT_EQ(ep.mlp_flops, fsdp.mlp_flops);
  EXPECT_EQ(ep.latent_projection_flops, int64_t{48} * 2 * 2 * 6144 * 3072);
  EXPECT_EQ(ep.forward_flops_per_token - fsdp.forward_flops_per_token,
            ep.latent_projection_flops);
}

// A looped model pays the layer stack `loops` times, the lm_head once.
TEST(Flops, LoopsMultiplyTheLayerStack) {
  const ModelConfig base = LoadModel("looped-moe-329m").config;  // loops = 3
  ModelConfig one = base;
  one.loops = 1;
  const FlopCount f3 = CountFlops(base, {});
  const FlopCount f1 = CountFlops(one, {});
  EXPECT_EQ(f3.forward_flops_per_token - f3.lm_head_flops,
            3 * (f1.forward_flops_per_token - f1.lm_head_flops));
  EXPECT_EQ(f3.lm_head_flops, f1.lm_head_flops);
}

// For a dense model without windows the estimate is close to 2·N plus attention: Llama 3 70B at
// 4096 tokens is within 10% of 2 × active non-embedding params + the lm_head.
TEST(Flops, DenseModelNearTwoN) {
  const ModelConfig config = LoadModel("llama3-70b").config;
  const ParamCount p = CountParams(config);
  const FlopCount f = CountFlops(config, {FlopConvention::kPhysical, 4096});
  const double two_n = 2.0 * static_cast<double>(p.active_params_no_embedding) + f.lm_head_flops;
  EXPECT_NEAR(static_cast<double>(f.forward_flops_per_token) / two_n, 1.0, 0.10);
  EXPECT_EQ(f.mlp_flops, 80 * 2 * 3 * int64_t{8192} * 28672);
}

TEST(FlopConvention, RoundTripsNames) {
  for (FlopConvention c :
       {FlopConvention::kLevanterTable, FlopConvention::kFullSquare, FlopConvention::kCausal}) {
    EXPECT_EQ(FlopConventionFromString(ToString(c)), c);
  }
  EXPECT_EQ(ToString(FlopConvention::kFullSquare), "full-square");
  EXPECT_EQ(ToString(FlopConvention::kCausal), "causal");
  // The former name of the full-square convention still reads.
  EXPECT_EQ(FlopConventionFromString("physical"), FlopConvention::kFullSquare);
  EXPECT_EQ(FlopConventionFromString("levanter"), std::nullopt);
}

// Causal: the global layers' scores are half the square (Mixtral: every layer global, 32 layers
// at span 4096); everything else is the full-square count.
TEST(Flops, CausalCountsHalfTheAttentionSquare) {
  const ModelConfig config = LoadModel("mixtral-8x7b").config;
  const FlopCount full = CountFlops(config, {FlopConvention::kFullSquare, 4096});
  const FlopCount causal = CountFlops(config, {FlopConvention::kCausal, 4096});
  const int64_t H = 32, hd = 128;
  EXPECT_EQ(causal.attention_score_flops, 32 * (4096 * (4 * H * hd + 3 * H) / 2));
  EXPECT_EQ(full.forward_flops_per_token - causal.forward_flops_per_token,
            full.attention_score_flops - causal.attention_score_flops);
  EXPECT_EQ(causal.convention, FlopConvention::kCausal);
}

// Causal with sliding windows: a window w < s covers the band below the diagonal, s·w − w²/2
// keys per sequence (gpt-oss-120b: 18 windowed layers of w = 128 beside 18 global ones, 64 heads
// of 64); a window of s or more is a global layer's half square (Llama 4 Scout's chunks of 8192
// at 8192 tokens: the 36 chunked layers and the 12 global ones alike). MaxText's causal count
// of Scout on v5p (tests/fixtures/throughput, row P9: 225.491 TFLOP/s at 2070.487 tokens/s,
// 108.9 GFLOP per token) agrees with it within 0.1%.
TEST(Flops, CausalWindowsCountTheirBand) {
  const ModelConfig oss = LoadModel("gpt-oss-120b").config;
  const int64_t s = 4096, w = 128, per_key = 4 * 64 * 64 + 3 * 64;  // QKᵀ and PV, softmax
  EXPECT_EQ(CountFlops(oss, {FlopConvention::kCausal, s}).attention_score_flops,
            18 * (s * per_key / 2) + 18 * ((2 * w * s - w * w) * per_key / (2 * s)));
  EXPECT_EQ(CountFlops(oss, {FlopConvention::kFullSquare, s}).attention_score_flops,
            18 * s * per_key + 18 * w * per_key);
  const ModelConfig scout = LoadModel("llama4-scout").config;
  const int64_t s8 = 8192, scout_key = 4 * 40 * 128 + 3 * 40;
  EXPECT_EQ(CountFlops(scout, {FlopConvention::kCausal, s8}).attention_score_flops,
            48 * (s8 * scout_key / 2));
  // Past one chunk, Llama 4's chunked layers (chunked_window) meet their own chunk's keys: 8192
  // per query full-square and 4096 causal at 16384 tokens, where a sliding window of 8192
  // would meet 8192 − 8192²/(2·16384) = 6144 causal.
  const int64_t s16 = 16384;
  EXPECT_EQ(CountFlops(scout, {FlopConvention::kCausal, s16}).attention_score_flops,
            12 * (s16 * scout_key / 2) + 36 * (4096 * scout_key));
  EXPECT_EQ(CountFlops(scout, {FlopConvention::kFullSquare, s16}).attention_score_flops,
            12 * s16 * scout_key + 36 * (8192 * scout_key));
  ModelConfig sliding = scout;
  sliding.chunked_window = false;
  EXPECT_EQ(CountFlops(sliding, {FlopConvention::kCausal, s16}).attention_score_flops,
            12 * (s16 * scout_key / 2) + 36 * (6144 * scout_key));
  constexpr double kMaxTextCountTol = 1e-3;  // relative
  const double maxtext_flops_per_token = 225.491e12 / 2070.487;
  const double causal = static_cast<double>(
      CountFlops(scout, {FlopConvention::kCausal, s8}).train_flops_per_token());
  EXPECT_NEAR(causal / maxtext_flops_per_token, 1.0, kMaxTextCountTol);
}

// Llama 4 Maverick: 24 dense FFNs (width 16384) and 24 MoE layers running one routed expert and
// the shared one (width 8192 each), 2 FLOPs per multiply-add, 3 SwiGLU matrices.
TEST(Flops, InterleavedMoeLayersCountDenseAndExpertFfnsExactly) {
  const ModelConfig c = LoadModel("llama4-maverick").config;
  const FlopCount f = CountFlops(c, {FlopConvention::kCausal, 8192});
  EXPECT_EQ(f.mlp_flops, 2 * 3 * int64_t{5120} * (24 * 16384 + 24 * (8192 + 8192)));
  EXPECT_EQ(f.router_flops, 2 * int64_t{5120} * 128 * 24);
}
}  // namespace
}  // namespace mosaic
