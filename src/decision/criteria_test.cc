#include "mosaic/decision/criteria.h"

#include "mosaic/runs/health.h"

#include <gtest/gtest.h>

namespace mosaic {
namespace {

RuleSpec Rule() {
  RuleSpec rule;
  rule.default_arm = "fsdp";
  rule.challenger = "ep";
  rule.threshold = 0.05;
  rule.criteria.assign(kCriterionNames.begin(), kCriterionNames.end());
  return rule;
}

AdvantageInputs Known(double effective_compute, double ratio, double loss_advantage) {
  AdvantageInputs in;
  in.effective_compute = effective_compute;
  in.tokens_per_s_ratio = ratio;
  in.loss_advantage = loss_advantage;
  in.throughput_source = "measured";
  return in;
}

TEST(ProjectedAdvantage, PassesAtTheThresholdOfWallClockEffectiveCompute) {
  // 1.0 × 1.05 = 1.05: exactly the 5% threshold passes.
  EXPECT_EQ(ProjectedAdvantage(Known(1.0, 1.05, 0.001), Rule()).status, CriterionStatus::kPass);
  const CriterionResult below = ProjectedAdvantage(Known(1.02, 1.02, 0.001), Rule());
  EXPECT_EQ(below.status, CriterionStatus::kFail);  // 1.0404 < 1.05
  EXPECT_NE(below.reason.find("wall-clock advantage 1.040×"), std::string::npos) << below.reason;
  EXPECT_NE(below.reason.find("0.10% lower loss"), std::string::npos) << below.reason;
}

TEST(ProjectedAdvantage, AsLossUsesTheLossAdvantage) {
  RuleSpec rule = Rule();
  rule.measure = "loss";
  rule.threshold = 0.01;
  // A large effective-compute gain is still a small loss gain.
  EXPECT_EQ(ProjectedAdvantage(Known(1.6, 1.36, 0.011), rule).status, CriterionStatus::kPass);
  EXPECT_EQ(ProjectedAdvantage(Known(1.6, 1.36, 0.009), rule).status, CriterionStatus::kFail);
}

TEST(ProjectedAdvantage, MissingFitOrThroughputIsUnknownAndSaysWhy) {
  AdvantageInputs no_fit;
  no_fit.missing_fit = "fsdp and ep have no rung in common";
  const CriterionResult a = ProjectedAdvantage(no_fit, Rule());
  EXPECT_EQ(a.status, CriterionStatus::kUnknown);
  EXPECT_EQ(a.missing, "fsdp and ep have no rung in common");
  EXPECT_FALSE(a.settle.empty());

  AdvantageInputs no_tps;
  no_tps.effective_compute = 1.2;
  no_tps.missing_throughput = "no measured tokens/s of ep";
  const CriterionResult b = ProjectedAdvantage(no_tps, Rule());
  EXPECT_EQ(b.status, CriterionStatus::kUnknown);
  EXPECT_EQ(b.missing, "no measured tokens/s of ep");
  EXPECT_NE(b.settle.find("tokens/s of fsdp and ep"), std::string::npos);
}

TEST(ProjectedAdvantage, NamesAnIntervalThatCrossesTheThreshold) {
  AdvantageInputs in = Known(1.10, 1.0, 0.002);
  in.effective_compute_interval = scaling::Interval{1.01, 1.2};
  const CriterionResult r = ProjectedAdvantage(in, Rule());
  EXPECT_EQ(r.status, CriterionStatus::kPass);
  EXPECT_NE(r.reason.find("the interval's low end gives +1.0%"), std::string::npos) << r.reason;
  // A PASS whose interval reaches below the threshold carries that as a caveat.
  EXPECT_EQ(r.caveat, "the interval's low end gives +1.0%, short of the 5% needed");
}

// A PASS with no interval where one was asked (each arm fitted on one rung) says so: the
// projection's uncertainty is unknown. With an interval, or none asked, there is no such caveat.
TEST(ProjectedAdvantage, APassWithoutTheAskedIntervalCarriesACaveat) {
  AdvantageInputs in = Known(1.10, 1.0, 0.002);
  in.no_interval = "fsdp is fitted on one rung; ep is fitted on one rung";
  const CriterionResult r = ProjectedAdvantage(in, Rule());
  EXPECT_EQ(r.status, CriterionStatus::kPass);
  EXPECT_EQ(r.caveat, "no interval (fsdp is fitted on one rung; ep is fitted on one rung): how "
                      "far the projection may be off is not known");
  in.effective_compute_interval = scaling::Interval{1.08, 1.12};
  EXPECT_EQ(ProjectedAdvantage(in, Rule()).caveat, "");
  in.effective_compute_interval.reset();
  in.no_interval.clear();
  EXPECT_EQ(ProjectedAdvantage(in, Rule()).caveat, "");
}

TEST(ProjectedAdvantage, APassInsideTheRunToRunNoiseCarriesACaveat) {
  AdvantageInputs in = Known(1.03, 1.05, 0.001);  // 1.03 × 1.05 = 1.0815: passes 5%
  in.noise_effective_compute = 0.04;              // a 3% gain is inside 4% noise
  const CriterionResult r = ProjectedAdvantage(in, Rule());
  EXPECT_EQ(r.status, CriterionStatus::kPass);
  EXPECT_EQ(r.caveat, "the effective-compute gain +3.0% is inside the run-to-run noise (4.0%)");
  in.noise_effective_compute = 0.02;  // outside the noise: no caveat
  EXPECT_EQ(ProjectedAdvantage(in, Rule()).caveat, "");
  // A FAIL carries no caveat (it already keeps the default).
  AdvantageInputs fail = Known(1.01, 1.0, 0.001);
  fail.noise_effective_compute = 0.04;
  EXPECT_EQ(ProjectedAdvantage(fail, Rule()).status, CriterionStatus::kFail);
  EXPECT_EQ(ProjectedAdvantage(fail, Rule()).caveat, "");
}

TEST(WinsAtLargestRung, PassFailAndUnknown) {
  LargestRungInputs in;
  in.d_model = 2048;
  in.default_loss = 2.42;
  in.challenger_loss = 2.41;
  EXPECT_EQ(WinsAtLargestRung(in, Rule()).status, CriterionStatus::kPass);
  in.challenger_loss = 2.42;  // a tie does not win, and says it is one
  const CriterionResult tie = WinsAtLargestRung(in, Rule());
  EXPECT_EQ(tie.status, CriterionStatus::kFail);
  EXPECT_NE(tie.reason.find(": equal, not lower"), std::string::npos) << tie.reason;
  in.challenger_loss = 2.45;
  EXPECT_NE(WinsAtLargestRung(in, Rule()).reason.find(": higher by 0.0300"), std::string::npos);
  in.challenger_loss = 2.418;
  in.loss_spread = 0.0042;
  const CriterionResult noisy = WinsAtLargestRung(in, Rule());
  EXPECT_EQ(noisy.status, CriterionStatus::kPass);
  EXPECT_NE(noisy.reason.find("inside the run-to-run spread 0.0042"), std::string::npos);

  in.default_loss.reset();
  in.settle_default = "train fsdp at d2048";
  in.common_d_model = 768;
  in.common_default_loss = 3.0553;
  in.common_challenger_loss = 3.0331;
  const CriterionResult unknown = WinsAtLargestRung(in, Rule());
  EXPECT_EQ(unknown.status, CriterionStatus::kUnknown);
  EXPECT_EQ(unknown.missing, "no fsdp loss at d2048");
  EXPECT_EQ(unknown.settle, "train fsdp at d2048");
  EXPECT_NE(unknown.reason.find("at d768, the largest rung both have"), std::string::npos);

  in.challenger_loss.reset();
  in.settle_challenger = "train ep at d2048";
  const CriterionResult both = WinsAtLargestRung(in, Rule());
  EXPECT_EQ(both.missing, "no fsdp loss at d2048; no ep loss at d2048");
  EXPECT_EQ(both.settle, "train fsdp at d2048; train ep at d2048");
}

ContextExtension Extension(std::string arm, ExtensionOutcome outcome) {
  ContextExtension e;
  e.arm = std::move(arm);
  e.outcome = outcome;
  e.d_model = 2048;
  return e;
}

TEST(ContextExtensionSmooth, NeedsACompletedComparisonOfTheChallenger) {
  EXPECT_EQ(ContextExtensionSmooth({}, Rule(), 2048).status, CriterionStatus::kUnknown);
  // Another arm's smooth run says nothing about the challenger.
  EXPECT_EQ(ContextExtensionSmooth({Extension("fsdp", ExtensionOutcome::kSmooth)}, Rule(), 2048)
                .status,
            CriterionStatus::kUnknown);
  const CriterionResult interrupted = ContextExtensionSmooth(
      {Extension("ep", ExtensionOutcome::kInterrupted), Extension("ep", ExtensionOutcome::kCompleted)},
      Rule(), 2048);
  EXPECT_EQ(interrupted.status, CriterionStatus::kUnknown);
  EXPECT_NE(interrupted.missing.find("interrupted"), std::string::npos);
  EXPECT_NE(interrupted.settle.find("from the d2048 checkpoint"), std::string::npos);
  EXPECT_EQ(ContextExtensionSmooth({Extension("ep", ExtensionOutcome::kInterrupted),
                                    Extension("ep", ExtensionOutcome::kSmooth)},
                                   Rule(), 2048)
                .status,
            CriterionStatus::kPass);
  EXPECT_EQ(ContextExtensionSmooth({Extension("ep", ExtensionOutcome::kSmooth),
                                    Extension("ep", ExtensionOutcome::kNotSmooth)},
                                   Rule(), 2048)
                .status,
            CriterionStatus::kFail);
}

TEST(NoAnomalies, NeedsLogsAndFailsOnAnyFinding) {
  EXPECT_EQ(NoAnomalies(false, 0, {}, Rule()).status, CriterionStatus::kUnknown);
  EXPECT_EQ(NoAnomalies(true, 0, {}, Rule()).status, CriterionStatus::kUnknown);
  EXPECT_EQ(NoAnomalies(true, 4, {}, Rule()).status, CriterionStatus::kPass);
  const CriterionResult fail =
      NoAnomalies(true, 4, {"ep-d768: 1 non-finite value at step 500"}, Rule());
  EXPECT_EQ(fail.status, CriterionStatus::kFail);
  EXPECT_EQ(fail.reason, "ep-d768: 1 non-finite value at step 500");
  // Runs that log no gradient norm leave their gradients unchecked: UNKNOWN, naming them, unless
  // a finding already fails the criterion.
  const CriterionResult unchecked = NoAnomalies(true, 4, {}, Rule(), {"ep-d768", "ep-d1024"});
  EXPECT_EQ(unchecked.status, CriterionStatus::kUnknown);
  EXPECT_NE(unchecked.missing.find("2 of ep's 4 runs read log no gradient norm"),
            std::string::npos)
      << unchecked.missing;
  EXPECT_NE(unchecked.missing.find(": ep-d768, ep-d1024;"), std::string::npos) << unchecked.missing;
  EXPECT_EQ(NoAnomalies(true, 4, {"ep-d768: 1 non-finite value at step 500"}, Rule(), {"ep-d1024"})
                .status,
            CriterionStatus::kFail);
  // The tags counted as a gradient norm's.
  for (const char* tag : {"train/grad_norm", "grad/norm/total", "optim/GradNorm",
                          "gradient_norm", "grad-norm"}) {
    EXPECT_TRUE(runs::IsGradNormTag(tag)) << tag;
  }
  for (const char* tag : {"train/loss", "grad/clipped", "norm/grad"}) {
    EXPECT_FALSE(runs::IsGradNormTag(tag)) << tag;
  }
}

CriterionResult WithStatus(std::string name, CriterionStatus status) {
  CriterionResult c;
  c.name = std::move(name);
  c.status = status;
  return c;
}

TEST(ApplyRule, EveryCriterionMustPass) {
  const RuleSpec rule = Rule();
  const Verdict pick = ApplyRule({WithStatus("projected_advantage", CriterionStatus::kPass),
                                  WithStatus("no_anomalies", CriterionStatus::kPass)},
                                 rule);
  EXPECT_TRUE(pick.challenger_picked);
  EXPECT_EQ(pick.chosen_arm, "ep");

  const Verdict fail = ApplyRule({WithStatus("projected_advantage", CriterionStatus::kFail),
                                  WithStatus("no_anomalies", CriterionStatus::kUnknown)},
                                 rule);
  EXPECT_FALSE(fail.challenger_picked);
  EXPECT_EQ(fail.chosen_arm, "fsdp");
  EXPECT_EQ(fail.decided_by, std::vector<std::string>{"projected_advantage"});
  EXPECT_EQ(fail.summary, "keep fsdp: projected_advantage fails (no_anomalies also unknown)");

  const Verdict unknown = ApplyRule({WithStatus("projected_advantage", CriterionStatus::kPass),
                                     WithStatus("no_anomalies", CriterionStatus::kUnknown)},
                                    rule);
  EXPECT_EQ(unknown.chosen_arm, "fsdp");
  EXPECT_EQ(unknown.decided_by, std::vector<std::string>{"no_anomalies"});
  EXPECT_NE(unknown.summary.find("the default stands"), std::string::npos);
}

TEST(ApplyRule, APickCarriesThePassingCriteriasCaveats) {
  CriterionResult weak = WithStatus("projected_advantage", CriterionStatus::kPass);
  weak.caveat = "the interval's low end gives +1.0%, short of the 5% needed";
  const Verdict pick =
      ApplyRule({weak, WithStatus("no_anomalies", CriterionStatus::kPass)}, Rule());
  EXPECT_TRUE(pick.challenger_picked);
  EXPECT_EQ(pick.caveats, std::vector<std::string>{
                              "projected_advantage: the interval's low end gives +1.0%, short "
                              "of the 5% needed"});
  EXPECT_EQ(pick.summary,
            "pick ep: every criterion passes (projected_advantage, no_anomalies); but "
            "projected_advantage: the interval's low end gives +1.0%, short of the 5% needed");
}

}  // namespace
}  // namespace mosaic
