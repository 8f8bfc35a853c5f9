#include "mosaic/perf/layout.h"

#include <set>

#include <gtest/gtest.h>

#include "mosaic/hardware/hardware.h"
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
  // A degree left unknown (0) is written "?", which ParseLayout refuses as no number.
  l.dp = l.fsdp = 0;
  EXPECT_EQ(ToString(l),
            "tp=2,pp=8,vpp=4,cp=1,dp=?,fsdp=?,ep=64,etp=1,mbs=1,recompute=selective,moe_chunk=1");
  EXPECT_THROW(ParseLayout(ToString(l)), InputError);
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

// An empty item is a key left out ("tp=8,,dp=8"), not nothing.
TEST(Layout, RefusesEmptyItems) {
  auto error = [](const char* text) {
    try {
      ParseLayout(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("tp=8,,dp=8"), "--layout tp=8,,dp=8: an empty item (two ',' in a row). Violated "
                                 "constraint: items are KEY=VALUE separated by single commas");
  EXPECT_NE(error("tp=8,dp=8, ").find("(a ',' at the end)"), std::string::npos);
  EXPECT_NE(error(",tp=8").find("(a ',' at the start)"), std::string::npos);
  EXPECT_NE(error(" ").find("no key=value"), std::string::npos);
  EXPECT_EQ(ParseLayout(" tp = 8 , dp = 8 ").gpus(), 64);
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
  // Past 64 bits the rule broken is still the cap, not "a positive integer"; a value without a
  // key is said to be one (it was matched to the closest key, tp).
  EXPECT_EQ(error("pp=99999999999999999999"),
            "--layout pp=99999999999999999999: pp = 99999999999999999999. Violated constraint: "
            "pp <= 16777216");
  EXPECT_EQ(error("pp=-99999999999999999999"),
            "--layout pp=-99999999999999999999: pp = -99999999999999999999. Violated "
            "constraint: pp is a positive integer");
  EXPECT_TRUE(error("=16").starts_with("--layout =16: a value without its key ('=16'). Violated "
                                       "constraint: KEY=VALUE, KEY one of tp, pp,"))
      << error("=16");
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

TEST(Layout, MoeRecomputeNeedsMoeLayers) {
  // recompute=moe on a dense model would act as none; it is refused, and the search skips it.
  const ModelConfig dense = LoadModel("llama3-70b").config;
  auto v = CheckLayout(ParseLayout("tp=8,pp=4,dp=2,recompute=moe"), dense, {64, 128, 8192}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "recompute=moe needs MoE layers (a dense model has none)");
  const ModelConfig moe = LoadModel("mixtral-8x7b").config;
  EXPECT_FALSE(CheckLayout(ParseLayout("ep=8,dp=8,recompute=moe"), moe, {8, 64, 4096}, 8));
  // "The least recompute that fits" tries module recompute before selective.
  EXPECT_EQ(kRecomputeByCost[1], Recompute::kModules);
  EXPECT_EQ(kRecomputeByCost[2], Recompute::kSelective);
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
  ModelConfig m = LoadModel("olmoe-1b-7b").config;  // 16 heads, 16 KV heads
  auto v = CheckLayout(ParseLayout("tp=16,dp=4"), m, {64, 256, 4096}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, RejectKind::kDomain);
}

// Megatron-Core splits the query groups over tp (TransformerConfig: num_query_groups a multiple
// of tensor_model_parallel_size): Llama 3 70B's 8 KV heads take tp up to 8, Qwen3-235B's 4 up to 4,
// even where the query heads would allow more.
TEST(Layout, TpDividesTheKvHeads) {
  const ModelConfig llama = LoadModel("llama3-70b").config;
  auto v = CheckLayout(ParseLayout("tp=16,dp=4"), llama, {64, 256, 4096}, 72);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "tp divides kv_heads (8 % 16 != 0)");
  const ModelConfig qwen = LoadModel("qwen3-235b-a22b").config;
  v = CheckLayout(ParseLayout("tp=8,pp=8,ep=8,dp=4,recompute=moe"), qwen, {256, 1024, 4096}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "tp divides kv_heads (4 % 8 != 0)");
  EXPECT_FALSE(
      CheckLayout(ParseLayout("tp=4,pp=8,ep=8,dp=8,recompute=moe"), qwen, {256, 1024, 4096}, 8));
  // Marin's hero: 12 KV heads on windowed layers, 6 on global ones.
  const ModelConfig marin = LoadModel("marin-hero-ep").config;
  v = CheckLayout(ParseLayout("tp=4,ep=16,dp=16"), marin, {64, 1024, 4096}, 64);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "tp divides kv_heads_global (6 % 4 != 0)");
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

// Megatron-Core's uneven pipeline split (megatron/core/transformer/transformer_layer.py,
// get_transformer_layer_offset): explicit first/last-stage counts, or the embedding and the loss
// counted as one layer each.
TEST(Layout, UnevenStageKeysParseAndPrintOnlyWhenSet) {
  const Layout l = ParseLayout("tp=2,pp=32,vpp=3,ep=8,dp=4,pp_embed=1,pp_loss=1");
  EXPECT_EQ(l.pp_embed, 1);
  EXPECT_EQ(l.pp_loss, 1);
  EXPECT_TRUE(l.explicit_split());
  EXPECT_EQ(ToString(l),
            "tp=2,pp=32,vpp=3,cp=1,dp=4,fsdp=1,ep=8,etp=1,mbs=1,recompute=none,moe_chunk=1,"
            "pp_embed=1,pp_loss=1");
  EXPECT_EQ(ParseLayout(ToString(l)), l);
  const Layout f = ParseLayout("pp=16,ep=64,dp=128,pp_first=3,pp_last=2");
  EXPECT_EQ(ParseLayout(ToString(f)), f);
  EXPECT_FALSE(ParseLayout("pp=16,ep=64,dp=128").explicit_split());
  EXPECT_EQ(ToString(ParseLayout("pp=2")).find("pp_"), std::string::npos);
  EXPECT_THROW(ParseLayout("pp=2,pp_embed=2"), InputError);
  EXPECT_THROW(ParseLayout("pp=2,pp_first=0"), InputError);
}

TEST(Layout, SplitPipelineFollowsMegatronCore) {
  // Qwen3-235B, 94 layers on pp=32 × vpp=3 with the embedding and the loss counted: 96 slots of
  // one layer, the first and the last stage one layer light.
  PipelineSplit q = SplitPipeline(ParseLayout("pp=32,vpp=3,pp_embed=1,pp_loss=1"), 94);
  EXPECT_EQ(q.first, 2);
  EXPECT_EQ(q.middle, 3);
  EXPECT_EQ(q.last, 2);
  EXPECT_EQ(q.first + 30 * q.middle + q.last, 94);
  // DeepSeek-V3, 61 layers on 16 stages: 3 on the first, 2 on the last, 56 / 14 = 4 between.
  PipelineSplit d = SplitPipeline(ParseLayout("pp=16,pp_first=3,pp_last=2"), 61);
  EXPECT_EQ(d.first, 3);
  EXPECT_EQ(d.middle, 4);
  EXPECT_EQ(d.last, 2);
  // Only the last given: the other 15 stages share the rest.
  PipelineSplit l = SplitPipeline(ParseLayout("pp=16,pp_last=1"), 61);
  EXPECT_EQ(l.first, 4);
  EXPECT_EQ(l.middle, 4);
  EXPECT_EQ(l.last, 1);
  // Without a split, 61 on 16: 3 short stages first.
  PipelineSplit u = SplitPipeline(ParseLayout("pp=16"), 61);
  EXPECT_EQ(u.first, 3);
  EXPECT_EQ(u.middle_rank, 3);
  EXPECT_EQ(u.middle, 4);
  EXPECT_EQ(u.last, 4);
  PipelineSplit one = SplitPipeline(ParseLayout("dp=8"), 61);
  EXPECT_EQ(one.first, 61);
  EXPECT_EQ(one.last, 61);
}

TEST(Layout, SplitPipelineCountsTheMoeLayersEachRankHolds) {
  // DeepSeek-V3: layers 0-2 dense, 3-60 MoE. Without a split the three short stages come first:
  // rank 0 holds the dense layers 0-2, ranks 3-14 four MoE layers each, rank 15 layers 57-60.
  const ModelConfig deepseek = LoadModel("deepseek-v3").config;
  PipelineSplit u = SplitPipeline(ParseLayout("pp=16"), deepseek);
  EXPECT_EQ(u.first, 3);
  EXPECT_EQ(u.first_moe, 0);
  EXPECT_EQ(u.middle, 4);
  EXPECT_EQ(u.middle_rank, 3);
  EXPECT_EQ(u.middle_moe, 4);
  EXPECT_EQ(u.last_moe, 4);
  // pp_first = 3, pp_last = 2: the first stage dense, the last layers 59-60.
  PipelineSplit d = SplitPipeline(ParseLayout("pp=16,pp_first=3,pp_last=2"), deepseek);
  EXPECT_EQ(d.first_moe, 0);
  EXPECT_EQ(d.middle_moe, 4);
  EXPECT_EQ(d.last_moe, 2);
  // Llama 4 Maverick: MoE on the odd layers of 48. pp = 4 × vpp = 4: 16 chunks of 3 layers,
  // chunk j on rank j mod 4; an even chunk holds one MoE layer, an odd one two, so ranks 0 and 2
  // hold 4 and ranks 1 and 3 hold 8 of their 12.
  const ModelConfig maverick = LoadModel("llama4-maverick").config;
  PipelineSplit v = SplitPipeline(ParseLayout("pp=4,vpp=4"), maverick);
  EXPECT_EQ(v.first, 12);
  EXPECT_EQ(v.first_moe, 4);
  EXPECT_EQ(v.middle, 12);
  EXPECT_EQ(v.middle_rank, 1);
  EXPECT_EQ(v.middle_moe, 8);
  EXPECT_EQ(v.last_moe, 8);
  // pp = 5 × vpp = 2 with the embedding and the loss in a layer's slot: 50 slots, chunks of 5
  // (the first and the last 4 decoder layers). Rank 0 holds layers 0-3 and 24-28 (4 MoE), ranks
  // 1-3 ten layers with 5 MoE each, rank 4 layers 19-23 and 44-47 (5 MoE).
  PipelineSplit e = SplitPipeline(ParseLayout("pp=5,vpp=2,pp_embed=1,pp_loss=1"), maverick);
  EXPECT_EQ(e.first, 9);
  EXPECT_EQ(e.first_moe, 4);
  EXPECT_EQ(e.middle, 10);
  EXPECT_EQ(e.middle_rank, 1);
  EXPECT_EQ(e.middle_moe, 5);
  EXPECT_EQ(e.last, 9);
  EXPECT_EQ(e.last_moe, 5);
  // A model of one kind: every layer MoE (or none).
  PipelineSplit q = SplitPipeline(ParseLayout("pp=32,vpp=3,pp_embed=1,pp_loss=1"),
                                  LoadModel("qwen3-235b-a22b").config);
  EXPECT_EQ(q.first_moe, q.first);
  EXPECT_EQ(q.middle_moe, q.middle);
  EXPECT_EQ(q.last_moe, q.last);
  EXPECT_EQ(SplitPipeline(ParseLayout("pp=8"), LoadModel("llama3-70b").config).last_moe, 0);
}

TEST(Layout, UnevenStagesAreCheckedAsMegatronCoreDoes) {
  const ModelConfig q = LoadModel("qwen3-235b-a22b").config;  // 94 layers
  const JobShape job{256, 2048, 4096};
  // Refused without a split (pp·vpp = 96 > 94), accepted with the embedding and loss counted.
  auto plain = CheckLayout(ParseLayout("tp=2,pp=32,vpp=3,ep=8,dp=4"), q, job, 8);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->rule, "pp·vpp <= layers (32·3 = 96 > 94)");
  EXPECT_FALSE(
      CheckLayout(ParseLayout("tp=2,pp=32,vpp=3,ep=8,dp=4,pp_embed=1,pp_loss=1"), q, job, 8));
  auto slots = CheckLayout(ParseLayout("tp=2,pp=32,vpp=3,ep=8,dp=4,pp_embed=1"), q, job, 8);
  ASSERT_TRUE(slots);
  EXPECT_EQ(slots->rule, "pp·vpp divides layers + pp_embed + pp_loss (32·3 = 96 does not divide 95)");
  const ModelConfig d = LoadModel("deepseek-v3").config;  // 61 layers
  const JobShape dj{2048, 15360, 4096};
  EXPECT_FALSE(CheckLayout(ParseLayout("pp=16,ep=64,dp=128,pp_first=3,pp_last=2"), d, dj, 8));
  auto middle = CheckLayout(ParseLayout("pp=16,ep=64,dp=128,pp_first=4,pp_last=2"), d, dj, 8);
  ASSERT_TRUE(middle);
  EXPECT_EQ(middle->rule,
            "the other stages divide the remaining layers (55 layers on 14 other stages)");
  auto both = CheckLayout(ParseLayout("pp=16,ep=64,dp=128,pp_first=3,pp_loss=1"), d, dj, 8);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->rule,
            "pp_first/pp_last and pp_embed/pp_loss exclude each other (as in Megatron-Core)");
  auto vpp = CheckLayout(ParseLayout("pp=16,vpp=2,ep=64,dp=128,pp_first=3,pp_last=2"), d, dj, 8);
  ASSERT_TRUE(vpp);
  EXPECT_EQ(vpp->rule, "vpp divides each stage's layers (first 3, middle 4, last 2, vpp 2)");
  // A stage not given holds as many layers as a middle one, and the message says so.
  auto first_only = CheckLayout(ParseLayout("pp=16,vpp=2,ep=64,dp=128,pp_first=1"), d, dj, 8);
  ASSERT_TRUE(first_only);
  EXPECT_EQ(first_only->rule, "vpp divides each stage's layers (first 1, middle 4, last 4, vpp 2)");
  auto too_many = CheckLayout(ParseLayout("pp=16,ep=64,dp=128,pp_first=70"), d, dj, 8);
  ASSERT_TRUE(too_many);
  EXPECT_EQ(too_many->rule,
            "pp_first + pp_last leave at least one layer per other stage (70 of 61 layers, 15 "
            "other stages)");
  // With pp = 2 there is no middle stage: both given hold every layer, one given leaves the rest
  // to the other.
  const std::pair<const char*, const char*> two_stages[] = {
      {"pp=2,ep=64,dp=1024,pp_first=30,pp_last=30",
       "with pp = 2 and both given, pp_first + pp_last = layers (30 + 30 = 60 of 61 layers)"},
      {"pp=2,ep=64,dp=1024,pp_first=61",
       "pp_first + pp_last leave at least one layer per other stage (61 of 61 layers, 1 other "
       "stage)"},
      {"pp=2,vpp=2,ep=64,dp=1024,pp_first=30,pp_last=31",
       "vpp divides each stage's layers (first 30, last 31, vpp 2)"}};
  for (const auto& [text, rule] : two_stages) {
    auto v = CheckLayout(ParseLayout(text), d, dj, 8);
    ASSERT_TRUE(v) << text;
    EXPECT_EQ(v->rule, rule) << text;
  }
  EXPECT_FALSE(CheckLayout(ParseLayout("pp=2,ep=64,dp=1024,pp_first=30,pp_last=31"), d, dj, 8));
  EXPECT_TRUE(CheckLayout(ParseLayout("ep=64,dp=2048,pp_embed=1"), d, dj, 8));
}

TEST(Layout, UnknownKeysAndOverlapOnADenseModelSayWhatIsValid) {
  try {
    ParseLayout("dp=8,foo=2");
    ADD_FAILURE() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown layout key 'foo'; keys: tp, pp, vpp, cp, dp"),
              std::string::npos)
        << e.what();
  }
  const ModelConfig dense = LoadModel("llama3-70b").config;
  auto v = CheckLayout(ParseLayout("tp=8,pp=8,vpp=2,a2a_overlap=1"), dense, {64, 64, 4096}, 8);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rule, "a2a_overlap needs expert parallelism, and the model has no routed experts");
}

TEST(Layout, A2aOverlapIsCheckedAsMegatronCoreDoes) {
  const ModelConfig q = LoadModel("qwen3-235b-a22b").config;
  const JobShape job{256, 2048, 4096};
  const Layout l = ParseLayout("tp=2,pp=8,vpp=4,ep=32,dp=16,a2a_overlap=1");
  EXPECT_EQ(l.a2a_overlap, 1);
  EXPECT_EQ(ToString(l),
            "tp=2,pp=8,vpp=4,cp=1,dp=16,fsdp=1,ep=32,etp=1,mbs=1,recompute=none,moe_chunk=1,"
            "a2a_overlap=1");
  EXPECT_EQ(ParseLayout(ToString(l)), l);
  EXPECT_FALSE(CheckLayout(l, q, job, 8));
  EXPECT_THROW(ParseLayout("ep=8,a2a_overlap=2"), InputError);
  auto no_vpp = CheckLayout(ParseLayout("tp=2,pp=8,ep=32,dp=16,a2a_overlap=1"), q, job, 8);
  ASSERT_TRUE(no_vpp);
  EXPECT_EQ(no_vpp->rule, "a2a_overlap with pp > 1 needs the interleaved schedule (vpp > 1)");
  // A combination the framework refuses, not a degree that fails to divide.
  EXPECT_EQ(no_vpp->kind, RejectKind::kUnsupported);
  EXPECT_EQ(ToString(no_vpp->kind), "not supported");
  auto no_ep = CheckLayout(ParseLayout("tp=2,pp=8,vpp=4,dp=16,a2a_overlap=1"), q, job, 8);
  ASSERT_TRUE(no_ep);
  EXPECT_EQ(no_ep->rule, "a2a_overlap needs expert parallelism (ep 1)");
  auto full = CheckLayout(ParseLayout("tp=2,pp=8,vpp=4,ep=32,dp=16,recompute=full,a2a_overlap=1"),
                          q, job, 8);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->rule, "a2a_overlap excludes recompute=full (Megatron-Core refuses full and "
                        "MoE-layer recompute with it)");
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=2,ep=8,fsdp=128,mbs=4,a2a_overlap=1"), q, job, 8));
}

// The even split of layers pp·vpp does not divide, written as Megatron-Core's layout string (the
// one way it runs such a split): the string gives the same split to every rank, in the grammar
// pp_layout reads.
TEST(Layout, AnUnevenEvenSplitIsWrittenAsMegatronsLayoutString) {
  Layout l = ParseLayout("tp=2,pp=8,vpp=3,ep=32,dp=16");
  EXPECT_EQ(EvenSplitPipelineLayout(l, 94, 0), "Et*3|t*3|(t*4|)*21t*4L");
  for (int64_t layers : {7, 13, 61, 80, 94, 95, 126}) {
    for (int64_t pp : {2, 3, 4, 8}) {
      for (int64_t vpp : {1, 2, 3, 5}) {
        Layout even;
        even.pp = pp;
        even.vpp = vpp;
        const std::string text = EvenSplitPipelineLayout(even, layers, 0);
        const bool uneven = layers % (pp * vpp) != 0 && layers > pp * vpp;
        if (!uneven || text.empty()) {
          // Empty only where nothing is uneven, or past the string's length.
          EXPECT_TRUE(!uneven || pp * vpp > 12) << layers << " " << pp << " " << vpp;
          continue;
        }
        Layout written = even;
        std::copy(text.begin(), text.end(), written.pp_layout.begin());
        const PipelineSplit a = SplitPipeline(even, layers);
        const PipelineSplit b = SplitPipeline(written, layers);
        EXPECT_EQ(a.first, b.first) << text;
        EXPECT_EQ(a.last, b.last) << text;
        EXPECT_EQ(a.middle, b.middle) << text;
        EXPECT_EQ(a.total, b.total) << text;
        EXPECT_EQ(ParseLayout(ToString(written)), written) << text;
      }
    }
  }
  // MTP layers go before the loss, on the last stage, where Megatron-Core builds them.
  EXPECT_EQ(EvenSplitPipelineLayout(l, 94, 1), "Et*3|t*3|(t*4|)*21t*4mL");
  EXPECT_EQ(EvenSplitPipelineLayout(l, 94, 2), "Et*3|t*3|(t*4|)*21t*4m*2L");
  EXPECT_EQ(PipelineLayoutStages("Et*3|t*3|(t*4|)*21t*4m*2L").back().mtp, 2);
  // Nothing to write: an even split, one stage, an explicit split.
  EXPECT_EQ(EvenSplitPipelineLayout(ParseLayout("pp=8,vpp=4,dp=8"), 96, 0), "");
  EXPECT_EQ(EvenSplitPipelineLayout(ParseLayout("dp=8"), 94, 0), "");
  EXPECT_EQ(EvenSplitPipelineLayout(ParseLayout("pp=8,vpp=3,pp_embed=1,pp_loss=1"), 94, 0), "");
}

// dispatch: the EP all-to-all's path across scale-up domains, written only when set, on a model
// with routed experts (at ep = 1 it changes nothing, as Megatron-Core takes the flag there).
TEST(Layout, DispatchIsWrittenWhenSetAndNeedsRoutedExperts) {
  const ModelConfig q = LoadModel("qwen3-235b-a22b").config;
  const JobShape job{256, 2048, 4096};
  const Layout flat = ParseLayout("tp=2,pp=8,vpp=4,ep=32,dp=16,dispatch=flat");
  EXPECT_EQ(flat.dispatch, Dispatch::kFlat);
  EXPECT_EQ(ToString(flat),
            "tp=2,pp=8,vpp=4,cp=1,dp=16,fsdp=1,ep=32,etp=1,mbs=1,recompute=none,moe_chunk=1,"
            "dispatch=flat");
  EXPECT_EQ(ParseLayout(ToString(flat)), flat);
  EXPECT_FALSE(CheckLayout(flat, q, job, 8));
  const Layout hierarchical = ParseLayout("tp=2,pp=8,vpp=4,ep=32,dp=16,dispatch=hierarchical");
  EXPECT_EQ(hierarchical.dispatch, Dispatch::kHierarchical);
  EXPECT_EQ(ParseLayout(ToString(hierarchical)), hierarchical);
  EXPECT_EQ(ParseLayout("tp=2,pp=8,vpp=4,ep=32,dp=16").dispatch, Dispatch::kProfile);
  // Only the two paths are written; "profile" is what leaving the key out means.
  for (const char* bad : {"deepep", "profile", "Flat", ""}) {
    try {
      ParseLayout(std::string("ep=8,dp=8,dispatch=") + bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("dispatch = ") + bad +
                                           ". Violated constraint: dispatch is flat or "
                                           "hierarchical (Megatron-Core's "
                                           "--moe-token-dispatcher-type alltoall is flat"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=2,pp=8,vpp=4,dp=16,dispatch=flat"), q, job, 8));
  const ModelConfig dense = LoadModel("llama3-70b").config;
  auto on_dense = CheckLayout(ParseLayout("tp=8,dp=8,dispatch=hierarchical"), dense,
                              {64, 64, 4096}, 8);
  ASSERT_TRUE(on_dense);
  EXPECT_EQ(on_dense->rule, "dispatch needs routed experts, and the model has none");
  EXPECT_EQ(on_dense->kind, RejectKind::kUnsupported);
}

// offload_layers: at most the layers of the heaviest pipeline rank, and only on a device that
// gives its host link and host memory.
TEST(Layout, OffloadedLayersFitARankAndNeedTheHostLink) {
  const ModelConfig llama = LoadModel("llama3-70b").config;  // 80 layers
  const JobShape job{64, 64, 8192};
  const Layout l = ParseLayout("tp=8,fsdp=8,recompute=full,offload_layers=80");
  EXPECT_EQ(l.offload_layers, 80);
  EXPECT_EQ(ToString(l),
            "tp=8,pp=1,vpp=1,cp=1,dp=1,fsdp=8,ep=1,etp=1,mbs=1,recompute=full,moe_chunk=1,"
            "offload_layers=80");
  EXPECT_EQ(ParseLayout(ToString(l)), l);
  EXPECT_THROW(ParseLayout("fsdp=8,offload_layers=-1"), InputError);
  const HardwareSpec h100 = LoadHardware("h100");
  EXPECT_FALSE(CheckLayout(l, llama, job, h100));
  auto too_many = CheckLayout(ParseLayout("tp=8,fsdp=8,offload_layers=81"), llama, job, h100);
  ASSERT_TRUE(too_many);
  EXPECT_EQ(too_many->rule, "offload_layers <= the layer passes of a pipeline rank (81 > 80)");
  // Four stages of 20 layers.
  auto staged = CheckLayout(ParseLayout("tp=8,pp=4,dp=2,offload_layers=21"), llama, job, h100);
  ASSERT_TRUE(staged);
  EXPECT_EQ(staged->rule, "offload_layers <= the layer passes of a pipeline rank (21 > 20)");
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=8,pp=4,dp=2,offload_layers=20"), llama, job, h100));
  // A device file without the host link refuses it; without offload the device needs none.
  HardwareSpec bare = h100;
  bare.host_link_gb_per_s = 0;
  auto no_link = CheckLayout(l, llama, job, bare);
  ASSERT_TRUE(no_link);
  EXPECT_EQ(no_link->kind, RejectKind::kUnsupported);
  EXPECT_NE(no_link->rule.find("offload_layers needs the device's host link and host memory "
                               "(host_link_gb_per_s = 0, host_memory_gb = 256 in hardware h100"),
            std::string::npos)
      << no_link->rule;
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=8,fsdp=8"), llama, job, bare));
}

// offload_modules: Megatron-Core's --offload-modules names joined by '+', printed in its order;
// it excludes layer offload and full recompute, its expert modules need routed experts, and it
// needs the host link.
TEST(Layout, OffloadedModulesAreMegatronsAndNeedAPolicyThatStoresThem) {
  const Layout l =
      ParseLayout("tp=1,pp=4,vpp=6,ep=64,dp=64,mbs=3,recompute=modules,offload_modules="
                  "moe_act+expert_fc1");
  EXPECT_EQ(l.offload_modules, static_cast<uint32_t>(OffloadModule::kExpertFc1) |
                                   static_cast<uint32_t>(OffloadModule::kMoeAct));
  EXPECT_EQ(ToString(l),
            "tp=1,pp=4,vpp=6,cp=1,dp=64,fsdp=1,ep=64,etp=1,mbs=3,recompute=modules,moe_chunk=1,"
            "offload_modules=expert_fc1+moe_act");
  EXPECT_EQ(ParseLayout(ToString(l)), l);
  EXPECT_EQ(ParseLayout("offload_modules=attn_norm+qkv_linear+core_attn+attn_proj+mlp_norm+"
                        "expert_fc1+moe_act")
                .offload_modules,
            0x7fu);
  const auto error = [](const std::string& text) {
    try {
      ParseLayout(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("ep=8,offload_modules=expert_fc2"),
            "--layout ep=8,offload_modules=expert_fc2: offload_modules = expert_fc2. Violated "
            "constraint: module names joined by '+', each one of attn_norm, qkv_linear, "
            "core_attn, attn_proj, mlp_norm, expert_fc1, moe_act (not 'expert_fc2') (did you "
            "mean 'expert_fc1'?)");
  EXPECT_NE(error("offload_modules=moe_act+moe_act").find("(moe_act is given twice; each module "
                                                          "at most once)"),
            std::string::npos);
  EXPECT_NE(error("offload_modules=").find("(not '')"), std::string::npos);
  EXPECT_NE(error("offload_modules=core_attn+").find("(not '')"), std::string::npos);

  const ModelConfig qwen = LoadModel("qwen3-235b-a22b").config;
  const JobShape job{256, 3072, 4096};
  const HardwareSpec gb200 = LoadHardware("gb200-nvl72");
  EXPECT_FALSE(CheckLayout(l, qwen, job, gb200));
  const auto rule = [&](const std::string& text, const ModelConfig& m, const JobShape& shape) {
    const auto v = CheckLayout(ParseLayout(text), m, shape, gb200);
    return v ? v->rule : std::string();
  };
  EXPECT_EQ(rule("pp=4,ep=64,dp=64,recompute=full,offload_modules=core_attn", qwen, job),
            "offload_modules excludes recompute=full (a fully recomputed layer keeps no module's "
            "input to offload)");
  EXPECT_EQ(rule("pp=4,ep=64,dp=64,offload_layers=2,offload_modules=core_attn", qwen, job),
            "offload_modules excludes offload_layers (Megatron-Core's fine-grained and "
            "layer-wise offloading are two ways to offload; give one)");
  const ModelConfig llama = LoadModel("llama3-70b").config;
  EXPECT_EQ(rule("tp=8,fsdp=8,offload_modules=moe_act", llama, {64, 64, 8192}),
            "offload_modules expert_fc1 and moe_act need routed experts, and the model has none");
  EXPECT_EQ(rule("tp=8,fsdp=8,offload_modules=core_attn+attn_proj", llama, {64, 64, 8192}), "");
  HardwareSpec bare = gb200;
  bare.host_link_gb_per_s = 0;
  const auto no_link = CheckLayout(l, qwen, job, bare);
  ASSERT_TRUE(no_link);
  EXPECT_EQ(no_link->rule.rfind("offload_modules needs the device's host link and host memory", 0),
            0u)
      << no_link->rule;
}

TEST(Layout, PipelineLayoutStringsExpandAsMegatronCoreReadsThem) {
  // parse_str_to_list's own example: "Ettt|(tt|)*29,m|L" is [E,t,t,t] + [t,t]*29 + [m] + [L].
  const std::vector<PipelineLayoutStage> s = PipelineLayoutStages("Ettt|(tt|)*29,m|L");
  ASSERT_EQ(s.size(), 32u);
  EXPECT_EQ(s[0], (PipelineLayoutStage{1, 3, 0, 0}));
  for (size_t i = 1; i < 30; ++i) EXPECT_EQ(s[i], (PipelineLayoutStage{0, 2, 0, 0})) << i;
  EXPECT_EQ(s[30], (PipelineLayoutStage{0, 0, 1, 0}));
  EXPECT_EQ(s[31], (PipelineLayoutStage{0, 0, 0, 1}));
  // Megatron-Bridge's DeepSeek-V3 GB300 recipe: groups first, then x*N.
  const std::vector<PipelineLayoutStage> g = PipelineLayoutStages("Et*4|(t*4|)*14tmL");
  ASSERT_EQ(g.size(), 16u);
  EXPECT_EQ(g[0], (PipelineLayoutStage{1, 4, 0, 0}));
  EXPECT_EQ(g[14], (PipelineLayoutStage{0, 4, 0, 0}));
  EXPECT_EQ(g[15], (PipelineLayoutStage{0, 1, 1, 1}));
  for (const char* bad : {"Et|(tt|*30mL", "Et|((tt|)*2)*3|L", "Et|(tt|)L", "Et|tx|L", "tt|L",
                          "Et|tt", "EEt|L", "Et|L|L", "Et|t*|L", "Et|()*3|L",
                          "Et|(t)*99999999999|L"}) {
    EXPECT_THROW(PipelineLayoutStages(bad), InputError) << bad;
  }
  // Each refused for what is wrong with it: a character that is no layer, even at the end where
  // the loss goes; an unclosed group.
  for (const auto& [bad, rule] : {std::pair<std::string, std::string>{"Et|tx|L", "'x' is not a layer"},
                                  {"Et|(tt|)*30mLx", "'x' is not a layer"},
                                  {"Et|(tt|*30mL", "each '(' is closed by ')'"}}) {
    try {
      PipelineLayoutStages(bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("pp_layout = " + bad + ". Violated constraint: " + rule),
                std::string::npos)
          << e.what();
      EXPECT_EQ(std::string(e.what()).find("nest"), std::string::npos) << e.what();
    }
  }
}

TEST(Layout, PipelineLayoutSplitsAndIsCheckedAsMegatronCoreDoes) {
  // Megatron-Bridge's DeepSeek-V3 H100 recipe: pp 8, vpp 4, pipeline_model_parallel_layout
  // "Et|(tt|)*30mL". Stage s sits on rank s mod 8: rank 0 holds 1 + 2·3 = 7 layers, ranks 1-6
  // 8 each, rank 7 2·3 = 6 and the MTP layer.
  const Layout l = ParseLayout("tp=2,pp=8,vpp=4,ep=64,dp=64,pp_layout=Et|(tt|)*30mL");
  EXPECT_EQ(l.pp_layout_text(), "Et|(tt|)*30mL");
  EXPECT_EQ(ToString(l),
            "tp=2,pp=8,vpp=4,cp=1,dp=64,fsdp=1,ep=64,etp=1,mbs=1,recompute=none,moe_chunk=1,"
            "pp_layout=Et|(tt|)*30mL");
  EXPECT_EQ(ParseLayout(ToString(l)), l);
  const PipelineSplit s = SplitPipeline(l, 61);
  EXPECT_TRUE(s.mtp_placed);
  EXPECT_EQ(s.first, 7);
  EXPECT_EQ(s.middle, 8);
  EXPECT_EQ(s.middle_rank, 1);
  EXPECT_EQ(s.last, 6);
  EXPECT_EQ(s.first_mtp + s.middle_mtp, 0);
  EXPECT_EQ(s.last_mtp, 1);
  // Cosmetic commas, as Megatron allows, continue the string.
  EXPECT_EQ(ParseLayout("pp=8,pp_layout=Et*3|(tt|)*29,m|L,ep=8").pp_layout_text(),
            "Et*3|(tt|)*29m|L");
  EXPECT_EQ(ParseLayout("pp=8,pp_layout=Et*3|(tt|)*29,m|L,ep=8").ep, 8);
  EXPECT_THROW(ParseLayout("pp=8,pp_layout="), InputError);
  EXPECT_THROW(ParseLayout("pp=8,pp_layout=E" + std::string(63, 't') + "L"), InputError);

  ModelConfig d = LoadModel("deepseek-v3").config;  // 61 layers
  const JobShape job{1024, 8192, 4096};
  auto no_mtp = CheckLayout(l, d, job, 8);
  ASSERT_TRUE(no_mtp);
  EXPECT_EQ(no_mtp->rule, "pp_layout holds one m per MTP layer (1 m, mtp_layers 0)");
  d.mtp_layers = 1;
  EXPECT_FALSE(CheckLayout(l, d, job, 8));
  auto vpp = CheckLayout(ParseLayout("tp=2,pp=8,ep=64,dp=64,pp_layout=Et|(tt|)*30mL"), d, job, 8);
  ASSERT_TRUE(vpp);
  EXPECT_EQ(vpp->rule, "vpp = stages of pp_layout / pp (32 / 8 = 4, vpp 1)");
  auto pp = CheckLayout(ParseLayout("tp=2,pp=16,vpp=2,ep=64,dp=32,pp_layout=Et|(tt|)*29mL"), d,
                        job, 8);
  ASSERT_TRUE(pp);
  EXPECT_EQ(pp->rule, "pp divides the stages of pp_layout (31 stages, pp 16)");
  auto layers = CheckLayout(ParseLayout("tp=2,pp=8,vpp=4,ep=64,dp=64,pp_layout=Et|(tt|)*29t|mL"),
                            d, job, 8);
  ASSERT_TRUE(layers);
  EXPECT_EQ(layers->rule, "pp_layout holds one t per layer (60 t, 61 layers)");
  auto both = CheckLayout(
      ParseLayout("tp=2,pp=8,vpp=4,ep=64,dp=64,pp_first=8,pp_layout=Et|(tt|)*30mL"), d, job, 8);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->rule,
            "pp_layout excludes pp_first, pp_last, pp_embed and pp_loss (as in Megatron-Core)");
  // validate_layer_layout places the MTP layers after every decoder layer, each in its rank's
  // last virtual stage: Megatron-Core's own example "Et*3|(tt|)*29,m|L" (pp 16, vpp 2) puts m on
  // rank 14's second stage; moved to a first virtual stage it is refused.
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=2,pp=16,vpp=2,ep=64,dp=32,pp_layout=Et*3|(tt|)*29,m|L"),
                           d, {1024, 8192, 4096}, 8));
  auto early = CheckLayout(
      ParseLayout("tp=2,pp=2,vpp=3,ep=64,dp=256,pp_layout=Et*20|t*20|t*21|m||L"), d, job, 8);
  ASSERT_TRUE(early);
  EXPECT_EQ(early->kind, RejectKind::kUnsupported);
  EXPECT_EQ(early->rule, "pp_layout puts MTP layers (m) in their rank's last virtual stage (stage 3 "
                         "is virtual stage 1 of 3 on rank 1)");
  try {
    ParseLayout("tp=2,pp=2,ep=64,dp=256,pp_layout=Et*30m|t*31L");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the MTP layers (m) follow every decoder layer (t)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Layout, ContextParallelismMaySpanNodes) {
  // Ring attention passes KV blocks over the scale-out network: tp·cp = 32 on 8-GPU nodes.
  const ModelConfig q = LoadModel("qwen3-235b-a22b").config;
  EXPECT_FALSE(CheckLayout(ParseLayout("tp=4,pp=8,vpp=4,cp=8,ep=8"), q, {256, 256, 131072}, 8));
}

TEST(Layout, SpacesAroundKeysAndValuesAreAllowed) {
  EXPECT_EQ(ToString(ParseLayout(" tp = 2 , dp= 8,ep =4 ")), ToString(ParseLayout("tp=2,dp=8,ep=4")));
}

TEST(Layout, SequenceSplitsAsMegatronCoreSplitsIt) {
  // cp = 2 splits a sequence into 4 chunks (rank r takes r and 3 − r); tp then splits each rank's
  // tokens for sequence parallelism. 4094 tokens divide by cp but not into 2·cp chunks; 4095 by
  // neither; 4100 / 2 = 2050 is not a multiple of tp = 4.
  const ModelConfig q = LoadModel("qwen3-30b-a3b").config;
  auto rule = [&](const char* layout, int64_t seq) {
    const auto v = CheckLayout(ParseLayout(layout), q, {16, 64, seq}, 8);
    return v ? v->rule : std::string();
  };
  EXPECT_EQ(rule("cp=2,dp=8", 4096), "");
  EXPECT_EQ(rule("cp=2,dp=8", 4094),
            "2·cp divides seq (the load-balanced causal split: 4094 % 4 != 0)");
  EXPECT_EQ(rule("tp=2,dp=8", 4095),
            "tp divides seq / cp (sequence-parallel activations: 4095 % 2 != 0)");
  EXPECT_EQ(rule("tp=4,cp=2,dp=2", 4100),
            "tp divides seq / cp (sequence-parallel activations: 2050 % 4 != 0)");
  EXPECT_EQ(rule("tp=4,cp=2,dp=2", 4104), "");
}

// A NUL or another control character in pp_layout is refused: the layout is kept
// NUL-terminated, and its printed form must read back (layout_fuzz found one that did not).
TEST(Layout, PipelineLayoutRefusesControlCharacters) {
  const std::string text = std::string("pp=2,vpp=8,ep=32,pp_layout=Et*4|(\x01\0t)*00,tmL", 44);
  try {
    (void)ParseLayout(text, "--layout");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Violated constraint: no control characters"),
              std::string::npos)
        << e.what();
  }
}

// LayoutRejectKind, the search's test without the rule's text, names the kind CheckLayout names
// for every layout: each degree over a range that breaks every rule in turn (GPU product, heads,
// KV heads, experts, expert groups, expert width, moe_chunk, pp·vpp over the layers, the batch,
// interleaving's micro-batches, the sequence split, the domain) on an MoE and a dense model.
TEST(Layout, RejectKindWithoutTextIsCheckLayoutsKind) {
  int rejected = 0, accepted = 0;
  std::set<RejectKind> kinds;
  for (const char* name : {"qwen3-30b-a3b", "llama3-70b"}) {
    const ModelConfig m = LoadModel(name).config;
    const JobShape job{64, 96, 4096};
    for (int64_t tp : {1, 2, 4, 8, 16}) {
      for (int64_t pp : {1, 2, 4, 64}) {
        for (int64_t vpp : {1, 2, 3}) {
          for (int64_t cp : {1, 2}) {
            for (int64_t ep : {1, 2, 8, 96}) {
              for (int64_t etp : {1, 2}) {
                for (int64_t chunk : {1, 2}) {
                  Layout l{.tp = tp, .pp = pp, .vpp = vpp, .cp = cp, .dp = 1, .fsdp = 1,
                           .ep = ep, .etp = etp, .moe_chunk = chunk};
                  const int64_t rest = 64 / std::min<int64_t>(64, tp * pp * cp);
                  (chunk == 1 ? l.dp : l.fsdp) = std::max<int64_t>(rest, 1);
                  const auto full = CheckLayout(l, m, job, 4);
                  const auto kind = LayoutRejectKind(l, m, job, 4);
                  ASSERT_EQ(full.has_value(), kind.has_value()) << ToString(l);
                  if (full) {
                    EXPECT_EQ(full->kind, *kind) << ToString(l);
                    kinds.insert(full->kind);
                    ++rejected;
                  } else {
                    ++accepted;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 10);
  EXPECT_GT(rejected, 1000);
  EXPECT_EQ(kinds, (std::set<RejectKind>{RejectKind::kIndivisible, RejectKind::kUnsupported,
                                         RejectKind::kDomain}));
}

}  // namespace
}  // namespace mosaic
