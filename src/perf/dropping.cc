#include "mosaic/perf/dropping.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <cmath>

#include "mosaic/util/embedded_data.h"
#include "mosaic/util/toml_util.h"

namespace mosaic {
namespace {

constexpr double kPi = 3.14159265358979323846;

double NormalPdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * kPi); }
double NormalSf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// E[(X − C)+] for X ~ Poisson(mean), by the complement sum over x < C.
double PoissonExcess(double mean, double capacity) {
  double p = std::exp(-mean);
  double below = 0;  // Σ_{x<C} (C − x)·P(x)
  for (int64_t x = 0; static_cast<double>(x) < capacity; ++x) {
    below += (capacity - static_cast<double>(x)) * p;
    p *= mean / static_cast<double>(x + 1);
  }
  return mean - capacity + below;
}

double NormalExcess(double mean, double variance, double capacity) {
  const double s = std::sqrt(std::max(variance, 1e-300));
  const double z = (capacity - mean) / s;
  return s * NormalPdf(z) + (mean - capacity) * NormalSf(z);
}

}  // namespace

double DroppedFraction(const DropGroup& g, const DropParams& p) {
  const double lambda = g.assignments_mean;
  if (lambda <= 0 || g.capacity_factor <= 0) return 0;
  const double capacity = std::ceil(g.capacity_factor * lambda - 1e-9);
  const double L = static_cast<double>(std::max<int64_t>(g.seq_len_tokens, 1));
  const double inflation =
      p.correlated ? (L + p.concentration) / (1 + p.concentration) : 1.0;
  const double n = static_cast<double>(std::max<int64_t>(g.experts_pooled, 1));
  // Finite-population factors (dropping.h): 1 when E and k are unknown.
  double routing_share = 1, popularity_variance = std::expm1(p.popularity_sigma * p.popularity_sigma);
  if (g.experts > 0 && g.top_k > 0) {
    const double E = static_cast<double>(g.experts), k = static_cast<double>(g.top_k);
    const double without_replacement = E > 1 ? std::max(0.0, (E - n) / (E - 1)) : 0;
    routing_share = std::max(0.0, 1 - n / E) * (E > 1 ? (E - k) / (E - 1) : 0);
    popularity_variance = std::min(popularity_variance, E / k - 1) * without_replacement;
  }
  const double sigma2 = p.popularity_sigma > 0 ? std::log1p(popularity_variance / n) : 0;
  auto conditional = [&](double w) {
    const double mean = lambda * w;
    if (routing_share <= 0) return std::max(0.0, mean - capacity);  // every count is its mean
    if (inflation == 1.0 && routing_share == 1.0 && mean < 100) return PoissonExcess(mean, capacity);
    return NormalExcess(mean, mean * inflation * routing_share, capacity + 0.5);
  };
  if (sigma2 <= 0) return conditional(1.0) / lambda;
  // E over ln w ~ N(−σ²/2, σ²) by the trapezoid rule on [−8, 8] standard deviations.
  const double s = std::sqrt(sigma2);
  constexpr int kPoints = 129;
  const double h = 16.0 / (kPoints - 1);
  double sum = 0, weight = 0;
  for (int i = 0; i < kPoints; ++i) {
    const double z = -8 + h * i;
    const double wz = NormalPdf(z);
    sum += wz * conditional(std::exp(-sigma2 / 2 + s * z));
    weight += wz;
  }
  return sum / weight / lambda;
}

std::vector<DropMeasurement> MarinCapacitySweep() {
  const double lambda = 4.0 * 65536.0 / 128.0;
  std::vector<DropMeasurement> v;
  for (auto [cf, dropped] : {std::pair{1.0, 0.0997}, {1.125, 0.053984}, {1.25, 0.032571},
                             {1.5, 0.015719}}) {
    v.push_back({DropGroup{lambda, cf, 4096, 1, 128, 4}, dropped});
  }
  return v;
}

namespace {

struct DropResidual {
  std::vector<DropMeasurement> points;
  bool operator()(double const* const* params, double* residuals) const {
    const double* x = params[0];
    DropParams p{std::pow(10.0, x[0]), true, x[1]};
    for (size_t i = 0; i < points.size(); ++i) {
      residuals[i] = DroppedFraction(points[i].group, p) / points[i].dropped_fraction - 1;
    }
    return true;
  }
};

}  // namespace

DropFit FitDropParams(std::span<const DropMeasurement> points) {
  auto* functor = new DropResidual{{points.begin(), points.end()}};
  auto* cost = new ceres::DynamicNumericDiffCostFunction<DropResidual, ceres::CENTRAL>(functor);
  cost->AddParameterBlock(2);
  cost->SetNumResiduals(static_cast<int>(points.size()));
  double x[2] = {2.0, 0.2};  // log10 A, σ
  ceres::Problem problem;
  problem.AddResidualBlock(cost, nullptr, x);
  problem.SetParameterLowerBound(x, 0, -1);
  problem.SetParameterUpperBound(x, 0, 7);
  problem.SetParameterLowerBound(x, 1, 0);
  problem.SetParameterUpperBound(x, 1, 2);
  ceres::Solver::Options options;
  options.max_num_iterations = 200;
  options.num_threads = 1;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  DropFit fit;
  fit.params = {std::pow(10.0, x[0]), true, x[1]};
  double ss = 0;
  for (const DropMeasurement& m : points) {
    const double pred = DroppedFraction(m.group, fit.params);
    fit.predicted.push_back(pred);
    ss += (pred / m.dropped_fraction - 1) * (pred / m.dropped_fraction - 1);
  }
  fit.rms_relative_error = std::sqrt(ss / static_cast<double>(points.size()));
  fit.solver_report = summary.BriefReport();
  return fit;
}

DropParams DefaultDropParams() {
  static const DropParams params = [] {
    auto text = FindEmbeddedFile("perf/dropping.toml");
    DropParams p;
    if (!text) return p;
    toml::table t = ParseToml(*text, "perf/dropping.toml");
    p.concentration = t["concentration"].value_or(0.0);
    p.correlated = t["correlated"].value_or(false);
    p.popularity_sigma = t["popularity_sigma"].value_or(0.0);
    return p;
  }();
  return params;
}

}  // namespace mosaic
