// Per-loop diagnostics: column names, metric kinds, and the summary of seed-004-shaped
// module_diag.csv files against the generator's closed forms.
#include "mosaic/runs/module_diag.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "seed004_logs.h"

namespace mosaic::runs {
namespace {

using testing::FindSeedRun;
using testing::SeedRun;

// module_diag.csv holds values printed with 9 significant digits.
constexpr double kCsvRelTol = 1e-7;

TEST(ModuleDiag, ParsesPerLoopColumnNames) {
  const std::optional<DiagColumn> c = ParseDiagColumn("H/L03/moe/cH01/act_var");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->layer, 3);
  EXPECT_EQ(c->branch, "moe");
  EXPECT_EQ(c->loop, 1);
  EXPECT_EQ(c->metric, "act_var");
  const std::optional<DiagColumn> no_layer = ParseDiagColumn("diag/cH12/eff_rank");
  ASSERT_TRUE(no_layer.has_value());
  EXPECT_EQ(no_layer->layer, -1);
  EXPECT_EQ(no_layer->branch, "all");
  EXPECT_EQ(no_layer->loop, 12);
  const std::optional<DiagColumn> loop_first = ParseDiagColumn("cH02/attn/L09/top_sv");
  ASSERT_TRUE(loop_first.has_value());
  EXPECT_EQ(loop_first->branch, "attn");
  EXPECT_EQ(loop_first->layer, 9);
  for (const char* not_diag : {"eval/loss", "module_diag/L03/attn/act_norm_mean", "H/L03/moe/cH01",
                               "H/L03/moe/cHx1/act_var", "H/L03/moe/cH/act_var"}) {
    EXPECT_FALSE(ParseDiagColumn(not_diag).has_value()) << not_diag;
  }
}

TEST(ModuleDiag, ClassifiesMetricsByName) {
  EXPECT_EQ(ClassifyDiagMetric("act_norm"), DiagMetricKind::kActivationNorm);
  EXPECT_EQ(ClassifyDiagMetric("act_norm_mean"), DiagMetricKind::kActivationNorm);
  EXPECT_EQ(ClassifyDiagMetric("act_var"), DiagMetricKind::kVariance);
  EXPECT_EQ(ClassifyDiagMetric("eff_rank"), DiagMetricKind::kEffectiveRank);
  EXPECT_EQ(ClassifyDiagMetric("top_sv"), DiagMetricKind::kTopSingularValue);
  EXPECT_EQ(ClassifyDiagMetric("mean_cos"), DiagMetricKind::kMeanCosine);
  EXPECT_EQ(ClassifyDiagMetric("grad_norm_mean"), DiagMetricKind::kOther);
}

class SeedDiagnostics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(::testing::TempDir() + "mosaic_diag_" + std::to_string(::getpid()));
    testing::WriteSeed004Logs(*root_);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*root_);
    delete root_;
  }
  static runs::Run Load(const std::string& name) {
    const std::vector<RunDirectory> dirs = DiscoverRuns(*root_ + "/ablation/" + name);
    EXPECT_EQ(dirs.size(), 1u);
    return LoadRun(dirs.at(0), LoadOptions{});
  }
  static std::string* root_;
};
std::string* SeedDiagnostics::root_ = nullptr;

TEST_F(SeedDiagnostics, SummarisesEveryLoopAndNamesTheZeroColumns) {
  const runs::Run run = Load("nobpk_H12_mb8");
  const LoopDiagnostics d = SummarizeLoopDiagnostics(run);
  EXPECT_EQ(d.columns, 10 * 2 * 12 * 5);
  EXPECT_EQ(d.last_step, 10000);
  ASSERT_EQ(d.loops.size(), 12u);
  EXPECT_EQ(d.loops.front(), 1);
  EXPECT_EQ(d.loops.back(), 12);
  EXPECT_EQ(d.branches, (std::vector<std::string>{"attn", "moe"}));
  EXPECT_EQ(d.metrics,
            (std::vector<std::string>{"act_norm", "act_var", "eff_rank", "top_sv", "mean_cos"}));
  // The event files' per-module gradient norms are always 0: named and left out.
  ASSERT_EQ(d.zero_columns.size(), 20u);
  EXPECT_EQ(d.zero_columns.front(), "module_diag/L00/attn/grad_norm_mean");
  EXPECT_EQ(d.zero_columns.back(), "module_diag/L09/moe/grad_norm_mean");
}

TEST_F(SeedDiagnostics, GrowthOfTheActivationNormPerLoop) {
  const runs::Run run = Load("nobpk_H12_mb8");
  const SeedRun& seed = FindSeedRun("nobpk_H12_mb8");
  const LoopDiagnostics d = SummarizeLoopDiagnostics(run);
  for (int loop : {1, 6, 12}) {
    const LoopMetric* g = d.Find("act_norm", "moe", loop);
    ASSERT_NE(g, nullptr) << loop;
    EXPECT_EQ(g->layers, 10);
    EXPECT_EQ(g->first_step, 50);
    EXPECT_EQ(g->last_step, 10000);
    // act_norm ∝ 1 + rate × step / steps in every layer, so the mean over layers grows alike.
    const double rate = testing::DiagNormGrowthRate(seed, loop);
    const double growth = (1 + rate) / (1 + rate * 50.0 / 10000.0);
    EXPECT_NEAR(g->growth, growth, kCsvRelTol * growth) << loop;
    double mean = 0;
    for (int layer = 0; layer < 10; ++layer) mean += testing::DiagActNorm(seed, loop, layer, true, 10000);
    EXPECT_NEAR(g->last_mean, mean / 10, kCsvRelTol * mean);
    EXPECT_EQ(g->last_max_layer, 9);
    EXPECT_EQ(g->last_min_layer, 0);
  }
  // The deepest loop grows most, past the ×2 threshold.
  ASSERT_FALSE(d.findings.empty());
  const DiagFinding& f = d.findings[1];  // act_norm, moe
  EXPECT_EQ(f.kind, DiagFindingKind::kNormGrowth);
  EXPECT_EQ(f.branch, "moe");
  EXPECT_EQ(f.loop, 12);
  EXPECT_TRUE(f.flagged);
}

TEST_F(SeedDiagnostics, WhereTheEffectiveRankCollapses) {
  const runs::Run run = Load("nobpk_H12_mb8");
  const SeedRun& seed = FindSeedRun("nobpk_H12_mb8");
  const LoopDiagnostics d = SummarizeLoopDiagnostics(run);
  const LoopMetric* g = d.Find("eff_rank", "moe", 12);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->first_step, 500);  // the column is blank before step 500
  EXPECT_EQ(g->lowest_ratio_layer, 7);
  const double ratio = testing::DiagEffRank(seed, 12, 7, true, 10000) /
                       testing::DiagEffRank(seed, 12, 7, true, 500);
  EXPECT_NEAR(g->lowest_layer_ratio, ratio, kCsvRelTol);
  const DiagFinding* collapse = nullptr;
  for (const DiagFinding& f : d.findings) {
    if (f.kind == DiagFindingKind::kRankCollapse && f.branch == "moe") collapse = &f;
  }
  ASSERT_NE(collapse, nullptr);
  EXPECT_EQ(collapse->loop, 12);
  EXPECT_EQ(collapse->layer, 7);
  EXPECT_TRUE(collapse->flagged);
  EXPECT_NE(collapse->message.find("falls most in cH12 L07"), std::string::npos)
      << collapse->message;
  // No layer of the attention branch falls below half.
  for (const DiagFinding& f : d.findings) {
    if (f.kind == DiagFindingKind::kRankCollapse && f.branch == "attn") {
      EXPECT_FALSE(f.flagged);
    }
  }
}

TEST_F(SeedDiagnostics, TheFirstPassOfARestartedRunIsSummarised) {
  // nobpk_H9_mb8 wrote steps 1000–1500 twice, the second pass 1% higher.
  const runs::Run run = Load("nobpk_H9_mb8");
  const SeedRun& seed = FindSeedRun("nobpk_H9_mb8");
  const LoopDiagnostics d = SummarizeLoopDiagnostics(run);
  const LoopMetric* g = d.Find("act_norm", "attn", 9);
  ASSERT_NE(g, nullptr);
  const auto at = std::find(g->steps.begin(), g->steps.end(), 1250);
  ASSERT_NE(at, g->steps.end());
  double mean = 0;
  for (int layer = 0; layer < 10; ++layer) mean += testing::DiagActNorm(seed, 9, layer, false, 1250);
  EXPECT_NEAR(g->means[at - g->steps.begin()], mean / 10, kCsvRelTol * mean);
}

}  // namespace
}  // namespace mosaic::runs
