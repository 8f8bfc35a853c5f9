#include "mosaic/scaling/solver.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>

namespace mosaic::scaling {

std::string_view ToString(Termination t) {
  switch (t) {
    case Termination::kConverged:
      return "converged";
    case Termination::kNoConvergence:
      return "no_convergence";
    case Termination::kFailure:
      return "failure";
  }
  return "";
}

uint64_t BasinMemo::Cell(const double* point, int size) const {
  uint64_t key = 1469598103934665603ull;  // FNV-1a over the cell coordinates
  for (int j = 0; j < size; ++j) {
    const int64_t c = static_cast<int64_t>(std::floor(point[j] / cell_size));
    key = (key ^ static_cast<uint64_t>(c)) * 1099511628211ull;
  }
  return key;
}

int BasinMemo::Find(const double* point, int size) const {
  if (stage >= static_cast<int>(cells.size())) return -1;
  const auto& table = cells[stage];
  const auto it = table.find(Cell(point, size));
  return it == table.end() ? -1 : it->second;
}

void BasinMemo::Add(const std::vector<double>& path, int size, int minimum, int at) {
  if (size < 1) return;  // every parameter pinned: no path, no cells
  if (at >= static_cast<int>(cells.size())) cells.resize(at + 1);
  auto& table = cells[at];
  for (size_t i = 0; i + size <= path.size(); i += size) {
    table.try_emplace(Cell(path.data() + i, size), minimum);
  }
}

int BasinMemo::AddMinimum(const std::vector<double>& point, double value) {
  x.push_back(point);
  objective.push_back(value);
  return static_cast<int>(x.size()) - 1;
}

SolverResult Minimize(const FitProblem& problem, const double* x0, const SolverOptions& options,
                      const BasinMemo* memo, const double* weights, std::vector<double>* path) {
  using Vector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, kMaxLawParams, 1>;
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor,
                               kMaxLawParams, kMaxLawParams>;
  const int q = problem.num_free();
  SolverResult result;
  result.x.assign(x0, x0 + q);
  if (q == 0) {
    result.objective = problem.Evaluate(x0, nullptr, nullptr, weights);
    result.evaluations = 1;
    result.termination = std::isfinite(result.objective) ? Termination::kConverged
                                                         : Termination::kFailure;
    return result;
  }
  Vector x = Eigen::Map<const Vector>(x0, q);
  Vector g(q), trial(q), step(q), diag(q), g_trial(q);
  Matrix h(q, q), a(q, q), h_trial(q, q);
  double f = problem.Evaluate(x.data(), g.data(), h.data(), weights);
  result.evaluations = 1;
  if (!std::isfinite(f)) {
    result.objective = INFINITY;
    result.termination = Termination::kFailure;
    return result;
  }
  Eigen::LLT<Matrix> llt(q);
  double lambda = options.initial_damping;
  double nu = 2;  // growth of λ on consecutive rejections (Nielsen 1999)
  result.termination = Termination::kNoConvergence;
  while (result.iterations < options.max_iterations) {
    if (path != nullptr) path->insert(path->end(), x.data(), x.data() + q);
    if (g.cwiseAbs().maxCoeff() <= options.gradient_tolerance) {
      result.termination = Termination::kConverged;
      break;
    }
    const double hmax = std::max(h.diagonal().cwiseAbs().maxCoeff(), 1e-300);
    for (int j = 0; j < q; ++j) diag[j] = std::max(std::fabs(h(j, j)), 1e-9 * hmax);
    a = h;
    a.diagonal() += lambda * diag;
    llt.compute(a);
    if (llt.info() != Eigen::Success) {
      lambda *= nu;
      nu *= 2;
      if (lambda > 1e30) {
        result.termination = Termination::kConverged;
        break;
      }
      continue;
    }
    step = llt.solve(-g);
    // Decrease predicted by the quadratic model; none left to gain means a minimum to rounding.
    const double predicted = -(g.dot(step) + 0.5 * step.dot(h * step));
    if (!(predicted > options.function_tolerance * f)) {
      result.termination = Termination::kConverged;
      break;
    }
    trial = x + step;
    // Gradient and Hessian come with the trial value (one pass): most steps are accepted.
    const double f_trial = problem.Evaluate(trial.data(), g_trial.data(), h_trial.data(), weights);
    ++result.evaluations;
    ++result.iterations;
    if (!(f_trial < f)) {
      lambda *= nu;
      nu *= 2;
      continue;
    }
    const double gain = (f - f_trial) / predicted;
    const double decrease = f - f_trial;
    bool small_step = true;
    for (int j = 0; j < q && small_step; ++j) {
      small_step = std::fabs(step[j]) <= options.parameter_tolerance * (1 + std::fabs(x[j]));
    }
    x = trial;
    f = f_trial;
    g = g_trial;
    h = h_trial;
    const double t = 2 * gain - 1;
    lambda *= std::max(1.0 / 3, 1 - t * t * t);
    lambda = std::max(lambda, 1e-15);
    nu = 2;
    if (decrease <= options.function_tolerance * f && small_step) {
      result.termination = Termination::kConverged;
      break;
    }
    if (memo != nullptr) {
      const int basin = memo->Find(x.data(), q);
      if (basin >= 0 && f <= memo->objective[basin] + memo->certify_margin) {
        result.basin = basin;
        result.cut_objective = f;
        result.x = memo->x[basin];
        result.objective = memo->objective[basin];
        result.termination = Termination::kConverged;
        return result;
      }
    }
  }
  result.x.assign(x.data(), x.data() + q);
  result.objective = f;
  return result;
}

}  // namespace mosaic::scaling
