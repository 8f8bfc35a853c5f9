// End-to-end tests of `mosaic fit`: the Chinchilla Approach-3 fit, pinned two-arm comparison and
// errors that name file, line, column and rule.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

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
  EXPECT_NE(r.err.find("points = 2. Violated constraint: points >= free parameters of law "
                       "chinchilla (5)"),
            std::string::npos)
      << r.err;
  CommandResult s = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --column C=1e20");
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_NE(s.err.find("singular design: every point has C = 1e+20"), std::string::npos) << s.err;
}

TEST(FitCli, UnknownLawAndPin) {
  CommandResult r = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law chinchila");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown law 'chinchila' (did you mean 'chinchilla'?)"), std::string::npos)
      << r.err;
  CommandResult p = RunMosaic("fit tests/fixtures/scaling/arm_base.csv --law compute --pin alpah=1");
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.err.find("(did you mean 'alpha'?)"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace mosaic::testing
