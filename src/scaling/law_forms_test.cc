// Each built-in law recovers the parameters it generated (deterministic synthetic data, exact
// losses, a start perturbed away from the truth), and the sparse form fits the StepLaw dense and
// MoE runs jointly.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/fit.h"

namespace mosaic::scaling {
namespace {

// Exact synthetic losses: the fit should land on the generating parameters up to the solver's
// tolerances (relative change of F 1e-13), far tighter than this.
constexpr double kRecoveryRelTol = 1e-5;
// Absolute tolerance for parameters whose true value is 0 or near it.
constexpr double kRecoveryAbsTol = 1e-6;

// Input values per law input name; the data is their Cartesian product.
const std::map<std::string, std::vector<double>>& InputValues() {
  static const std::map<std::string, std::vector<double>> values = {
      {"N", {2e7, 6e7, 2e8, 6e8, 2e9}},
      {"D", {1e9, 4e9, 1.6e10, 6.4e10}},
      {"C", {1e17, 1e18, 1e19, 1e20, 1e21, 1e22}},
      {"S", {0, 0.5, 0.75, 0.875}},
      {"G", {1, 2, 4, 8}},
      {"E_count", {1, 4, 16, 64}},
  };
  return values;
}

FitData Synthetic(const Law& law, const std::vector<double>& theta) {
  FitData data;
  data.origin = "synthetic " + law.name;
  std::vector<const std::vector<double>*> axes;
  size_t total = 1;
  for (const LawInput& in : law.inputs) {
    data.input_names.push_back(in.name);
    axes.push_back(&InputValues().at(in.name));
    total *= axes.back()->size();
  }
  data.inputs.resize(law.inputs.size());
  std::vector<double> x(law.inputs.size());
  for (size_t p = 0; p < total; ++p) {
    size_t rest = p;
    for (size_t i = axes.size(); i-- > 0;) {
      x[i] = (*axes[i])[rest % axes[i]->size()];
      rest /= axes[i]->size();
      data.inputs[i].push_back(x[i]);
    }
    data.loss.push_back(law.Predict(x.data(), theta.data()));
    data.weight.push_back(1);
    data.run.push_back(static_cast<int>(p));
    data.run_names.push_back("p" + std::to_string(p));
    data.line.push_back(0);
  }
  return data;
}

struct Truth {
  std::string law;
  std::map<std::string, double> values;  // paper names, value space
};

// Plausible published-scale values (exponent signs as each paper writes them).
std::vector<Truth> Truths() {
  return {
      {"compute", {{"E", 1.6}, {"A", 88.32}, {"alpha", 0.0941}}},
      {"chinchilla", {{"E", 1.8172}, {"A", 477.84}, {"B", 2143.9}, {"alpha", 0.3473},
                      {"beta", 0.3672}}},
      {"sparse", {{"E", 1.7}, {"A", 300}, {"B", 900}, {"alpha", 0.32}, {"beta", 0.30},
                  {"gamma", 0.4}}},
      {"abnar", {{"e", 1.5}, {"a", 40}, {"b", 60}, {"c", 0.3}, {"d", 15}, {"alpha", -0.25},
                 {"beta", -0.2}, {"gamma", -0.15}, {"lambda", 0.5}, {"delta", 0.8}}},
      {"krajewski", {{"a", 18.1}, {"b", 30.8}, {"c", 0.47}, {"g", 2.1}, {"alpha", 0.115},
                     {"beta", 0.147}, {"gamma", 0.58}}},
      {"clark", {{"a", -0.08}, {"b", -0.1}, {"c", 0.004}, {"d", 2.3}}},
      {"ludziejewski", {{"a", 35}, {"b", 40}, {"c", 1.3}, {"alpha", -0.2}, {"beta", -0.22},
                        {"gamma", 0.005}, {"delta", -0.1}, {"omega", 0.05},
                        {"zeta", -0.004}}},
  };
}

TEST(LawForms, SyntheticDataRecoversGeneratingParameters) {
  for (const Truth& t : Truths()) {
    SCOPED_TRACE(t.law);
    const Law& law = FindLaw(t.law);
    ASSERT_EQ(t.values.size(), law.params.size());
    std::vector<double> theta(law.params.size());
    for (size_t j = 0; j < law.params.size(); ++j) {
      theta[j] = law.ToTheta(static_cast<int>(j), t.values.at(law.params[j].name));
    }
    const FitData data = Synthetic(law, theta);
    FitOptions options;
    options.objective.loss = LossKind::kSquared;
    // One start, every coordinate moved off the truth (scales by a factor e^0.3, exponents and
    // linear coefficients by 0.02).
    StartGrid grid;
    for (size_t j = 0; j < law.params.size(); ++j) {
      const bool scale = law.params[j].kind == ParamKind::kLogScale;
      grid.values.push_back({theta[j] + (scale ? 0.3 : 0.02)});
    }
    options.grid = grid;
    const FitSummary s = Fit(law, data, options);
    EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
    EXPECT_LT(s.objective, 1e-20);
    for (const auto& [name, value] : t.values) {
      EXPECT_NEAR(s.Value(name), value, kRecoveryRelTol * std::fabs(value) + kRecoveryAbsTol)
          << name;
    }
  }
}

// The StepLaw tables (tests/fixtures/scaling/README.md): the best run per (architecture, N_active,
// N_total, D) cell, 17 dense and 16 MoE, fitted jointly with S = 1 − N_active/N_total.
TEST(LawForms, SparseFitsStepLawDenseAndMoeJointly) {
  DataTable t = ReadCsv(std::string(MOSAIC_SOURCE_DIR) +
                        "/tests/fixtures/scaling/steplaw_joint_best.csv");
  ApplyMappings(t, {{"N", "N_active"}});
  const FitData data = SelectFitData(t, FindLaw("sparse"));
  ASSERT_EQ(data.size(), 33u);
  const FitSummary s = Fit(FindLaw("sparse"), data, FitOptions{});
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  std::printf("steplaw joint: objective %.10g E %.6g A %.6g B %.6g alpha %.6g beta %.6g gamma "
              "%.6g converged %d inferred %d\n",
              s.objective, s.Value("E"), s.Value("A"), s.Value("B"), s.Value("alpha"),
              s.Value("beta"), s.Value("gamma"), s.converged_starts, s.inferred_starts);
  // The best objective of the 9000-start grid (regression value of this fit: it may only go down
  // with a better solver).
  EXPECT_LE(s.objective, 0.00038978061 * (1 + 1e-9));
  // Every point within kStepLawRelTol of its fitted loss: the ranges are narrow (N_active
  // 188M–1.24B, D 2B–100B) and the MoE runs at 20B tokens sit up to ~5% below the joint trend, so
  // the fit is loose. The floor E is not identified by these ranges (it goes to ~0), which is a
  // property of the data, not of the solver.
  constexpr double kStepLawRelTol = 0.05;
  const Law& law = FindLaw("sparse");
  std::vector<double> x(law.inputs.size());
  for (size_t i = 0; i < data.size(); ++i) {
    data.Point(i, x.data());
    const double predicted = law.Predict(x.data(), s.theta.data());
    EXPECT_NEAR(predicted, data.loss[i], kStepLawRelTol * data.loss[i]) << "point " << i;
  }
  EXPECT_GT(s.Value("alpha"), 0);
  EXPECT_GT(s.Value("beta"), 0);
  // Sparsity helps at fixed active parameters: (1 − S)^gamma < 1 needs gamma > 0.
  EXPECT_GT(s.Value("gamma"), 0);
}

}  // namespace
}  // namespace mosaic::scaling
