#include "mosaic/study/ladder.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "mosaic/study/ladder_report.h"
#include "mosaic/util/number_format.h"

namespace mosaic {
namespace {

// The seed-000 table (docs/accounting.md), every printed value of every row.
struct SeedRow {
  int64_t d_model;
  int64_t layers;
  const char* active_params;
  const char* token_budget;
  int64_t racks;
  int64_t steps;
  const char* train_flops;
  const char* est_time;
  int64_t active_params_exact;
};

constexpr SeedRow kSeedTable[] = {
    {768, 8, "54.3M", "40.7B", 1, 9'703, "4.81e19", "~0.6 h", 54'263'808},
    {1024, 12, "145.5M", "109.1B", 1, 26'016, "2.39e20", "~2.8 h", 145'489'920},
    {1536, 16, "434.1M", "325.6B", 1, 77'625, "1.58e21", "~18.3 h", 434'110'464},
    {2048, 22, "1.06B", "795.5B", 4, 47'414, "7.81e21", "~22.6 h", 1'060'634'624},
};

TEST(PlanLadder, ReproducesTheSeedTable) {
  const LadderPlan plan = PlanLadder(LoadStudy(kDefaultStudy));
  ASSERT_EQ(plan.rows.size(), 12u);  // 3 arms × 4 rungs
  for (size_t i = 0; i < 4; ++i) {
    const LadderRow& row = plan.rows[i];
    const SeedRow& seed = kSeedTable[i];
    SCOPED_TRACE(seed.d_model);
    EXPECT_EQ(row.arm, "fsdp-chunk1");
    EXPECT_EQ(row.d_model, seed.d_model);
    EXPECT_EQ(row.layers, seed.layers);
    EXPECT_EQ(row.active_params, seed.active_params_exact);
    EXPECT_EQ(FormatCount(static_cast<double>(row.active_params)), seed.active_params);
    EXPECT_EQ(row.token_budget, 750 * seed.active_params_exact);
    EXPECT_EQ(FormatCount(static_cast<double>(row.token_budget)), seed.token_budget);
    EXPECT_EQ(row.racks, seed.racks);
    EXPECT_EQ(row.steps, seed.steps);
    EXPECT_EQ(FormatScientific(row.train_flops), seed.train_flops);
    EXPECT_EQ(fmt::format("~{:.1f} h", row.est_hours), seed.est_time);
  }
}

// Tokens per step: 1024 × 4096 = 4.19M at one rack, 16.78M at four (seed 000).
TEST(PlanLadder, TokensPerStep) {
  const LadderPlan plan = PlanLadder(LoadStudy(kDefaultStudy));
  EXPECT_EQ(plan.rows[0].tokens_per_step, 4'194'304);
  EXPECT_EQ(plan.rows[3].tokens_per_step, 16'777'216);
}

// The EP arm (192 experts of width d, LatentMoE ℓ = d/2) adds, per layer, 64 router columns and the
// two latent projections to the table convention's active params, and trains the reference budget.
TEST(PlanLadder, EpArmActiveParams) {
  const LadderPlan plan = PlanLadder(LoadStudy(kDefaultStudy));
  for (size_t i = 0; i < 4; ++i) {
    const LadderRow& reference = plan.rows[i];
    const LadderRow& ep = plan.rows[8 + i];
    ASSERT_EQ(ep.arm, "ep64");
    const int64_t d = ep.d_model;
    EXPECT_EQ(ep.active_params - reference.active_params, ep.layers * (d * 64 + 2 * d * (d / 2)));
    EXPECT_EQ(ep.token_budget, reference.token_budget);
    EXPECT_EQ(ep.steps, reference.steps);
  }
  // The chunk-4 arm is the same model.
  EXPECT_EQ(plan.rows[4].active_params, plan.rows[0].active_params);
}

TEST(PlanLadder, EvalCadence) {
  const LadderPlan plan = PlanLadder(LoadStudy(kDefaultStudy));
  EXPECT_EQ(plan.rows[0].eval_every_steps, 1000);
  EXPECT_EQ(plan.rows[0].evals, 9);
  EXPECT_EQ(plan.rows[1].eval_every_steps, 3000);
  EXPECT_EQ(plan.rows[2].evals, 25);
  // Whatever the rules' order, a rung takes the one with the largest min_d_model it reaches
  // (listed from the largest down, the smallest rule took every rung).
  StudyConfig reversed = LoadStudy(kDefaultStudy);
  std::reverse(reversed.cadence.begin(), reversed.cadence.end());
  const LadderPlan same = PlanLadder(reversed);
  ASSERT_EQ(same.rows.size(), plan.rows.size());
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    EXPECT_EQ(same.rows[i].eval_every_steps, plan.rows[i].eval_every_steps) << i;
  }
}

// Budgets past 64 bits and rungs with no step are refused, naming the product and its factors
// (they printed negative token budgets and 0-step rungs).
TEST(PlanLadder, RefusesBudgetsPast64BitsAndRungsWithoutAStep) {
  auto error = [](auto edit) {
    StudyConfig study = LoadStudy(kDefaultStudy);
    edit(study);
    try {
      PlanLadder(study);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = error([](StudyConfig& s) { s.tokens_per_active_param = int64_t{9} << 59; });
  EXPECT_NE(e.find("token budget = tokens_per_active_param × active params = 5188146770730811392 × "),
            std::string::npos) << e;
  EXPECT_NE(e.find("passes 2^63 - 1"), std::string::npos) << e;
  e = error([](StudyConfig& s) { s.batch_seqs_per_rack = int64_t{1} << 62; });
  EXPECT_NE(e.find("tokens per step = batch_seqs_per_rack × racks × seq_len"), std::string::npos)
      << e;
  e = error([](StudyConfig& s) { s.gpus_per_rack = int64_t{1} << 62; s.rungs[0].racks = 4; });
  EXPECT_NE(e.find("GPUs = gpus_per_rack × racks"), std::string::npos) << e;
  e = error([](StudyConfig& s) { s.batch_seqs_per_rack = int64_t{1} << 40; });
  EXPECT_NE(e.find("the step budget rounds to 0 steps"), std::string::npos) << e;
}

TEST(PlanLadder, AModelErrorOpensWithTheStudyLocationThenArmAndRung) {
  // A rung's top_k past every arm's experts: located at the rung's key, then the arm and rung,
  // then the rule with the other overrides and where each was written.
  StudyConfig study = LoadStudy(kDefaultStudy);
  study.origin = "study.toml";
  study.rungs[0].overrides.push_back({"top_k", "1000", {"study.toml", 23, 17, ""}});
  std::string error;
  try {
    PlanLadder(study);
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_EQ(error.rfind("study.toml:23:17: arm '", 0), 0u) << error;
  EXPECT_NE(error.find(", rung d768: top_k = 1000. Violated constraint: 1 <= top_k <= experts"),
            std::string::npos)
      << error;
}

TEST(RoundDivideHalfEven, MatchesPythonRound) {
  EXPECT_EQ(RoundDivideHalfEven(5, 2), 2);   // round(2.5) = 2
  EXPECT_EQ(RoundDivideHalfEven(7, 2), 4);   // round(3.5) = 4
  EXPECT_EQ(RoundDivideHalfEven(10, 4), 2);  // round(2.5) = 2
  EXPECT_EQ(RoundDivideHalfEven(11, 4), 3);  // round(2.75) = 3
  EXPECT_EQ(RoundDivideHalfEven(40'697'856'000, 4'194'304), 9'703);
}

TEST(RenderLadderCsv, HasOneLinePerRowAndExactIntegers) {
  const LadderPlan plan = PlanLadder(LoadStudy(kDefaultStudy));
  const std::string csv = RenderLadderCsv(plan);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13);
  EXPECT_NE(csv.find("fsdp-chunk1,768,8,1,54263808,"), std::string::npos);
}

}  // namespace
}  // namespace mosaic
