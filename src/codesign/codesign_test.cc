#include "mosaic/codesign/codesign.h"

#include <gtest/gtest.h>

#include <cmath>

#include "mosaic/codesign/distributed.h"
#include "mosaic/hardware/hardware.h"

namespace mosaic {
namespace {

constexpr double kRelTol = 1e-12;

std::string ErrorOf(const std::string& toml) {
  try {
    LoadSpaceFromToml(toml, "space.toml");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

const std::string kSpace = R"(name = "tiny"
base = "marin-ladder"
[cluster]
hardware = "h100"
gpus = 8
[budget]
days = 1
reference_mfu = 0.5
[axes]
d_model = [768]
experts = [8, 16]
top_k = [2]
[law]
name = "sparse"
params = { E = 1.5, A = 400, B = 400, alpha = 0.3, beta = 0.3, gamma = 0.5 }
[search]
batch_seqs = 64
seq_len = 1024
)";

ArchitectureResult Hand(int64_t active, int64_t total, double tokens_per_s_per_gpu, double mfu) {
  ArchitectureResult r;
  r.active_params = active;
  r.total_params = total;
  r.sparsity = 1 - double(active) / double(total);
  r.model_flops_per_token = 6e9;
  r.estimate.tokens_per_s_per_gpu = tokens_per_s_per_gpu;
  r.estimate.mfu = mfu;
  return r;
}

// L = 1.5 + 400·(1−S)^0.5 / N^0.3 + 400 / D^0.3, computed directly.
double SparseLoss(double active, double sparsity, double tokens) {
  return 1.5 + 400 * std::sqrt(1 - sparsity) / std::pow(active, 0.3) + 400 / std::pow(tokens, 0.3);
}

// Four architectures with the same active parameters and FLOPs per token: sparser ones run slower
// on the cluster, and the sparsest does not fit. Under the FLOPs-only budget every architecture
// trains the same tokens, so the sparsest wins (the edge); on the cluster S = 0.5 wins (interior).
TEST(Summarize, AHandComputedSpaceHasTheKnownOptima) {
  const SpaceConfig space = LoadSpaceFromToml(kSpace, "space.toml");
  std::vector<ArchitectureResult> archs = {Hand(1'000'000'000, 1'000'000'000, 1000, 0.40),
                                           Hand(1'000'000'000, 2'000'000'000, 900, 0.36),
                                           Hand(1'000'000'000, 4'000'000'000, 300, 0.12),
                                           Hand(1'000'000'000, 16'000'000'000, 0, 0)};
  archs[3].rejected = ArchRejection::kMemory;
  archs[3].rule = "no layout fits";
  const CodesignResult r = Summarize(space, archs);
  const double peak = LoadHardware("h100").peak_bf16_tflops * 1e12;
  EXPECT_DOUBLE_EQ(r.cluster_seconds, 86400);
  EXPECT_NEAR(r.flops_budget, 86400 * 8 * peak * 0.5, 86400 * 8 * peak * 0.5 * kRelTol);
  const double flops_tokens = r.flops_budget / 6e9;
  for (size_t i = 0; i < archs.size(); ++i) {
    EXPECT_NEAR(r.architectures[i].flops_loss,
                SparseLoss(1e9, archs[i].sparsity, flops_tokens), kRelTol);
  }
  for (size_t i = 0; i < 3; ++i) {
    const double tokens = archs[i].estimate.tokens_per_s_per_gpu * 8 * 86400;
    EXPECT_DOUBLE_EQ(r.architectures[i].cluster_tokens, tokens);
    EXPECT_NEAR(r.architectures[i].cluster_loss, SparseLoss(1e9, archs[i].sparsity, tokens),
                kRelTol);
  }
  EXPECT_TRUE(std::isnan(r.architectures[3].cluster_loss));
  ASSERT_TRUE(r.flops_optimum && r.cluster_optimum);
  EXPECT_EQ(*r.flops_optimum, 3u);
  EXPECT_EQ(*r.cluster_optimum, 1u);
  EXPECT_EQ(r.ranking, (std::vector<size_t>{1, 2, 0}));
  EXPECT_FALSE(r.flops_sparsity->interior);
  EXPECT_TRUE(r.cluster_sparsity->interior);
  EXPECT_EQ(r.finding.rfind("The MOSAIC effect holds for these inputs", 0), 0u) << r.finding;
  ASSERT_EQ(r.by_sparsity.size(), 4u);
  EXPECT_TRUE(std::isnan(r.by_sparsity[3].cluster_loss));  // S = 0.9375 fits nowhere

  // With the given budget in model FLOPs instead, the wall-clock follows at the reference MFU.
  SpaceConfig flops_space = space;
  flops_space.budget = {.model_flops = 1e21, .reference_mfu = 0.5};
  const CodesignResult f = Summarize(flops_space, archs);
  EXPECT_NEAR(f.cluster_seconds, 1e21 / (8 * peak * 0.5), 1e21 / (8 * peak * 0.5) * kRelTol);
}

TEST(Summarize, AFlopsOnlyBudgetOfLessThanOneBatchGivesNoLoss) {
  // A budget of 1.97e14 model FLOPs buys an architecture of 6e9 FLOPs per token 32,768 tokens,
  // half of one batch (64 × 1024): the law is not read there. At 1.5e9 FLOPs per token it buys
  // 131,072, two batches, and that architecture is the FLOPs-only optimum.
  SpaceConfig space = LoadSpaceFromToml(kSpace, "space.toml");
  space.budget = {.model_flops = 6e9 * 65536 * 0.5, .reference_mfu = 0.5};
  std::vector<ArchitectureResult> archs = {Hand(1'000'000'000, 1'000'000'000, 1000, 0.40),
                                           Hand(1'000'000'000, 2'000'000'000, 900, 0.36)};
  CodesignResult r = Summarize(space, archs);
  EXPECT_TRUE(std::isnan(r.architectures[0].flops_loss));
  EXPECT_TRUE(std::isnan(r.architectures[1].flops_loss));
  EXPECT_FALSE(r.flops_optimum);
  ASSERT_TRUE(r.cluster_optimum);
  EXPECT_EQ(r.finding,
            "no architecture has a loss under the FLOPs-only budget (1.966e+14 model FLOPs): it "
            "buys 2 of them less than one batch of 6.554e+04 tokens");
  // The curves keep both architectures' cluster losses.
  ASSERT_EQ(r.by_sparsity.size(), 2u);
  EXPECT_FALSE(std::isnan(r.by_sparsity[0].cluster_loss));
  EXPECT_TRUE(std::isnan(r.by_sparsity[0].flops_loss));
  archs[1].model_flops_per_token = 1.5e9;
  r = Summarize(space, archs);
  EXPECT_TRUE(std::isnan(r.architectures[0].flops_loss));
  EXPECT_DOUBLE_EQ(r.architectures[1].flops_loss, SparseLoss(1e9, 0.5, 131072));
  ASSERT_TRUE(r.flops_optimum);
  EXPECT_EQ(*r.flops_optimum, 1u);
  // Placed among the architectures the FLOPs-only budget ranks (one), and the finding says the
  // budget ranks only part of the space.
  EXPECT_EQ(r.flops_sparsity->low, 0.5);
  EXPECT_EQ(r.flops_sparsity->high, 0.5);
  EXPECT_EQ(r.flops_under_one_batch, 1);
  EXPECT_NE(r.finding.find("The FLOPs-only budget (1.966e+14 model FLOPs) ranks only part of the "
                           "space: it buys 1 architecture less than one batch of 6.554e+04 "
                           "tokens."),
            std::string::npos)
      << r.finding;
}

TEST(Summarize, TheReferenceMfuDefaultsToTheMedianOfWhatFits) {
  SpaceConfig space = LoadSpaceFromToml(kSpace, "space.toml");
  space.budget.reference_mfu = 0;
  const CodesignResult r = Summarize(space, {Hand(1'000'000'000, 1'000'000'000, 1000, 0.40),
                                             Hand(1'000'000'000, 2'000'000'000, 900, 0.36),
                                             Hand(1'000'000'000, 4'000'000'000, 300, 0.12)});
  EXPECT_DOUBLE_EQ(r.reference_mfu, 0.36);
}

TEST(Summarize, AnArchitectureWhoseStepOutlastsTheBudgetIsNotRanked) {
  // One day of the cluster: a step of 90,000 s trains no whole step, one of 10 s trains 8640.
  const SpaceConfig space = LoadSpaceFromToml(kSpace, "space.toml");
  std::vector<ArchitectureResult> archs = {Hand(1'000'000'000, 1'000'000'000, 1000, 0.40),
                                           Hand(1'000'000'000, 2'000'000'000, 900, 0.36)};
  archs[0].estimate.step_seconds = 90'000;
  archs[1].estimate.step_seconds = 10;
  CodesignResult r = Summarize(space, archs);
  EXPECT_EQ(r.architectures[0].rejected, ArchRejection::kBudget);
  EXPECT_NE(r.architectures[0].rule.find("one optimizer step (9e+04 s) is longer than the cluster "
                                         "budget (8.64e+04 s)"),
            std::string::npos)
      << r.architectures[0].rule;
  EXPECT_TRUE(std::isnan(r.architectures[0].cluster_loss));
  EXPECT_FALSE(std::isnan(r.architectures[0].flops_loss));  // the FLOPs-only budget has no steps
  ASSERT_EQ(r.ranking.size(), 1u);
  EXPECT_EQ(r.ranking[0], 1u);
  // Every architecture over the budget: nothing ranked, and the finding says why.
  archs[1].estimate.step_seconds = 100'000;
  r = Summarize(space, archs);
  EXPECT_TRUE(r.ranking.empty());
  EXPECT_NE(r.finding.find("takes longer than the cluster budget (8.64e+04 s) for one optimizer "
                           "step"),
            std::string::npos)
      << r.finding;
}

TEST(Summarize, EveryBudgetKindIsHeldToACentury) {
  // 1e11 GPU-hours on 8 GPUs: 5.2e8 days of the cluster, past the bound days = has.
  std::string text = kSpace;
  text.replace(text.find("days = 1"), 8, "gpu_hours = 1e11");
  const SpaceConfig space = LoadSpaceFromToml(text, "space.toml");
  try {
    Summarize(space, {Hand(1'000'000'000, 1'000'000'000, 1000, 0.40)});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("space.toml:7:13: [budget] gpu_hours = 1e+11 is "
                                         "5.208e+08 days of the cluster's wall-clock (8 GPUs). "
                                         "Violated constraint: at most 36525 days (a century"),
              std::string::npos)
        << e.what();
  }
}

TEST(EnumerateArchitectures, CrossesTheAxesInOrder) {
  const SpaceConfig space = LoadSpaceFromToml(kSpace, "space.toml");
  const std::vector<Architecture> all = EnumerateArchitectures(space);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].experts, 8);
  EXPECT_EQ(all[1].experts, 16);
}

TEST(RunCodesign, ThreadsDoNotChangeTheResult) {
  const SpaceConfig space = LoadSpaceFromToml(kSpace, "space.toml");
  const CodesignResult one = RunCodesign(space, {.threads = 1});
  const CodesignResult two = RunCodesign(space, {.threads = 2});
  ASSERT_EQ(one.architectures.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(one.architectures[i].arch.Name(), two.architectures[i].arch.Name());
    EXPECT_EQ(one.architectures[i].layout, two.architectures[i].layout);
    EXPECT_EQ(one.architectures[i].cluster_loss, two.architectures[i].cluster_loss);
  }
  // The family derives the depth and the expert width from d_model.
  EXPECT_EQ(one.architectures[0].arch.Name(), "d768 L8 E8 k2 w384 s2");
}

// An architecture the model refuses (top_k 2 of 1 expert) is named with what is known of it: the
// fields the space sets, "?" for those the base or its family would have given (not the 0 of a
// dense shape: marin-ladder has 2 shared experts).
TEST(RunCodesign, ARefusedModelIsNamedWithWhatIsKnown) {
  std::string text = kSpace;
  text.replace(text.find("experts = [8, 16]"), 17, "experts = [1, 8]");
  const CodesignResult r = RunCodesign(LoadSpaceFromToml(text, "space.toml"), {.threads = 1});
  ASSERT_EQ(r.architectures.size(), 2u);
  const ArchitectureResult& refused = r.architectures[0];
  EXPECT_EQ(refused.rejected, ArchRejection::kModel);
  EXPECT_EQ(refused.arch.Name(), "d768 L? E1 k2 w? s?");
  EXPECT_EQ(refused.arch.shared_experts, kUnknownField);
  EXPECT_EQ(r.architectures[1].arch.Name(), "d768 L8 E8 k2 w384 s2");
}

// A GPU count no layout can divide the batch over (63 H100 for a batch of 64): each
// architecture gives the search's reason, not "0 do not divide"; with nothing that fits and no
// reference_mfu there is no FLOPs-only budget (it was 0 FLOPs at MFU 0).
TEST(RunCodesign, AClusterNoLayoutDividesSaysWhy) {
  std::string text = kSpace;
  text.replace(text.find("gpus = 8"), 8, "gpus = 63");
  text.replace(text.find("reference_mfu = 0.5\n"), 20, "");
  const CodesignResult r = RunCodesign(LoadSpaceFromToml(text, "space.toml"), {.threads = 1});
  ASSERT_EQ(r.architectures.size(), 2u);
  for (const ArchitectureResult& a : r.architectures) {
    EXPECT_FALSE(a.feasible());
    EXPECT_NE(a.rule.find("no layout divides the batch"), std::string::npos) << a.rule;
    EXPECT_TRUE(std::isnan(a.flops_loss));
  }
  EXPECT_EQ(r.flops_budget, 0);
  EXPECT_NE(r.reference_mfu_rule.find("give [budget] reference_mfu"), std::string::npos);
  EXPECT_FALSE(r.flops_optimum.has_value());
}

TEST(DistributedCodec, RoundTripsEveryEvaluatedField) {
  const SpaceConfig space = LoadSpaceFromToml(kSpace, "space.toml");
  const CodesignResult r = RunCodesign(space, {.threads = 1});
  std::vector<ArchitectureResult> copy(r.architectures.size());
  DecodeResults(EncodeResults(r.architectures, 0, r.architectures.size()), copy, 0);
  for (size_t i = 0; i < copy.size(); ++i) {
    EXPECT_EQ(copy[i].arch.Name(), r.architectures[i].arch.Name());
    EXPECT_EQ(copy[i].rule, r.architectures[i].rule);
    EXPECT_EQ(copy[i].layout, r.architectures[i].layout);
    EXPECT_EQ(copy[i].estimate.step_seconds, r.architectures[i].estimate.step_seconds);
    EXPECT_EQ(copy[i].layouts_evaluated, r.architectures[i].layouts_evaluated);
  }
  EXPECT_THROW(DecodeResults("abc", copy, 0), InputError);
}

TEST(LoadSpace, BadSpaceFilesGetClearErrors) {
  auto replace = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  EXPECT_EQ(ErrorOf(replace(kSpace, "experts = [8, 16]", "experts = []")),
            "space.toml:11:11: experts = []. Violated constraint: experts has at least one value\n"
            "  experts = []\n"
            "            ^");
  // An axis value past the model field's bound is the file's error (it was every architecture's
  // rejection, with exit 0); a depth rule that rounds to no layer too (it was forced to 1).
  EXPECT_EQ(ErrorOf(replace(kSpace, "d_model = [768]", "d_model = [1000000000]")),
            "space.toml:10:12: d_model = 1000000000. Violated constraint: d_model <= 16777216\n"
            "  d_model = [1000000000]\n"
            "             ^");
  EXPECT_NE(ErrorOf(replace(kSpace, "experts = [8, 16]",
                            "experts = { from = 8, to = 100000000, factor = 2 }"))
                .find("to = 100000000. Violated constraint: experts <= 16777216"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "d_model = [768]", "d_model = [768]\naspect_ratio = 100000"))
                .find("aspect_ratio = 100000. Violated constraint: layers = round(d_model / "
                      "aspect_ratio) >= 1 for every d_model (d_model 768 gives 0)"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "d_model = [768]", "d_model = [768]\naspect_ratio = 100000"));
  EXPECT_NE(ErrorOf(replace(kSpace, ", gamma = 0.5 }", " }"))
                .find("[law] sparse is missing parameters gamma"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "gamma = 0.5", "gama = 0.5"))
                .find("law sparse has parameters E, A, B, alpha, beta, gamma (did you mean "
                      "'gamma'?)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "base = \"marin-ladder\"", "base = \"marin-ladderr\""))
                .find("unknown model preset 'marin-ladderr' (did you mean 'marin-ladder'?)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "name = \"sparse\"", "name = \"sprase\""))
                .find("(did you mean 'sparse'?)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "top_k = [2]", "top_k = [2]\nexpert_width = [\"d/0\"]"))
                .find("[axes] expert_width: expert_width = \"d/0\" at d = 768. Violated constraint: "
                      "no division by zero"),
            std::string::npos);
  // A law the form forbids, located at the value: a scale <= 0, an exponent < 0 (it ranked
  // architectures by a loss of 397330) or past 10.
  EXPECT_NE(ErrorOf(replace(kSpace, "alpha = 0.3", "alpha = -0.3"))
                .find("space.toml:15:47: alpha = -0.3. Violated constraint: 0 <= alpha <= 10 "
                      "(an exponent of law sparse: "),
            std::string::npos)
      << ErrorOf(replace(kSpace, "alpha = 0.3", "alpha = -0.3"));
  EXPECT_NE(ErrorOf(replace(kSpace, "gamma = 0.5", "gamma = 1e9"))
                .find("gamma = 1000000000. Violated constraint: 0 <= gamma <= 10"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "gamma = 0.5", "gamma = 1e9"));
  EXPECT_NE(ErrorOf(replace(kSpace, "B = 400", "B = -400"))
                .find("space.toml:15:34: B = -400. Violated constraint: 0 <= B <= 1e+30 (a "
                      "scale of law sparse"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "B = 400", "B = -400"));
  // The irreducible loss may be 0 (`mosaic fit --pin E=0`): the sweep ranks by the other terms.
  ASSERT_EQ(ErrorOf(replace(kSpace, "E = 1.5", "E = 0")), "");
  const CodesignResult floorless =
      RunCodesign(LoadSpaceFromToml(replace(kSpace, "E = 1.5", "E = 0"), "space.toml"),
                  {.threads = 1});
  ASSERT_FALSE(floorless.ranking.empty());
  EXPECT_GT(floorless.architectures[floorless.ranking[0]].cluster_loss, 0);
  EXPECT_NE(ErrorOf(replace(kSpace, "E = 1.5", "E = -1"))
                .find("E = -1. Violated constraint: 0 <= E <= 1e+30 (a scale of law sparse"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "A = 400", "A = 1e308"))
                .find("A = 1e+308. Violated constraint: 0 <= A <= 1e+30"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "A = 400", "A = 1e308"));
  // A loss that is not a number (a signed exponent of abnar's pushed to 1e9) is refused with the
  // architecture, not ranked as +inf.
  const std::string abnar = replace(
      kSpace, "name = \"sparse\"\nparams = { E = 1.5, A = 400, B = 400, alpha = 0.3, beta = 0.3, "
              "gamma = 0.5 }",
      "name = \"abnar\"\nparams = { e = 1, a = 10, b = 10, c = 1, d = 1, alpha = 1e9, beta = -0.3, "
      "gamma = -0.2, lambda = 0.5, delta = 0.5 }");
  ASSERT_EQ(ErrorOf(abnar), "");
  std::string swept;
  try {
    RunCodesign(LoadSpaceFromToml(abnar, "space.toml"), {.threads = 1});
  } catch (const InputError& error) {
    swept = error.what();
  }
  EXPECT_NE(swept.find("[law] abnar (inline in space.toml) gives a loss of inf for d768 "),
            std::string::npos)
      << swept;
  EXPECT_NE(swept.find("Violated constraint: a finite loss for every architecture"),
            std::string::npos)
      << swept;
  // The cluster's and the job's sizes are checked at their line, as the perf model bounds them.
  EXPECT_NE(ErrorOf(replace(kSpace, "gpus = 8", "gpus = 99999999999"))
                .find("space.toml:5:8: gpus = 99999999999. Violated constraint: 1 <= gpus <= "
                      "16777216"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "gpus = 8", "gpus = 99999999999"));
  // An integer written as a float is named as such (it read "experts = 8 ... is an integer").
  EXPECT_NE(ErrorOf(replace(kSpace, "experts = [8, 16]", "experts = [8.0, 16]"))
                .find("experts = 8.0 (a float). Violated constraint: experts is an integer, written "
                      "without a decimal point or exponent"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "experts = [8, 16]", "experts = [8.0, 16]"));
  EXPECT_NE(ErrorOf(replace(kSpace, "name = \"sparse\"\n", ""))
                .find("[law] has no name (name = \"LAW\", a law of `mosaic fit`: "),
            std::string::npos)
      << ErrorOf(replace(kSpace, "name = \"sparse\"\n", ""));
  // A law of the budget alone cannot rank architectures.
  EXPECT_NE(ErrorOf(replace(kSpace, "name = \"sparse\"\nparams = { E = 1.5, A = 400, B = 400, alpha = "
                                    "0.3, beta = 0.3, gamma = 0.5 }",
                            "name = \"compute\"\nparams = { E = 1.6, A = 88.32, alpha = 0.0941 }"))
                .find("Violated constraint: a law with an input of the architecture"),
            std::string::npos);
  // Values of an axis that resolve alike would rank one architecture twice.
  EXPECT_NE(ErrorOf(replace(kSpace, "top_k = [2]", "top_k = [2]\nexpert_width = [\"d/2\", 384]"))
                .find("[axes] expert_width: \"d/2\" and \"384\" both give 384 at d_model = 768. "
                      "Violated constraint: each value of an axis gives an architecture of its "
                      "own"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "top_k = [2]", "top_k = [2]\nexpert_width = [\"d/2\", 384]"));
  // A space is bounded before anything is made (8.6e10 architectures ran out of memory).
  EXPECT_NE(ErrorOf(replace(kSpace, "experts = [8, 16]\ntop_k = [2]",
                            "experts = { from = 1, to = 4096, step = 1 }\n"
                            "top_k = { from = 1, to = 4096, step = 1 }"))
                .find("[axes] give 1.678e+07 architectures (the product of the axes' lengths). "
                      "Violated constraint: at most 1,000,000"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "experts = [8, 16]\ntop_k = [2]",
                         "experts = { from = 1, to = 4096, step = 1 }\n"
                         "top_k = { from = 1, to = 4096, step = 1 }"));
  // The sweep's own checks, located in the space file.
  EXPECT_NE(ErrorOf(replace(kSpace, "[search]", "[search]\nprofile = \"nope\""))
                .find("space.toml:17:11: unknown perf profile 'nope'"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "[search]", "[search]\nprofile = \"nope\""));
  EXPECT_NE(ErrorOf(replace(kSpace, "seq_len = 1024", "seq_len = 100000000000"))
                .find("seq_len = 100000000000. Violated constraint: 1 <= seq_len <= 1073741824"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "seq_len = 1024", "seq_len = 100000000000"));
  // A value listed twice on an axis would rank each architecture twice.
  EXPECT_NE(ErrorOf(replace(kSpace, "experts = [8, 16]", "experts = [8, 16, 8]"))
                .find("experts = 8. Violated constraint: each value of experts is listed once"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "experts = [8, 16]", "experts = [8, 16, 8]"));
  // A budget past any run is refused: its FLOPs would be infinite.
  EXPECT_NE(ErrorOf(replace(kSpace, "days = 1", "days = 1e300"))
                .find("days = 1e+300. Violated constraint: 0 < days <= 36525"),
            std::string::npos)
      << ErrorOf(replace(kSpace, "days = 1", "days = 1e300"));
  EXPECT_NE(ErrorOf(replace(kSpace, "days = 1", "days = nan")).find("0 < days <= 36525"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "days = 1", "days = 1\ngpu_hours = 5"))
                .find("[budget] gives exactly one of gpu_hours, days"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "experts = [8, 16]", "experts = { from = 8, to = 4, factor = 2 }"))
                .find("from <= to"),
            std::string::npos);
  EXPECT_NE(ErrorOf(replace(kSpace, "top_k = [2]", "top_k = [2]\nexpert_width = [\"d/2\"]\n"
                                                   "granularity = [2]"))
                .find("expert_width or granularity, not both"),
            std::string::npos);
}

}  // namespace
}  // namespace mosaic
