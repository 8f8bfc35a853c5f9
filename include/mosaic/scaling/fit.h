// Fitting a law to data and the summary that comes back (in the manner of Ceres Solver's
// Solver::Summary): the objective, the parameters named as in the paper, how many starts reached
// the best objective, and the exact recipe (data subset rule, objective, δ, start grid, pins,
// solver tolerances) so that the fit can be reproduced. Not converging is an outcome recorded in
// the summary (termination and message), never an exception; bad input throws InputError.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mosaic/scaling/fit_data.h"
#include "mosaic/scaling/law.h"
#include "mosaic/scaling/multistart.h"
#include "mosaic/scaling/objective.h"

namespace mosaic::scaling {

struct FitOptions {
  Objective objective;  // default: Huber δ = 1e-3 on log loss (Approach 3)
  // Pinned parameters by paper name, in value space (E = 1.6, alpha = 0.0941).
  std::vector<std::pair<std::string, double>> pins;
  std::optional<StartGrid> grid;  // default: the law's grid over the free parameters
  MultiStartOptions multistart;
  std::string subset_rule = "all rows";  // recorded in the recipe
  // A start counts as reaching the best objective when within this absolute distance of it.
  double convergence_tolerance = 1e-6;
};

struct FittedParam {
  std::string name;
  double value = 0;
  bool pinned = false;
};

struct FitRecipe {
  std::string law;
  std::string formula;
  std::string citation;
  std::string data;         // origin of the data
  std::string subset_rule;
  std::string objective;    // Objective::Describe()
  std::string loss;         // "huber" | "squared"
  std::string space;        // "log" | "linear"
  double delta = 0;
  std::string grid;         // StartGrid::Describe()
  std::vector<std::pair<std::string, double>> pins;
  std::string solver;       // solver and its tolerances
};

// The relative change of every prediction under which a halved scale parameter counts as
// negligible (FitSummary::negligible_params).
inline constexpr double kNegligibleTermShare = 1e-6;

// The objective at or below which a fit with as many free parameters as points passes through
// every point (its residuals are rounding: Huber or squared, a log-loss residual of 1e-6 gives
// 5e-13 per point).
inline constexpr double kExactFitObjective = 1e-10;

struct FitSummary {
  Termination termination = Termination::kFailure;
  std::string message;
  double objective = 0;
  std::vector<double> theta;  // full θ (law order; log of scales)
  std::vector<FittedParam> params;
  int points = 0;
  int runs = 0;
  int starts = 0;
  // Starts certified to end within convergence_tolerance of the best objective: run to the end,
  // or cut off in the final stage where their objective was already that close (multistart.h).
  int converged_starts = 0;
  // Also counting starts cut short in an earlier stage, credited with their basin's minimum
  // (inferred from the memo, not certified).
  int inferred_starts = 0;
  int cut_short_starts = 0;  // stopped on entering a known basin
  int failed_starts = 0;     // non-finite objective at the start
  long iterations = 0;       // over all starts
  FitRecipe recipe;
  // What makes the fit weak, one sentence each: as many free parameters as points (the law then
  // passes through every point and nothing checks it), or an exponent fitted with the opposite
  // sign of the law's start grid (loss that grows with scale). Empty when none.
  std::vector<std::string> cautions;
  // Free scale parameters whose term the fit drove to nothing (halving one moves no prediction
  // by kNegligibleTermShare): the fitted law has lost that term. Each is also in `cautions`.
  std::vector<std::string> negligible_params;

  // The fitted value of parameter `name` (paper name); asserts it exists.
  double Value(std::string_view name) const;
  // The caution on negligible parameter `name` (one of negligible_params), as `cautions` has it:
  // "B = 1: halving it moves no prediction by 1e-06 of itself, ...".
  std::string NegligibleCaution(std::string_view name) const;
  bool ok() const { return termination == Termination::kConverged; }
};

// Validates the data against the law (at least as many points as free parameters; every free
// parameter identifiable, e.g. two distinct N to fit alpha) and the options, then runs the
// multi-start fit. Throws InputError for bad input.
FitSummary Fit(const Law& law, const FitData& data, const FitOptions& options);

// Throws InputError when `data` (every point counted, whatever its weight) cannot identify the
// free parameters (nullopt in `pinned`) of `law`: fewer points than free parameters, an input
// that a free parameter multiplies taking one value, a term whose inputs take fewer distinct
// values than it and a free floor have free parameters of their own (k values give their
// Jacobian columns rank <= k), collinear inputs, rank-deficient term features, or a loss at or
// below the pinned floor. Fit runs it on the points of weight > 0; Bootstrap on each resample's
// distinct points.
void CheckDesign(const Law& law, const FitData& data,
                 const std::vector<std::optional<double>>& pinned);

// Pins by name → θ per law parameter (nullopt for free ones). Throws UsageError (a --pin the law
// cannot take) with a did-you-mean for an unknown name; InputError for a value against the law's
// form (a falling term's exponent < 0, or 0 where it is the term's only input factor; a scale
// below 0, or of 0 where dropping its term is not possible), located at `pin_where[i]` for pin i
// when given (a study's [fit] pin values), else at the flag --pin.
std::vector<std::optional<double>> PinnedTheta(
    const Law& law, const std::vector<std::pair<std::string, double>>& pins,
    const std::vector<SourceLocation>& pin_where = {});

// The loss a law cannot reach with `pins`: the sum of its terms that have no input and only
// pinned parameters (E pinned in L = E + A/C^alpha), and those parameters' names; value 0 when
// there is none. Every term of a law is positive, so a loss at or below it has no fit (Fit
// refuses such a point). Throws as PinnedTheta does.
struct LawFloor {
  double value = 0;
  std::vector<std::string> params;
};
LawFloor PinnedFloor(const Law& law, const std::vector<std::pair<std::string, double>>& pins);

// Cautions on values far from every other of their column, as a slipped exponent would be: the
// largest loss more than 4× the next largest (or the smallest under a quarter of the next), an
// input's more than 100× (one study's losses stay within a few ×; a ladder's inputs step by far
// less than 100×). Each names the point's file and line, the value and its neighbour; none
// with fewer than 3 points. Fit and the expression-law fit add them to their cautions.
std::vector<std::string> OutlyingValueCautions(const FitData& data);

// `message` (an error about the points a fit was given) followed by the rule that selected them,
// "(the points are those left by: RULE)", so that a filter that left too few points or a singular
// design is named; `message` alone when the rule is "all rows" or empty.
std::string WithSubsetRule(std::string_view message, std::string_view subset_rule);

// Parses "NAME=VALUE" (for --pin); throws InputError quoting the text.
std::pair<std::string, double> ParsePin(std::string_view text);

}  // namespace mosaic::scaling
