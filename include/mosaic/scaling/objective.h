// The fit objective: a robust loss ρ of the residual r between observed and predicted loss,
// summed with weights over the points:  F(θ) = Σ_i w_i · ρ(r_i(θ)).
//   residual space kLog:    r = log L − log L̂   (Hoffmann et al. 2022, Approach 3)
//   residual space kLinear: r = L − L̂          (ml-scalefit's squared-error fit)
//   kHuber:   ρ(r) = r²/2 for |r| <= δ, δ(|r| − δ/2) otherwise (Huber 1964; scipy.special.huber,
//             and Ceres Solver's HuberLoss, whose ρ(s = r²) is twice this with a ½ in the cost)
//   kSquared: ρ(r) = r²  (so F is the residual sum of squares, RSS)
#pragma once

#include <string>
#include <string_view>

namespace mosaic::scaling {

enum class LossKind { kHuber, kSquared };
enum class ResidualSpace { kLog, kLinear };

std::string_view ToString(LossKind kind);
std::string_view ToString(ResidualSpace space);
// Throw InputError naming the flag and the accepted values.
LossKind LossKindFromString(std::string_view text);
ResidualSpace ResidualSpaceFromString(std::string_view text);

struct Objective {
  LossKind loss = LossKind::kHuber;
  ResidualSpace space = ResidualSpace::kLog;
  double delta = 1e-3;  // Huber threshold, in residual units (nats of log loss for kLog)

  // Throws InputError "--delta = x. Violated constraint: delta > 0" for a bad delta.
  void Validate() const;

  // ρ(r), ρ'(r), ρ''(r) (ρ'' = 0 beyond δ for Huber).
  double Rho(double r) const;
  double RhoFirst(double r) const;
  double RhoSecond(double r) const;

  // "huber(delta=0.001) on log loss" / "squared error on linear loss".
  std::string Describe() const;
};

}  // namespace mosaic::scaling
