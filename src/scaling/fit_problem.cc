#include "mosaic/scaling/fit_problem.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>

#include "location.h"
#include "mosaic/util/error.h"

namespace mosaic::scaling {

void FitData::Point(size_t i, double* x) const {
  for (size_t j = 0; j < inputs.size(); ++j) x[j] = inputs[j][i];
}

FitData FitData::Subset(const std::vector<size_t>& indices) const {
  FitData out;
  out.origin = origin;
  out.input_names = input_names;
  out.inputs.resize(inputs.size());
  std::vector<int> renumber(run_names.size(), -1);
  for (size_t i : indices) {
    for (size_t j = 0; j < inputs.size(); ++j) out.inputs[j].push_back(inputs[j][i]);
    out.loss.push_back(loss[i]);
    out.weight.push_back(weight[i]);
    out.line.push_back(line.empty() ? 0 : line[i]);
    int& r = renumber[run[i]];
    if (r < 0) {
      r = static_cast<int>(out.run_names.size());
      out.run_names.push_back(run_names[run[i]]);
    }
    out.run.push_back(r);
  }
  return out;
}

FitProblem::FitProblem(const Law& law, const FitData& data, const Objective& objective,
                       const std::vector<std::optional<double>>& pinned)
    : law_(&law), objective_(objective) {
  const int p = static_cast<int>(law.params.size());
  assert(static_cast<int>(pinned.size()) == p);
  assert(data.inputs.size() == law.inputs.size());
  pinned_theta_.assign(p, 0);
  for (int j = 0; j < p; ++j) {
    if (pinned[j]) {
      pinned_theta_[j] = *pinned[j];
    } else {
      free_.push_back(j);
    }
  }
  terms_ = static_cast<int>(law.terms.size());
  const int q = num_free();
  const size_t n = data.size();
  y_.resize(n);
  w_.resize(n);
  offset_.resize(n * terms_);
  v_.resize(n * terms_ * q);
  double x[kMaxLawParams];
  double v[kMaxLawParams * kMaxLawParams];
  for (size_t i = 0; i < n; ++i) {
    const SourceLocation where = At(data.origin, i < data.line.size() ? data.line[i] : 0);
    for (size_t j = 0; j < law.inputs.size(); ++j) {
      x[j] = data.inputs[j][i];
      std::string rule = law.ValidateInput(static_cast<int>(j), x[j]);
      if (!rule.empty()) throw FieldError(where, law.inputs[j].name, fmt::format("{}", x[j]), rule);
    }
    const double loss = data.loss[i];
    if (!(std::isfinite(loss) && loss > 0)) {
      throw FieldError(where, "loss", fmt::format("{}", loss), "loss > 0 and finite");
    }
    const double weight = data.weight.empty() ? 1.0 : data.weight[i];
    if (!(std::isfinite(weight) && weight >= 0)) {
      throw FieldError(where, "weight", fmt::format("{}", weight), "weight >= 0 and finite");
    }
    y_[i] = objective.space == ResidualSpace::kLog ? std::log(loss) : loss;
    w_[i] = weight;
    law.Features(x, v);
    for (int k = 0; k < terms_; ++k) {
      double u = 0;
      for (int j = 0; j < p; ++j) {
        if (pinned[j]) u += v[k * p + j] * pinned_theta_[j];
      }
      offset_[i * terms_ + k] = u;
      for (int j = 0; j < q; ++j) v_[(i * terms_ + k) * q + j] = v[k * p + free_[j]];
    }
  }
}

FitProblem FitProblem::WithObjective(const Objective& objective) const {
  FitProblem copy = *this;
  copy.objective_ = objective;
  return copy;
}

void FitProblem::Expand(const double* free, double* theta) const {
  for (size_t j = 0; j < pinned_theta_.size(); ++j) theta[j] = pinned_theta_[j];
  for (size_t j = 0; j < free_.size(); ++j) theta[free_[j]] = free[j];
}

void FitProblem::Restrict(const double* theta, double* free) const {
  for (size_t j = 0; j < free_.size(); ++j) free[j] = theta[free_[j]];
}

namespace {

// The hot loop, with the number of free parameters and terms as template arguments where they
// are small so that the compiler unrolls the inner products (Q = 0 / K = 0: run-time sizes).
template <int Q, int K>
double EvaluateKernel(int q_runtime, int k_runtime, size_t n, const double* y, const double* w,
                      const double* offset, const double* v, const Objective& objective,
                      const double* x, double* gradient, double* hessian) {
  const int q = Q > 0 ? Q : q_runtime;
  const int terms = K > 0 ? K : k_runtime;
  const bool want_gradient = gradient != nullptr;
  const bool want_hessian = hessian != nullptr;
  const bool log_space = objective.space == ResidualSpace::kLog;
  const bool huber = objective.loss == LossKind::kHuber;
  const double delta = objective.delta;
  if (want_gradient) std::fill(gradient, gradient + q, 0.0);
  if (want_hessian) std::fill(hessian, hessian + q * q, 0.0);
  double f = 0;
  double z[kMaxLawParams];
  double p[kMaxLawParams];
  double gs[kMaxLawParams];
  for (size_t i = 0; i < n; ++i) {
    const double wi = w[i];
    if (wi == 0) continue;
    const double* vi = v + i * terms * q;
    double top = -INFINITY;
    for (int k = 0; k < terms; ++k) {
      double zk = offset[i * terms + k];
      const double* vk = vi + k * q;
      for (int j = 0; j < q; ++j) zk += vk[j] * x[j];
      z[k] = zk;
      top = zk > top ? zk : top;
    }
    double sum = 0;
    for (int k = 0; k < terms; ++k) {
      p[k] = std::exp(z[k] - top);
      sum += p[k];
    }
    const double s = top + std::log(sum);
    double r;
    double prediction = 0;
    if (log_space) {
      r = y[i] - s;
    } else {
      prediction = std::exp(s);
      r = y[i] - prediction;
    }
    double rho, rho1, rho2;
    if (huber) {
      const double a = std::fabs(r);
      if (a <= delta) {
        rho = 0.5 * r * r;
        rho1 = r;
        rho2 = 1;
      } else {
        rho = delta * (a - 0.5 * delta);
        rho1 = r > 0 ? delta : -delta;
        rho2 = 0;
      }
    } else {
      rho = r * r;
      rho1 = 2 * r;
      rho2 = 2;
    }
    f += wi * rho;
    if (!want_gradient) continue;
    const double inv = 1 / sum;
    for (int j = 0; j < q; ++j) gs[j] = 0;
    for (int k = 0; k < terms; ++k) {
      p[k] *= inv;
      const double* vk = vi + k * q;
      for (int j = 0; j < q; ++j) gs[j] += p[k] * vk[j];
    }
    // ∇r = −c·∇s with c = 1 (log) or e^s (linear).
    const double c = log_space ? 1.0 : prediction;
    const double gscale = -wi * rho1 * c;
    for (int j = 0; j < q; ++j) gradient[j] += gscale * gs[j];
    if (!want_hessian) continue;
    // w ρ'' c² ∇s∇sᵀ − w ρ' c (Σ p v vᵀ − ∇s∇sᵀ [+ ∇s∇sᵀ in linear space])
    const double outer = wi * rho2 * c * c + (log_space ? wi * rho1 : 0.0);
    const double curv = -wi * rho1 * c;
    for (int a = 0; a < q; ++a) {
      for (int b = 0; b <= a; ++b) hessian[a * q + b] += outer * gs[a] * gs[b];
    }
    if (curv != 0) {
      for (int k = 0; k < terms; ++k) {
        const double* vk = vi + k * q;
        const double scale = curv * p[k];
        for (int a = 0; a < q; ++a) {
          const double va = scale * vk[a];
          for (int b = 0; b <= a; ++b) hessian[a * q + b] += va * vk[b];
        }
      }
    }
  }
  if (want_hessian) {
    for (int a = 0; a < q; ++a) {
      for (int b = a + 1; b < q; ++b) hessian[a * q + b] = hessian[b * q + a];
    }
  }
  return std::isfinite(f) ? f : INFINITY;
}

}  // namespace

double FitProblem::Evaluate(const double* free, double* gradient, double* hessian,
                            const double* weights) const {
  const double* w = weights != nullptr ? weights : w_.data();
  const int q = num_free();
  const size_t n = y_.size();
#define MOSAIC_KERNEL(Q, K) \
  EvaluateKernel<Q, K>(q, terms_, n, y_.data(), w, offset_.data(), v_.data(), objective_, free, \
                       gradient, hessian)
  if (q == 5 && terms_ == 3) return MOSAIC_KERNEL(5, 3);
  if (q == 3 && terms_ == 3) return MOSAIC_KERNEL(3, 3);
  if (q == 3 && terms_ == 2) return MOSAIC_KERNEL(3, 2);
  if (q == 6 && terms_ == 3) return MOSAIC_KERNEL(6, 3);
  return MOSAIC_KERNEL(0, 0);
#undef MOSAIC_KERNEL
}

}  // namespace mosaic::scaling
