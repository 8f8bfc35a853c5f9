// Reproduces the rows of tests/fixtures/scaling/reference_fits.csv (Chinchilla data, Epoch AI's
// Approach-3 re-analysis and ml-scalefit's squared-error fit) and checks the fast solver against
// Ceres Solver on the same objective.
#include "mosaic/scaling/fit.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cmath>
#include <limits>

#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/fit_problem.h"
#include "mosaic/scaling/projection.h"
#include "mosaic/util/error.h"

namespace mosaic::scaling {
namespace {

constexpr double kObjectiveAbsTol = 5e-11;  // half a unit in the oracle's last printed digit
constexpr double kParamRelTol = 2e-3;      // parameters on a flat surface (4-5 printed digits)

std::string Fixture(const std::string& name) {
  return std::string(MOSAIC_SOURCE_DIR) + "/tests/fixtures/scaling/" + name;
}

// Epoch's 240 rows: drop the 5 highest losses, D = C/(6N).
FitData Epoch240(std::string* rule = nullptr, bool below_1e21_scaled = false) {
  DataTable t = ReadCsv(Fixture("epoch_chinchilla_svg_extracted_data.csv"));
  ApplyMappings(t, {{"N", "Model Size"}, {"C", "Training FLOP"}, {"D", "C/(6*N)"}});
  DropHighest(t, "loss", 5);
  if (below_1e21_scaled) {
    FilterRows(t, "C < 1e21");
    ApplyMappings(t, {{"N", "N/1e6"}, {"D", "D/1e9"}});
  }
  if (rule != nullptr) *rule = "drop the 5 highest losses; D = C/(6N)";
  return SelectFitData(t, FindLaw("chinchilla"));
}

// A pinned floor at or above a loss has no fit (every other term is positive): refused, naming
// the file, the row's line and the floor, instead of a "converged" fit with A driven to 0.
// An exponent pinned against the law's form is refused, naming it: alpha = 0 made A·C^(−alpha) a
// constant beside E (the fit returned A = 1 from its start and decide a multiplier of 1.000×); a
// negative one makes the term grow with compute. A second input factor of the term (sparse's
// gamma beside its N) may still be pinned to 0.
TEST(Fit, AnExponentPinnedAgainstTheLawsFormIsRefused) {
  const Law& compute = FindLaw("compute");
  for (const auto& [value, rule] :
       {std::pair<double, std::string>{0, "alpha = 0. Violated constraint: alpha > 0 (compute "
                                          "exponent of law compute: at 0 its term is a constant, "
                                          "which the floor E already is)"},
        {-0.5, "alpha = -0.5. Violated constraint: alpha > 0 (compute exponent of law compute: "
               "its term must fall as its input grows)"}}) {
    try {
      PinnedTheta(compute, {{"alpha", value}});
      ADD_FAILURE() << value;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(PinnedTheta(compute, {{"alpha", 0.05}}));
  EXPECT_NO_THROW(PinnedTheta(FindLaw("sparse"), {{"gamma", 0}}));
}

TEST(Fit, APinnedFloorAtOrAboveALossIsRefused) {
  const FitData data = Epoch240();
  FitOptions options;
  options.pins = {{"E", 10.0}};
  try {
    Fit(FindLaw("chinchilla"), data, options);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("epoch_chinchilla_svg_extracted_data.csv:"), std::string::npos) << what;
    EXPECT_NE(what.find("loss > the pinned floor E = 10 of law chinchilla"), std::string::npos)
        << what;
  }
  // Just under the lowest loss the floor is reachable: the fit runs.
  double lowest = data.loss[0];
  for (double l : data.loss) lowest = std::min(lowest, l);
  options.pins = {{"E", lowest * 0.999}};
  EXPECT_NO_THROW(Fit(FindLaw("chinchilla"), data, options));
}

// Three points for three free parameters, with loss rising with compute: both weaknesses are
// named in the summary's cautions; pinning E leaves one degree of freedom and the exponent's
// caution only.
TEST(Fit, AFitThatChecksNothingOrRisesWithScaleIsCautioned) {
  FitData data;
  data.origin = "rising.csv";
  data.input_names = {"C"};
  data.inputs = {{1e18, 1e19, 1e20}};
  data.loss = {3.0, 3.2, 3.5};
  data.weight = {1, 1, 1};
  data.run = {0, 1, 2};
  data.run_names = {"a", "b", "c"};
  data.line = {2, 3, 4};
  const FitSummary free = Fit(FindLaw("compute"), data, FitOptions{});
  ASSERT_EQ(free.cautions.size(), 2u);
  EXPECT_NE(free.cautions[0].find("3 free parameters on 3 points"), std::string::npos);
  EXPECT_NE(free.cautions[1].find("alpha = -"), std::string::npos) << free.cautions[1];
  FitOptions pinned;
  pinned.pins = {{"E", 1.0}};
  const FitSummary one_dof = Fit(FindLaw("compute"), data, pinned);
  ASSERT_EQ(one_dof.cautions.size(), 1u);
  EXPECT_NE(one_dof.cautions[0].find("alpha = -"), std::string::npos);
  // Every parameter pinned: the law ignores the points, and says so.
  FitOptions all;
  all.pins = {{"E", 1.0}, {"A", 100.0}, {"alpha", 0.1}};
  const FitSummary none_free = Fit(FindLaw("compute"), data, all);
  ASSERT_EQ(none_free.cautions.size(), 1u);
  EXPECT_NE(none_free.cautions[0].find("every parameter is pinned: the law is the pins', whatever "
                                       "the 3 points say"),
            std::string::npos)
      << none_free.cautions[0];
  // Epoch's 240 points give none.
  EXPECT_TRUE(Fit(FindLaw("chinchilla"), Epoch240(), FitOptions{}).cautions.empty());
}

// A scale driven past a double's range (an outlying loss of 1e300 pulls A to infinity) is no
// fitted value: the fit is not reported converged, and its message names the parameter.
TEST(Fit, AParameterPastADoublesRangeIsNoConvergence) {
  FitData data;
  data.origin = "t.csv";
  data.input_names = {"C"};
  data.inputs = {{1e18, 3e18, 1e19}};
  data.loss = {1e300, 3.1007, 2.9536};
  data.weight = {1, 1, 1};
  data.run = {0, 1, 2};
  data.run_names = {"a", "b", "c"};
  data.line = {2, 3, 4};
  FitOptions options;
  options.pins = {{"E", 1.6}};
  const FitSummary fit = Fit(FindLaw("compute"), data, options);
  EXPECT_FALSE(fit.ok());
  EXPECT_EQ(fit.termination, Termination::kNoConvergence);
  EXPECT_EQ(fit.message.rfind("no convergence: A ran past a double's range", 0), 0u)
      << fit.message;
}

// Points of weight 0 are not in the objective: too few weighted points is an error (all-zero
// weights reported the start grid as a converged fit). Scaling every weight alike leaves the fit.
TEST(Fit, ZeroWeightPointsDoNotCountAndScaledWeightsFitAlike) {
  FitData data = Epoch240();
  std::fill(data.weight.begin(), data.weight.end(), 0.0);
  data.weight[0] = data.weight[1] = 1;
  try {
    Fit(FindLaw("chinchilla"), data, FitOptions{});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("points = 2. Violated constraint: points (of weight > 0) "
                                         ">= free parameters of law chinchilla (5)"),
              std::string::npos)
        << e.what();
  }
  FitData scaled = Epoch240();
  for (double& w : scaled.weight) w = 1e50;
  const FitSummary base = Fit(FindLaw("chinchilla"), Epoch240(), FitOptions{});
  const FitSummary big = Fit(FindLaw("chinchilla"), scaled, FitOptions{});
  for (size_t j = 0; j < base.params.size(); ++j) {
    EXPECT_NEAR(big.params[j].value / base.params[j].value, 1, 1e-6) << base.params[j].name;
  }
}

// Points of weight 0 are left out of every count and of the holdout: the runs counted are those
// with a weighted point (the fit said "80 points, 235 runs"), and the held-out error scores only
// weighted points, the threshold taken over them.
TEST(Fit, ZeroWeightPointsAreLeftOutOfRunCountsAndTheHoldout) {
  FitData data = Epoch240();
  for (size_t i = 0; i < data.size(); ++i) data.weight[i] = i % 3 == 0 ? 1 : 0;
  const FitSummary fit = Fit(FindLaw("chinchilla"), data, FitOptions{});
  EXPECT_EQ(fit.points, 80);
  EXPECT_EQ(fit.runs, 80);  // one run per point in Epoch's table
  // The largest-compute point, weighted 0, is neither the budget the ratio is taken from nor
  // scored: the holdout equals the holdout of the weighted points alone.
  size_t largest = 0;
  const std::vector<double> compute = PointCompute(FindLaw("chinchilla"), data);
  for (size_t i = 0; i < data.size(); ++i) {
    if (compute[i] > compute[largest]) largest = i;
  }
  ASSERT_NE(largest % 3, 0u) << "the largest point is weighted in this fixture; pick another";
  std::vector<size_t> weighted;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data.weight[i] > 0) weighted.push_back(i);
  }
  const HoldoutResult all = Holdout(FindLaw("chinchilla"), data, FitOptions{}, 1.5);
  const HoldoutResult only = Holdout(FindLaw("chinchilla"), data.Subset(weighted), FitOptions{}, 1.5);
  EXPECT_EQ(all.threshold_flops, only.threshold_flops);
  EXPECT_LT(all.threshold_flops, compute[largest] / 1.5);
  EXPECT_EQ(all.held_out_points, only.held_out_points);
  EXPECT_EQ(all.train_points + all.held_out_points, 80);
  EXPECT_EQ(all.rms_log_error, only.rms_log_error);
}

// A weight past kMaxFitWeight (or NaN, or negative) is refused by the fit itself, for data built in
// code as for data read from a table, naming the point's line and the one rule both paths share.
TEST(Fit, AWeightOutsideItsBoundIsRefusedWithItsLine) {
  for (const double bad : {1e308, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    FitData data = Epoch240();
    data.weight[3] = bad;
    try {
      Fit(FindLaw("chinchilla"), data, FitOptions{});
      FAIL() << "no error for weight " << bad;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(fmt::format(":{}: weight = ", data.line[3])), std::string::npos)
          << what;
      EXPECT_NE(what.find(kFitWeightRule), std::string::npos) << what;
    }
  }
  EXPECT_TRUE(IsValidFitWeight(kMaxFitWeight));
  EXPECT_FALSE(IsValidFitWeight(std::nextafter(kMaxFitWeight, 1e300)));
}

// Three rungs with D = 20·N and both exponents pinned: the fit drives A to ~4e-10, where its
// term is nothing at every point. Named in negligible_params and in the cautions; Epoch's fit
// (every scale carrying its term) names none.
TEST(Fit, AScaleDrivenToNothingIsNamed) {
  FitData data;
  data.origin = "ladder.csv";
  data.input_names = {"N", "D"};
  data.inputs = {{18481152, 54263808, 145489920}, {369623040, 1085276160, 2909798400}};
  data.loss = {3.5, 3.3, 3.15};
  data.weight = {1, 1, 1};
  data.run = {0, 1, 2};
  data.run_names = {"a", "b", "c"};
  data.line = {2, 3, 4};
  FitOptions options;
  options.pins = {{"E", 1.6}, {"alpha", 0.34}, {"beta", 0.28}};
  const FitSummary s = Fit(FindLaw("chinchilla"), data, options);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_LT(s.Value("A"), 1e-6);
  EXPECT_EQ(s.negligible_params, std::vector<std::string>{"A"});
  const std::string all = fmt::format("{}", fmt::join(s.cautions, "\n"));
  EXPECT_NE(all.find("A = 4.0"), std::string::npos) << all;
  EXPECT_NE(all.find("so its term is absent at every point"), std::string::npos) << all;
  EXPECT_TRUE(Fit(FindLaw("chinchilla"), Epoch240(), FitOptions{}).negligible_params.empty());
}

// A ladder whose token budgets stay within 1% of 20 tokens per parameter: not the exact line
// the design check refuses, but the fit separates N from D only through that 1%. Cautioned with
// the line; Epoch's IsoFLOP points, which vary N and D apart, are not.
TEST(Fit, NearlyCollinearInputsAreCautioned) {
  FitData data;
  data.origin = "ladder.csv";
  data.input_names = {"N", "D"};
  data.inputs = {{1e8, 2e8, 4e8, 8e8, 1.6e9, 3.2e9},
                 {2.02e9, 3.96e9, 8.04e9, 15.92e9, 32.16e9, 63.68e9}};
  data.loss = {3.49, 3.15, 2.87, 2.64, 2.45, 2.30};
  data.weight = std::vector<double>(6, 1.0);
  data.run = {0, 1, 2, 3, 4, 5};
  data.run_names = {"a", "b", "c", "d", "e", "f"};
  data.line = {2, 3, 4, 5, 6, 7};
  const FitSummary s = Fit(FindLaw("chinchilla"), data, FitOptions{});
  const std::string all = fmt::format("{}", fmt::join(s.cautions, "\n"));
  // The line as numpy.linalg.lstsq fits it: slope 0.99836, intercept 3.02869, RMS residual
  // 0.0068007, 3.311e-05 of the variance of log D left.
  EXPECT_NE(all.find("nearly collinear inputs: over the 6 points log D = 0.9984·log N + 3.029 to "
                     "within 0.0068 RMS (3.3e-05 of its variance unexplained)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("the fit tells D apart from N only through that scatter"), std::string::npos);
  for (const std::string& caution : Fit(FindLaw("chinchilla"), Epoch240(), FitOptions{}).cautions) {
    EXPECT_EQ(caution.find("nearly collinear"), std::string::npos) << caution;
  }
}

// A value far from every other of its column (a loss of 35 among 2-4, an N slipped by 10^6)
// is cautioned at its line; Epoch's 240 points, which span six decades of N, are not.
TEST(Fit, AValueFarFromEveryOtherIsCautioned) {
  FitData data;
  data.origin = "runs.csv";
  data.input_names = {"N", "D"};
  data.inputs = {{1e8, 2e8, 4e8, 8e8}, {2e9, 8e9, 4e9, 16e9}};
  data.loss = {3.49, 35.0, 2.87, 2.64};
  data.weight = std::vector<double>(4, 1.0);
  data.run = {0, 1, 2, 3};
  data.run_names = {"a", "b", "c", "d"};
  data.line = {2, 3, 4, 5};
  EXPECT_EQ(OutlyingValueCautions(data),
            std::vector<std::string>{
                "runs.csv:3: loss = 35 is 10× the next largest loss (3.49): far from every other "
                "point, as a slipped exponent would be; the fit follows it (check the value, or "
                "leave the row out with --where)"});
  data.loss[1] = 13.6;
  EXPECT_TRUE(OutlyingValueCautions(data).empty());  // 3.9× is under the loss's 4×: none
  data.loss[1] = 0.6;  // a quarter of the next smallest loss (2.64) is 0.66
  EXPECT_EQ(OutlyingValueCautions(data).at(0).rfind(
                "runs.csv:3: loss = 0.6 is 1/4.4 of the next smallest loss (2.64)", 0),
            0u);
  data.loss[1] = 35.0;
  data.inputs[0][0] = 1e2;  // N slipped by 10^6 at line 2
  const std::vector<std::string> both = OutlyingValueCautions(data);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].rfind("runs.csv:3: loss = 35 is 10× the next largest loss (3.49)", 0), 0u)
      << both[0];
  EXPECT_EQ(both[1].rfind("runs.csv:2: N = 100 is 1/2e+06 of the next smallest N (2e+08)", 0), 0u)
      << both[1];
  EXPECT_TRUE(OutlyingValueCautions(Epoch240()).empty());
}

TEST(ChinchillaFit, EpochGridHuberLogReproducesObjective) {
  const FitData data = Epoch240();
  ASSERT_EQ(data.size(), 240u);
  FitOptions options;
  const FitSummary s = Fit(FindLaw("chinchilla"), data, options);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  EXPECT_EQ(s.starts, 4500);
  EXPECT_NEAR(s.objective, 0.0010182740, kObjectiveAbsTol);
  EXPECT_NEAR(s.Value("E"), 1.8172, 1.8172 * kParamRelTol);
  EXPECT_NEAR(s.Value("A"), 477.84, 477.84 * kParamRelTol);
  EXPECT_NEAR(s.Value("B"), 2143.9, 2143.9 * kParamRelTol);
  EXPECT_NEAR(s.Value("alpha"), 0.3473, 0.3473 * kParamRelTol);
  EXPECT_NEAR(s.Value("beta"), 0.3672, 0.3672 * kParamRelTol);
  // Certified starts (run to the end, or cut off in the final stage already within the margin)
  // are a subset of those credited with their basin's minimum.
  EXPECT_GE(s.converged_starts, 1);
  EXPECT_LE(s.converged_starts, s.inferred_starts);
  EXPECT_GT(s.inferred_starts, 100);
  std::printf("objective %.10g E %.6g A %.6g B %.6g alpha %.6g beta %.6g converged %d inferred %d "
              "cut %d failed %d iterations %ld\n",
              s.objective, s.Value("E"), s.Value("A"), s.Value("B"), s.Value("alpha"),
              s.Value("beta"), s.converged_starts, s.inferred_starts, s.cut_short_starts,
              s.failed_starts, s.iterations);
}

// The start grid is split into the same blocks whatever the thread count (multistart.h), so a
// fit on 1 thread and on 5 is the same to the bit: the optimum and every count.
TEST(ChinchillaFit, TheThreadCountDoesNotChangeTheFit) {
  const FitData data = Epoch240();
  FitOptions one, five;
  one.multistart.threads = 1;
  five.multistart.threads = 5;
  const FitSummary a = Fit(FindLaw("chinchilla"), data, one);
  const FitSummary b = Fit(FindLaw("chinchilla"), data, five);
  EXPECT_EQ(a.objective, b.objective);
  EXPECT_EQ(a.theta, b.theta);
  EXPECT_EQ(a.converged_starts, b.converged_starts);
  EXPECT_EQ(a.inferred_starts, b.inferred_starts);
  EXPECT_EQ(a.cut_short_starts, b.cut_short_starts);
  EXPECT_EQ(a.iterations, b.iterations);
}

// Without the basin memo every start runs to the end, so every count is certified; the grid is
// the reference's and the best objective the same.
TEST(ChinchillaFit, EpochGridWithoutCutOffCertifiesEveryStart) {
  FitOptions options;
  options.multistart.cut_short = false;
  const FitSummary s = Fit(FindLaw("chinchilla"), Epoch240(), options);
  EXPECT_NEAR(s.objective, 0.0010182740, kObjectiveAbsTol);
  EXPECT_EQ(s.cut_short_starts, 0);
  EXPECT_EQ(s.converged_starts, s.inferred_starts);
  EXPECT_GT(s.converged_starts, 2000);
}

}  // namespace
}  // namespace mosaic::scaling

namespace mosaic::scaling {
namespace {

FitProblem EpochProblem(const FitData& data, const Objective& objective = {}) {
  return FitProblem(FindLaw("chinchilla"), data, objective,
                    std::vector<std::optional<double>>(5));
}

double ObjectiveAt(const FitProblem& problem, double e, double a, double b, double alpha,
                   double beta) {
  const double theta[5] = {std::log(e), std::log(a), std::log(b), alpha, beta};
  return problem.Evaluate(theta, nullptr, nullptr);
}

TEST(ChinchillaFit, ObjectiveAtPublishedValues) {
  const FitProblem problem = EpochProblem(Epoch240());
  // Hoffmann et al.'s TeX values (reference row hoffmann_tex_values) and the rounded printed ones.
  // (0.001231 is printed to 4 digits from unrounded values; the table's 1.6934 etc. give 0.0012315.)
  EXPECT_NEAR(ObjectiveAt(problem, 1.6934, 406.4, 410.7, 0.33917, 0.28491), 0.001231, 1e-6);
  EXPECT_NEAR(ObjectiveAt(problem, 1.69, 406.4, 410.7, 0.34, 0.28), 0.004121, 5e-7);
  // Epoch's published, rounded point scores within 0.3% of the optimum (scaling.md).
  const double rounded = ObjectiveAt(problem, 1.8169, 482.01, 2085.43, 0.3478, 0.3658);
  EXPECT_GT(rounded, 0.0010182740);
  EXPECT_LT(rounded, 0.0010182740 * 1.003);
}

TEST(ChinchillaFit, ScalefitSquaredLinear217) {
  const FitData data = Epoch240(nullptr, true);
  ASSERT_EQ(data.size(), 217u);
  FitOptions options;
  options.objective.loss = LossKind::kSquared;
  options.objective.space = ResidualSpace::kLinear;
  const FitSummary s = Fit(FindLaw("chinchilla"), data, options);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  EXPECT_NEAR(s.objective, 0.062414, 5e-7);
  EXPECT_NEAR(s.Value("E"), 1.9051, 1.9051 * kParamRelTol);
  EXPECT_NEAR(s.Value("A"), 4.0005, 4.0005 * kParamRelTol);
  EXPECT_NEAR(s.Value("B"), 1.0509, 1.0509 * kParamRelTol);
  EXPECT_NEAR(s.Value("alpha"), 0.3511, 0.3511 * kParamRelTol);
  EXPECT_NEAR(s.Value("beta"), 0.4587, 0.4587 * kParamRelTol);
}

TEST(ChinchillaFit, SquaredLog217) {
  FitOptions options;
  options.objective.loss = LossKind::kSquared;
  const FitSummary s = Fit(FindLaw("chinchilla"), Epoch240(nullptr, true), options);
  EXPECT_NEAR(s.objective, 0.0081038085, 5e-11);
  EXPECT_NEAR(s.Value("E"), 1.8926, 1.8926 * kParamRelTol);
  EXPECT_NEAR(s.Value("beta"), 0.4430, 0.4430 * kParamRelTol);
}

TEST(ChinchillaFit, HuberLog217) {
  const FitSummary s = Fit(FindLaw("chinchilla"), Epoch240(nullptr, true), FitOptions{});
  // Reference row huber_log_217 came from a smaller start grid; the 4500-start grid may only
  // do better.
  EXPECT_LE(s.objective, 0.00081407267 + 5e-12);
  EXPECT_NEAR(s.objective, 0.00081407267, 1e-9);
  EXPECT_NEAR(s.Value("E"), 1.8205, 1.8205 * 5e-3);
  EXPECT_NEAR(s.Value("alpha"), 0.3271, 0.3271 * 5e-3);
}

}  // namespace
}  // namespace mosaic::scaling
