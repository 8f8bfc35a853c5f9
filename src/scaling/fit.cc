#include "mosaic/scaling/fit.h"

#include <Eigen/Dense>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <set>

#include "location.h"
#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/text_input.h"

namespace mosaic::scaling {

double FitSummary::Value(std::string_view name) const {
  for (const FittedParam& p : params) {
    if (p.name == name) return p.value;
  }
  assert(false && "unknown parameter");
  return NAN;
}

std::string FitSummary::NegligibleCaution(std::string_view name) const {
  return fmt::format(
      "{} = {:.6g}: halving it moves no prediction by {:g} of itself, so its term is absent at "
      "every point (the fit dropped it, as it does when the data cannot separate the law's "
      "inputs): projections and the frontier rest on the other terms alone; pin a parameter of "
      "that term, or add points that vary its input",
      name, Value(name), kNegligibleTermShare);
}

std::pair<std::string, double> ParsePin(std::string_view text) {
  const size_t eq = text.find('=');
  double value = NAN;
  if (eq != std::string_view::npos && eq > 0) {
    value = ParseDecimal(text.substr(eq + 1)).value_or(NAN);
  }
  if (std::isnan(value)) {
    throw FieldError(At("--pin"), "--pin", text, "NAME=NUMBER, e.g. E=1.6");
  }
  return {std::string(text.substr(0, eq)), value};
}

std::vector<std::optional<double>> PinnedTheta(
    const Law& law, const std::vector<std::pair<std::string, double>>& pins,
    const std::vector<SourceLocation>& pin_where) {
  std::vector<std::optional<double>> theta(law.params.size());
  std::vector<std::string> names;
  for (const LawParam& p : law.params) names.push_back(p.name);
  for (size_t i = 0; i < pins.size(); ++i) {
    const auto& [name, value] = pins[i];
    const SourceLocation where = i < pin_where.size() ? pin_where[i] : At("--pin");
    const int j = law.ParamIndex(name);
    if (j < 0) {
      throw UsageError(fmt::format("--pin {}={}: law {} has no parameter '{}'{}; parameters: {}",
                                   name, value, law.name, name, DidYouMean(name, names),
                                   fmt::join(names, ", ")));
    }
    if (law.params[j].kind == ParamKind::kLogScale && value == 0) {
      // A scale pinned to zero removes the terms it multiplies (E = 0: no irreducible loss),
      // which is only possible where it is a plain factor of those terms.
      bool plain = true;
      bool used = false;
      for (const LawTerm& term : law.terms) {
        for (const Factor& f : term.factors) {
          if (f.param != j) continue;
          used = true;
          if (!f.inputs.empty() || f.sign != 1) plain = false;
        }
      }
      if (!plain || !used) {
        throw FieldError(where, name, fmt::format("{}", value),
                         fmt::format("{} > 0 ({} of law {} is not a plain factor of its terms, so "
                                     "they cannot be dropped)",
                                     name, name, law.name));
      }
      theta[j] = -INFINITY;
      continue;
    }
    if (law.params[j].kind == ParamKind::kLinear && law.ExpectsNonNegative(j)) {
      // An exponent of a term that falls with its input: a negative one makes the term grow,
      // against the law's form; 0 makes a term whose only input it carries a constant, which
      // the floor E already is, so neither could be told apart.
      bool sole = false;
      for (const LawTerm& term : law.terms) {
        int with_inputs = 0;
        bool here = false;
        for (const Factor& f : term.factors) {
          if (f.inputs.empty()) continue;
          ++with_inputs;
          here = here || f.param == j;
        }
        sole = sole || (here && with_inputs == 1);
      }
      if (value < 0 || (value == 0 && sole)) {
        throw FieldError(where, name, fmt::format("{}", value),
                         fmt::format("{} {} 0 ({} of law {}: {})", name, sole ? ">" : ">=",
                                     law.params[j].meaning, law.name,
                                     value < 0 ? "its term must fall as its input grows"
                                               : "at 0 its term is a constant, which the floor "
                                                 "E already is"));
      }
    }
    if (law.params[j].kind == ParamKind::kLogScale && !(value > 0)) {
      throw FieldError(where, name, fmt::format("{}", value),
                       fmt::format("{} > 0 (a scale of law {})", name, law.name));
    }
    theta[j] = law.ToTheta(j, value);
  }
  return theta;
}

namespace {

std::string TransformedName(const LawInput& in) {
  switch (in.transform) {
    case InputTransform::kLog:
      return "log " + in.name;
    case InputTransform::kLogOneMinus:
      return "log(1 - " + in.name + ")";
    case InputTransform::kRaw:
      return in.name;
  }
  return in.name;
}

// The transformed inputs (log N, log D, ...) that free parameters multiply, one column per point
// and input; `used` receives the inputs' indexes in law order.
Eigen::MatrixXd FreeInputColumns(const Law& law, const FitData& data,
                                 const std::vector<std::optional<double>>& pinned,
                                 std::vector<int>* used) {
  used->clear();
  for (size_t i = 0; i < law.inputs.size(); ++i) {
    bool uses = false;
    for (const LawTerm& term : law.terms) {
      for (const Factor& f : term.factors) {
        if (!pinned[f.param] &&
            std::find(f.inputs.begin(), f.inputs.end(), static_cast<int>(i)) != f.inputs.end()) {
          uses = true;
        }
      }
    }
    if (uses) used->push_back(static_cast<int>(i));
  }
  const Eigen::Index n = static_cast<Eigen::Index>(data.size());
  Eigen::MatrixXd t(n, static_cast<Eigen::Index>(used->size()));
  for (size_t c = 0; c < used->size(); ++c) {
    for (Eigen::Index r = 0; r < n; ++r) {
      const double x = data.inputs[(*used)[c]][r];
      switch (law.inputs[(*used)[c]].transform) {
        case InputTransform::kLog:
          t(r, c) = std::log(x);
          break;
        case InputTransform::kLogOneMinus:
          t(r, c) = std::log1p(-x);
          break;
        case InputTransform::kRaw:
          t(r, c) = x;
          break;
      }
    }
  }
  return t;
}

// Column c of `t` fitted on the columns before it by least squares with an intercept:
// t_c ≈ Σ_b coef(b)·t_b + coef(c), with the RMS residual and the share of t_c's variance left
// unexplained (1 − R²).
struct InputRelation {
  Eigen::VectorXd coef;
  double rms_residual = 0;
  double unexplained = 0;
};
InputRelation RelationToEarlierInputs(const Eigen::MatrixXd& t, Eigen::Index c) {
  const Eigen::Index n = t.rows();
  Eigen::MatrixXd lhs(n, c + 1);
  lhs.leftCols(c) = t.leftCols(c);
  lhs.col(c).setOnes();
  InputRelation r;
  r.coef = lhs.colPivHouseholderQr().solve(t.col(c));
  const Eigen::VectorXd residual = t.col(c) - lhs * r.coef;
  const double variance = (t.col(c).array() - t.col(c).mean()).square().sum();
  r.rms_residual = std::sqrt(residual.squaredNorm() / static_cast<double>(n));
  r.unexplained = variance > 0 ? residual.squaredNorm() / variance : 0;
  return r;
}

// "log D = 1·log N + 2.996", the relation as the messages print it.
std::string RelationText(const Law& law, const std::vector<int>& used, Eigen::Index c,
                         const Eigen::VectorXd& coef) {
  std::string relation;
  for (Eigen::Index b = 0; b < c; ++b) {
    relation += fmt::format("{:.4g}·{} + ", coef(b), TransformedName(law.inputs[used[b]]));
  }
  return fmt::format("{} = {}{:.4g}", TransformedName(law.inputs[used[c]]), relation, coef(c));
}

std::vector<std::string> InputNames(const Law& law, const std::vector<int>& used, Eigen::Index c) {
  std::vector<std::string> names;
  for (Eigen::Index b = 0; b < c; ++b) names.push_back(law.inputs[used[b]].name);
  return names;
}

// Throws InputError when the transformed inputs that free parameters multiply are collinear over
// the points (e.g. D = 20·N at every point: log D = log N + log 20), so that the law cannot tell
// the inputs' effects apart. Columns are centred and scaled before the rank test; an input is
// reported against the ones before it in law order.
void CheckInputsSeparable(const Law& law, const FitData& data,
                          const std::vector<std::optional<double>>& pinned) {
  std::vector<int> used;
  const Eigen::MatrixXd t = FreeInputColumns(law, data, pinned, &used);
  if (used.size() < 2) return;
  Eigen::MatrixXd centred = t.rowwise() - t.colwise().mean();
  for (Eigen::Index c = 0; c < centred.cols(); ++c) {
    const double norm = centred.col(c).norm();
    if (norm > 0) centred.col(c) /= norm;
  }
  for (Eigen::Index c = 1; c < centred.cols(); ++c) {
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(centred.leftCols(c + 1));
    qr.setThreshold(1e-8);
    if (qr.rank() > c) continue;
    const std::vector<std::string> before = InputNames(law, used, c);
    throw InputError(fmt::format(
        "{}: singular design: column {} is determined by column{} {} at every one of the {} "
        "points ({}), so law {} cannot separate their effects. Violated constraint: the "
        "inputs vary independently (add points off this line, or pin the parameters of one "
        "input with --pin)",
        data.origin, law.inputs[used[c]].name, before.size() > 1 ? "s" : "",
        fmt::join(before, ", "), data.size(),
        RelationText(law, used, c, RelationToEarlierInputs(t, c).coef), law.name));
  }
}

// The caution on a value far from every other of its column, a slipped exponent by the look of
// it: the largest more than `ratio` × the next largest, or the smallest less than 1/`ratio` of
// the next smallest (at least 3 points). Losses of one study stay within a few × of each other
// (ratio 4: even an untrained model's log-vocabulary loss is within 4× of a trained one's);
// inputs span decades, but a ladder's or a grid's steps are not 100× apart.
std::optional<std::string> IsolatedValueCaution(const FitData& data,
                                                const std::vector<double>& values,
                                                std::string_view name, double ratio) {
  if (values.size() < 3) return std::nullopt;
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  const size_t n = order.size();
  // "10× the next largest"; "1/4.4 of the next smallest" ("far above" or "far below" where
  // the quotient is not finite: a 0 or a subnormal beside it).
  const auto caution = [&](size_t i, size_t next, std::string_view side) {
    const bool largest = side == "largest";
    const double times = largest ? values[i] / values[next] : values[next] / values[i];
    const std::string how = !std::isfinite(times) ? std::string(largest ? "far above" : "far below")
                            : largest             ? fmt::format("{:.3g}×", times)
                                                  : fmt::format("1/{:.3g} of", times);
    return fmt::format(
        "{}: {} = {:.6g} is {} the next {} {} ({:.6g}): far from every other point, as a "
        "slipped exponent would be; the fit follows it (check the value, or leave the row out "
        "with --where)",
        data.Where(i).ToString(), name, values[i], how, side, name, values[next]);
  };
  if (values[order[n - 1]] > ratio * values[order[n - 2]]) {
    return caution(order[n - 1], order[n - 2], "largest");
  }
  if (values[order[0]] * ratio < values[order[1]]) {
    return caution(order[0], order[1], "smallest");
  }
  return std::nullopt;
}

// The caution on inputs that are nearly, not exactly, collinear (CheckInputsSeparable refuses
// exact ones): an input whose transformed column the earlier ones explain but for less than
// kNearlyCollinear of its variance. The fit then separates the inputs' effects only through
// that scatter, and their parameters trade off against each other.
constexpr double kNearlyCollinear = 1e-3;
std::optional<std::string> NearlyCollinearCaution(const Law& law, const FitData& data,
                                                  const std::vector<std::optional<double>>& pinned) {
  std::vector<int> used;
  const Eigen::MatrixXd t = FreeInputColumns(law, data, pinned, &used);
  for (Eigen::Index c = 1; c < t.cols(); ++c) {
    const InputRelation r = RelationToEarlierInputs(t, c);
    if (!(r.unexplained < kNearlyCollinear)) continue;
    const std::vector<std::string> before = InputNames(law, used, c);
    return fmt::format(
        "nearly collinear inputs: over the {} points {} to within {:.2g} RMS ({:.2g} of its "
        "variance unexplained): the fit tells {} apart from {} only through that scatter, so "
        "the parameters of their terms are poorly determined (bootstrap intervals show how "
        "poorly; add points off this line, or pin the parameters of one input with --pin)",
        data.size(), RelationText(law, used, c, r.coef), r.rms_residual, r.unexplained,
        law.inputs[used[c]].name, fmt::join(before, ", "));
  }
  return std::nullopt;
}

// Throws InputError when a term has more free parameters of its own than the distinct values of
// its inputs can tell apart. A term depends on the data only through its inputs, so the
// Jacobian columns of its own parameters, and that of a free floor (a constant term), are
// functions of those inputs' distinct values: k distinct values give them rank <= k. Two compute
// budgets cannot fit E, A and alpha of E + A·C^-alpha (every alpha has an E and an A through both
// points), and two data sizes cannot fit B and beta beside E.
void CheckTermsIdentifiable(const Law& law, const FitData& data,
                            const std::vector<std::optional<double>>& pinned) {
  std::vector<int> terms_of(law.params.size(), 0);  // in how many terms each parameter appears
  std::vector<std::string> free_floor;
  for (const LawTerm& term : law.terms) {
    std::set<int> params;
    bool constant = true;
    for (const Factor& f : term.factors) {
      params.insert(f.param);
      if (!f.inputs.empty()) constant = false;
    }
    for (int j : params) ++terms_of[j];
    if (constant) {
      for (int j : params) {
        if (!pinned[j]) free_floor.push_back(law.params[j].name);
      }
    }
  }
  for (const LawTerm& term : law.terms) {
    std::set<int> inputs;
    std::set<int> own;  // free parameters in this term only
    int exponent = -1;  // a free parameter of its own that multiplies an input
    for (const Factor& f : term.factors) {
      inputs.insert(f.inputs.begin(), f.inputs.end());
      if (!pinned[f.param] && terms_of[f.param] == 1) {
        own.insert(f.param);
        if (!f.inputs.empty()) exponent = f.param;
      }
    }
    if (inputs.empty() || own.empty()) continue;
    const size_t need = own.size() + (free_floor.empty() ? 0 : 1);
    std::set<std::vector<double>> distinct;
    for (size_t i = 0; i < data.size(); ++i) {
      std::vector<double> tuple;
      for (int in : inputs) tuple.push_back(data.inputs[in][i]);
      distinct.insert(std::move(tuple));
    }
    if (distinct.size() >= need) continue;
    std::vector<std::string> input_names, own_names, values;
    for (int in : inputs) input_names.push_back(law.inputs[in].name);
    for (int j : own) own_names.push_back(law.params[j].name);
    for (const std::vector<double>& tuple : distinct) {
      values.push_back(tuple.size() == 1 ? fmt::format("{:g}", tuple[0])
                                         : fmt::format("({:g})", fmt::join(tuple, ", ")));
    }
    const std::string what = input_names.size() == 1
                                 ? input_names[0]
                                 : fmt::format("({})", fmt::join(input_names, ", "));
    const std::string pin =
        exponent >= 0 ? fmt::format(", or pin {} with --pin {}=VALUE", law.params[exponent].name,
                                    law.params[exponent].name)
                      : "";
    throw InputError(fmt::format(
        "{}: singular design: {} takes {} distinct value{} over the {} points ({}), too few for "
        "the free {} of law {}{}: every value of one of them has a fit through the same "
        "points. Violated constraint: at least {} distinct values of {} (add points at another "
        "{}{})",
        data.origin, what, distinct.size(), distinct.size() == 1 ? "" : "s", data.size(),
        fmt::join(values, ", "), fmt::join(own_names, ", "), law.name,
        free_floor.empty() ? ""
                           : fmt::format(" beside the free floor {}", fmt::join(free_floor, ", ")),
        need, what, what, pin));
  }
}

// A term whose every input-dependent factor is pinned is its free scale times a fixed shape of
// the inputs (E: the shape 1; A/N^alpha with alpha pinned: N^-alpha). The loss's derivative by
// each such scale is the term itself, so shapes that are linearly dependent over the points
// leave those scales unseparated whatever the other terms do: D = 20·N with alpha = beta pinned
// makes A/N^alpha and B/D^beta proportional, and any split of A and B fits alike.
void CheckScalesSeparable(const Law& law, const FitData& data,
                          const std::vector<std::optional<double>>& pinned) {
  const int p = static_cast<int>(law.params.size());
  std::vector<int> terms;  // the fixed-shape terms with a free scale
  std::vector<std::string> names;
  for (size_t t = 0; t < law.terms.size(); ++t) {
    bool fixed_shape = true;
    std::vector<std::string> scales;
    for (const Factor& f : law.terms[t].factors) {
      if (pinned[f.param]) continue;
      if (!f.inputs.empty()) fixed_shape = false;
      scales.push_back(law.params[f.param].name);
    }
    if (!fixed_shape || scales.empty()) continue;
    terms.push_back(static_cast<int>(t));
    names.push_back(fmt::format("{}", fmt::join(scales, "·")));
  }
  if (terms.size() < 2 || data.size() < terms.size()) return;
  // Each column is a term's log-shape at every point, exponentiated after subtracting its
  // largest value (no overflow), then normalized.
  Eigen::MatrixXd shapes(data.size(), terms.size());
  std::vector<double> x(law.inputs.size());
  std::vector<double> v(law.terms.size() * p);
  for (size_t i = 0; i < data.size(); ++i) {
    data.Point(i, x.data());
    law.Features(x.data(), v.data());
    for (size_t c = 0; c < terms.size(); ++c) {
      double log_shape = 0;
      for (int j = 0; j < p; ++j) {
        if (pinned[j]) log_shape += v[terms[c] * p + j] * *pinned[j];
      }
      shapes(i, c) = log_shape;
    }
  }
  for (Eigen::Index c = 0; c < shapes.cols(); ++c) {
    const double top = shapes.col(c).maxCoeff();
    shapes.col(c) = (shapes.col(c).array() - top).exp().matrix();
    shapes.col(c) /= shapes.col(c).norm();
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(shapes);
  qr.setThreshold(1e-10);
  if (qr.rank() < shapes.cols()) {
    // The terms in a dependency: those whose removal leaves the rank as it is.
    std::vector<std::string> dependent;
    for (Eigen::Index c = 0; c < shapes.cols(); ++c) {
      Eigen::MatrixXd others(shapes.rows(), shapes.cols() - 1);
      for (Eigen::Index k = 0, o = 0; k < shapes.cols(); ++k) {
        if (k != c) others.col(o++) = shapes.col(k);
      }
      Eigen::ColPivHouseholderQR<Eigen::MatrixXd> without(others);
      without.setThreshold(1e-10);
      if (without.rank() == qr.rank()) dependent.push_back(names[c]);
    }
    names = dependent;
    throw InputError(fmt::format(
        "{}: singular design: with the pinned parameters the terms scaled by {} of law {} are "
        "linearly dependent over the {} points (its {} terms of fixed shape span {} dimensions): "
        "any split of those scales fits alike. Violated constraint: the terms of fixed shape are "
        "linearly independent over the points (pin one of the scales, or add points that vary "
        "the inputs independently)",
        data.origin, fmt::join(names, ", "), law.name, data.size(), shapes.cols(), qr.rank()));
  }
}

// The floor of a law under pinned θ (PinnedFloor in fit.h).
LawFloor FloorOf(const Law& law, const std::vector<std::optional<double>>& pinned) {
  LawFloor floor;
  for (const LawTerm& term : law.terms) {
    double exponent = 0;
    bool constant = !term.factors.empty();
    for (const Factor& f : term.factors) {
      if (!f.inputs.empty() || !pinned[f.param]) {
        constant = false;
        break;
      }
      exponent += f.sign * *pinned[f.param];
    }
    if (!constant) continue;
    floor.value += std::exp(exponent);
    for (const Factor& f : term.factors) floor.params.push_back(law.params[f.param].name);
  }
  return floor;
}

// A loss at or below the law's pinned floor has no fit (the other terms would have to be
// negative; the solver drives their scales to 0 instead): InputError naming the point.
void CheckAboveFloor(const Law& law, const FitData& data,
                     const std::vector<std::optional<double>>& pinned) {
  const LawFloor law_floor = FloorOf(law, pinned);
  const double floor = law_floor.value;
  const std::vector<std::string>& names = law_floor.params;
  if (!(floor > 0)) return;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data.loss[i] > floor) continue;
    const std::string run =
        data.run.empty() ? "" : fmt::format(" ({})", data.run_names[data.run[i]]);
    throw FieldError(
        data.Where(i), "loss",
        fmt::format("{}{}", data.loss[i], run),
        fmt::format("loss > the pinned floor {} = {:.6g} of law {}: every other term is positive, so "
                    "no fit reaches a loss at or below it (lower the pin, or check the row)",
                    fmt::join(names, " + "), floor, law.name));
  }
}

}  // namespace

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
                     fmt::format("points (of weight > 0) >= free parameters of law {} ({})",
                                 law.name, q));
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
  CheckInputsSeparable(law, data, pinned);
  CheckTermsIdentifiable(law, data, pinned);
  CheckScalesSeparable(law, data, pinned);
  CheckAboveFloor(law, data, pinned);
  if (q == 0) return;  // every parameter pinned: nothing to identify
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

std::vector<std::string> OutlyingValueCautions(const FitData& data) {
  std::vector<std::string> cautions;
  if (std::optional<std::string> caution = IsolatedValueCaution(data, data.loss, "loss", 4)) {
    cautions.push_back(std::move(*caution));
  }
  for (size_t i = 0; i < data.inputs.size(); ++i) {
    if (std::optional<std::string> caution =
            IsolatedValueCaution(data, data.inputs[i], data.input_names[i], 100)) {
      cautions.push_back(std::move(*caution));
    }
  }
  return cautions;
}

LawFloor PinnedFloor(const Law& law, const std::vector<std::pair<std::string, double>>& pins) {
  return FloorOf(law, PinnedTheta(law, pins));
}

std::string WithSubsetRule(std::string_view message, std::string_view subset_rule) {
  if (subset_rule.empty() || subset_rule == "all rows") return std::string(message);
  return fmt::format("{} (the points are those left by: {})", message, subset_rule);
}

FitSummary Fit(const Law& law, const FitData& data, const FitOptions& options) {
  options.objective.Validate();
  const std::vector<std::optional<double>> pinned = PinnedTheta(law, options.pins);
  // Points of weight 0 are in the data but not in the objective: the design is checked, and the
  // points counted, without them.
  std::vector<size_t> weighted;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data.weight.empty() || data.weight[i] > 0) weighted.push_back(i);
  }
  try {
    CheckDesign(law, weighted.size() == data.size() ? data : data.Subset(weighted), pinned);
  } catch (const InputError& e) {
    throw InputError(WithSubsetRule(e.what(), options.subset_rule));
  }
  const FitProblem problem(law, data, options.objective, pinned);
  const StartGrid grid = options.grid ? *options.grid : DefaultGrid(problem);
  const MultiStartResult run = RunMultiStart(problem, grid, options.multistart);

  FitSummary s;
  s.points = static_cast<int>(weighted.size());
  {
    // Runs counted as the points are: those with a point of weight > 0.
    std::vector<char> seen(data.num_runs(), 0);
    for (size_t i : weighted) seen[data.run[i]] = 1;
    s.runs = static_cast<int>(std::count(seen.begin(), seen.end(), 1));
  }
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
  // A parameter past a double's range (a scale whose log ran beyond 709) is no fitted value: the
  // objective is flat along it, and the fit is not a converged one whatever the solver said.
  std::string diverged;
  for (const FittedParam& p : s.params) {
    if (!p.pinned && !std::isfinite(p.value) && diverged.empty()) diverged = p.name;
  }
  if (!diverged.empty() && s.termination == Termination::kConverged) {
    s.termination = Termination::kNoConvergence;
  }
  switch (s.termination) {
    case Termination::kConverged:
      s.message = fmt::format(
          "converged: {} of {} starts certified to reach the best objective within {} ({} with "
          "starts cut short in an early stage credited with their basin's minimum)",
          s.converged_starts, s.starts, options.convergence_tolerance, s.inferred_starts);
      break;
    case Termination::kNoConvergence:
      s.message =
          diverged.empty()
              ? fmt::format("no convergence: the best start stopped after {} iterations without "
                            "meeting the tolerances; {} of {} starts reached its objective",
                            run.best.iterations, s.converged_starts, s.starts)
              : fmt::format("no convergence: {} ran past a double's range (the data do not "
                            "determine it: look for an outlying loss, or pin it with --pin)",
                            diverged);
      break;
    case Termination::kFailure:
      s.message = fmt::format("failure: the objective was not finite at any of the {} starts",
                              s.starts);
      break;
  }
  if (std::optional<std::string> caution = NearlyCollinearCaution(
          law, weighted.size() == data.size() ? data : data.Subset(weighted), pinned)) {
    s.cautions.push_back(std::move(*caution));
  }
  for (std::string& caution : OutlyingValueCautions(data)) s.cautions.push_back(std::move(caution));
  int free_params = 0;
  for (const auto& pin : pinned) free_params += pin.has_value() ? 0 : 1;
  if (free_params == 0) {
    s.cautions.push_back(fmt::format(
        "every parameter is pinned: the law is the pins', whatever the {} point{} say (objective "
        "{:.4g}); unpin what the data should determine",
        s.points, s.points == 1 ? "" : "s", s.objective));
  }
  if (free_params > 0 && s.points == free_params) {
    // Whether the law passes through every point is the objective's to say: a form that cannot
    // reach the points (a scale driven to 0) leaves residuals even with no point to spare.
    s.cautions.push_back(fmt::format(
        "{} free parameter{} on {} point{}: no point is left over to check the fit{}; add points "
        "or pin parameters",
        free_params, free_params == 1 ? "" : "s", s.points, s.points == 1 ? "" : "s",
        s.objective <= kExactFitObjective ? " (the law passes through every point)"
                                          : fmt::format(" (nor does the law pass through them: "
                                                        "objective {:.4g})",
                                                        s.objective)));
  }
  if (s.termination != Termination::kFailure) {
    for (size_t j = 0; j < law.params.size(); ++j) {
      const LawParam& param = law.params[j];
      if (pinned[j]) continue;
      if (law.ExpectsNonNegative(static_cast<int>(j)) && s.params[j].value < 0) {
        s.cautions.push_back(fmt::format(
            "{} = {:.6g} < 0, against the law's form ({}): the fitted loss grows with scale, and "
            "predictions beyond the data extrapolate that",
            param.name, s.params[j].value, law.formula));
      }
    }
  }
  // A free scale the fit drove to nothing: halving it moves no weighted point's prediction by
  // 1e-6 of itself, so its term is absent from the fitted law (A → 0 when the data cannot
  // separate N from D, say) and what the law says beyond the data rests on the other terms.
  if (s.termination != Termination::kFailure && !weighted.empty()) {
    std::vector<double> x(law.inputs.size());
    for (size_t j = 0; j < law.params.size(); ++j) {
      if (pinned[j] || law.params[j].kind != ParamKind::kLogScale) continue;
      std::vector<double> halved = s.theta;
      halved[j] -= std::log(2.0);
      double largest = 0;
      for (size_t i : weighted) {
        data.Point(i, x.data());
        const double fitted = law.Predict(x.data(), s.theta.data());
        largest = std::max(largest, std::abs(law.Predict(x.data(), halved.data()) - fitted) /
                                        std::abs(fitted));
      }
      if (!(largest >= kNegligibleTermShare)) {
        s.negligible_params.push_back(law.params[j].name);
        s.cautions.push_back(s.NegligibleCaution(law.params[j].name));
      }
    }
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
