// Using a fitted law: loss predictions at given inputs (with bootstrap percentile intervals),
// the compute-optimal frontier, held-out validation, and the comparison of two arms.
//
// Compute-optimal allocation (Hoffmann et al. 2022, eq. 4) for L = E + A/N^α + B/D^β under the
// budget C = k·N·D (k = 6 for the 6ND convention; "forward × 3" and counted-FLOP conventions
// enter as their own k per parameter-token):
//   N*(C) = G·(C/k)^(β/(α+β)),  D*(C) = (C/k)/N*(C),  G = (αA/(βB))^(1/(α+β)).
// Effective-compute multiplier of an arm against a base arm at budget C (Marin's "equal-TPS
// speedup"): the compute C' at which the base reaches the arm's loss, divided by C; for the
// compute law L = E + A·C^(−α) of the base, C'/C = ((L_base(C) − E)/(L − E))^(1/α). Multiplied by
// the arm's tokens/s over the base's it becomes the wall-clock multiplier.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mosaic/scaling/bootstrap.h"
#include "mosaic/scaling/fit.h"

namespace mosaic::scaling {

// Named input values, e.g. {{"N", 70e9}, {"D", 1.4e12}} or {{"C", 1e24}}.
using InputPoint = std::vector<std::pair<std::string, double>>;

// Parses "N=70e9,D=1.4e12" (for --predict); throws UsageError quoting the text (a malformed item
// or an input given twice).
InputPoint ParseInputPoint(std::string_view text);

// Raw inputs of `law` for `point`. For a law with inputs N and D (and not C), a point giving C
// resolves the missing one of N, D from C, or, for the chinchilla law, both by compute-optimal
// allocation under C = k·N·D. Throws InputError, opening with `caller` (the flag or function
// asked), for a missing or unknown input, an input outside its law's range, a C that is not
// positive and finite, C given with both N and D, or C alone for another law.
std::vector<double> ResolveInputs(const Law& law, const std::vector<double>& theta,
                                  const InputPoint& point, double flops_per_param_token,
                                  std::string_view caller = "--predict");

struct Prediction {
  InputPoint point;               // as asked
  std::vector<double> inputs;     // resolved raw inputs (law order)
  double loss = 0;
  std::optional<Interval> interval;  // from the bootstrap when there is one
};

// The loss `fit` predicts at `point` (inputs resolved by ResolveInputs), with the bootstrap's
// percentile interval when `bootstrap` has resamples (a point given by C is re-allocated per
// resample, so the interval covers the allocation too). Errors as ResolveInputs.
Prediction Predict(const Law& law, const FitSummary& fit, const BootstrapResult* bootstrap,
                   const InputPoint& point, double flops_per_param_token = 6,
                   std::string_view caller = "--predict");

struct FrontierPoint {
  double compute_flops = 0;
  double params = 0;
  double tokens = 0;
  double loss = 0;
};

// Whether `law` has a closed-form compute-optimal frontier (ComputeOptimal): the chinchilla law,
// whose inputs N and D trade off at fixed C = k·N·D (Hoffmann et al. 2022, eq. 4).
bool HasComputeOptimalFrontier(const Law& law);

// The compute-optimal N*, D* and loss at `compute_flops` for a law with inputs N and D. Throws
// InputError for a law without one (HasComputeOptimalFrontier).
FrontierPoint ComputeOptimal(const Law& law, const std::vector<double>& theta,
                             double compute_flops, double flops_per_param_token = 6);

// The loss a law predicts at budget C: the compute law directly, a law in N and D at its
// compute-optimal allocation. Throws InputError for other laws.
double LossAtCompute(const Law& law, const std::vector<double>& theta, double compute_flops,
                     double flops_per_param_token = 6);

// The budget C at which `theta` reaches `loss` (bisection in log C over [1e-10, 1e60], to a
// relative 1e-13; the loss falls with C): INFINITY when the law never gets that low, 0 when it is
// below `loss` everywhere. Throws InputError for laws LossAtCompute refuses.
double ComputeForLoss(const Law& law, const std::vector<double>& theta, double loss,
                      double flops_per_param_token = 6);

struct Comparison {
  double compute_flops = 0;
  double base_loss = 0;
  double arm_loss = 0;
  double multiplier = 0;            // effective-compute multiplier C'/C
  double wall_clock_multiplier = 0; // multiplier × tokens/s ratio
  // How `multiplier` was computed, for reports: the closed form for the compute law, the budget
  // at which the base's compute-optimal loss reaches the arm's for laws in N and D.
  std::string definition;
  // Why `multiplier` is undefined (infinite: the arm's loss at C is at or below the lowest loss
  // the base's fit reaches, so no budget of the base matches it); empty when it is finite.
  std::string undefined_reason;
  std::optional<Interval> multiplier_interval;
  std::optional<Interval> wall_clock_interval;
};

// Compares `arm` against `base` at `compute_flops`. The bootstraps, when both are given, are
// combined resample by resample for the intervals, matched by resample index (a resample either
// dropped is left out). Drawn independently (each arm with its own seed stream, StreamSeed), the
// match is a random pairing; drawn over the same run keys with the same seed
// (BootstrapOptions::run_keys), each pair resamples the same runs of both arms, a paired
// bootstrap that keeps what the arms' losses share at each run.
Comparison CompareArms(const Law& law, const FitSummary& base, const FitSummary& arm,
                       double compute_flops, double tokens_per_s_ratio,
                       const BootstrapResult* base_bootstrap, const BootstrapResult* arm_bootstrap,
                       double confidence, double flops_per_param_token = 6);

// Held-out validation: fit on the points below the largest budget, predict the largest.
struct HoldoutResult {
  double threshold_flops = 0;  // points with compute >= this are held out
  int train_points = 0;
  int held_out_points = 0;
  FitSummary fit;
  double mean_abs_error = 0;     // of the loss, nats
  double mean_rel_error = 0;     // |L̂ − L| / L
  double rms_log_error = 0;      // of log L
};

// The compute of each point: column C when the law has it, else k·N·D.
std::vector<double> PointCompute(const Law& law, const FitData& data,
                                 double flops_per_param_token = 6);

// Which points are held out, by compute (one rule applies, in this order of precedence):
//   above_flops  the points with compute >= above_flops (--holdout-above C)
//   fraction     the largest-compute fraction of the points: the ceil(fraction·n)-th largest
//                compute is the threshold, and every point at or above it is held out, so ties
//                at the threshold stay together (--holdout-fraction F, 0 < F < 1)
//   budget_ratio the points within this factor of the largest compute (--holdout-ratio R, the
//                default 1.5: the largest budget of an isoFLOP design; with continuous compute
//                this may be a single point)
struct HoldoutSelection {
  double budget_ratio = 1.5;
  double fraction = 0;     // used when > 0
  double above_flops = 0;  // used when > 0
  // "compute >= 3.2e+21 (the 20% of points with the largest compute)"
  std::string Describe(double threshold_flops) const;
};

// Holds out the points `selection` picks, fits the rest with `options` and reports the errors.
// Throws UsageError for a fraction outside (0, 1) or a ratio below 1; InputError when nothing
// would be held out or nothing would be left to fit.
HoldoutResult Holdout(const Law& law, const FitData& data, const FitOptions& options,
                      const HoldoutSelection& selection, double flops_per_param_token = 6);
HoldoutResult Holdout(const Law& law, const FitData& data, const FitOptions& options,
                      double budget_ratio = 1.5, double flops_per_param_token = 6);

}  // namespace mosaic::scaling
