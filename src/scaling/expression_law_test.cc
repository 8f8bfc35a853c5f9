// The user-written law (--law-expr): recovery of known parameters from synthetic data, the Epoch
// Approach-3 objective reached by the expression fit, and the input errors.
#include "mosaic/scaling/expression_law.h"

#include <gtest/gtest.h>

#include <tuple>

#include <cmath>

#include "mosaic/scaling/data_table.h"
#include "mosaic/util/error.h"

namespace mosaic::scaling {
namespace {

constexpr char kChinchilla[] = "E + A*N^(-alpha) + B*D^(-beta)";
// Central numeric derivatives stop Levenberg–Marquardt within about 1e-9 relative of the
// analytic optimum's objective; the built-in law's objective is printed to 1e-10.
constexpr double kObjectiveAbsTol = 1e-9;
constexpr double kRecoveryRelTol = 1e-5;  // noise-free synthetic data

std::vector<ExpressionParam> Params(const std::string& text) { return ParseExpressionParams(text); }

TEST(ExpressionLaw, ParsesStartsAndGrids) {
  const std::vector<ExpressionParam> p = Params("E=1.5,alpha=0:2:0.5");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].starts, std::vector<double>({1.5}));
  EXPECT_EQ(p[1].starts, std::vector<double>({0, 0.5, 1, 1.5, 2}));
  // A malformed --param is a usage error, as any malformed flag value.
  EXPECT_THROW(Params("alpha=2:0:0.5"), UsageError);
  EXPECT_THROW(Params("alpha"), UsageError);
  // Spaces around items, names and values are ignored; an empty item is named as such.
  const std::vector<ExpressionParam> spaced = Params(" E = 1.5 , alpha=0:2:0.5 ");
  ASSERT_EQ(spaced.size(), 2u);
  EXPECT_EQ(spaced[0].name, "E");
  EXPECT_EQ(spaced[0].starts, std::vector<double>({1.5}));
  try {
    Params("E=1.5,");
    ADD_FAILURE() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--param = E=1.5,. Violated constraint: no empty item"),
              std::string::npos)
        << e.what();
  }
}

// A step below the resolution of LO never moved LO past HI: the grid grew until memory ran out
// (found by fuzz/expression_fuzz.cc). The grid is counted from (HI - LO) / STEP.
TEST(ExpressionLaw, GridStepBelowTheResolutionOfItsStart) {
  EXPECT_EQ(Params("a=1e300:1e300:1e-300")[0].starts, std::vector<double>({1e300}));
  EXPECT_EQ(Params("a=1e20:1e20:1")[0].starts, std::vector<double>({1e20}));
  EXPECT_EQ(Params("a=0:1:0.1")[0].starts.size(), 11u);
  EXPECT_EQ(Params("a=0:1:0.1")[0].starts.back(), 10 * 0.1);
}

TEST(ExpressionLaw, RecoversChinchillaParametersFromSyntheticData) {
  // L = 1.69 + 406.4/N^0.34 + 410.7/D^0.28 (Hoffmann et al.'s published values) on a 6 × 5 grid.
  FitData data;
  data.origin = "synthetic";
  data.input_names = {"N", "D"};
  data.inputs.resize(2);
  int row = 0;
  for (double n : {1e8, 3e8, 1e9, 3e9, 1e10, 3e10}) {
    for (double d : {2e9, 8e9, 3e10, 1e11, 4e11}) {
      data.inputs[0].push_back(n);
      data.inputs[1].push_back(d);
      data.loss.push_back(1.69 + 406.4 * std::pow(n, -0.34) + 410.7 * std::pow(d, -0.28));
      data.weight.push_back(1);
      data.run.push_back(row);
      data.run_names.push_back(std::to_string(row));
      data.line.push_back(++row + 1);
    }
  }
  const ExpressionLaw law = MakeExpressionLaw(
      kChinchilla, Params("E=1.5,A=300,B=300,alpha=0.2:0.5:0.1,beta=0.3"), {"N", "D", "loss"}, {});
  EXPECT_EQ(law.inputs, std::vector<std::string>({"N", "D"}));
  FitOptions options;
  const FitSummary s = FitExpression(law, data, options);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(s.starts, 4);
  EXPECT_LT(s.objective, 1e-20);
  EXPECT_NEAR(s.Value("E"), 1.69, 1.69 * kRecoveryRelTol);
  EXPECT_NEAR(s.Value("A"), 406.4, 406.4 * kRecoveryRelTol);
  EXPECT_NEAR(s.Value("B"), 410.7, 410.7 * kRecoveryRelTol);
  EXPECT_NEAR(s.Value("alpha"), 0.34, 0.34 * kRecoveryRelTol);
  EXPECT_NEAR(s.Value("beta"), 0.28, 0.28 * kRecoveryRelTol);
  EXPECT_NE(s.recipe.formula.find(kChinchilla), std::string::npos);

  // A pin holds: E fixed at the true value, the rest still recovered.
  options.pins = {{"E", 1.69}};
  const FitSummary pinned = FitExpression(law, data, options);
  EXPECT_EQ(pinned.Value("E"), 1.69);
  EXPECT_NEAR(pinned.Value("alpha"), 0.34, 0.34 * kRecoveryRelTol);
}

TEST(ExpressionLaw, EpochDataReachesTheBuiltInObjective) {
  DataTable t = ReadCsv(std::string(MOSAIC_SOURCE_DIR) +
                        "/tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv");
  ApplyMappings(t, {{"N", "Model Size"}, {"C", "Training FLOP"}, {"D", "C/(6*N)"}});
  DropHighest(t, "loss", 5);
  // A good start: near the Approach-3 optimum (E 1.817, A 482, B 2085, alpha 0.348, beta 0.366).
  const ExpressionLaw law = MakeExpressionLaw(
      kChinchilla, Params("E=1.8,A=500,B=2000,alpha=0.35,beta=0.36"), t.names, {});
  const FitData data = SelectFitData(t, law.Describe());
  ASSERT_EQ(data.size(), 240u);
  const FitSummary s = FitExpression(law, data, FitOptions{});
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_NEAR(s.objective, 0.0010182740, kObjectiveAbsTol);
}

TEST(ExpressionLaw, InputErrors) {
  const std::vector<std::string> columns = {"N", "D", "loss"};
  try {
    MakeExpressionLaw("E + A*N^(-alpha", Params("E=1,A=1,alpha=0.3"), columns, {});
    FAIL();
  } catch (const UsageError& e) {  // a malformed --law-expr
    EXPECT_NE(std::string(e.what()).find("cannot parse 'E + A*N^(-alpha' at position"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("^"), std::string::npos);
  }
  try {
    MakeExpressionLaw("E + A*M^(-alpha)", Params("E=1,A=1,alpha=0.3"), columns, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'M' is neither a data column nor a parameter"),
              std::string::npos)
        << e.what();
  }
  try {
    MakeExpressionLaw("E + A*N^(-alpha)", Params("E=1,A=1"), columns, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'alpha' is neither a data column nor a parameter with "
                                         "a start (give one with --param alpha=START)"),
              std::string::npos)
        << e.what();
  }
  // A pinned parameter needs no start.
  const ExpressionLaw law = MakeExpressionLaw("E + A*N^(-alpha)", Params("A=1,alpha=0.3"),
                                              columns, {"E"});
  EXPECT_EQ(law.params.size(), 3u);
  // A parameter the expression does not use is named by the flag that gave it.
  using Case = std::tuple<std::string, std::vector<std::string>, std::string>;
  for (const auto& [params, pinned, flag] :
       {Case{"E=1,A=1,alpha=0.3,Z=2", {}, "--param Z"}, Case{"E=1,A=1,alpha=0.3", {"Z"}, "--pin Z"}}) {
    try {
      MakeExpressionLaw("E + A*N^(-alpha)", Params(params), columns, pinned);
      FAIL() << flag;
    } catch (const UsageError& e) {  // a flag naming what the expression does not use
      EXPECT_EQ(std::string(e.what()),
                flag + ": the expression 'E + A*N^(-alpha)' does not use 'Z'");
    }
  }
  // Non-finite at the start: log of a negative prediction.
  FitData data;
  data.origin = "tiny.csv";
  data.input_names = {"N"};
  data.inputs = {{1e8, 1e9, 1e10, 1e11}};
  data.loss = {3, 2.8, 2.6, 2.5};
  data.weight = {1, 1, 1, 1};
  data.run = {0, 1, 2, 3};
  data.run_names = {"a", "b", "c", "d"};
  data.line = {2, 3, 4, 5};
  const ExpressionLaw bad =
      MakeExpressionLaw("E + A*N^(-alpha)", Params("E=-5,A=1,alpha=0.3"), columns, {});
  try {
    FitExpression(bad, data, FitOptions{});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tiny.csv:2: --law-expr 'E + A*N^(-alpha)' predicts"),
              std::string::npos)
        << e.what();
  }
  // An expression of parameters alone fails at every point, not at an empty one; NaN has no sign.
  const ExpressionLaw constant = MakeExpressionLaw("log(E)", Params("E=-1"), columns, {});
  EXPECT_THROW(FitExpression(constant, data, FitOptions{}), std::invalid_argument);
  FitData no_inputs = data;
  no_inputs.input_names.clear();
  no_inputs.inputs.clear();
  try {
    FitExpression(constant, no_inputs, FitOptions{});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("predicts nan at the start (E=-1) at every point (it "
                                         "reads no data column)"),
              std::string::npos)
        << e.what();
  }
}

// Points of weight 0 are left out of an expression's fit as of a built-in law's: not counted as
// points or runs, and not enough to fit (two free parameters on one weighted point were reported
// "converged").
TEST(ExpressionLaw, ZeroWeightPointsAreLeftOut) {
  const std::vector<std::string> columns = {"C", "loss"};
  const ExpressionLaw law = MakeExpressionLaw("1.6 + A*C^(-alpha)", Params("A=80,alpha=0.1"),
                                              columns, {});
  FitData data;
  data.origin = "w.csv";
  data.input_names = {"C"};
  data.inputs = {{1e18, 3e18, 1e19, 1e20}};
  data.loss = {3.2541, 3.1007, 2.9536, 2.7238};
  data.weight = {1, 0, 1, 1};
  data.run = {0, 1, 2, 3};
  data.run_names = {"a", "b", "c", "d"};
  data.line = {2, 3, 4, 5};
  const FitSummary fit = FitExpression(law, data, FitOptions{});
  EXPECT_EQ(fit.points, 3);
  EXPECT_EQ(fit.runs, 3);
  data.weight = {1, 0, 0, 0};
  try {
    FitExpression(law, data, FitOptions{});
    FAIL() << "fitted two parameters to one point";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "w.csv: points = 1. Violated constraint: points (of weight > 0) >= free parameters "
              "of the expression (2)");
  }
}

// Parameters the points cannot tell apart are refused as a built-in law's singular design is: a
// parameter that moves no prediction (it multiplies 0), and two scales of terms made proportional
// by the data (D = 20·N with equal pinned exponents: any split of A and B fits alike). The fit
// without the dependency goes through.
TEST(ExpressionLaw, UnseparatedParametersAreASingularDesign) {
  const std::vector<std::string> columns = {"N", "D", "loss"};
  FitData data;
  data.origin = "d20.csv";
  data.input_names = {"N", "D"};
  data.inputs.resize(2);
  for (double n : {1e8, 3e8, 1e9, 3e9, 1e10}) {
    data.inputs[0].push_back(n);
    data.inputs[1].push_back(20 * n);
    data.loss.push_back(1.69 + 406.4 * std::pow(n, -0.34) + 410.7 * std::pow(20 * n, -0.34));
    data.weight.push_back(1);
    data.run.push_back(static_cast<int>(data.run.size()));
    data.run_names.push_back(std::to_string(data.run.size()));
    data.line.push_back(static_cast<int>(data.line.size()) + 2);
  }
  FitOptions pinned;
  pinned.pins = {{"alpha", 0.34}, {"beta", 0.34}};
  const ExpressionLaw proportional = MakeExpressionLaw(
      kChinchilla, Params("E=1.5,A=300,B=300"), columns, {"alpha", "beta"});
  try {
    FitExpression(proportional, data, pinned);
    FAIL() << "fitted A and B of proportional terms";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "d20.csv: singular design: over the 5 points, A, B move the predictions along 1 "
              "direction for their 2 in --law-expr 'E + A*N^(-alpha) + B*D^(-beta)' (at the "
              "start and at the fit): the data cannot fix their values. Violated constraint: "
              "each free parameter moves the predictions in a direction of its own (pin one of "
              "them with --pin, rewrite the expression, or add points that vary the inputs "
              "independently)");
  }
  const ExpressionLaw times_zero =
      MakeExpressionLaw("E + A*N^(-alpha) + 0*B*D", Params("E=1.5,A=300,alpha=0.3,B=1"), columns, {});
  try {
    FitExpression(times_zero, data, FitOptions{});
    FAIL() << "fitted B, which multiplies 0";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("over the 5 points, B moves no prediction in "
                                         "--law-expr 'E + A*N^(-alpha) + 0*B*D'"),
              std::string::npos)
        << e.what();
  }
  // Pinning B leaves A, alpha and E to the data, which fix them.
  pinned.pins.emplace_back("B", 410.7);
  const FitSummary fit = FitExpression(proportional, data, pinned);
  ASSERT_TRUE(fit.ok()) << fit.message;
  EXPECT_NEAR(fit.Value("A"), 406.4, 406.4 * kRecoveryRelTol);
}

// A name muparser cannot define (a column "2", a parameter "0E") is an input error, never an
// exception of the expression library escaping (found by the expression fuzz target; its input is
// fuzz/corpus/expression_fuzz/regression-name-not-an-identifier).
TEST(ExpressionLaw, NamesThatAreNotIdentifiersAreInputErrors) {
  std::vector<ExpressionParam> params;
  try {
    params = ParseExpressionParams("E=1ee-\x12" "0E");
  } catch (const UsageError&) {
  }
  EXPECT_THROW(
      {
        const ExpressionLaw law = MakeExpressionLaw("0E", params, {"2"}, {"0E"});
        ExpressionEvaluator evaluate(law);
      },
      InputError);
}

}  // namespace
}  // namespace mosaic::scaling
