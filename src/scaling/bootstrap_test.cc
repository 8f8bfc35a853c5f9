// Bootstrap by run on Epoch's 240 points against Epoch's published 95% intervals (4000 resamples
// of their MLE fit): each endpoint within 10%. 400 resamples keep the test short.
#include "mosaic/scaling/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "mosaic/scaling/data_table.h"
#include "mosaic/util/error.h"

namespace mosaic::scaling {
namespace {

constexpr double kEndpointRelTol = 0.10;

// The first `runs` of four one-point runs of a compute ladder (C, loss), as `mosaic fit` reads
// them, for the compute law (3 free parameters).
FitData ComputeRuns(int runs) {
  const std::string rows[] = {"b1,1e18,3.2541\n", "b2,3e18,3.1007\n", "b3,1e19,2.9536\n",
                              "b4,3e19,2.8355\n"};
  std::string csv = "run,C,loss\n";
  for (int i = 0; i < runs; ++i) csv += rows[i];
  return SelectFitData(ParseCsv(csv, "ladder.csv"), FindLaw("compute"));
}

TEST(Bootstrap, EpochIntervalsWithinTenPercent) {
  DataTable t = ReadCsv(std::string(MOSAIC_SOURCE_DIR) +
                        "/tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv");
  ApplyMappings(t, {{"N", "Model Size"}, {"C", "Training FLOP"}, {"D", "C/(6*N)"}});
  DropHighest(t, "loss", 5);
  const Law& law = FindLaw("chinchilla");
  const FitData data = SelectFitData(t, law);
  FitOptions options;
  // The optimum from a small grid around it is enough to seed the resamples.
  options.grid = StartGrid{{{0.5, 0.6}, {6, 6.2}, {7.5, 7.7}, {0.35}, {0.37}}};
  const FitSummary fit = Fit(law, data, options);
  ASSERT_NEAR(fit.objective, 0.0010182740, 5e-11);
  BootstrapOptions b;
  b.resamples = 400;
  b.seed = 1;
  const BootstrapResult r = Bootstrap(law, data, options, fit, b);
  EXPECT_EQ(r.failed, 0);
  auto check = [&](const char* name, double low, double high) {
    const Interval i = r.params[law.ParamIndex(name)];
    EXPECT_NEAR(i.low, low, low * kEndpointRelTol) << name;
    EXPECT_NEAR(i.high, high, high * kEndpointRelTol) << name;
  };
  check("E", 1.769, 1.871);
  check("alpha", 0.317, 0.373);
  check("beta", 0.331, 0.415);
  // Deterministic: the same seed gives the same intervals, on any number of threads.
  b.threads = 3;
  const BootstrapResult again = Bootstrap(law, data, options, fit, b);
  ASSERT_EQ(again.theta.size(), r.theta.size());
  for (size_t j = 0; j < r.params.size(); ++j) {
    EXPECT_EQ(again.params[j].low, r.params[j].low) << j;
    EXPECT_EQ(again.params[j].high, r.params[j].high) << j;
  }
}

// Runs whose points all weigh 0 are in no resample: the bootstrap of data with such runs added is
// the bootstrap of the data without them, resample for resample (each resample drew as many runs
// as the file has, empty ones included, and its size varied at random).
TEST(Bootstrap, RunsOfWeightZeroAreNotDrawn) {
  DataTable t = ReadCsv(std::string(MOSAIC_SOURCE_DIR) +
                        "/tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv");
  ApplyMappings(t, {{"N", "Model Size"}, {"C", "Training FLOP"}, {"D", "C/(6*N)"}});
  DropHighest(t, "loss", 5);
  const Law& law = FindLaw("chinchilla");
  FitData data = SelectFitData(t, law);
  std::vector<size_t> weighted;
  for (size_t i = 0; i < data.size(); ++i) {
    if (i % 2 == 0) {
      weighted.push_back(i);
    } else {
      data.weight[i] = 0;
    }
  }
  FitOptions options;
  options.grid = StartGrid{{{0.5, 0.6}, {6, 6.2}, {7.5, 7.7}, {0.35}, {0.37}}};
  const FitSummary fit = Fit(law, data, options);
  BootstrapOptions b;
  b.resamples = 40;
  b.seed = 3;
  const BootstrapResult with_zero = Bootstrap(law, data, options, fit, b);
  const BootstrapResult without = Bootstrap(law, data.Subset(weighted), options, fit, b);
  ASSERT_EQ(with_zero.theta.size(), without.theta.size());
  for (size_t k = 0; k < with_zero.theta.size(); ++k) {
    EXPECT_EQ(with_zero.theta[k], without.theta[k]) << k;
  }
}

// Four runs of one point for three free parameters: a resample that draws two or fewer distinct
// runs (88 of 256 equally likely draws) cannot determine the law, and its refit stays at the full
// fit it starts from. Such resamples are counted and left out, with a caution, not hidden among
// the converged ones.
TEST(Bootstrap, ResamplesWithTooFewDistinctPointsAreCountedAndLeftOut) {
  const Law& law = FindLaw("compute");
  const FitData data = ComputeRuns(4);
  const FitOptions options;
  const FitSummary fit = Fit(law, data, options);
  BootstrapOptions b;
  b.resamples = 400;
  const BootstrapResult r = Bootstrap(law, data, options, fit, b);
  EXPECT_EQ(r.underdetermined + r.failed + static_cast<int>(r.theta.size()), 400);
  // 88/256 of 400 = 137.5, sd 9.5: well inside (60, 220) for any seed.
  EXPECT_GT(r.underdetermined, 60);
  EXPECT_LT(r.underdetermined, 220);
  ASSERT_FALSE(r.cautions.empty());
  EXPECT_EQ(r.cautions.back().rfind(std::to_string(r.underdetermined) +
                                        " of 400 resamples drew too few distinct points to "
                                        "determine the 3 free parameters and were left out",
                                    0),
            0u)
      << r.cautions.back();
  // 4 runs give 35 distinct resamples, too few to resolve a 95% interval's ends (40).
  EXPECT_NE(std::find(r.cautions.begin(), r.cautions.end(),
                      "4 runs give only 35 distinct resamples, fewer than the 40 a 95% interval "
                      "needs to resolve its ends: the intervals are the spread of a few refits "
                      "and can miss the true values; more runs make them meaningful"),
            r.cautions.end());
  // Pinning two parameters leaves one free: every resample determines it.
  FitOptions pinned;
  pinned.pins = {{"E", 1.6}, {"alpha", 0.0941}};
  const FitSummary pinned_fit = Fit(law, data, pinned);
  EXPECT_EQ(Bootstrap(law, data, pinned, pinned_fit, b).underdetermined, 0);
}

// The minimum holds for the resamples refitted, not only those drawn: 40 draws at 95% from four
// runs leave about 26 that determine the law, too few for a percentile interval, and the error
// says how many to ask for.
TEST(Bootstrap, TooFewRefittedResamplesAreRefused) {
  const Law& law = FindLaw("compute");
  const FitData data = ComputeRuns(4);
  const FitOptions options;
  const FitSummary fit = Fit(law, data, options);
  BootstrapOptions b;
  b.resamples = 40;
  try {
    Bootstrap(law, data, options, fit, b);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("at least 40 refitted resamples at confidence 0.95"), std::string::npos)
        << message;
    EXPECT_NE(message.find("raise --bootstrap to "), std::string::npos) << message;
  }
  b.resamples = 100;
  EXPECT_GE(static_cast<int>(Bootstrap(law, data, options, fit, b).theta.size()), 40);
}

// Three runs for three free parameters: the fit passes through every point, every resample that
// determines the law holds all three and refits to the same values, so the bootstrap would report
// zero-width intervals. It is refused; with a parameter pinned it runs and the intervals spread.
TEST(Bootstrap, AFitThroughEveryPointIsRefused) {
  const Law& law = FindLaw("compute");
  const FitData data = ComputeRuns(3);
  const FitOptions options;
  const FitSummary fit = Fit(law, data, options);
  BootstrapOptions b;
  b.resamples = 400;
  try {
    Bootstrap(law, data, options, fit, b);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("more weighted points than free parameters (3 points, 3 "
                                         "free)"),
              std::string::npos)
        << e.what();
  }
  FitOptions pinned;
  pinned.pins = {{"E", 1.6}};
  const FitSummary pinned_fit = Fit(law, data, pinned);
  const BootstrapResult r = Bootstrap(law, data, pinned, pinned_fit, b);
  const int alpha = law.ParamIndex("alpha");
  EXPECT_GT(r.params[alpha].high - r.params[alpha].low, 0);
}

// Two runs of two points for three free parameters: a resample drawing one run twice cannot
// determine the law, and one drawing each run once is the data itself. No count of resamples
// gives an interval wider than zero: refused at any count, with no count suggested.
TEST(Bootstrap, ResamplesThatAreAllTheDataAreRefused) {
  const Law& law = FindLaw("compute");
  const FitData data = SelectFitData(
      ParseCsv("run,C,loss\nA,1e18,3.25\nA,1e19,2.95\nB,1e20,2.72\nB,1e21,2.55\n", "two.csv"),
      law);
  const FitOptions options;
  const FitSummary fit = Fit(law, data, options);
  for (int resamples : {40, 400}) {
    BootstrapOptions b;
    b.resamples = resamples;
    try {
      Bootstrap(law, data, options, fit, b);
      FAIL() << "expected an error at " << resamples;
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("only a resample drawing each run once determines the law's 3 free "
                             "parameters, and it refits to the fit itself"),
                std::string::npos)
          << message;
      EXPECT_EQ(message.find("raise --bootstrap"), std::string::npos) << message;
    }
  }
}

// A percentile interval at confidence c needs a resample beyond each end: B·(1 − c)/2 >= 1.
TEST(Bootstrap, MinimumResamplesLeaveOneBeyondEachEnd) {
  EXPECT_EQ(MinBootstrapResamples(0.95), 40);
  EXPECT_EQ(MinBootstrapResamples(0.9), 20);
  EXPECT_EQ(MinBootstrapResamples(0.99), 200);
  EXPECT_EQ(MinBootstrapResamples(0.5), 4);
  BootstrapOptions options;
  options.resamples = 39;
  EXPECT_THROW(options.Validate(), InputError);
  options.resamples = 40;
  EXPECT_NO_THROW(options.Validate());
}

// Run keys order the draws: two datasets whose runs carry the same keys, in any row order, draw
// the same keys in every resample with the same seed (a paired bootstrap); keys that are not one
// distinct key per run are refused.
TEST(Bootstrap, RunKeysPairTheDraws) {
  const Law& law = FindLaw("compute");
  FitOptions options;
  options.pins = {{"E", 1.6}};
  const std::string rows[] = {"b1,1e18,3.2541\n", "b2,3e18,3.1007\n", "b3,1e19,2.9536\n",
                              "b4,3e19,2.8355\n"};
  std::string forward = "run,C,loss\n", backward = forward;
  for (int i = 0; i < 4; ++i) forward += rows[i];
  for (int i = 3; i >= 0; --i) backward += rows[i];
  const FitData a = SelectFitData(ParseCsv(forward, "a.csv"), law);
  const FitData b = SelectFitData(ParseCsv(backward, "b.csv"), law);
  BootstrapOptions paired;
  paired.resamples = 200;
  paired.seed = 7;
  paired.run_keys = {768, 1024, 1536, 2048};
  const BootstrapResult ra = Bootstrap(law, a, options, Fit(law, a, options), paired);
  paired.run_keys = {2048, 1536, 1024, 768};  // b's runs are in the other order
  const BootstrapResult rb = Bootstrap(law, b, options, Fit(law, b, options), paired);
  // The same draws refit the same points: the same resamples kept, with the same θ.
  ASSERT_EQ(ra.resample, rb.resample);
  ASSERT_FALSE(ra.theta.empty());
  for (size_t i = 0; i < ra.theta.size(); ++i) {
    for (size_t j = 0; j < ra.theta[i].size(); ++j) {
      EXPECT_NEAR(ra.theta[i][j], rb.theta[i][j], 1e-6 * (1 + std::abs(ra.theta[i][j]))) << i;
    }
  }
  // Keys that reverse the points' order draw other runs than CanonicalRunOrder does.
  paired.run_keys = {4, 3, 2, 1};
  const BootstrapResult reversed = Bootstrap(law, a, options, Fit(law, a, options), paired);
  paired.run_keys.clear();
  const BootstrapResult canonical = Bootstrap(law, a, options, Fit(law, a, options), paired);
  ASSERT_EQ(reversed.theta.size(), canonical.theta.size());
  size_t differ = 0;
  for (size_t i = 0; i < reversed.theta.size(); ++i) differ += reversed.theta[i] != canonical.theta[i];
  EXPECT_GT(differ, reversed.theta.size() / 2);
  paired.run_keys = {1, 2, 2, 3};
  EXPECT_THROW(Bootstrap(law, a, options, Fit(law, a, options), paired), InputError);
  paired.run_keys = {1, 2, 3};
  EXPECT_THROW(Bootstrap(law, a, options, Fit(law, a, options), paired), InputError);
}

TEST(Bootstrap, PercentileInterpolates) {
  const Interval i = PercentileInterval({4, 1, 3, 2, 5}, 0.5);
  EXPECT_DOUBLE_EQ(i.low, 2);
  EXPECT_DOUBLE_EQ(i.high, 4);
  // Infinite values (multipliers the base never reaches) stay infinite, never inf − inf = NaN.
  const Interval inf = PercentileInterval({2, INFINITY, INFINITY, 1, INFINITY}, 0.5);
  EXPECT_DOUBLE_EQ(inf.low, 2);
  EXPECT_EQ(inf.high, INFINITY);
  const Interval all_inf = PercentileInterval({INFINITY, INFINITY, INFINITY}, 0.9);
  EXPECT_EQ(all_inf.low, INFINITY);
  EXPECT_EQ(all_inf.high, INFINITY);
}

}  // namespace
}  // namespace mosaic::scaling
