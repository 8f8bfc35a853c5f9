#include "mosaic/scaling/fit_problem.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

#include "fast_math.h"
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
  out.lines_are_rows = lines_are_rows;
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

SourceLocation FitData::Where(size_t i) const {
  SourceLocation where;
  where.origin = origin;
  if (i >= line.size()) return where;
  if (lines_are_rows) {
    where.origin = fmt::format("{} row {}", origin, line[i]);
  } else {
    where.line = line[i];
  }
  return where;
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
  // Terms multiplied by a scale pinned to zero (θ = −inf, see PinnedTheta) are left out.
  std::vector<int> kept;
  for (size_t k = 0; k < law.terms.size(); ++k) {
    bool zero = false;
    for (const Factor& f : law.terms[k].factors) {
      if (pinned[f.param] && std::isinf(*pinned[f.param]) && *pinned[f.param] < 0) zero = true;
    }
    if (!zero) kept.push_back(static_cast<int>(k));
  }
  terms_ = static_cast<int>(kept.size());
  const int q = num_free();
  const size_t n = data.size();
  y_.resize(n);
  w_.resize(n);
  offset_.resize(n * terms_);
  // The free coordinates each term depends on, from the law's factors.
  begin_.push_back(0);
  for (int k : kept) {
    const LawTerm& term = law.terms[k];
    for (int j = 0; j < q; ++j) {
      for (const Factor& f : term.factors) {
        if (f.param == free_[j]) {
          uses_.push_back(j);
          break;
        }
      }
    }
    begin_.push_back(static_cast<int>(uses_.size()));
  }
  feature_.resize(uses_.size() * n);
  double x[kMaxLawParams];
  double v[kMaxLawParams * kMaxLawParams];
  for (size_t i = 0; i < n; ++i) {
    const SourceLocation where = data.Where(i);
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
    if (!IsValidFitWeight(weight)) {
      throw FieldError(where, "weight", fmt::format("{}", weight), kFitWeightRule);
    }
    y_[i] = objective.space == ResidualSpace::kLog ? std::log(loss) : loss;
    w_[i] = weight;
    law.Features(x, v);
    for (int k = 0; k < terms_; ++k) {
      const int t = kept[k];
      double u = 0;
      for (int j = 0; j < p; ++j) {
        if (pinned[j] && v[t * p + j] != 0) u += v[t * p + j] * pinned_theta_[j];
      }
      offset_[k * n + i] = u;
      for (int use = begin_[k]; use < begin_[k + 1]; ++use) {
        feature_[use * n + i] = v[t * p + free_[uses_[use]]];
      }
    }
  }
  MarkConstantTerms();
}

void FitProblem::MarkConstantTerms() {
  const size_t n = y_.size();
  constant_.assign(terms_, 1);
  for (int k = 0; k < terms_; ++k) {
    bool same = n > 0;
    for (size_t i = 1; i < n && same; ++i) same = offset_[k * n + i] == offset_[k * n];
    for (int use = begin_[k]; use < begin_[k + 1] && same; ++use) {
      for (size_t i = 1; i < n && same; ++i) same = feature_[use * n + i] == feature_[use * n];
    }
    constant_[k] = same ? 1 : 0;
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

constexpr int kBlock = 64;  // points per block: the scratch arrays stay in L1

// Σ_i a_i·b_i·c_i in four interleaved partial sums (a reduction the compiler vectorises).
inline double Dot3(const double* a, const double* b, const double* c, int m) {
  double acc[4] = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= m; i += 4) {
    for (int l = 0; l < 4; ++l) acc[l] += a[i + l] * b[i + l] * c[i + l];
  }
  for (; i < m; ++i) acc[0] += a[i] * b[i] * c[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

inline double Dot2(const double* a, const double* b, int m) {
  double acc[4] = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= m; i += 4) {
    for (int l = 0; l < 4; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (; i < m; ++i) acc[0] += a[i] * b[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

struct KernelInput {
  size_t n;
  int q;
  int terms;
  const double* y;
  const double* w;
  const double* offset;   // [term][point]
  const int* uses;
  const int* begin;
  const double* feature;  // [use][point]
  const char* constant;   // [term]: the same z at every point
  bool log_space;
  bool huber;
  double delta;
};

// The hot loop: blocks of points, each step a loop over the block's points. Compiled for AVX2
// with FMA where the machine has them (function multi-versioning), else for the baseline.
__attribute__((target_clones("arch=x86-64-v3", "default")))
double EvaluateBlocks(const KernelInput& in, const double* x, double* gradient,
                      double* hessian) {
  const int q = in.q;
  const int terms = in.terms;
  const size_t n = in.n;
  double e[kMaxLawParams][kBlock];   // z, then e^(z − top), then the softmax p
  double gs[kMaxLawParams][kBlock];  // ∇s per free coordinate
  double top[kBlock], sum[kBlock], pred[kBlock], g1[kBlock], outer[kBlock];
  double f = 0;
  for (size_t i0 = 0; i0 < n; i0 += kBlock) {
    const int m = static_cast<int>(std::min<size_t>(kBlock, n - i0));
    const double* y = in.y + i0;
    const double* w = in.w + i0;
    // e^z directly, one exp per point and term; a term that is the same at every point (the
    // floor E) takes one exp per block. A block whose sums leave [1e-300, 1e300] (an exponent
    // under- or overflowing) is redone shifted by its largest term: s = top + log Σ e^(z − top).
    for (int k = 0; k < terms; ++k) {
      double* zk = e[k];
      if (in.constant[k]) {
        double z = in.offset[k * n];
        for (int use = in.begin[k]; use < in.begin[k + 1]; ++use) {
          z += in.feature[use * n] * x[in.uses[use]];
        }
        const double ez = FastExp(z);
        for (int i = 0; i < m; ++i) zk[i] = ez;
        continue;
      }
      const double* uk = in.offset + k * n + i0;
      for (int i = 0; i < m; ++i) zk[i] = uk[i];
      for (int use = in.begin[k]; use < in.begin[k + 1]; ++use) {
        const double xv = x[in.uses[use]];
        const double* fu = in.feature + use * n + i0;
        for (int i = 0; i < m; ++i) zk[i] += fu[i] * xv;
      }
      for (int i = 0; i < m; ++i) zk[i] = FastExp(zk[i]);
    }
    for (int i = 0; i < m; ++i) sum[i] = 0;
    for (int k = 0; k < terms; ++k) {
      for (int i = 0; i < m; ++i) sum[i] += e[k][i];
    }
    int out_of_range = 0;
    for (int i = 0; i < m; ++i) out_of_range += !(sum[i] >= 1e-300 && sum[i] <= 1e300);
    for (int i = 0; i < m; ++i) top[i] = 0;
    if (out_of_range > 0) {
      for (int k = 0; k < terms; ++k) {
        double* zk = e[k];
        const double* uk = in.offset + k * n + i0;
        for (int i = 0; i < m; ++i) zk[i] = uk[i];
        for (int use = in.begin[k]; use < in.begin[k + 1]; ++use) {
          const double xv = x[in.uses[use]];
          const double* fu = in.feature + use * n + i0;
          for (int i = 0; i < m; ++i) zk[i] += fu[i] * xv;
        }
      }
      for (int i = 0; i < m; ++i) top[i] = e[0][i];
      for (int k = 1; k < terms; ++k) {
        for (int i = 0; i < m; ++i) top[i] = e[k][i] > top[i] ? e[k][i] : top[i];
      }
      for (int i = 0; i < m; ++i) sum[i] = 0;
      for (int k = 0; k < terms; ++k) {
        for (int i = 0; i < m; ++i) {
          e[k][i] = FastExp(e[k][i] - top[i]);
          sum[i] += e[k][i];
        }
      }
    }
    const double delta = in.delta;
    const bool log_space = in.log_space;
    // top ← s = log L̂; pred ← c with ∇r = −c·∇s: 1 in log space, e^s in linear space.
    for (int i = 0; i < m; ++i) top[i] += FastLog(sum[i]);
    if (log_space) {
      for (int i = 0; i < m; ++i) {
        pred[i] = 1;
        g1[i] = y[i] - top[i];  // r
      }
    } else {
      for (int i = 0; i < m; ++i) {
        pred[i] = FastExp(top[i]);
        g1[i] = y[i] - pred[i];
      }
    }
    double fb = 0;
    if (in.huber) {
#pragma omp simd reduction(+ : fb)
      for (int i = 0; i < m; ++i) {
        const double r = g1[i];
        const double a = std::fabs(r);
        const bool inside = a <= delta;
        const double rho = inside ? 0.5 * r * r : delta * (a - 0.5 * delta);
        const double rho1 = inside ? r : (r > 0 ? delta : -delta);
        const double rho2 = inside ? 1.0 : 0.0;
        const double c = pred[i];
        fb += w[i] * rho;
        g1[i] = -w[i] * rho1 * c;
        outer[i] = w[i] * rho2 * c * c + (log_space ? w[i] * rho1 : 0.0);
      }
    } else {
#pragma omp simd reduction(+ : fb)
      for (int i = 0; i < m; ++i) {
        const double r = g1[i];
        const double c = pred[i];
        fb += w[i] * r * r;
        g1[i] = -w[i] * 2 * r * c;
        outer[i] = w[i] * 2 * c * c + (log_space ? w[i] * 2 * r : 0.0);
      }
    }
    f += fb;
    if (gradient == nullptr) continue;
    for (int i = 0; i < m; ++i) sum[i] = 1 / sum[i];
    for (int k = 0; k < terms; ++k) {
      for (int i = 0; i < m; ++i) e[k][i] *= sum[i];
    }
    for (int j = 0; j < q; ++j) {
      for (int i = 0; i < m; ++i) gs[j][i] = 0;
    }
    for (int k = 0; k < terms; ++k) {
      for (int use = in.begin[k]; use < in.begin[k + 1]; ++use) {
        double* gj = gs[in.uses[use]];
        const double* fu = in.feature + use * n + i0;
        for (int i = 0; i < m; ++i) gj[i] += e[k][i] * fu[i];
      }
    }
    for (int j = 0; j < q; ++j) {
      gradient[j] += Dot2(g1, gs[j], m);
    }
    if (hessian == nullptr) continue;
    // w ρ'' c² ∇s∇sᵀ − w ρ' c (Σ p v vᵀ − ∇s∇sᵀ [+ ∇s∇sᵀ in linear space]); the last part only
    // over the features each term has.
    for (int a = 0; a < q; ++a) {
      for (int b = 0; b <= a; ++b) {
        hessian[a * q + b] += Dot3(outer, gs[a], gs[b], m);
      }
    }
    for (int k = 0; k < terms; ++k) {
      for (int i = 0; i < m; ++i) pred[i] = g1[i] * e[k][i];
      for (int u = in.begin[k]; u < in.begin[k + 1]; ++u) {
        const double* fu = in.feature + u * n + i0;
        for (int t = in.begin[k]; t <= u; ++t) {
          const double* ft = in.feature + t * n + i0;
          const double acc = Dot3(pred, fu, ft, m);
          const int a = std::max(in.uses[u], in.uses[t]);
          const int b = std::min(in.uses[u], in.uses[t]);
          hessian[a * q + b] += acc;
        }
      }
    }
  }
  return f;
}

}  // namespace

double FitProblem::Evaluate(const double* free, double* gradient, double* hessian,
                            const double* weights) const {
  const int q = num_free();
  if (gradient != nullptr) std::fill(gradient, gradient + q, 0.0);
  if (hessian != nullptr) std::fill(hessian, hessian + q * q, 0.0);
  const KernelInput in{y_.size(),
                       q,
                       terms_,
                       y_.data(),
                       weights != nullptr ? weights : w_.data(),
                       offset_.data(),
                       uses_.data(),
                       begin_.data(),
                       feature_.data(),
                       constant_.data(),
                       objective_.space == ResidualSpace::kLog,
                       objective_.loss == LossKind::kHuber,
                       objective_.delta};
  const double f = EvaluateBlocks(in, free, gradient, hessian);
  if (hessian != nullptr) {
    for (int a = 0; a < q; ++a) {
      for (int b = a + 1; b < q; ++b) hessian[a * q + b] = hessian[b * q + a];
    }
  }
  return std::isfinite(f) ? f : INFINITY;
}

}  // namespace mosaic::scaling
