#include "mosaic/scaling/expression_law.h"

#include <Eigen/QR>
#include <ceres/ceres.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <muParser.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "location.h"
#include "mosaic/scaling/data_table.h"
#include "mosaic/util/error.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/parallel_for.h"
#include "mosaic/util/spellcheck.h"

namespace mosaic::scaling {
namespace {

double ParseDouble(std::string_view s, bool* ok) {
  const std::optional<double> value = ParseDecimal(s);
  *ok = value && std::isfinite(*value);
  return value.value_or(NAN);
}

struct NameRecorder {
  std::vector<std::string> names;
  std::vector<double> slots = std::vector<double>(64);
};

double* RecordName(const char* name, void* user) {
  auto* r = static_cast<NameRecorder*>(user);
  r->names.emplace_back(name);
  return &r->slots[std::min<size_t>(r->names.size(), r->slots.size()) - 1];
}

}  // namespace

std::vector<ExpressionParam> ParseExpressionParams(std::string_view text) {
  std::vector<ExpressionParam> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = TrimSpaces(text.substr(pos, comma - pos));
    pos = comma + 1;
    const size_t eq = item.find('=');
    auto bad = [&](const std::string& rule) {
      return FlagError("--param", item, rule);
    };
    if (item.empty()) {
      throw FlagError("--param", text,
                      "no empty item (a ',' at the start or the end, or two in a row)");
    }
    if (eq == std::string_view::npos || eq == 0) {
      throw bad("NAME=START or NAME=LO:HI:STEP, e.g. E=1.5 or alpha=0:2:0.5");
    }
    ExpressionParam p{std::string(TrimSpaces(item.substr(0, eq))), {}};
    const std::string_view value = TrimSpaces(item.substr(eq + 1));
    bool ok = false;
    if (value.find(':') == std::string_view::npos) {
      p.starts.push_back(ParseDouble(value, &ok));
      if (!ok) throw bad("NAME=START with a finite number");
    } else {
      const size_t c1 = value.find(':'), c2 = value.find(':', c1 + 1);
      if (c2 == std::string_view::npos) throw bad("NAME=LO:HI:STEP, e.g. alpha=0:2:0.5");
      bool ok1 = false, ok2 = false, ok3 = false;
      const double lo = ParseDouble(value.substr(0, c1), &ok1);
      const double hi = ParseDouble(value.substr(c1 + 1, c2 - c1 - 1), &ok2);
      const double step = ParseDouble(value.substr(c2 + 1), &ok3);
      if (!(ok1 && ok2 && ok3) || !(step > 0) || !(hi >= lo) || (hi - lo) / step > 1000) {
        throw bad("LO:HI:STEP with LO <= HI, STEP > 0 and at most 1000 steps");
      }
      // The grid's points by their count: a STEP below LO's resolution (1e300:1e300:1e-300)
      // would never move LO past HI.
      const int count = static_cast<int>(std::floor((hi - lo) / step + 1e-9)) + 1;
      for (int i = 0; i < count; ++i) p.starts.push_back(lo + i * step);
    }
    out.push_back(std::move(p));
  }
  return out;
}

Law ExpressionLaw::Describe() const {
  Law law;
  law.name = "expression";
  law.formula = "L = " + expression;
  law.citation = "user-written expression (--law-expr)";
  for (const std::string& in : inputs) law.inputs.push_back({in, InputTransform::kRaw, "column"});
  for (const ExpressionParam& p : params) {
    law.params.push_back({p.name, ParamKind::kLinear, p.starts, "parameter"});
  }
  return law;
}

ExpressionLaw MakeExpressionLaw(const std::string& expression,
                                const std::vector<ExpressionParam>& params,
                                const std::vector<std::string>& columns,
                                const std::vector<std::string>& pinned) {
  ExpressionLaw law;
  law.expression = expression;
  RefuseAssignment(expression, "--law-expr");
  NameRecorder recorder;
  try {
    mu::Parser parser;
    parser.SetVarFactory(RecordName, &recorder);
    parser.SetExpr(expression);
    parser.GetUsedVar();
  } catch (const mu::Parser::exception_type& e) {
    // muparser reports a missing closing bracket past the end: clamp to the end of the text.
    const int position = std::min(static_cast<int>(e.GetPos()), static_cast<int>(expression.size()));
    std::string caret;
    if (position >= 0 && position <= static_cast<int>(expression.size())) {
      caret = fmt::format("\n  {}\n  {}^", expression, std::string(position, ' '));
    }
    throw UsageError(fmt::format("--law-expr: cannot parse '{}' at position {}: {}{}", expression,
                                 position + 1, e.GetMsg(), caret));
  }
  std::vector<std::string> param_names;
  for (const ExpressionParam& p : params) {
    if (std::find(param_names.begin(), param_names.end(), p.name) != param_names.end()) {
      throw UsageError(fmt::format("--param {}: given twice. Violated constraint: each parameter "
                                   "at most once",
                                   p.name));
    }
    param_names.push_back(p.name);
  }
  for (const std::string& name : pinned) {
    if (std::find(param_names.begin(), param_names.end(), name) == param_names.end()) {
      param_names.push_back(name);
    }
  }
  std::vector<bool> used_param(param_names.size(), false);
  for (const std::string& name : recorder.names) {
    // muparser reads "0E" or "2" as a name where no number parses, but can only define names
    // that start with a letter or '_'.
    const bool identifier = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) ||
                                              name[0] == '_');
    if (!identifier) {
      throw InputError(fmt::format("--law-expr: '{}' is not a name. Violated constraint: a column "
                                   "or parameter name starts with a letter or '_'",
                                   name));
    }
    const bool is_column = std::find(columns.begin(), columns.end(), name) != columns.end();
    const auto it = std::find(param_names.begin(), param_names.end(), name);
    const bool is_param = it != param_names.end();
    if (is_column && is_param) {
      throw InputError(fmt::format(
          "--law-expr: '{}' is both a data column and a parameter (--param/--pin); rename the "
          "column with --column or the parameter",
          name));
    }
    if (is_param) {
      used_param[it - param_names.begin()] = true;
      continue;
    }
    if (!is_column) {
      std::vector<std::string> known = columns;
      known.insert(known.end(), param_names.begin(), param_names.end());
      throw InputError(fmt::format(
          "--law-expr: '{}' is neither a data column nor a parameter with a start (give one "
          "with --param {}=START){}. Columns: {}; parameters: {}",
          name, name, DidYouMean(name, known), fmt::join(columns, ", "),
          param_names.empty() ? std::string("none") : fmt::format("{}", fmt::join(param_names, ", "))));
    }
    if (std::find(law.inputs.begin(), law.inputs.end(), name) == law.inputs.end()) {
      law.inputs.push_back(name);
    }
  }
  for (size_t j = 0; j < param_names.size(); ++j) {
    if (!used_param[j]) {
      // Named by the flag that gave it: a parameter with a start came from --param, one with a
      // pin only from --pin.
      const bool has_start =
          std::any_of(params.begin(), params.end(),
                      [&](const ExpressionParam& p) { return p.name == param_names[j]; });
      throw UsageError(fmt::format("{} {}: the expression '{}' does not use '{}'",
                                   has_start ? "--param" : "--pin", param_names[j], expression,
                                   param_names[j]));
    }
  }
  for (const std::string& name : param_names) {
    ExpressionParam p{name, {}};
    for (const ExpressionParam& given : params) {
      if (given.name == name) p = given;
    }
    const bool is_pinned = std::find(pinned.begin(), pinned.end(), name) != pinned.end();
    if (p.starts.empty() && !is_pinned) {
      throw InputError(fmt::format("--param {}: parameter without a start value", name));
    }
    law.params.push_back(std::move(p));
  }
  if (law.params.empty()) {
    throw InputError(fmt::format("--law-expr '{}': no parameters to fit (give them with --param "
                                 "NAME=START)", expression));
  }
  if (law.params.size() > static_cast<size_t>(kMaxLawParams)) {
    throw InputError(fmt::format("--law-expr: {} parameters, at most {}", law.params.size(),
                                 kMaxLawParams));
  }
  return law;
}

struct ExpressionEvaluator::Impl {
  mu::Parser parser;
  std::vector<double> x;
  std::vector<double> p;
};

ExpressionEvaluator::ExpressionEvaluator(const ExpressionLaw& law) : impl_(new Impl) {
  impl_->x.resize(law.inputs.size());
  impl_->p.resize(law.params.size());
  try {
    for (size_t i = 0; i < law.inputs.size(); ++i) {
      impl_->parser.DefineVar(law.inputs[i], &impl_->x[i]);
    }
    for (size_t j = 0; j < law.params.size(); ++j) {
      impl_->parser.DefineVar(law.params[j].name, &impl_->p[j]);
    }
    impl_->parser.SetExpr(law.expression);
  } catch (const mu::Parser::exception_type& e) {
    delete impl_;
    throw InputError(fmt::format("--law-expr '{}': {}", law.expression, e.GetMsg()));
  }
}

ExpressionEvaluator::~ExpressionEvaluator() { delete impl_; }

double ExpressionEvaluator::operator()(const double* x, const double* params) {
  std::copy(x, x + impl_->x.size(), impl_->x.begin());
  std::copy(params, params + impl_->p.size(), impl_->p.begin());
  try {
    return impl_->parser.Eval();
  } catch (const mu::Parser::exception_type&) {
    return NAN;
  }
}

namespace {

// One point's residual (objective.h) as a function of the free parameters.
struct PointResidual {
  ExpressionEvaluator* evaluate;
  const double* x;
  double y;
  bool log_space;
  const std::vector<int>* free;
  double* values;  // all parameter values; the free ones are overwritten

  bool operator()(double const* const* parameters, double* residual) const {
    for (size_t j = 0; j < free->size(); ++j) values[(*free)[j]] = parameters[0][j];
    const double f = (*evaluate)(x, values);
    if (!std::isfinite(f) || (log_space && !(f > 0))) return false;
    residual[0] = log_space ? y - std::log(f) : y - f;
    return true;
  }
};

struct StartResult {
  std::vector<double> values;
  double objective = INFINITY;
  int iterations = 0;
  Termination termination = Termination::kFailure;
  int bad_point = -1;  // first point with a non-finite prediction at the start
  double bad_value = 0;
};

class ExpressionFitter {
 public:
  ExpressionFitter(const ExpressionLaw& law, const FitData& data, const FitOptions& options,
                   const std::vector<double>& pinned_values, const std::vector<int>& free)
      : law_(law), data_(data), options_(options), base_(pinned_values), free_(free),
        evaluate_(law) {
    const size_t n = data.size();
    x_.resize(n * law.inputs.size());
    for (size_t i = 0; i < n; ++i) data.Point(i, x_.data() + i * law.inputs.size());
  }

  double Total(const double* values, int* bad_point, double* bad_value) {
    const bool log_space = options_.objective.space == ResidualSpace::kLog;
    double sum = 0;
    for (size_t i = 0; i < data_.size(); ++i) {
      const double f = evaluate_(x_.data() + i * law_.inputs.size(), values);
      if (!std::isfinite(f) || (log_space && !(f > 0))) {
        if (bad_point) *bad_point = static_cast<int>(i);
        if (bad_value) *bad_value = f;
        return INFINITY;
      }
      const double r = log_space ? std::log(data_.loss[i]) - std::log(f) : data_.loss[i] - f;
      const double w = data_.weight.empty() ? 1.0 : data_.weight[i];
      sum += w * options_.objective.Rho(r);
    }
    return sum;
  }

  StartResult Solve(const std::vector<double>& start) {
    StartResult out;
    out.values = base_;
    for (size_t j = 0; j < free_.size(); ++j) out.values[free_[j]] = start[j];
    out.objective = Total(out.values.data(), &out.bad_point, &out.bad_value);
    if (!std::isfinite(out.objective)) return out;
    if (free_.empty()) {
      // Every parameter pinned: nothing to solve, the objective at the pins is the result.
      out.termination = Termination::kConverged;
      return out;
    }
    const bool log_space = options_.objective.space == ResidualSpace::kLog;
    std::vector<double> free_values(start);
    std::vector<double> scratch = out.values;
    ceres::Problem problem;
    for (size_t i = 0; i < data_.size(); ++i) {
      const double w = data_.weight.empty() ? 1.0 : data_.weight[i];
      if (w == 0) continue;
      auto* cost = new ceres::DynamicNumericDiffCostFunction<PointResidual, ceres::CENTRAL>(
          new PointResidual{&evaluate_, x_.data() + i * law_.inputs.size(),
                            log_space ? std::log(data_.loss[i]) : data_.loss[i], log_space,
                            &free_, scratch.data()});
      cost->AddParameterBlock(static_cast<int>(free_.size()));
      cost->SetNumResiduals(1);
      ceres::LossFunction* loss =
          options_.objective.loss == LossKind::kHuber
              ? new ceres::ScaledLoss(new ceres::HuberLoss(options_.objective.delta), w,
                                      ceres::TAKE_OWNERSHIP)
              : new ceres::ScaledLoss(nullptr, 2 * w, ceres::TAKE_OWNERSHIP);
      problem.AddResidualBlock(cost, loss, free_values.data());
    }
    ceres::Solver::Options so;
    so.trust_region_strategy_type = ceres::LEVENBERG_MARQUARDT;
    so.linear_solver_type = ceres::DENSE_QR;
    so.max_num_iterations = options_.multistart.solver.max_iterations;
    so.function_tolerance = kFunctionTolerance;
    so.parameter_tolerance = kParameterTolerance;
    so.gradient_tolerance = kGradientTolerance;
    so.num_threads = 1;
    so.logging_type = ceres::SILENT;
    ceres::Solver::Summary summary;
    ceres::Solve(so, &problem, &summary);
    for (size_t j = 0; j < free_.size(); ++j) out.values[free_[j]] = free_values[j];
    out.objective = Total(out.values.data(), nullptr, nullptr);
    out.iterations = static_cast<int>(summary.iterations.size());
    switch (summary.termination_type) {
      case ceres::CONVERGENCE:
      case ceres::USER_SUCCESS:
        out.termination = Termination::kConverged;
        break;
      case ceres::NO_CONVERGENCE:
        out.termination = Termination::kNoConvergence;
        break;
      case ceres::FAILURE:
      case ceres::USER_FAILURE:
        out.termination = Termination::kFailure;
        break;
    }
    if (!std::isfinite(out.objective)) out.termination = Termination::kFailure;
    return out;
  }

  static constexpr double kFunctionTolerance = 1e-14;
  static constexpr double kParameterTolerance = 1e-12;
  static constexpr double kGradientTolerance = 1e-16;

 private:
  const ExpressionLaw& law_;
  const FitData& data_;
  const FitOptions& options_;
  std::vector<double> base_;
  const std::vector<int>& free_;
  ExpressionEvaluator evaluate_;
  std::vector<double> x_;
};

// The free parameters that the predictions at the points cannot tell apart at `values`: those
// in a linear dependency among the columns of the Jacobian d prediction / d parameter (central
// differences, each column normalized; a column of zeros is a dependency by itself). Empty when
// the Jacobian has full column rank, or when a step leaves the expression's domain (no verdict).
// `rank` receives the Jacobian's rank.
std::vector<int> UnseparatedParams(const ExpressionLaw& law, const FitData& data,
                                   std::vector<double> values, const std::vector<int>& free,
                                   int* rank) {
  constexpr double kRelativeStep = 1e-6;
  // Central differences carry about 1e-10 relative error; a dependency that exact is one.
  constexpr double kRankThreshold = 1e-7;
  ExpressionEvaluator evaluate(law);
  const size_t n = data.size(), q = free.size();
  std::vector<double> x(law.inputs.size());
  Eigen::MatrixXd jacobian(n, q);
  for (size_t c = 0; c < q; ++c) {
    const double v = values[free[c]];
    const double h = kRelativeStep * (v != 0 ? std::fabs(v) : 1.0);
    for (size_t i = 0; i < n; ++i) {
      data.Point(i, x.data());
      values[free[c]] = v + h;
      const double up = evaluate(x.data(), values.data());
      values[free[c]] = v - h;
      const double down = evaluate(x.data(), values.data());
      if (!std::isfinite(up) || !std::isfinite(down)) return {};
      jacobian(i, c) = (up - down) / (2 * h);
    }
    values[free[c]] = v;
    const double norm = jacobian.col(c).norm();
    if (norm > 0) jacobian.col(c) /= norm;
  }
  const auto rank_of = [&](const Eigen::MatrixXd& m) {
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(m);
    qr.setThreshold(kRankThreshold);
    return static_cast<int>(qr.rank());
  };
  *rank = rank_of(jacobian);
  std::vector<int> dependent;
  if (*rank == static_cast<int>(q)) return dependent;
  for (size_t c = 0; c < q; ++c) {
    Eigen::MatrixXd others(n, q - 1);
    for (size_t k = 0, o = 0; k < q; ++k) {
      if (k != c) others.col(o++) = jacobian.col(k);
    }
    if (rank_of(others) == *rank) dependent.push_back(free[c]);
  }
  return dependent;
}

}  // namespace

FitSummary FitExpression(const ExpressionLaw& law, const FitData& data, const FitOptions& options) {
  if (data.input_names != law.inputs) {
    throw std::invalid_argument(fmt::format("FitExpression: data inputs ({}) are not the law's ({})",
                                            fmt::join(data.input_names, ", "),
                                            fmt::join(law.inputs, ", ")));
  }
  options.objective.Validate();
  // Points of weight 0 are in no fit: left out before anything is counted or evaluated, as the
  // built-in laws leave them out.
  if (std::any_of(data.weight.begin(), data.weight.end(), [](double w) { return !(w > 0); })) {
    std::vector<size_t> weighted;
    for (size_t i = 0; i < data.size(); ++i) {
      if (data.weight[i] > 0) weighted.push_back(i);
    }
    return FitExpression(law, data.Subset(weighted), options);
  }
  const int p = static_cast<int>(law.params.size());
  std::vector<double> values(p, NAN);
  std::vector<bool> pinned(p, false);
  for (const auto& [name, value] : options.pins) {
    int j = -1;
    for (int k = 0; k < p; ++k) {
      if (law.params[k].name == name) j = k;
    }
    if (j < 0) {
      std::vector<std::string> names;
      for (const ExpressionParam& q : law.params) names.push_back(q.name);
      throw UsageError(fmt::format("--pin {}={}: the expression has no parameter '{}'{}; "
                                   "parameters: {}",
                                   name, value, name, DidYouMean(name, names),
                                   fmt::join(names, ", ")));
    }
    values[j] = value;
    pinned[j] = true;
  }
  std::vector<int> free;
  for (int j = 0; j < p; ++j) {
    if (!pinned[j]) free.push_back(j);
  }
  if (data.size() < free.size()) {
    throw InputError(WithSubsetRule(
        FieldError(At(data.origin), "points", fmt::format("{}", data.size()),
                   fmt::format("points (of weight > 0) >= free parameters of the expression ({})",
                               free.size()))
            .what(),
        options.subset_rule));
  }
  for (size_t i = 0; i < data.size(); ++i) {
    if (!(std::isfinite(data.loss[i]) && data.loss[i] > 0)) {
      throw FieldError(data.Where(i), "loss",
                       fmt::format("{}", data.loss[i]), "loss > 0 and finite");
    }
  }
  // The start grid: the product of the free parameters' starts, the last varying fastest.
  size_t starts = 1;
  for (int j : free) starts *= law.params[j].starts.size();
  if (starts > 1000000) {
    throw InputError(fmt::format("--param: {} starts in the grid, at most 1000000", starts));
  }
  auto start = [&](size_t s) {
    std::vector<double> x(free.size());
    for (size_t k = free.size(); k-- > 0;) {
      const std::vector<double>& grid = law.params[free[k]].starts;
      x[k] = grid[s % grid.size()];
      s /= grid.size();
    }
    return x;
  };
  std::vector<StartResult> results(starts);
  // One block of starts per thread, each with a fitter of its own; a start's result does not
  // depend on its block.
  const size_t blocks = std::min<size_t>(starts, std::max(1, options.multistart.threads));
  ParallelFor(blocks, options.multistart.threads, [&](size_t block) {
    ExpressionFitter fitter(law, data, options, values, free);
    const size_t begin = starts * block / blocks, end = starts * (block + 1) / blocks;
    for (size_t s = begin; s < end; ++s) results[s] = fitter.Solve(start(s));
  });
  size_t best = 0;
  int failed = 0;
  for (size_t s = 0; s < starts; ++s) {
    if (results[s].bad_point >= 0) ++failed;
    if (results[s].objective < results[best].objective) best = s;
  }
  if (failed == static_cast<int>(starts)) {
    const StartResult& r = results[0];
    std::vector<std::string> at_values, at_inputs;
    for (int j = 0; j < p; ++j) {
      at_values.push_back(fmt::format("{}={:g}", law.params[j].name, r.values[j]));
    }
    for (size_t i = 0; i < law.inputs.size(); ++i) {
      at_inputs.push_back(fmt::format("{}={:g}", law.inputs[i], data.inputs[i][r.bad_point]));
    }
    // An expression of parameters alone predicts the same at every point.
    const std::string where =
        at_inputs.empty() ? "at every point (it reads no data column)"
                          : fmt::format("for the point ({})", fmt::join(at_inputs, ", "));
    throw InputError(fmt::format(
        "{}: --law-expr '{}' predicts {} at the start ({}) {}{}. Violated constraint: a finite "
        "prediction{} at every point from some start (change the start values with --param; an "
        "expression finite for no values, such as a division by 0, cannot be fitted)",
        data.Where(r.bad_point).ToString(), law.expression,
        std::isnan(r.bad_value) ? std::fabs(r.bad_value) : r.bad_value,
        fmt::join(at_values, ", "), where,
        starts == 1 ? "" : fmt::format(", and so does each of the other {} starts", starts - 1),
        options.objective.space == ResidualSpace::kLog ? " > 0 (residuals of log loss)" : ""));
  }

  // Parameters the points cannot tell apart both at the best start's first values and at the
  // fit: a dependency that holds at an arbitrary start and where the fit ended is one of the
  // expression and the data (a parameter that moves nothing, two scales of proportional terms),
  // refused as the built-in laws' singular designs are. One at a special start alone (a scale
  // starting at 0) is no verdict.
  if (!free.empty()) {
    std::vector<double> first = values;
    const std::vector<double> start_values = start(best);
    for (size_t k = 0; k < free.size(); ++k) first[free[k]] = start_values[k];
    int rank = 0, rank_at_fit = 0;
    const std::vector<int> dependent = UnseparatedParams(law, data, first, free, &rank);
    if (!dependent.empty() &&
        !UnseparatedParams(law, data, results[best].values, free, &rank_at_fit).empty()) {
      std::vector<std::string> names;
      for (int j : dependent) names.push_back(law.params[j].name);
      const int lost = static_cast<int>(free.size()) - rank;
      const int directions = static_cast<int>(dependent.size()) - lost;
      const std::string what =
          dependent.size() == 1
              ? fmt::format("{} moves no prediction", names[0])
              : fmt::format("{} move the predictions along {} direction{} for their {}",
                            fmt::join(names, ", "), directions, directions == 1 ? "" : "s",
                            dependent.size());
      throw InputError(WithSubsetRule(
          fmt::format("{}: singular design: over the {} points, {} in --law-expr '{}' (at the "
                      "start and at the fit): the data cannot fix {}. Violated constraint: "
                      "each free parameter moves the predictions in a direction of its own (pin "
                      "one of them with --pin, rewrite the expression, or add points that vary "
                      "the inputs independently)",
                      data.origin, data.size(), what, law.expression,
                      dependent.size() == 1 ? "its value" : "their values"),
          options.subset_rule));
    }
  }

  FitSummary s;
  s.points = static_cast<int>(data.size());
  s.runs = data.num_runs();
  s.starts = static_cast<int>(starts);
  s.failed_starts = failed;
  s.objective = results[best].objective;
  for (const StartResult& r : results) {
    s.iterations += r.iterations;
    if (r.termination == Termination::kConverged &&
        r.objective <= s.objective + options.convergence_tolerance) {
      ++s.converged_starts;
    }
  }
  s.inferred_starts = s.converged_starts;
  s.cautions = OutlyingValueCautions(data);
  s.theta = results[best].values;
  for (int j = 0; j < p; ++j) {
    s.params.push_back({law.params[j].name, s.theta[j], static_cast<bool>(pinned[j])});
  }
  s.termination = results[best].termination;
  switch (s.termination) {
    case Termination::kConverged:
      s.message = fmt::format("converged: {} of {} starts reached the best objective within {}",
                              s.converged_starts, s.starts, options.convergence_tolerance);
      break;
    case Termination::kNoConvergence:
      s.message = fmt::format(
          "no convergence: the best start stopped after {} iterations without meeting the "
          "tolerances; {} of {} starts converged to its objective",
          results[best].iterations, s.converged_starts, s.starts);
      break;
    case Termination::kFailure:
      s.message = fmt::format("failure: the solver failed from the best of the {} starts",
                              s.starts);
      break;
  }
  FitRecipe& r = s.recipe;
  r.law = "expression";
  r.formula = "L = " + law.expression;
  r.citation = "user-written expression (--law-expr)";
  r.data = data.origin;
  r.subset_rule = options.subset_rule;
  r.objective = options.objective.Describe();
  r.loss = ToString(options.objective.loss);
  r.space = ToString(options.objective.space);
  r.delta = options.objective.delta;
  std::vector<std::string> grid;
  for (int j : free) {
    const std::vector<double>& g = law.params[j].starts;
    grid.push_back(g.size() == 1 ? fmt::format("{} = {:g}", law.params[j].name, g[0])
                                 : fmt::format("{} in {{{:g}, {:g}, ..., {:g}}} ({} values)",
                                               law.params[j].name, g[0], g[1], g.back(),
                                               g.size()));
  }
  r.grid = free.empty() ? "1 start: every parameter pinned"
                        : fmt::format("{} ({} starts; values as written)", fmt::join(grid, "; "),
                                      starts);
  r.pins = options.pins;
  r.solver = fmt::format(
      "Ceres Solver Levenberg-Marquardt (DENSE_QR), central numeric derivatives of the "
      "expression, function_tolerance {}, parameter_tolerance {}, gradient_tolerance {}, "
      "max_iterations {}",
      ExpressionFitter::kFunctionTolerance, ExpressionFitter::kParameterTolerance,
      ExpressionFitter::kGradientTolerance, options.multistart.solver.max_iterations);
  return s;
}

}  // namespace mosaic::scaling
