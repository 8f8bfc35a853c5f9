// The fast solver against Ceres Solver (the reference solver) on Epoch's Approach-3 problem:
// from the same starts Ceres reaches the same objective, and started at our optimum it finds no
// lower one.
#include <ceres/ceres.h>
#include <gtest/gtest.h>

#include <cmath>

#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/fit.h"
#include "mosaic/scaling/fit_problem.h"

namespace mosaic::scaling {
namespace {

constexpr double kObjectiveRelTol = 1e-9;

// r = log L − LSE(a − alpha·log N, b − beta·log D, e); Ceres's HuberLoss(δ) with its ½ gives
// Σ Huber_δ(r), the same objective.
struct LogResidual {
  double log_n, log_d, log_loss;
  template <typename T>
  bool operator()(const T* theta, T* residual) const {
    const T z1 = theta[1] - theta[3] * log_n;
    const T z2 = theta[2] - theta[4] * log_d;
    const T top = std::max({theta[0], z1, z2}, [](const T& x, const T& y) { return x < y; });
    using std::exp;
    using std::log;
    const T lse = top + log(exp(theta[0] - top) + exp(z1 - top) + exp(z2 - top));
    residual[0] = T(log_loss) - lse;
    return true;
  }
};

FitData Epoch240() {
  DataTable t = ReadCsv(std::string(MOSAIC_SOURCE_DIR) +
                        "/tests/fixtures/scaling/epoch_chinchilla_svg_extracted_data.csv");
  ApplyMappings(t, {{"N", "Model Size"}, {"C", "Training FLOP"}, {"D", "C/(6*N)"}});
  DropHighest(t, "loss", 5);
  return SelectFitData(t, FindLaw("chinchilla"));
}

double CeresFit(const FitData& data, double* theta) {
  ceres::Problem problem;
  for (size_t i = 0; i < data.size(); ++i) {
    auto* cost = new ceres::AutoDiffCostFunction<LogResidual, 1, 5>(new LogResidual{
        std::log(data.inputs[0][i]), std::log(data.inputs[1][i]), std::log(data.loss[i])});
    problem.AddResidualBlock(cost, new ceres::HuberLoss(1e-3), theta);
  }
  ceres::Solver::Options options;
  options.max_num_iterations = 2000;
  options.function_tolerance = 1e-15;
  options.gradient_tolerance = 1e-16;
  options.parameter_tolerance = 1e-14;
  options.linear_solver_type = ceres::DENSE_QR;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  return summary.final_cost;
}

TEST(CeresCheck, SameOptimumAsFastSolver) {
  const FitData data = Epoch240();
  FitOptions options;
  const FitSummary ours = Fit(FindLaw("chinchilla"), data, options);
  const FitProblem problem(FindLaw("chinchilla"), data, Objective{},
                           std::vector<std::optional<double>>(5));

  // Ceres from a spread of grid starts: its best matches ours.
  double best = INFINITY;
  for (const auto& start : std::vector<std::array<double, 5>>{
           {0, 5, 5, 0.5, 0.5}, {0.5, 5, 10, 0.5, 0.5}, {0.5, 10, 5, 0.5, 0.5}, {1, 5, 5, 0, 0}}) {
    double theta[5] = {start[0], start[1], start[2], start[3], start[4]};
    const double cost = CeresFit(data, theta);
    EXPECT_NEAR(cost, problem.Evaluate(theta, nullptr, nullptr), cost * 1e-12);
    best = std::min(best, cost);
  }
  EXPECT_NEAR(best, ours.objective, ours.objective * kObjectiveRelTol);

  // Started at our optimum, Ceres finds nothing lower.
  double theta[5];
  std::copy(ours.theta.begin(), ours.theta.end(), theta);
  const double polished = CeresFit(data, theta);
  EXPECT_GE(polished, ours.objective * (1 - kObjectiveRelTol));
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(theta[j], ours.theta[j], 1e-4 * (1 + std::fabs(theta[j])));
}

}  // namespace
}  // namespace mosaic::scaling
