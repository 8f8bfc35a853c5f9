#include "mosaic/perf/layout.h"

#include <gtest/gtest.h>

#include "mosaic/model/model_loader.h"
#include "mosaic/util/error.h"

namespace mosaic {
namespace {

TEST(Layout, ParsesKeysAndDefaults) {
  Layout l = ParseLayout("tp=2,pp=8,vpp=4,ep=64,dp=64,mbs=1,recompute=selective");
  EXPECT_EQ(l.tp, 2);
  EXPECT_EQ(l.pp, 8);
  EXPECT_EQ(l.vpp, 4);
  EXPECT_EQ(l.ep, 64);
  EXPECT_EQ(l.dp, 64);
  EXPECT_EQ(l.fsdp, 1);
  EXPECT_EQ(l.cp, 1);
  EXPECT_EQ(l.recompute, Recompute::kSelective);
  EXPECT_EQ(l.gpus(), 1024);
  EXPECT_EQ(ParseLayout(ToString(l)), l);
  EXPECT_EQ(ParseLayout("recompute=modules").recompute, Recompute::kModules);
  EXPECT_EQ(ParseLayout(ToString(ParseLayout("recompute=modules"))).recompute,
            Recompute::kModules);
}

TEST(Layout, RejectsUnknownKeyWithSuggestion) {
  try {
    ParseLayout("tp=2,fsd=4");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown layout key 'fsd' (did you mean 'fsdp'?)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseLayout("tp=0"), InputError);
  EXPECT_THROW(ParseLayout("tp=2,tp=4"), InputError);
  EXPECT_THROW(ParseLayout("recompute=some"), InputError);
}

// Degrees whose product overflows 64 bits (found by fuzz/layout_fuzz.cc) are refused when the
// layout is read: each degree and the GPU count are at most 2^24.
TEST(Layout, DegreesAndGpuCountAreBounded) {
  const auto error = [](std::string_view text) -> std::string {
    try {
      ParseLayout(text);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error("tp=9999999999,pp=9999999999,dp=9999999"),
            "--layout tp=9999999999,pp=9999999999,dp=9999999: tp = 9999999999. Violated "
            "constraint: tp <= 16777216");
  EXPECT_EQ(error("tp=4096,pp=4096,dp=2"),
            "--layout tp=4096,pp=4096,dp=2: tp·pp·cp·dp·fsdp = 4096·4096·1·2·1. Violated "
            "constraint: at most 16777216 GPUs");
  EXPECT_EQ(ParseLayout("tp=4096,pp=4096").gpus(), kMaxLayoutDegree);
  EXPECT_EQ(ParseLayout("ep=16777216,etp=16777216").ep, kMaxLayoutDegree);
}

TEST(Layout, ProductMustEqualGpus) {
  ModelConfig m = LoadModel("deepseek-v3").config;
  auto v = CheckLayout(ParseLayout("tp=2,pp=8,ep=64,dp=32"), m, {1024, 8192, 4096}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, RejectKind::kIndivisible);
  EXPECT_EQ(v->rule, "tp·pp·cp·dp·fsdp = GPUs (2·8·1·32·1 = 512 != 1024)");
}

TEST(Layout, EpMustDivideExperts) {
  ModelConfig m = LoadModel("mixtral-8x7b").config;
  auto v = CheckLayout(ParseLayout("ep=16,dp=16"), m, {16, 256, 4096}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "ep divides experts (8 % 16 != 0)");
}

TEST(Layout, TpMustDivideHeads) {
  ModelConfig m = LoadModel("marin-hero-fsdp").config;  // 48 heads
  auto v = CheckLayout(ParseLayout("tp=32,dp=2"), m, {64, 1024, 4096}, 64);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "tp divides heads (48 % 32 != 0)");
}

TEST(Layout, ExpertGroupMustDivideFoldedGroup) {
  ModelConfig m = LoadModel("deepseek-v3").config;
  auto v = CheckLayout(ParseLayout("pp=16,ep=64,etp=2,dp=64"), m, {1024, 8192, 4096}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "ep·etp divides tp·cp·dp·fsdp (64·2 = 128 does not divide 64)");
}

TEST(Layout, TpOverTheDomainIsRejected) {
  ModelConfig m = LoadModel("llama3-70b").config;
  auto v = CheckLayout(ParseLayout("tp=16,dp=4"), m, {64, 256, 4096}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, RejectKind::kDomain);
}

TEST(Layout, UnevenPipelineStagesAreValid) {
  ModelConfig m = LoadModel("deepseek-v3").config;  // 61 layers
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=1,pp=16,ep=8,dp=16"), m, {256, 4096, 4096}, 8));
}

TEST(Layout, InterleavingNeedsAMultipleOfPpMicroBatches) {
  // Megatron-Core's interleaved 1F1B refuses a micro-batch count that pp does not divide: llama3
  // 70B on 64 H100 at batch 4 has one micro-batch per pipeline at dp = 4.
  ModelConfig m = LoadModel("llama3-70b").config;
  auto v = CheckLayout(ParseLayout("tp=8,pp=2,vpp=8,dp=4"), m, {64, 4, 4096}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, RejectKind::kIndivisible);
  EXPECT_EQ(v->rule,
            "vpp > 1 needs micro-batches per pipeline a multiple of pp, as Megatron-Core's "
            "interleaved schedule (1 % 2 != 0)");
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=8,pp=2,dp=4"), m, {64, 4, 4096}, 8));
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=8,pp=2,vpp=8,dp=4"), m, {64, 8, 4096}, 8));
}

}  // namespace
}  // namespace mosaic
