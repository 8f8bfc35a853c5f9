// A law, its data and an objective, ready for the solver: F(θ_free) = Σ_i w_i ρ(r_i) with the
// pinned parameters folded into per-term offsets. With z_ik = u_ik + v_ik·θ (term k at point i)
//   s_i = log L̂_i = LSE_k z_ik,  ∇s_i = Σ_k p_ik v_ik,  ∇²s_i = Σ_k p_ik v_ik v_ikᵀ − ∇s_i ∇s_iᵀ
// with p_ik = softmax_k z_ik, and for the residual r_i (objective.h):
//   log space:    r = y − s,    ∇r = −∇s,      ∇²r = −∇²s
//   linear space: r = y − e^s,  ∇r = −e^s ∇s,  ∇²r = −e^s (∇²s + ∇s ∇sᵀ)
//   ∇F = Σ w ρ'(r) ∇r,  ∇²F = Σ w (ρ''(r) ∇r ∇rᵀ + ρ'(r) ∇²r)   (exact Newton Hessian)
// Evaluate allocates nothing: the features are laid out once at construction, by term and by the
// free coordinates each term depends on (its nonzero features), contiguous over points, so that
// the kernel runs over blocks of points in loops the compiler vectorises (with an exp and a log
// of its own, fast_math.h, accurate to a few units in the last place).
#pragma once

#include <optional>
#include <vector>

#include "mosaic/scaling/fit_data.h"
#include "mosaic/scaling/law.h"
#include "mosaic/scaling/objective.h"

namespace mosaic::scaling {

class FitProblem {
 public:
  // pinned[j] holds θ_j for a pinned parameter (θ space: log for scales), nullopt when free.
  // Throws InputError naming file, line, column and rule for an invalid input value or loss.
  FitProblem(const Law& law, const FitData& data, const Objective& objective,
             const std::vector<std::optional<double>>& pinned);

  const Law& law() const { return *law_; }
  const Objective& objective() const { return objective_; }
  int num_free() const { return static_cast<int>(free_.size()); }
  int num_points() const { return static_cast<int>(y_.size()); }
  // Index in law().params of free coordinate j.
  int free_param(int j) const { return free_[j]; }

  // Full θ (law().params.size()) from the free coordinates.
  void Expand(const double* free, double* theta) const;
  // Free coordinates of a full θ.
  void Restrict(const double* theta, double* free) const;

  // F at `free`; also ∇F into gradient (num_free) and ∇²F into hessian (num_free², row-major)
  // when they are not null. Weights default to the data's; `weights` (num_points) overrides
  // them, e.g. with bootstrap multiplicities. Returns +inf when F is not finite.
  double Evaluate(const double* free, double* gradient, double* hessian,
                  const double* weights = nullptr) const;

  const std::vector<double>& weights() const { return w_; }

  // The same law, data and pins under another objective of the same residual space.
  FitProblem WithObjective(const Objective& objective) const;

 private:
  const Law* law_;
  Objective objective_;
  std::vector<int> free_;
  std::vector<double> pinned_theta_;  // full θ with pinned values (free entries unused)
  int terms_ = 0;
  std::vector<double> y_;        // log L or L by residual space
  std::vector<double> w_;
  std::vector<double> offset_;   // [term][point]: pinned part of z
  std::vector<int> uses_;        // free coordinates term k depends on: uses_[begin_[k], begin_[k+1])
  std::vector<int> begin_;
  std::vector<double> feature_;  // [use][point]: feature of free coordinate uses_[use]
  std::vector<char> constant_;   // [term]: offset and features the same at every point

  void MarkConstantTerms();
};

}  // namespace mosaic::scaling
