// End-to-end tests of `mosaic fit`: the Chinchilla Approach-3 fit, pinned two-arm comparison and
// errors that name file, line, column and rule.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_support.h"

namespace mosaic::testing {
namespace {

constexpr double kRelTol = 2e-3;
const std::string kEpoch =
    "tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv --column 'N=Model Size' "
    "--column 'C=Training FLOP' --column 'D=C/(6*N)' --drop-highest-loss 5";

TEST(FitCli, ChinchillaJson) {
  CommandResult r = RunMosaic("fit " + kEpoch + " --json --predict N=70e9,D=1.4e12 --frontier 1e21");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["objective"].get<double>(), 0.0010182740, 5e-11);
  EXPECT_NEAR(j["params"]["E"].get<double>(), 1.8172, 1.8172 * kRelTol);
  EXPECT_NEAR(j["params"]["alpha"].get<double>(), 0.3473, 0.3473 * kRelTol);
  EXPECT_EQ(j["points"].get<int>(), 240);
  EXPECT_EQ(j["convergence"]["starts"].get<int>(), 4500);
  EXPECT_GT(j["convergence"]["inferred_starts"].get<int>(), 100);
  EXPECT_LE(j["convergence"]["converged_starts"].get<int>(),
            j["convergence"]["inferred_starts"].get<int>());
  EXPECT_EQ(j["recipe"]["delta"].get<double>(), 1e-3);
  EXPECT_EQ(j["recipe"]["objective"].get<std::string>(), "huber");
  EXPECT_EQ(j["predictions"].size(), 1u);
  EXPECT_NEAR(j["predictions"][0]["loss"].get<double>(), 1.97337, 1e-4);
  EXPECT_EQ(j["frontier"]["points"].size(), 1u);
}

// Every start run to the end: the convergence count is certified, so nothing is inferred.
TEST(FitCli, NoCutShortCertifiesEveryStart) {
  CommandResult r = RunMosaic("fit " + kEpoch + " --json --no-cut-short");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["objective"].get<double>(), 0.0010182740, 5e-11);
  EXPECT_EQ(j["convergence"]["cut_short_starts"].get<int>(), 0);
  EXPECT_EQ(j["convergence"]["converged_starts"].get<int>(),
            j["convergence"]["inferred_starts"].get<int>());
  EXPECT_GT(j["convergence"]["converged_starts"].get<int>(), 2000);
}

TEST(FitCli, PinnedComputeLawComparison) {
  CommandResult r = RunMosaic(
      "fit tests/fixtures/scaling/arm_base.csv --law compute --pin E=1.6 --pin alpha=0.0941 "
      "--compare tests/fixtures/scaling/arm_other.csv --at 1e20 --tps-ratio 0.9 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["params"]["E"].get<double>(), 1.6);
  EXPECT_EQ(j["pinned"].size(), 2u);
  const auto& c = j["comparison"];
  // With E and alpha shared, the multiplier is (A_base/A_arm)^(1/alpha) at every budget.
  const double ratio = j["params"]["A"].get<double>() / c["arm"]["params"]["A"].get<double>();
  const double expected = std::pow(ratio, 1 / 0.0941);
  EXPECT_NEAR(c["effective_compute_multiplier"].get<double>(), expected, expected * 1e-9);
  EXPECT_GT(expected, 1);
  EXPECT_NEAR(c["wall_clock_multiplier"].get<double>(), expected * 0.9, expected * 1e-9);
  EXPECT_EQ(c["multiplier_definition"], "((L_base − E)/(L_arm − E))^(1/alpha), the base's E and alpha");
}

// --tps-ratio only scales --compare's multiplier: alone it is a usage error, not ignored.
TEST(FitCli, TpsRatioNeedsCompare) {
  CommandResult r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --tps-ratio 2");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--tps-ratio requires --compare"), std::string::npos) << r.err;
}

// A law in N and D has no closed form: its multiplier is named for what it is, the budget at which
// the base's compute-optimal loss reaches the arm's (the compute law's formula was printed beside
// it), printed to four significant digits (an arm against itself: 1.000, not 1).
TEST(FitCli, AChinchillaComparisonNamesItsMultiplier) {
  const std::string epoch = "tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv";
  CommandResult r = RunMosaic("fit " + epoch +
                              " --law chinchilla --column 'N=Model Size' --column 'C=Training "
                              "FLOP' --column 'D=C/(6*N)' --compare " + epoch + " --at 1e21");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("effective-compute multiplier 1.000  (C'/C, C' the budget at which the "
                       "base's compute-optimal loss (C = 6·N·D) reaches the arm's)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("1/alpha"), std::string::npos);
  EXPECT_NE(r.out.find("wall-clock multiplier        1.000"), std::string::npos);
}

// A law with every parameter pinned is a model to evaluate: its objective, predictions and
// frontier are reported (Hoffmann et al.'s fitted law at Chinchilla's budget: N* 32.2B, D* 2.98T).
TEST(FitCli, EveryParameterPinned) {
  CommandResult r = RunMosaic(
      "fit tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv --law chinchilla "
      "--column 'N=Model Size' --column 'C=Training FLOP' --column 'D=C/(6*N)' --pin E=1.69 "
      "--pin A=406.4 --pin B=410.7 --pin alpha=0.34 --pin beta=0.28 --frontier 5.76e23 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["termination"].get<std::string>(), "converged");
  EXPECT_EQ(j["pinned"].size(), 5u);
  EXPECT_GT(j["objective"].get<double>(), 0);
  EXPECT_EQ(j["recipe"]["grid"].get<std::string>(), "1 start: every parameter pinned");
  const nlohmann::json& f = j["frontier"]["points"][0];
  EXPECT_NEAR(f["N"].get<double>(), 3.2190e10, 3.2190e10 * 1e-4);
  EXPECT_NEAR(f["D"].get<double>(), 2.9823e12, 2.9823e12 * 1e-4);
  EXPECT_NEAR(f["loss"].get<double>(), 1.930748, 1e-6);

  // The compute law pinned whole, with a bootstrap: every interval is the pinned value itself.
  const std::string pins = " --pin E=1.6 --pin A=88.32 --pin alpha=0.0941 --json";
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --bootstrap 40" + pins);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["intervals"]["alpha"][0].get<double>(), 0.0941);
  EXPECT_EQ(j["intervals"]["alpha"][1].get<double>(), 0.0941);
  const double objective = j["objective"].get<double>();

  // The same law written as an expression: no solver run, the same objective.
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law-expr 'E + A*C^(-alpha)'" + pins);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["termination"].get<std::string>(), "converged");
  EXPECT_NEAR(j["objective"].get<double>(), objective, objective * 1e-9);
  // An expression of the loss it is fitted to, an empty one, and a prediction it cannot give as
  // a number are refused.
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law-expr 'E + A*loss' --param E=1,A=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Violated constraint: an expression of the inputs, not of the loss column "
                       "'loss' it is fitted to"),
            std::string::npos)
      << r.err;
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law-expr ''");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("an expression, not empty"), std::string::npos) << r.err;
  // A --param the expression does not use is a flag naming nothing, and a parameter that moves no
  // prediction a singular design.
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law-expr 'E + A*C^(-alpha)' "
                "--param E=1,A=80,alpha=0.1,Z=3");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--param Z: the expression 'E + A*C^(-alpha)' does not use 'Z'"),
            std::string::npos)
      << r.err;
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law-expr 'E + A*C^(-alpha) + 0*B' "
                "--param E=1,A=80,alpha=0.1,B=1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("singular design: over the 5 points, B moves no prediction"),
            std::string::npos)
      << r.err;
  // Malformed --param and --predict values are usage errors, as any malformed flag value is.
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law-expr 'E + A*C^(-alpha)' "
                "--param alpha=0:1:0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--param: --param = alpha=0:1:0. Violated constraint"), std::string::npos)
      << r.err;
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --predict C=abc");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--predict: --predict = C=abc. Violated constraint"), std::string::npos)
      << r.err;
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law-expr 'E + A*C^(-alpha)'" + pins +
                " --predict C=-1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--predict C=-1: the fitted expression gives "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Violated constraint: a finite loss"), std::string::npos) << r.err;
}

TEST(FitCli, NonPositiveValueNamesFileLineColumnAndRule) {
  CommandResult r = RunMosaic("fit tests/fixtures/scaling/bad_nonpositive.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad_nonpositive.csv:3:5: D = '-4e9'. Violated constraint: D > 0 and "
                       "finite"),
            std::string::npos)
      << r.err;
}

TEST(FitCli, UnknownColumnSuggestsClosest) {
  CommandResult r = RunMosaic(
      "fit tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv --column 'N=Model Sise'"
      " --column 'D=Training FLOP'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown column 'Model Sise' in expression"), std::string::npos) << r.err;
  CommandResult r2 = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law chinchilla");
  EXPECT_EQ(r2.exit_code, 1);
  EXPECT_NE(r2.err.find("unknown column 'N' for law input N"), std::string::npos) << r2.err;
}

TEST(FitCli, TooFewPointsAndSingularDesign) {
  CommandResult r = RunMosaic("fit tests/fixtures/scaling/bad_nonpositive.csv --where 'D > 0'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("points = 2. Violated constraint: points (of weight > 0) >= free parameters of law "
                       "chinchilla (5)"),
            std::string::npos)
      << r.err;
  CommandResult s = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --column C=1e20");
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_NE(s.err.find("singular design: every point has C = 1e+20"), std::string::npos) << s.err;
  // The filter that left the points is named.
  EXPECT_NE(r.err.find("(the points are those left by: keep rows where D > 0)"), std::string::npos)
      << r.err;
  EXPECT_NE(s.err.find("(the points are those left by: --column C=1e20)"), std::string::npos)
      << s.err;
  CommandResult d = RunMosaic(
      "fit tests/fixtures/scaling/arm_base.csv --law compute --drop-highest-loss 3");
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.err.find("points = 2. Violated constraint: points (of weight > 0) >= free "
                       "parameters of law compute (3) (the points are those left by: drop the 3 "
                       "rows with the highest loss)"),
            std::string::npos)
      << d.err;
  // So is a holdout that leaves too few points to train on.
  CommandResult h = RunMosaic(
      "fit tests/fixtures/scaling/arm_base.csv --law compute --holdout-fraction 0.6");
  EXPECT_EQ(h.exit_code, 1);
  EXPECT_NE(h.err.find("--holdout: the 2 of 5 points it trains on (those outside the rule compute "
                       ">= 1e+19 (the 60% of points with the largest compute"),
            std::string::npos)
      << h.err;
}

TEST(FitCli, UnknownLawAndPin) {
  // A flag's value that names nothing is a usage error (exit 2); so is one that is malformed.
  CommandResult r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law chinchila");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown law 'chinchila' (did you mean 'chinchilla'?)"), std::string::npos)
      << r.err;
  CommandResult p = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --pin alpah=1");
  EXPECT_EQ(p.exit_code, 2);
  // muparser's '=' assigns: --where 'loss = 1' kept every row; a malformed --column is a usage
  // error too.
  CommandResult eq = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --where "
                               "'loss = 1'");
  EXPECT_EQ(eq.exit_code, 2);
  EXPECT_NE(eq.err.find("'=' at position 6 of 'loss = 1' assigns to a variable in an expression; "
                        "compare with '=='"),
            std::string::npos)
      << eq.err;
  EXPECT_EQ(RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --where 'loss <= 4'")
                .exit_code,
            0);
  EXPECT_EQ(RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --column =C")
                .exit_code,
            2);
  EXPECT_NE(p.err.find("(did you mean 'alpha'?)"), std::string::npos) << p.err;
  for (const auto& [flag, rule] :
       {std::pair<std::string, std::string>{"--objective l1", "objective = l1. Violated "
                                                              "constraint: one of huber, squared"},
        {"--space logit", "space = logit. Violated constraint: one of log, linear"},
        {"--pin E=abc", "--pin = E=abc. Violated constraint: NAME=NUMBER"},
        {"--param E=1", "--param needs --law-expr"},
        // A value against the law's form and a blank filter are malformed flags too.
        {"--pin alpha=0", "--pin: alpha = 0. Violated constraint: alpha > 0"},
        {"--where ' '", "--where: an expression, not empty"},
        {"--objective squared --delta 5", "--delta 5 is the Huber threshold: it needs --objective "
                                          "huber, not squared"}}) {
    CommandResult u = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute " + flag);
    EXPECT_EQ(u.exit_code, 2) << flag;
    EXPECT_NE(u.err.find("mosaic fit: "), std::string::npos) << flag << u.err;
    EXPECT_NE(u.err.find(rule), std::string::npos) << flag << u.err;
  }
}

// Two compute budgets cannot fit E, A and alpha: every alpha has an E and an A through both
// points (a new user's report: the fit exited 0 with an arbitrary alpha). Pinning alpha fits.
TEST(FitCli, ATermWithTooFewDistinctInputValuesIsSingular) {
  const std::string path = ::testing::TempDir() + "/two_budgets.csv";
  std::ofstream(path) << "run,C,loss\na,1e18,3.2\nb,1e18,3.21\nc,1e20,2.9\nd,1e20,2.91\n";
  CommandResult r = RunMosaic("fit " + path + " --law compute");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("singular design: C takes 2 distinct values over the 4 points (1e+18, "
                       "1e+20), too few for the free A, alpha of law compute beside the free "
                       "floor E"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("at least 3 distinct values of C (add points at another C, or pin alpha "
                       "with --pin alpha=VALUE)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(RunMosaic("fit " + path + " --law compute --pin alpha=0.1").exit_code, 0);
}

TEST(FitCli, DuplicateColumnNamesFileColumnAndPositions) {
  CommandResult r = RunMosaic("fit tests/fixtures/scaling/duplicate_column.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("duplicate_column.csv:1:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("column 'N' appears twice (columns 1 and 2 of the header"),
            std::string::npos)
      << r.err;
}

TEST(FitCli, PredictInputGivenTwiceIsAnError) {
  CommandResult r = RunMosaic("fit " + kEpoch + " --predict N=1e9,N=2e9,D=1e10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("each input at most once (N is given as 1000000000 and as 2000000000)"),
            std::string::npos)
      << r.err;
}

// A budget with both N and D has nothing left to resolve: refused, not silently ignored.
TEST(FitCli, PredictBudgetWithBothParamsAndTokensIsAnError) {
  CommandResult r = RunMosaic("fit " + kEpoch + " --predict C=1e21,N=1e9,D=1e10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--predict: C = 1e+21 with both N = 1e+09 and D = 1e+10. Violated "
                       "constraint: C alone"),
            std::string::npos)
      << r.err;
}

// D = 20·N at every point: log D = log N + log 20, so N and D cannot be told apart.
TEST(FitCli, CollinearInputsAreASingularDesign) {
  CommandResult r = RunMosaic("fit tests/fixtures/scaling/collinear_d20n.csv --law chinchilla");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("singular design: column D is determined by column N at every one of the "
                       "6 points (log D = 1·log N + 2.996)"),
            std::string::npos)
      << r.err;
  // Pinning both exponents equal, as that message allows, makes A/N^alpha and B/D^beta
  // proportional: any split of A and B fits alike, and a prediction off the line is arbitrary.
  r = RunMosaic("fit tests/fixtures/scaling/collinear_d20n.csv --law chinchilla --pin alpha=0.3 "
                "--pin beta=0.3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("singular design: with the pinned parameters the terms scaled by A, B of "
                       "law chinchilla are linearly dependent over the 6 points (its 3 terms of "
                       "fixed shape span 2 dimensions)"),
            std::string::npos)
      << r.err;
  // Unequal exponents give the terms different shapes over the same points: it fits.
  r = RunMosaic("fit tests/fixtures/scaling/collinear_d20n.csv --law chinchilla --pin alpha=0.3 "
                "--pin beta=0.35");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(FitCli, HoldoutChoosesWhatIsHeldOut) {
  // Epoch's compute is continuous: the default rule (within 1.5x of the largest) holds out one.
  CommandResult one = RunMosaic("fit " + kEpoch + " --holdout");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("Held out: 1 point with compute >= "), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("error on the held-out point:"), std::string::npos) << one.out;
  // ceil(0.2 · 240) = 48 points, no ties at the threshold.
  CommandResult f = RunMosaic("fit " + kEpoch + " --holdout-fraction 0.2 --json");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  nlohmann::json j = nlohmann::json::parse(f.out);
  EXPECT_EQ(j["holdout"]["held_out_points"].get<int>(), 48);
  EXPECT_EQ(j["holdout"]["train_points"].get<int>(), 192);
  EXPECT_NE(j["holdout"]["rule"].get<std::string>().find("the 20% of points"), std::string::npos);
  CommandResult a = RunMosaic("fit " + kEpoch + " --holdout-above 3e21 --json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["holdout"]["held_out_points"].get<int>(), 4);
  EXPECT_EQ(j["holdout"]["threshold_flops"].get<double>(), 3e21);
  CommandResult none = RunMosaic("fit " + kEpoch + " --holdout-above 1e30");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("holds out 0 of the 240 points"), std::string::npos) << none.err;
  // --holdout-ratio alone holds out, as --holdout-fraction does (it was ignored without --holdout).
  CommandResult ratio = RunMosaic("fit " + kEpoch + " --holdout-ratio 1e300");
  EXPECT_EQ(ratio.exit_code, 1);
  EXPECT_NE(ratio.err.find("holds out 240 of the 240 points"), std::string::npos) << ratio.err;
}

TEST(FitCli, RangeErrorsShowReadableBounds) {
  CommandResult r = RunMosaic("fit " + kEpoch + " --bootstrap -3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("mosaic fit: --bootstrap = -3. Violated constraint: --bootstrap in [0, 1e+06]"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("179769"), std::string::npos) << r.err;
  CommandResult c = RunMosaic("fit " + kEpoch + " --confidence 1");
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.err.find("--confidence = 1. Violated constraint: --confidence in (0, 1)"), std::string::npos) << c.err;
  CommandResult t = RunMosaic("fit " + kEpoch + " --threads 0");
  EXPECT_NE(t.exit_code, 0);
  EXPECT_NE(t.err.find("--threads = 0. Violated constraint: --threads in [1, 1024]"), std::string::npos)
      << t.err;
}

// E = 0 drops the irreducible term: L = A·C^-alpha, a straight line in log-log.
TEST(FitCli, PinIrreducibleLossToZero) {
  CommandResult r =
      RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --pin E=0 --json "
                "--predict C=1e21");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["termination"].get<std::string>(), "converged");
  EXPECT_EQ(j["params"]["E"].get<double>(), 0);
  const double a = j["params"]["A"].get<double>(), alpha = j["params"]["alpha"].get<double>();
  EXPECT_GT(alpha, 0);
  const double expected = a * std::pow(1e21, -alpha);
  EXPECT_NEAR(j["predictions"][0]["loss"].get<double>(), expected, expected * 1e-12);
  // A scale cannot be negative: a --pin value the law cannot take.
  CommandResult k = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --pin A=-1");
  EXPECT_EQ(k.exit_code, 2) << k.err;
  EXPECT_NE(k.err.find("mosaic fit: --pin: A = -1."), std::string::npos) << k.err;
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// A run or weight column named on the command line must exist: a missing one was silently
// ignored, and the bootstrap resampled rows instead of runs.
TEST(FitCli, ANamedRunOrWeightColumnMustExist) {
  for (const char* flag : {"--run-column name --bootstrap 40", "--weight-column w"}) {
    CommandResult r = RunMosaic(std::string("fit tests/fixtures/scaling/arm_base.csv --law compute "
                                            "--pin E=1.6 ") + flag);
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_NE(r.err.find("unknown column"), std::string::npos) << r.err;
  }
  EXPECT_EQ(RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --pin E=1.6 "
                      "--weight-column weight").exit_code,
            0);
}

// One or two resamples gave "intervals" that excluded the point estimate: a percentile interval
// needs at least one resample beyond each end.
TEST(FitCli, TooFewBootstrapResamplesAreRefused) {
  CommandResult r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --bootstrap 2");
  EXPECT_EQ(r.exit_code, 2);
  // The message names the flag the user typed, as every other flag's does.
  EXPECT_NE(r.err.find("mosaic fit: --bootstrap = 2. Violated constraint: --bootstrap >= 40 at "
                       "confidence 0.95 (ceil(2 / (1 - confidence)): a percentile interval needs "
                       "a resample beyond each of its ends), or 0 for none"),
            std::string::npos)
      << r.err;
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --pin E=1.6 --pin E=1.7");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--pin E = 1.7. Violated constraint: each parameter is pinned once (it is "
                       "already pinned to 1.6)"),
            std::string::npos)
      << r.err;
  r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --bootstrap 20 "
                "--confidence 0.9 --pin E=1.6 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Losses from training logs: each CSV row names a run; its loss is the run's final value of a tag.
TEST(FitCli, LossesFromLogs) {
  CommandResult r = RunMosaic(
      "fit tests/fixtures/scaling/logged_runs.csv --logs "
      "tests/fixtures/janosh__tensorboard-reducer/tests/runs --tag strict/foo --law compute "
      "--column 'C=6*N*D' --pin E=1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["points"].get<int>(), 3);
  EXPECT_NE(j["recipe"]["subset_rule"].get<std::string>().find(
                "loss = the final value of tag 'strict/foo' per run from "
                "tests/fixtures/janosh__tensorboard-reducer/tests/runs"),
            std::string::npos)
      << j["recipe"].dump();
  r = RunMosaic("fit tests/fixtures/scaling/logged_runs.csv --logs "
                "tests/fixtures/janosh__tensorboard-reducer/tests/runs --law compute");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "mosaic fit: --logs needs --tag (the loss tag, e.g. eval/loss)\nRun 'mosaic fit "
            "--help' for its flags.\n");
  // Three free parameters on these three points leave none over, but the chinchilla form with
  // both exponents pinned cannot pass through them (A and B go to 0): the caution says which.
  // (Equal exponents on these D = 20·N points would be a singular design.)
  r = RunMosaic("fit tests/fixtures/scaling/logged_runs.csv --logs "
                "tests/fixtures/janosh__tensorboard-reducer/tests/runs --tag strict/foo "
                "--law chinchilla --pin alpha=0.3 --pin beta=0.4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string caution = nlohmann::json::parse(r.out)["cautions"][0].get<std::string>();
  EXPECT_NE(caution.find("3 free parameters on 3 points: no point is left over to check the fit "
                         "(nor does the law pass through them: objective 0.00101"),
            std::string::npos)
      << caution;
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// The same runs in another row order: the comparison's bootstrap intervals must not move (each
// arm is resampled on its own, from its runs in a canonical order).
TEST(FitCli, CompareIntervalsDoNotDependOnRowOrder) {
  const std::string base = ReadText(SourcePath("tests/fixtures/scaling/arm_other.csv"));
  std::vector<std::string> lines;
  for (size_t start = 0; start < base.size();) {
    const size_t end = base.find('\n', start);
    lines.push_back(base.substr(start, end - start));
    start = end == std::string::npos ? base.size() : end + 1;
  }
  ASSERT_EQ(lines.size(), 6u);  // header + 5 runs
  const std::string dir = ::testing::TempDir();
  const auto write = [&](const std::string& name, const std::vector<int>& order) {
    std::string text = lines[0] + "\n";
    for (int i : order) text += lines[i] + "\n";
    const std::string path = dir + "/" + name;
    FILE* f = fopen(path.c_str(), "w");
    fputs(text.c_str(), f);
    fclose(f);
    return path;
  };
  const std::string command =
      "fit tests/fixtures/scaling/arm_base.csv --law compute --pin E=1.6 --pin alpha=0.0941 "
      "--at 1e20 --tps-ratio 0.9 --bootstrap 400 --json --compare ";
  const CommandResult as_shipped = RunMosaic(command + write("given.csv", {1, 2, 3, 4, 5}));
  const CommandResult reversed = RunMosaic(command + write("reversed.csv", {5, 4, 3, 2, 1}));
  const CommandResult shuffled = RunMosaic(command + write("shuffled.csv", {3, 1, 5, 2, 4}));
  ASSERT_EQ(as_shipped.exit_code, 0) << as_shipped.err;
  const auto interval = [](const CommandResult& r) {
    return nlohmann::json::parse(r.out)["comparison"]["multiplier_interval"].dump();
  };
  EXPECT_EQ(interval(as_shipped), interval(reversed));
  EXPECT_EQ(interval(as_shipped), interval(shuffled));
}

// An arm whose loss is below every loss the base's fit reaches has no multiplier: the reason is
// printed, not "inf [-nan, -nan]", and the JSON gives it beside a null multiplier. Both arms follow
// L = E + 50·C^-0.1 exactly, the base with E = 2.5 and the arm with E = 1.5.
TEST(FitCli, AnArmBelowTheBasesFloorHasNoMultiplier) {
  const std::string dir = ::testing::TempDir();
  std::vector<std::string> paths;
  for (const auto& [name, floor] : {std::pair<std::string, double>{"floor_base", 2.5},
                                    std::pair<std::string, double>{"floor_arm", 1.5}}) {
    std::string text = "run,C,loss\n";
    int i = 0;
    for (double c : {1e18, 3e18, 1e19, 3e19, 1e20}) {
      text += fmt::format("{}{},{},{:.5f}\n", name, i++, c, floor + 50 * std::pow(c, -0.1));
    }
    paths.push_back(dir + "/" + name + ".csv");
    std::ofstream(paths.back()) << text;
  }
  const std::string command =
      "fit " + paths[0] + " --law compute --compare " + paths[1] + " --at 1e20 --bootstrap 60";
  CommandResult r = RunMosaic(command);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("effective-compute multiplier undefined: the arm's loss 2.00000 at C = "
                       "1e+20 is at or below the lowest loss the base's fit reaches (its E = 2.5"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
  r = RunMosaic(command + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json c = nlohmann::json::parse(r.out)["comparison"];
  EXPECT_TRUE(c["effective_compute_multiplier"].is_null());
  EXPECT_NE(c["multiplier_undefined_reason"].get<std::string>().find("no budget of the base"),
            std::string::npos);
}

// A data file and column named in Latin-1 reach the JSON (recipe) as U+FFFD: valid JSON.
TEST(FitCli, NamesThatAreNotUtf8GiveValidJson) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_fit_latin1_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path data = dir / "co\xFBt.csv";
  fs::copy_file(SourcePath("tests/fixtures/scaling/arm_base.csv"), data);
  std::string text = ReadText(data.string());
  text.replace(0, text.find('\n'), "run,FLOP\xE9,loss");
  { std::ofstream(data, std::ios::binary) << text; }
  CommandResult r = RunMosaic("fit '" + data.string() +
                              "' --law compute --column 'C=FLOP\xE9' --pin E=1.6 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["recipe"]["data"].get<std::string>().find("co\xEF\xBF\xBDt.csv"), std::string::npos);
  EXPECT_EQ(j["recipe"]["subset_rule"].get<std::string>(), "--column C=FLOP\xEF\xBF\xBD");
  fs::remove_all(dir);
}

// Values that parse but mean nothing are refused with the rule (usage errors, exit 2), as are
// flags that only work with another one.
// --pin, --column and --predict take one value each time: the data file after them is the data
// file.
TEST(FitCli, RepeatableFlagsTakeOneValue) {
  const std::string flags = "--pin E=1.6 --column 'X=C' --predict C=1e20 --predict C=1e21 ";
  CommandResult before = RunMosaic("fit " + flags + "tests/fixtures/scaling/arm_base.csv "
                                   "--law compute --json");
  CommandResult after = RunMosaic("fit tests/fixtures/scaling/arm_base.csv " + flags +
                                  "--law compute --json");
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.out, after.out);
  const nlohmann::json j = nlohmann::json::parse(before.out);
  EXPECT_EQ(j["predictions"].size(), 2u);
  EXPECT_EQ(j["pinned"].size(), 1u);
}

TEST(FitCli, MeaninglessValuesAreRefused) {
  const std::string base = "fit tests/fixtures/scaling/arm_base.csv --law compute --pin E=1.6 ";
  for (const std::string flag : {"--frontier -1", "--frontier nan", "--frontier inf",
                                 "--tps-ratio 0", "--tps-ratio nan", "--at nan --compare x.csv"}) {
    CommandResult r = RunMosaic(base + flag);
    EXPECT_EQ(r.exit_code, 2) << flag;
    const std::string name = flag.substr(0, flag.find(' '));
    EXPECT_NE(r.err.find(". Violated constraint: " + name + " in (0, 1e+300]"), std::string::npos)
        << flag << r.err;
  }
  for (const auto& [flag, needs] :
       {std::pair<std::string, std::string>{"--tag eval/loss", "--tag requires --logs"},
        {"--last-k 3", "--last-k requires --logs"},
        {"--at 1e20", "--at requires --compare"}}) {
    CommandResult r = RunMosaic(base + flag);
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_NE(r.err.find(needs), std::string::npos) << flag << r.err;
  }
  CommandResult at = RunMosaic(base + "--compare tests/fixtures/scaling/arm_other.csv");
  EXPECT_EQ(at.exit_code, 2);
  EXPECT_NE(at.err.find("--compare requires --at"), std::string::npos) << at.err;
  // A parameter pinned twice is refused (the last pin won), naming both values.
  CommandResult twice = RunMosaic(base + "--pin E=2");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("pin E = 2. Violated constraint: each parameter is pinned once (it is "
                           "already pinned to 1.6)"),
            std::string::npos)
      << twice.err;
  CommandResult empty = RunMosaic(base + "--output ''");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--output: FILE is empty"), std::string::npos) << empty.err;
}

// --output naming the data (however spelled) would replace it: refused, the file untouched.
TEST(FitCli, OutputOverAnInputIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_fit_own_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(SourcePath("tests/fixtures/scaling/arm_base.csv"), dir / "base.csv");
  fs::copy_file(SourcePath("tests/fixtures/scaling/arm_other.csv"), dir / "other.csv");
  const std::string before = ReadText((dir / "other.csv").string());
  CommandResult r = RunMosaic("fit '" + (dir / "base.csv").string() +
                              "' --law compute --pin E=1.6 --pin alpha=0.0941 --compare '" +
                              (dir / "other.csv").string() + "' --at 1e20 --output '" +
                              (dir / "." / "other.csv").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Violated constraint: not one of the command's input files"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ReadText((dir / "other.csv").string()), before);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mosaic::testing
