// A user-written law: the predicted loss L̂ = f(inputs; params) as a muparser expression, e.g.
//   E + A*N^(-alpha) + B*D^(-beta)
// Names in the expression that are data columns (after --column mappings) are inputs; the others
// are parameters, each with a start value or a start grid (--param alpha=0:2:0.5, inclusive),
// fitted by multi-start over the product of the grids. Parameters are fitted as written (no log
// reparametrisation). The objectives are the built-in laws' (objective.h); each start is solved
// with Ceres Solver's Levenberg–Marquardt on one residual per point with central numeric
// derivatives of the expression, the robust loss as a Ceres loss function (HuberLoss(δ), whose
// ½ρ(r²) is objective.h's Huber ρ; squared error as a loss scaled by 2), weights as scaled losses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mosaic/scaling/fit.h"
#include "mosaic/scaling/fit_data.h"
#include "mosaic/scaling/law.h"

namespace mosaic::scaling {

struct ExpressionParam {
  std::string name;
  std::vector<double> starts;  // one value, or the grid lo, lo + step, ..., <= hi
};

// Parses one --param: "E=1.5,A=400,alpha=0:2:0.5" (NAME=VALUE or NAME=LO:HI:STEP, comma
// separated). Throws UsageError quoting the item (malformed, or a parameter given twice).
std::vector<ExpressionParam> ParseExpressionParams(std::string_view text);

struct ExpressionLaw {
  std::string expression;
  std::vector<std::string> inputs;      // columns the expression names, in order of appearance
  std::vector<ExpressionParam> params;  // in --param order; pinned ones may have no starts

  // A Law carrying the names only (no terms): name "expression", formula "L = <expression>",
  // inputs (kRaw: any finite value) and parameters (kLinear), for data selection and printing.
  Law Describe() const;
};

// Resolves the expression against the data's columns and the parameters. Throws UsageError for
// an expression that does not parse (with the position and a caret: a malformed --law-expr) and
// for a flag naming a parameter the expression does not use (--param or --pin, whichever gave
// it); InputError for a name that is neither a column nor a parameter, a name that is both, a
// parameter given twice, or a parameter with neither a start nor a pin (`pinned` names).
ExpressionLaw MakeExpressionLaw(const std::string& expression,
                                const std::vector<ExpressionParam>& params,
                                const std::vector<std::string>& columns,
                                const std::vector<std::string>& pinned);

// Evaluates an ExpressionLaw (one muparser instance: one evaluator per thread).
class ExpressionEvaluator {
 public:
  explicit ExpressionEvaluator(const ExpressionLaw& law);
  ExpressionEvaluator(const ExpressionEvaluator&) = delete;
  ExpressionEvaluator& operator=(const ExpressionEvaluator&) = delete;
  ~ExpressionEvaluator();
  // L̂ at inputs x (law.inputs order) and parameter values (law.params order).
  double operator()(const double* x, const double* params);

 private:
  struct Impl;
  Impl* impl_;
};

// Multi-start fit of the expression (pins from options.pins by name, any value; starts from the
// parameters' grids; options.objective, options.multistart.threads, .solver.max_iterations and
// options.convergence_tolerance apply). FitSummary::theta holds the parameter values as written.
// Points of weight 0 are left out, of the fit and of its counts, as Fit leaves them out.
// Throws InputError for bad input, including a prediction that is not finite (or not positive,
// for residuals of log loss) at some point at every start, and free parameters the points cannot
// tell apart (a singular design: the Jacobian of the predictions by the free parameters, by
// central differences, loses rank both at the best start's first values and at the fit); std::invalid_argument when `data`'s
// inputs are not the law's, in its order.
FitSummary FitExpression(const ExpressionLaw& law, const FitData& data, const FitOptions& options);

}  // namespace mosaic::scaling
