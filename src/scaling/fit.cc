#include "mosaic/scaling/fit.h"

#include <Eigen/Dense>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cassert>
#include <charconv>
#include <cmath>
#include <set>

#include "location.h"
#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"

namespace mosaic::scaling {

double FitSummary::Value(std::string_view name) const {
  for (const FittedParam& p : params) {
    if (p.name == name) return p.value;
  }
  assert(false && "unknown parameter");
  return NAN;
}

std::pair<std::string, double> ParsePin(std::string_view text) {
  const size_t eq = text.find('=');
  double value = NAN;
  if (eq != std::string_view::npos && eq > 0) {
    std::string_view number = text.substr(eq + 1);
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size()) value = NAN;
  }
  if (std::isnan(value)) {
    throw FieldError(At("--pin"), "--pin", text, "NAME=NUMBER, e.g. E=1.6");
  }
  return {std::string(text.substr(0, eq)), value};
}

std::vector<std::optional<double>> PinnedTheta(
    const Law& law, const std::vector<std::pair<std::string, double>>& pins) {
  std::vector<std::optional<double>> theta(law.params.size());
  std::vector<std::string> names;
  for (const LawParam& p : law.params) names.push_back(p.name);
  for (const auto& [name, value] : pins) {
    const int j = law.ParamIndex(name);
    if (j < 0) {
      throw InputError(fmt::format("--pin {}={}: law {} has no parameter '{}'{}; parameters: {}",
                                   name, value, law.name, name, DidYouMean(name, names),
                                   fmt::join(names, ", ")));
    }
    theta[j] = law.ToTheta(j, value);
  }
  return theta;
}

namespace {

// Throws InputError when the data cannot identify the free parameters: an input that a free
// parameter multiplies takes a single value, or the stacked term features are rank deficient.
void CheckDesign(const Law& law, const FitData& data, const std::vector<std::optional<double>>&
                                                           pinned) {
  const int p = static_cast<int>(law.params.size());
  std::vector<int> free;
  for (int j = 0; j < p; ++j) {
    if (!pinned[j]) free.push_back(j);
  }
  const int q = static_cast<int>(free.size());
  if (static_cast<int>(data.size()) < q) {
    throw FieldError(At(data.origin), "points", fmt::format("{}", data.size()),
                     fmt::format("points >= free parameters of law {} ({})", law.name, q));
  }
  for (size_t i = 0; i < law.inputs.size(); ++i) {
    const std::set<double> distinct(data.inputs[i].begin(), data.inputs[i].end());
    if (distinct.size() > 1) continue;
    for (const LawTerm& term : law.terms) {
      for (const Factor& f : term.factors) {
        const bool uses = std::find(f.inputs.begin(), f.inputs.end(), static_cast<int>(i)) !=
                          f.inputs.end();
        if (uses && !pinned[f.param]) {
          throw InputError(fmt::format(
              "{}: singular design: every point has {} = {}. Violated constraint: at least 2 "
              "distinct values of {} to fit {} (or pin it with --pin {}=VALUE)",
              data.origin, law.inputs[i].name, *distinct.begin(), law.inputs[i].name,
              law.params[f.param].name, law.params[f.param].name));
        }
      }
    }
  }
  const int k = static_cast<int>(law.terms.size());
  Eigen::MatrixXd design(data.size() * k, q);
  std::vector<double> x(law.inputs.size());
  std::vector<double> v(k * p);
  for (size_t i = 0; i < data.size(); ++i) {
    data.Point(i, x.data());
    law.Features(x.data(), v.data());
    for (int t = 0; t < k; ++t) {
      for (int j = 0; j < q; ++j) design(i * k + t, j) = v[t * p + free[j]];
    }
  }
  for (int j = 0; j < q; ++j) {
    const double norm = design.col(j).norm();
    if (norm > 0) design.col(j) /= norm;
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(design);
  qr.setThreshold(1e-10);
  if (qr.rank() < q) {
    std::vector<std::string> names;
    for (int j : free) names.push_back(law.params[j].name);
    throw InputError(fmt::format(
        "{}: singular design: the {} points cannot separate the free parameters {} of law {} "
        "(rank {} < {}); add points that vary the inputs independently or pin a parameter",
        data.origin, data.size(), fmt::join(names, ", "), law.name, qr.rank(), q));
  }
}

}  // namespace

FitSummary Fit(const Law& law, const FitData& data, const FitOptions& options) {
  options.objective.Validate();
  const std::vector<std::optional<double>> pinned = PinnedTheta(law, options.pins);
  CheckDesign(law, data, pinned);
  const FitProblem problem(law, data, options.objective, pinned);
  const StartGrid grid = options.grid ? *options.grid : DefaultGrid(problem);
  const MultiStartResult run = RunMultiStart(problem, grid, options.multistart);

  FitSummary s;
  s.points = static_cast<int>(data.size());
  s.runs = data.num_runs();
  s.starts = static_cast<int>(run.starts.size());
  s.iterations = run.total_iterations;
  s.objective = run.best.objective;
  for (const StartOutcome& o : run.starts) {
    if (o.cut_short) ++s.cut_short_starts;
    if (o.termination == Termination::kFailure) ++s.failed_starts;
    if (o.certified_objective <= s.objective + options.convergence_tolerance) {
      ++s.converged_starts;
    }
    if (o.objective <= s.objective + options.convergence_tolerance) ++s.inferred_starts;
  }
  s.theta.assign(law.params.size(), 0);
  if (std::isfinite(run.best.objective)) problem.Expand(run.best.x.data(), s.theta.data());
  for (size_t j = 0; j < law.params.size(); ++j) {
    s.params.push_back({law.params[j].name, law.ToValue(static_cast<int>(j), s.theta[j]),
                        pinned[j].has_value()});
  }
  s.termination = run.best.termination;
  switch (s.termination) {
    case Termination::kConverged:
      s.message = fmt::format(
          "converged: {} of {} starts certified to reach the best objective within {} ({} with "
          "starts cut short in an early stage credited with their basin's minimum)",
          s.converged_starts, s.starts, options.convergence_tolerance, s.inferred_starts);
      break;
    case Termination::kNoConvergence:
      s.message = fmt::format(
          "no convergence: the best start stopped after {} iterations without meeting the "
          "tolerances; {} of {} starts reached its objective",
          run.best.iterations, s.converged_starts, s.starts);
      break;
    case Termination::kFailure:
      s.message = fmt::format("failure: the objective was not finite at any of the {} starts",
                              s.starts);
      break;
  }
  FitRecipe& r = s.recipe;
  r.law = law.name;
  r.formula = law.formula;
  r.citation = law.citation;
  r.data = data.origin;
  r.subset_rule = options.subset_rule;
  r.objective = options.objective.Describe();
  r.loss = ToString(options.objective.loss);
  r.space = ToString(options.objective.space);
  r.delta = options.objective.delta;
  r.grid = grid.Describe(problem);
  r.pins = options.pins;
  const SolverOptions& so = options.multistart.solver;
  r.solver = fmt::format(
      "damped Newton (exact Hessian), function_tolerance {}, parameter_tolerance {}, "
      "max_iterations {}, basin cell {}{}",
      so.function_tolerance, so.parameter_tolerance, so.max_iterations, kBasinCellSize,
      options.multistart.cut_short
          ? fmt::format(" (final-stage cut-off within {} of a known minimum; converged_starts "
                        "counts only starts run to the end or cut off there)",
                        options.multistart.certify_margin)
          : " (basin cut-off off: every start run to the end)");
  return s;
}

}  // namespace mosaic::scaling
