// A damped Newton (Levenberg–Marquardt on the exact Hessian) minimiser fitted to FitProblem:
// a handful of parameters, a few hundred points, analytic gradient and Hessian in one pass, no
// allocation per iteration (Eigen fixed-capacity matrices), and an optional memo of minima already
// found so that a start entering a known basin stops at once (its result is that minimum).
//
// Step: solve (H + λ·D) Δ = −g with D = diag(max(|H_jj|, 1e-9·max|H_kk|)), accept when F
// decreases (λ ← λ/3), otherwise λ ← 8λ (Marquardt 1963; Nocedal & Wright 2006, ch. 10).
// Converged when the accepted step changes F by at most function_tolerance·F and every
// coordinate by at most parameter_tolerance·(1 + |θ|), or when ‖g‖∞ <= gradient_tolerance, or
// when no damped step can decrease F any more (λ above 1e30: a minimum to rounding).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "mosaic/scaling/fit_problem.h"

namespace mosaic::scaling {

// Side of the basin memo's cells in θ coordinates (log-scales and exponents).
inline constexpr double kBasinCellSize = 0.1;

struct SolverOptions {
  int max_iterations = 400;
  double function_tolerance = 1e-13;   // relative change of F
  double parameter_tolerance = 1e-9;   // relative change of θ
  double gradient_tolerance = 1e-15;   // absolute ‖∇F‖∞
  double initial_damping = 1e-4;       // λ at the first step
};

enum class Termination { kConverged, kNoConvergence, kFailure };
std::string_view ToString(Termination t);

struct SolverResult {
  std::vector<double> x;  // free coordinates at the end
  double objective = 0;
  int iterations = 0;
  int evaluations = 0;
  Termination termination = Termination::kFailure;
  int basin = -1;         // index in the memo when cut short, else −1
  // When cut short: F at the iterate where the path stopped. The solver only accepts steps that
  // decrease F, so a full run from there would have ended at or below this value.
  double cut_objective = 0;
};

// Minima found so far and the cells of θ space (a grid of side cell_size, hashed) that solver
// paths crossed on their way to each. A start whose iterate enters a recorded cell is cut short
// and reported as reaching that cell's minimum: starts from a grid funnel into a few valleys, and
// a path that joins an earlier one follows it (the step is a function of the iterate and the
// damping only).
struct BasinMemo {
  double cell_size = kBasinCellSize;
  std::vector<std::vector<double>> x;
  std::vector<double> objective;
  // One cell table per continuation stage (multistart.h): a path is only compared with paths of
  // the same objective.
  std::vector<std::unordered_map<uint64_t, int>> cells;
  int stage = 0;  // the table Minimize consults
  // When finite, a path is only cut short where F <= the cell's minimum + certify_margin, so
  // that the start's own end is certified to lie within that margin of the minimum (or below).
  double certify_margin = INFINITY;

  uint64_t Cell(const double* point, int size) const;
  // Index of the minimum recorded for point's cell in table `stage`, or −1.
  int Find(const double* point, int size) const;
  // Records the cells of `path` (iterates of `size` coordinates, concatenated) in table `at`;
  // nothing for size 0 (every parameter pinned).
  void Add(const std::vector<double>& path, int size, int minimum, int at);
  int AddMinimum(const std::vector<double>& point, double value);
};

// Minimises problem.Evaluate from x0 (free coordinates). `weights` as in FitProblem::Evaluate.
// A non-finite objective at x0 gives kFailure with objective +inf.
// When `path` is not null the accepted iterates are appended to it (for BasinMemo::Add).
SolverResult Minimize(const FitProblem& problem, const double* x0, const SolverOptions& options,
                      const BasinMemo* memo = nullptr, const double* weights = nullptr,
                      std::vector<double>* path = nullptr);

}  // namespace mosaic::scaling
