// The ablation job on seed-004-shaped logs (tests/support/seed004_logs.h): the platform offset and
// every corrected effect against the generator's known values, the health of each run, matched
// schedule fractions, and the errors for pairs that name no run.
#include "mosaic/runs/ablation.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "mosaic/util/error.h"
#include "seed004_logs.h"

namespace mosaic::runs {
namespace {

using testing::AblationEvalLoss;
using testing::BaseEvalLoss;
using testing::FindSeedRun;
using testing::kEvalNoise;
using testing::kPlatformOffset;
using testing::SeedRun;

// eval/loss is stored as float32 (simple_value): values near 4 carry up to 2.4e-7 of rounding each,
// and an effect is built from three of them.
constexpr double kFloat32Tol = 2e-6;

AblationOptions SeedOptions(Alignment alignment = Alignment::kStep) {
  AblationOptions o;
  o.tag = "eval/loss";
  o.offset_pair = {"nobpk_H3", "H3"};
  for (const SeedRun& r : testing::SeedAblationRuns()) {
    if (r.pair_flag) o.pairs.push_back({r.name, r.base_run});
  }
  o.alignment = alignment;
  return o;
}

class SeedAblation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(::testing::TempDir() + "mosaic_ablation_" + std::to_string(::getpid()));
    testing::WriteSeed004Logs(*root_);
    for (const RunDirectory& d : DiscoverRuns(*root_ + "/ablation")) {
      ablation_runs_->push_back(LoadRun(d, LoadOptions{}));
    }
    for (const RunDirectory& d : DiscoverRuns(*root_ + "/baseline")) {
      baseline_runs_->push_back(LoadRun(d, LoadOptions{}));
    }
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*root_);
    delete root_;
    ablation_runs_->clear();
    baseline_runs_->clear();
  }
  static Ablation Analyze(const AblationOptions& options) {
    return AnalyzeAblation(*ablation_runs_, *baseline_runs_, options);
  }
  static const AblationRow& Row(const Ablation& a, const std::string& run) {
    for (const AblationRow& r : a.rows) {
      if (r.run == run) return r;
    }
    ADD_FAILURE() << "no row " << run;
    return a.rows.front();
  }
  // The effect the generator put at `p`: the run's eval loss minus its baseline's there, minus the
  // platform offset.
  static double KnownEffect(const AblationRow& row, const ComparedPoint& p) {
    const SeedRun& run = FindSeedRun(row.run);
    const SeedRun& base = FindSeedRun(row.base_run);
    return AblationEvalLoss(run, p.step) -
           BaseEvalLoss(static_cast<int64_t>(p.base_step), base.steps, base.loops) -
           kPlatformOffset;
  }

  static std::string* root_;
  static std::vector<runs::Run>* ablation_runs_;
  static std::vector<runs::Run>* baseline_runs_;
};
std::string* SeedAblation::root_ = nullptr;
std::vector<runs::Run>* SeedAblation::ablation_runs_ = new std::vector<runs::Run>;
std::vector<runs::Run>* SeedAblation::baseline_runs_ = new std::vector<runs::Run>;

TEST_F(SeedAblation, RecoversThePlatformOffsetFromTheEquivalentPair) {
  const Ablation a = Analyze(SeedOptions());
  EXPECT_EQ(a.offset.common_steps, 40);
  EXPECT_EQ(a.offset.first_common_step, 250);
  EXPECT_EQ(a.offset.last_common_step, 10000);
  EXPECT_NEAR(a.offset.mean_difference, kPlatformOffset, kFloat32Tol);
  // The noise alternates ±kEvalNoise over the 40 common steps.
  const double sd = kEvalNoise * std::sqrt(40.0 / 39.0);
  EXPECT_NEAR(a.offset.sd_difference, sd, kFloat32Tol);
  EXPECT_NEAR(a.offset.standard_error, sd / std::sqrt(40.0), kFloat32Tol);
  EXPECT_NEAR(a.offset_band, std::hypot(sd, sd / std::sqrt(40.0)), kFloat32Tol);
}

TEST_F(SeedAblation, EveryRunIsPairedAsAsked) {
  const Ablation a = Analyze(SeedOptions());
  ASSERT_EQ(a.rows.size(), 7u);
  EXPECT_EQ(a.rows[0].run, "nobpk_H3");  // the offset pair first
  EXPECT_TRUE(a.rows[0].offset_pair);
  for (const AblationRow& r : a.rows) {
    EXPECT_EQ(r.base_run, FindSeedRun(r.run).base_run) << r.run;
  }
  EXPECT_FALSE(Row(a, "lam1_H3_5k").explicit_pair);  // no --pair: the offset pair's baseline
  EXPECT_TRUE(Row(a, "nobpk_H9_mb8").explicit_pair);
  EXPECT_TRUE(a.notes.empty());
  ASSERT_EQ(a.baseline_health.size(), 5u);
}

TEST_F(SeedAblation, CorrectedEffectsAtTheFinalStepAreTheGeneratorsEffects) {
  const Ablation a = Analyze(SeedOptions());
  const double se = a.offset.standard_error;
  for (const AblationRow& r : a.rows) {
    const SeedRun& run = FindSeedRun(r.run);
    const SeedRun& base = FindSeedRun(r.base_run);
    SCOPED_TRACE(r.run);
    // Every compared point.
    ASSERT_EQ(r.points.size(), static_cast<size_t>(std::min(run.steps, base.steps) / 250));
    for (const ComparedPoint& p : r.points) EXPECT_NEAR(p.effect, KnownEffect(r, p), kFloat32Tol);
    if (run.steps == base.steps) {
      // Same schedule: the effect is the switch's, plus the noise of the final eval (−kEvalNoise).
      EXPECT_EQ(r.compared_at, "final step " + std::to_string(run.steps));
      EXPECT_NEAR(r.effect, run.effect - kEvalNoise, kFloat32Tol);
      // The last 10 differences alternate ±kEvalNoise around a constant: σ² = 2 kEvalNoise².
      EXPECT_EQ(r.noise_source, NoiseSource::kRun);
      EXPECT_NEAR(r.noise, std::sqrt(2.0) * kEvalNoise, kFloat32Tol);
      EXPECT_NEAR(r.uncertainty, std::hypot(se, std::sqrt(2.0) * kEvalNoise), kFloat32Tol);
    }
  }
  // The 5000-step run without a pair meets the 10000-step baseline at its own final step, where
  // it has finished its decay and the baseline has not: the decay's 0.06 shows in the effect.
  const AblationRow& lam1 = Row(a, "lam1_H3_5k");
  EXPECT_EQ(lam1.final_point.step, 5000);
  EXPECT_EQ(lam1.compared_at, "step 5000 (the run's final step; the baseline runs to 10000)");
  EXPECT_NEAR(lam1.effect, -0.06 - 0.010 - kEvalNoise, kFloat32Tol);
}

TEST_F(SeedAblation, EffectsInsideTheOffsetsUncertaintyAreMarked) {
  const Ablation a = Analyze(SeedOptions());
  for (const AblationRow& r : a.rows) {
    const bool inside = r.run == "nobpk_H3" || r.run == "nobpk_H12_mb8";
    EXPECT_EQ(r.inside_offset_uncertainty, inside) << r.run << " effect " << r.effect;
    EXPECT_EQ(std::fabs(r.effect) <= 2 * a.offset_band, inside) << r.run;
  }
}

TEST_F(SeedAblation, MatchedScheduleFractions) {
  const Ablation a = Analyze(SeedOptions(Alignment::kScheduleFraction));
  const AblationRow& lam1 = Row(a, "lam1_H3_5k");
  ASSERT_EQ(lam1.points.size(), 20u);
  EXPECT_EQ(lam1.final_point.step, 5000);
  EXPECT_EQ(lam1.final_point.base_step, 10000);
  EXPECT_EQ(lam1.final_point.fraction, 1.0);
  EXPECT_FALSE(lam1.final_point.base_interpolated);
  EXPECT_EQ(lam1.compared_at, "fraction 1.000: step 5000 of 5000 ↔ baseline step 10000 of 10000");
  for (const ComparedPoint& p : lam1.points) {
    EXPECT_EQ(p.base_step, 2.0 * p.step);
    EXPECT_NEAR(p.effect, KnownEffect(lam1, p), kFloat32Tol);
  }
  EXPECT_NEAR(lam1.effect,
              BaseEvalLoss(5000, 5000, 3) - BaseEvalLoss(10000, 10000, 3) - 0.010 - kEvalNoise,
              kFloat32Tol);
  // Runs as long as their baseline are compared as with steps.
  const Ablation by_step = Analyze(SeedOptions());
  EXPECT_EQ(Row(a, "nobpk_H6").effect, Row(by_step, "nobpk_H6").effect);
}

TEST_F(SeedAblation, TheFirstPassIsTheResult) {
  const Ablation a = Analyze(SeedOptions());
  const AblationRow& h9 = Row(a, "nobpk_H9_mb8");
  for (const ComparedPoint& p : h9.points) {
    if (p.step == 1250) {
      EXPECT_NEAR(p.value, AblationEvalLoss(FindSeedRun("nobpk_H9_mb8"), 1250), kFloat32Tol);
    }
  }
}

TEST_F(SeedAblation, RunHealthOfTheRestartedRuns) {
  const Ablation a = Analyze(SeedOptions());
  const RunHealth& h9 = Row(a, "nobpk_H9_mb8").health;
  ASSERT_EQ(h9.logged_twice.size(), 2u);  // the second event file and module_diag.csv
  for (const LoggedTwice& l : h9.logged_twice) {
    EXPECT_EQ(l.from_step, 1000) << l.file;
    EXPECT_EQ(l.to_step, 1500) << l.file;
  }
  EXPECT_NE(h9.logged_twice[1].file.find("module_diag.csv"), std::string::npos);
  EXPECT_EQ(h9.logged_twice[1].tags, 9 * 10 * 2 * 5);
  ASSERT_EQ(h9.non_finite.size(), 1u);
  EXPECT_EQ(h9.non_finite[0].tag, "train/grad_norm");
  EXPECT_EQ(h9.non_finite[0].steps, (std::vector<int64_t>{1500, 1852}));
  EXPECT_TRUE(h9.spikes.empty());
  EXPECT_EQ(h9.end, RunEnd::kFinished);
  EXPECT_FALSE(h9.Healthy());

  const RunHealth& h12 = Row(a, "nobpk_H12_mb8").health;
  ASSERT_FALSE(h12.logged_twice.empty());
  EXPECT_EQ(h12.logged_twice[0].from_step, 8000);
  EXPECT_EQ(h12.logged_twice[0].to_step, 8400);
  ASSERT_EQ(h12.spikes.size(), 1u);
  EXPECT_EQ(h12.spikes[0].tag, "train/loss");
  EXPECT_EQ(h12.spikes[0].steps, (std::vector<int64_t>{8390}));
  ASSERT_EQ(h12.non_finite.size(), 1u);
  EXPECT_EQ(h12.non_finite[0].steps, (std::vector<int64_t>{8400}));

  const RunHealth& h3 = Row(a, "nobpk_H3").health;
  EXPECT_TRUE(h3.Healthy()) << (h3.other.empty() ? "" : h3.other[0].message);
  // The 5000-step runs finish their own decay: not runs that ended early.
  const RunHealth& short_run = Row(a, "nonorm_H3_5k").health;
  EXPECT_EQ(short_run.end, RunEnd::kFinished) << short_run.end_reason;
  EXPECT_EQ(short_run.last_step, 5000);
  EXPECT_EQ(short_run.end_reason, "train/lr ends at 2e-05 at step 5000, 0.1 × its peak 0.0002");
}

TEST_F(SeedAblation, PairsThatNameNoRunAreErrors) {
  AblationOptions o = SeedOptions();
  o.pairs.push_back({"nobpk_H9", "H9"});
  try {
    Analyze(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "--pair = nobpk_H9=H9. Violated constraint: RUN must be a run of the ablation "
                  "directory (lam1_H3_5k, "),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("(did you mean 'nobpk_H9_mb8'?)"), std::string::npos)
        << e.what();
  }
  o = SeedOptions();
  o.offset_pair = {"nobpk_H3", "H4"};
  EXPECT_THROW(Analyze(o), InputError);
  o = SeedOptions();
  o.tag = "eval/los";
  try {
    Analyze(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tag = eval/los. Violated constraint: a tag of run "
                                         "nobpk_H3 (--offset-pair nobpk_H3=H3) (did you mean "
                                         "'eval/loss'?); its tags: "),
              std::string::npos)
        << e.what();
  }
  o = SeedOptions();
  o.pairs.push_back({"nobpk_H6", "H9"});
  EXPECT_THROW(Analyze(o), InputError);  // paired twice
}

// In-memory runs: one tag, points at the given steps with value f(step).
Run MakeRun(const std::string& name, const std::string& tag, const std::vector<int64_t>& steps,
            double (*f)(int64_t)) {
  Run run;
  run.name = name;
  TimeSeries s;
  s.run = name;
  s.tag = tag;
  for (int64_t step : steps) s.points.push_back({step, NAN, f(step)});
  run.series.push_back(std::move(s));
  return run;
}

TEST(Ablation, FractionsBetweenBaselinePointsAreInterpolated) {
  auto linear = [](int64_t step) { return 1.0 + step / 1000.0; };
  auto shifted = [](int64_t step) { return 1.1 + step / 1000.0; };
  std::vector<runs::Run> ablation = {MakeRun("eq", "loss", {100, 200, 300}, shifted),
                               MakeRun("x", "loss", {100, 200, 300}, shifted)};
  std::vector<runs::Run> baseline = {MakeRun("beq", "loss", {100, 200, 300}, linear),
                               MakeRun("bx", "loss", {0, 150, 300, 450, 600}, linear)};
  AblationOptions o;
  o.tag = "loss";
  o.offset_pair = {"eq", "beq"};
  o.pairs = {{"x", "bx"}};
  o.alignment = Alignment::kScheduleFraction;
  const Ablation a = AnalyzeAblation(ablation, baseline, o);
  EXPECT_NEAR(a.offset.mean_difference, 0.1, 1e-12);
  ASSERT_EQ(a.rows.size(), 2u);
  const AblationRow& x = a.rows[1];
  ASSERT_EQ(x.points.size(), 3u);
  EXPECT_EQ(x.base_steps, 600);
  const double base_steps[] = {200, 400, 600};
  const bool interpolated[] = {true, true, false};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(x.points[i].base_step, base_steps[i]);
    EXPECT_EQ(x.points[i].base_interpolated, interpolated[i]);
    EXPECT_NEAR(x.points[i].base_value, linear(static_cast<int64_t>(base_steps[i])), 1e-12);
    // run − base − offset = (1.1 + s/1000) − (1 + 2s/1000) − 0.1 = −s/1000
    EXPECT_NEAR(x.points[i].effect, -x.points[i].step / 1000.0, 1e-12);
  }
  EXPECT_EQ(x.noise_source, NoiseSource::kRun);
  // Fewer than 3 points: the offset pair's spread stands in for the run's noise.
  o.alignment = Alignment::kStep;
  const Ablation by_step = AnalyzeAblation(ablation, baseline, o);
  ASSERT_EQ(by_step.rows[1].points.size(), 1u);  // only step 300 is common
  EXPECT_EQ(by_step.rows[1].noise_source, NoiseSource::kOffsetPair);
  EXPECT_EQ(by_step.rows[1].compared_at, "step 300 (the run's final step; the baseline runs to 600)");
}

// An offset measured at one step has no spread: refused, rather than an exact offset against
// which every effect is "outside".
TEST(Ablation, AnOffsetPairWithOneCommonStepIsRefused) {
  auto linear = [](int64_t step) { return 1.0 + step / 1000.0; };
  const std::vector<runs::Run> ablation = {MakeRun("eq", "loss", {2000}, linear)};
  const std::vector<runs::Run> baseline = {MakeRun("beq", "loss", {100, 1000, 2000}, linear)};
  AblationOptions o;
  o.tag = "loss";
  o.offset_pair = {"eq", "beq"};
  try {
    AnalyzeAblation(ablation, baseline, o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "--offset-pair = eq=beq. Violated constraint: the two runs must share at least "
                  "2 steps with a finite 'loss' value: they share step 2000 only"),
              std::string::npos)
        << e.what();
  }
}

// The same run on both sides of the offset pair (the baseline directory given as the ablation's)
// has an offset of exactly 0 with no spread: refused, as one shared step is.
TEST(Ablation, AnOffsetPairOfOneRunTwiceIsRefused) {
  auto linear = [](int64_t step) { return 1.0 + step / 1000.0; };
  const std::vector<runs::Run> runs = {MakeRun("H3", "loss", {100, 1000, 2000}, linear)};
  AblationOptions o;
  o.tag = "loss";
  o.offset_pair = {"H3", "H3"};
  try {
    AnalyzeAblation(runs, runs, o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "--offset-pair = H3=H3. Violated constraint: two runs (both name H3): one run "
                  "against itself has an offset of 0 with no spread to judge effects against"),
              std::string::npos)
        << e.what();
  }
}

// A run whose last eval is NaN did not end at its last finite step: the compared step is named
// as the last common finite one (it read "the run's final step").
TEST(Ablation, ANonFiniteLastEvalIsNotTheRunsFinalStep) {
  auto linear = [](int64_t step) { return 1.0 + step / 1000.0; };
  auto nan_at_end = [](int64_t step) { return step == 300 ? NAN : 1.1 + step / 1000.0; };
  const std::vector<runs::Run> ablation = {MakeRun("eq", "loss", {100, 200, 300}, linear),
                                           MakeRun("x", "loss", {100, 200, 300}, nan_at_end)};
  const std::vector<runs::Run> baseline = {MakeRun("beq", "loss", {100, 200, 300}, linear)};
  AblationOptions o;
  o.tag = "loss";
  o.offset_pair = {"eq", "beq"};
  const Ablation a = AnalyzeAblation(ablation, baseline, o);
  ASSERT_EQ(a.rows.size(), 2u);
  EXPECT_EQ(a.rows[1].compared_at,
            "step 200 (the last common step with finite values; the run ends at 300, the "
            "baseline at 300)");
}

TEST(Ablation, ARunWhoseLearningRateNeverDecayedEndedEarly) {
  runs::Run run = MakeRun("cut", "train/lr", {0, 1000, 2000, 3000, 4000, 6000},
                    [](int64_t step) { return step == 0 ? 0.0 : 2e-4; });
  AblationOptions o;
  const RunHealth h = CheckRunHealth(run, o);
  EXPECT_EQ(h.end, RunEnd::kEndedEarly);
  EXPECT_EQ(h.last_step, 6000);
  EXPECT_EQ(h.end_reason,
            "train/lr is still 0.0002 at its last step 6000 (1 × its peak 0.0002; a finished "
            "schedule ends at or below 0.5 ×)");
  EXPECT_FALSE(h.Healthy());
  run.series[0].tag = "eval/loss";
  EXPECT_EQ(CheckRunHealth(run, o).end, RunEnd::kUnknown);
}

TEST(Ablation, ParsesPairsAndAlignments) {
  const RunPair p = ParseRunPair("--pair", "nobpk_H9_mb8=H9");
  EXPECT_EQ(p.run, "nobpk_H9_mb8");
  EXPECT_EQ(p.base_run, "H9");
  for (const char* bad : {"nobpk_H9_mb8", "=H9", "nobpk_H9_mb8=", "a=b=c"}) {
    EXPECT_THROW(ParseRunPair("--pair", bad), InputError) << bad;
  }
  EXPECT_EQ(AlignmentFromString("fraction"), Alignment::kScheduleFraction);
  EXPECT_THROW(AlignmentFromString("steps"), InputError);
}

// Each end of the compared tags: both final, one run's final while the other goes on, and the last
// common step where each run logs the tag past it (the baseline's steps missing one the run has).
TEST(Ablation, ComparedEndNamesWhichRunEndsWhere) {
  AblationRow row;
  row.final_point.step = 1000;
  row.run_tag_steps = 1000;
  row.base_tag_steps = 1000;
  EXPECT_EQ(ComparedEndOf(row), ComparedEnd::kBothFinal);
  row.base_tag_steps = 2000;
  EXPECT_EQ(ComparedEndOf(row), ComparedEnd::kRunFinal);
  row.run_tag_steps = 3000;
  EXPECT_EQ(ComparedEndOf(row), ComparedEnd::kLastCommon);
  row.base_tag_steps = 1000;
  EXPECT_EQ(ComparedEndOf(row), ComparedEnd::kBaseFinal);
  row.alignment = Alignment::kScheduleFraction;
  EXPECT_EQ(ComparedEndOf(row), ComparedEnd::kFraction);
}

}  // namespace
}  // namespace mosaic::runs
