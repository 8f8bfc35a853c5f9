#include "mosaic/scaling/projection.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "location.h"
#include "mosaic/util/error.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/spellcheck.h"

namespace mosaic::scaling {

InputPoint ParseInputPoint(std::string_view text) {
  InputPoint point;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = TrimSpaces(text.substr(pos, comma - pos));
    const size_t eq = item.find('=');
    double value = NAN;
    if (eq != std::string_view::npos && eq > 0) {
      value = ParseDecimal(TrimSpaces(item.substr(eq + 1))).value_or(NAN);
    }
    if (std::isnan(value)) {
      throw FlagError("--predict", text,
                      "INPUT=NUMBER[,INPUT=NUMBER...], e.g. N=70e9,D=1.4e12 or C=1e24");
    }
    const std::string name(TrimSpaces(item.substr(0, eq)));
    for (const auto& [seen, seen_value] : point) {
      if (seen == name) {
        throw FlagError("--predict", text,
                        fmt::format("each input at most once ({} is given as {} and as {})", name,
                                    seen_value, value));
      }
    }
    point.emplace_back(name, value);
    pos = comma + 1;
  }
  return point;
}

namespace {

bool HasNAndD(const Law& law) {
  return law.InputIndex("N") >= 0 && law.InputIndex("D") >= 0 && law.InputIndex("C") < 0;
}

double Theta(const Law& law, const std::vector<double>& theta, std::string_view name) {
  const int j = law.ParamIndex(name);
  return j < 0 ? NAN : law.ToValue(j, theta[j]);
}

}  // namespace

bool HasComputeOptimalFrontier(const Law& law) { return law.name == "chinchilla"; }

FrontierPoint ComputeOptimal(const Law& law, const std::vector<double>& theta,
                             double compute_flops, double flops_per_param_token) {
  if (!HasComputeOptimalFrontier(law)) {
    throw InputError(fmt::format(
        "law {}: the compute-optimal frontier needs the chinchilla law (inputs N and D)",
        law.name));
  }
  const double a = Theta(law, theta, "A"), b = Theta(law, theta, "B");
  const double alpha = Theta(law, theta, "alpha"), beta = Theta(law, theta, "beta");
  const double nd = compute_flops / flops_per_param_token;
  const double g = std::pow(alpha * a / (beta * b), 1 / (alpha + beta));
  FrontierPoint p;
  p.compute_flops = compute_flops;
  p.params = g * std::pow(nd, beta / (alpha + beta));
  p.tokens = nd / p.params;
  const double x[2] = {p.params, p.tokens};
  p.loss = law.Predict(x, theta.data());
  return p;
}

std::vector<double> ResolveInputs(const Law& law, const std::vector<double>& theta,
                                  const InputPoint& point, double flops_per_param_token,
                                  std::string_view caller) {
  std::vector<double> x(law.inputs.size(), NAN);
  std::vector<bool> given(law.inputs.size(), false);  // a NaN given is checked, not "missing"
  std::optional<double> compute;
  std::vector<std::string> names;
  for (const LawInput& in : law.inputs) names.push_back(in.name);
  for (const auto& [name, value] : point) {
    const int i = law.InputIndex(name);
    if (i >= 0) {
      x[i] = value;
      given[i] = true;
    } else if (name == "C" && HasNAndD(law)) {
      compute = value;
    } else {
      throw InputError(fmt::format("{}: law {} has no input '{}'{}; inputs: {}", caller, law.name,
                                   name, DidYouMean(name, names), fmt::join(names, ", ")));
    }
  }
  if (compute) {
    // The budget is checked as given: N or D derived from a bad one would be named instead.
    if (!(std::isfinite(*compute) && *compute > 0)) {
      throw FieldError(At(std::string(caller)), "C", fmt::format("{}", *compute),
                       "C > 0 and finite (training FLOPs)");
    }
    const int n = law.InputIndex("N"), d = law.InputIndex("D");
    const double nd = *compute / flops_per_param_token;
    if (given[n] && given[d]) {
      throw InputError(fmt::format(
          "{}: C = {:g} with both N = {:g} and D = {:g}. Violated constraint: C alone (the "
          "compute-optimal N and D), or C with one of N, D (C = {:g}·N·D gives the other)",
          caller, *compute, x[n], x[d], flops_per_param_token));
    }
    if (!given[n] && !given[d]) {
      if (!HasComputeOptimalFrontier(law)) {
        throw InputError(fmt::format(
            "{}: C = {:g} alone. Violated constraint: C alone needs the compute-optimal N and D, "
            "which are derived for the chinchilla law only; with law {} give C with one of N, D "
            "(C = {:g}·N·D gives the other)",
            caller, *compute, law.name, flops_per_param_token));
      }
      const FrontierPoint f = ComputeOptimal(law, theta, *compute, flops_per_param_token);
      x[n] = f.params;
      x[d] = f.tokens;
    } else if (!given[d]) {
      x[d] = nd / x[n];
    } else {
      x[n] = nd / x[d];
    }
    given[n] = given[d] = true;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (!given[i]) {
      throw InputError(fmt::format("{}: law {} needs input {} ({})", caller, law.name,
                                   law.inputs[i].name, law.inputs[i].meaning));
    }
    const std::string rule = law.ValidateInput(static_cast<int>(i), x[i]);
    if (!rule.empty()) {
      throw FieldError(At(std::string(caller)), law.inputs[i].name, fmt::format("{}", x[i]), rule);
    }
  }
  return x;
}

Prediction Predict(const Law& law, const FitSummary& fit, const BootstrapResult* bootstrap,
                   const InputPoint& point, double flops_per_param_token,
                   std::string_view caller) {
  Prediction p;
  p.point = point;
  p.inputs = ResolveInputs(law, fit.theta, point, flops_per_param_token, caller);
  p.loss = law.Predict(p.inputs.data(), fit.theta.data());
  if (bootstrap != nullptr && !bootstrap->theta.empty()) {
    std::vector<double> losses;
    for (const auto& th : bootstrap->theta) {
      // A point given by C is re-allocated per resample: the interval covers the allocation too.
      const std::vector<double> x = ResolveInputs(law, th, point, flops_per_param_token, caller);
      losses.push_back(law.Predict(x.data(), th.data()));
    }
    p.interval = PercentileInterval(std::move(losses), bootstrap->confidence);
  }
  return p;
}

double LossAtCompute(const Law& law, const std::vector<double>& theta, double compute_flops,
                     double flops_per_param_token) {
  if (law.inputs.size() == 1 && law.inputs[0].name == "C") {
    return law.Predict(&compute_flops, theta.data());
  }
  if (HasComputeOptimalFrontier(law)) {
    return ComputeOptimal(law, theta, compute_flops, flops_per_param_token).loss;
  }
  throw InputError(fmt::format(
      "law {}: comparing arms needs a loss at a budget C: use --law compute or chinchilla",
      law.name));
}

double ComputeForLoss(const Law& law, const std::vector<double>& theta, double loss,
                      double flops_per_param_token) {
  double lo = std::log(1e-10), hi = std::log(1e60);
  if (LossAtCompute(law, theta, std::exp(hi), flops_per_param_token) > loss) return INFINITY;
  if (LossAtCompute(law, theta, std::exp(lo), flops_per_param_token) < loss) return 0;
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (LossAtCompute(law, theta, std::exp(mid), flops_per_param_token) > loss) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return std::exp(0.5 * (lo + hi));
}

namespace {

double Multiplier(const Law& law, const std::vector<double>& base,
                  const std::vector<double>& arm, double c, double k) {
  const double arm_loss = LossAtCompute(law, arm, c, k);
  const int e = law.ParamIndex("E"), alpha = law.ParamIndex("alpha");
  if (law.name == "compute" && e >= 0 && alpha >= 0) {
    const double floor = law.ToValue(e, base[e]);
    if (!(arm_loss > floor)) return INFINITY;
    return std::pow((LossAtCompute(law, base, c, k) - floor) / (arm_loss - floor),
                    1 / base[alpha]);
  }
  return ComputeForLoss(law, base, arm_loss, k) / c;
}

}  // namespace

Comparison CompareArms(const Law& law, const FitSummary& base, const FitSummary& arm,
                       double compute_flops, double tokens_per_s_ratio,
                       const BootstrapResult* base_bootstrap, const BootstrapResult* arm_bootstrap,
                       double confidence, double flops_per_param_token) {
  Comparison c;
  c.compute_flops = compute_flops;
  c.base_loss = LossAtCompute(law, base.theta, compute_flops, flops_per_param_token);
  c.arm_loss = LossAtCompute(law, arm.theta, compute_flops, flops_per_param_token);
  c.multiplier = Multiplier(law, base.theta, arm.theta, compute_flops, flops_per_param_token);
  c.definition =
      law.name == "compute" && law.ParamIndex("E") >= 0 && law.ParamIndex("alpha") >= 0
          ? "((L_base − E)/(L_arm − E))^(1/alpha), the base's E and alpha"
          : fmt::format("C'/C, C' the budget at which the base's compute-optimal loss "
                        "(C = {:g}·N·D) reaches the arm's",
                        flops_per_param_token);
  c.wall_clock_multiplier = c.multiplier * tokens_per_s_ratio;
  if (!std::isfinite(c.multiplier)) {
    const int e = law.ParamIndex("E");
    c.undefined_reason = fmt::format(
        "the arm's loss {:.5f} at C = {:.3g} is at or below the lowest loss the base's fit "
        "reaches{}: no budget of the base matches it",
        c.arm_loss, compute_flops,
        e >= 0 ? fmt::format(" (its E = {:.5f})", law.ToValue(e, base.theta[e])) : "");
  }
  if (base_bootstrap != nullptr && arm_bootstrap != nullptr && !base_bootstrap->theta.empty() &&
      !arm_bootstrap->theta.empty()) {
    // Matched by resample index; both lists are in increasing order of it.
    const BootstrapResult& p = *base_bootstrap;
    const BootstrapResult& q = *arm_bootstrap;
    std::vector<double> m, w;
    for (size_t i = 0, j = 0; i < p.theta.size() && j < q.theta.size();) {
      const int a = i < p.resample.size() ? p.resample[i] : static_cast<int>(i);
      const int b = j < q.resample.size() ? q.resample[j] : static_cast<int>(j);
      if (a < b) {
        ++i;
      } else if (b < a) {
        ++j;
      } else {
        const double v = Multiplier(law, p.theta[i++], q.theta[j++], compute_flops,
                                    flops_per_param_token);
        m.push_back(v);
        w.push_back(v * tokens_per_s_ratio);
      }
    }
    c.multiplier_interval = PercentileInterval(std::move(m), confidence);
    c.wall_clock_interval = PercentileInterval(std::move(w), confidence);
  }
  return c;
}

std::vector<double> PointCompute(const Law& law, const FitData& data,
                                 double flops_per_param_token) {
  std::vector<double> c(data.size(), NAN);
  const int ci = law.InputIndex("C"), n = law.InputIndex("N"), d = law.InputIndex("D");
  for (size_t i = 0; i < data.size(); ++i) {
    if (ci >= 0) {
      c[i] = data.inputs[ci][i];
    } else if (n >= 0 && d >= 0) {
      c[i] = flops_per_param_token * data.inputs[n][i] * data.inputs[d][i];
    }
  }
  return c;
}

std::string HoldoutSelection::Describe(double threshold_flops) const {
  const std::string at = fmt::format("compute >= {:.4g}", threshold_flops);
  if (above_flops > 0) return at + " (--holdout-above)";
  if (fraction > 0) {
    return fmt::format("{} (the {:g}% of points with the largest compute, rounded up to whole "
                       "points)",
                       at, 100 * fraction);
  }
  return fmt::format("{} (within a factor {:g} of the largest budget)", at, budget_ratio);
}

HoldoutResult Holdout(const Law& law, const FitData& data, const FitOptions& options,
                      double budget_ratio, double flops_per_param_token) {
  HoldoutSelection selection;
  selection.budget_ratio = budget_ratio;
  return Holdout(law, data, options, selection, flops_per_param_token);
}

HoldoutResult Holdout(const Law& law, const FitData& data, const FitOptions& options,
                      const HoldoutSelection& selection, double flops_per_param_token) {
  // Points of weight 0 are left out of the fit; they are neither trained on nor scored.
  if (!data.weight.empty() &&
      std::any_of(data.weight.begin(), data.weight.end(), [](double w) { return !(w > 0); })) {
    std::vector<size_t> weighted;
    for (size_t i = 0; i < data.size(); ++i) {
      if (data.weight[i] > 0) weighted.push_back(i);
    }
    return Holdout(law, data.Subset(weighted), options, selection, flops_per_param_token);
  }
  const std::vector<double> compute = PointCompute(law, data, flops_per_param_token);
  if (compute.empty() || std::isnan(compute[0])) {
    throw InputError(fmt::format(
        "--holdout: law {} has neither input C nor inputs N and D to order points by budget",
        law.name));
  }
  HoldoutResult h;
  if (selection.above_flops > 0) {
    h.threshold_flops = selection.above_flops;
  } else if (selection.fraction > 0) {
    if (!(selection.fraction < 1)) {
      throw FlagError("--holdout-fraction", fmt::format("{}", selection.fraction),
                      "0 < fraction < 1");
    }
    std::vector<double> sorted = compute;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const size_t count = std::max<size_t>(
        1, static_cast<size_t>(std::ceil(selection.fraction * static_cast<double>(sorted.size()) -
                                         1e-9)));
    h.threshold_flops = sorted[std::min(count, sorted.size()) - 1];
  } else {
    if (!(selection.budget_ratio >= 1)) {
      throw FlagError("--holdout-ratio", fmt::format("{}", selection.budget_ratio),
                      "ratio >= 1");
    }
    h.threshold_flops =
        *std::max_element(compute.begin(), compute.end()) / selection.budget_ratio;
  }
  std::vector<size_t> train, test;
  for (size_t i = 0; i < data.size(); ++i) {
    (compute[i] >= h.threshold_flops ? test : train).push_back(i);
  }
  h.train_points = static_cast<int>(train.size());
  h.held_out_points = static_cast<int>(test.size());
  if (test.empty() || train.empty()) {
    throw InputError(fmt::format(
        "--holdout: the rule {} holds out {} of the {} points; it must leave points on both "
        "sides (largest compute {:.4g})",
        selection.Describe(h.threshold_flops), test.size(), data.size(),
        *std::max_element(compute.begin(), compute.end())));
  }
  try {
    h.fit = Fit(law, data.Subset(train), options);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--holdout: the {} of {} points it trains on (those outside the "
                                 "rule {}) cannot be fitted: {}",
                                 train.size(), data.size(), selection.Describe(h.threshold_flops),
                                 e.what()));
  }
  std::vector<double> x(law.inputs.size());
  for (size_t i : test) {
    data.Point(i, x.data());
    const double predicted = law.Predict(x.data(), h.fit.theta.data());
    const double observed = data.loss[i];
    h.mean_abs_error += std::fabs(predicted - observed);
    h.mean_rel_error += std::fabs(predicted - observed) / observed;
    const double log_error = std::log(predicted) - std::log(observed);
    h.rms_log_error += log_error * log_error;
  }
  if (!test.empty()) {
    const double n = static_cast<double>(test.size());
    h.mean_abs_error /= n;
    h.mean_rel_error /= n;
    h.rms_log_error = std::sqrt(h.rms_log_error / n);
  }
  return h;
}

}  // namespace mosaic::scaling
