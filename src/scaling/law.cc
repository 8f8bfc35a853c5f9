#include "mosaic/scaling/law.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "location.h"
#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"

namespace mosaic::scaling {

int Law::ParamIndex(std::string_view n) const {
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

int Law::InputIndex(std::string_view n) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

double Law::ToValue(int param, double theta) const {
  switch (params[param].kind) {
    case ParamKind::kLogScale:
      return std::exp(theta);
    case ParamKind::kLinear:
      return theta;
  }
  return theta;
}

double Law::ToTheta(int param, double value) const {
  switch (params[param].kind) {
    case ParamKind::kLogScale:
      if (!(value > 0)) {
        throw FieldError(At("--pin"), params[param].name, fmt::format("{}", value),
                         fmt::format("{} > 0 (a scale of law {})", params[param].name, name));
      }
      return std::log(value);
    case ParamKind::kLinear:
      return value;
  }
  return value;
}

bool Law::ExpectsNonNegative(int param) const {
  const LawParam& p = params[param];
  return p.kind == ParamKind::kLinear && !p.grid.empty() &&
         std::all_of(p.grid.begin(), p.grid.end(), [](double v) { return v >= 0; });
}

std::string Law::ValidateInput(int input, double x) const {
  const LawInput& in = inputs[input];
  switch (in.transform) {
    case InputTransform::kLog:
      if (std::isfinite(x) && x > 0) return "";
      return fmt::format("{} > 0 and finite", in.name);
    case InputTransform::kLogOneMinus:
      if (std::isfinite(x) && x >= 0 && x < 1) return "";
      return fmt::format("0 <= {} < 1", in.name);
    case InputTransform::kRaw:
      if (std::isfinite(x)) return "";
      return fmt::format("{} finite", in.name);
  }
  return "";
}

void Law::Features(const double* x, double* v) const {
  const size_t p = params.size();
  double t[kMaxLawParams];
  for (size_t i = 0; i < inputs.size(); ++i) {
    switch (inputs[i].transform) {
      case InputTransform::kLog:
        t[i] = std::log(x[i]);
        break;
      case InputTransform::kLogOneMinus:
        t[i] = std::log1p(-x[i]);
        break;
      case InputTransform::kRaw:
        t[i] = x[i];
        break;
    }
  }
  for (size_t k = 0; k < terms.size(); ++k) {
    double* row = v + k * p;
    for (size_t j = 0; j < p; ++j) row[j] = 0;
    for (const Factor& f : terms[k].factors) {
      double value = f.sign;
      for (int i : f.inputs) value *= t[i];
      row[f.param] += value;
    }
  }
}

double Law::Predict(const double* x, const double* theta) const {
  const size_t p = params.size();
  double v[kMaxLawParams * kMaxLawParams];
  Features(x, v);
  double z[kMaxLawParams];
  double top = -INFINITY;
  for (size_t k = 0; k < terms.size(); ++k) {
    z[k] = 0;
    // A scale pinned to zero has θ = −inf; it only enters its own terms (0·inf is skipped).
    for (size_t j = 0; j < p; ++j) {
      if (v[k * p + j] != 0) z[k] += v[k * p + j] * theta[j];
    }
    top = std::max(top, z[k]);
  }
  double sum = 0;
  for (size_t k = 0; k < terms.size(); ++k) sum += std::exp(z[k] - top);
  return std::exp(top + std::log(sum));
}

namespace {

std::vector<double> Range(double first, double last, double step) {
  std::vector<double> out;
  for (double v = first; v <= last + 1e-9; v += step) out.push_back(v);
  return out;
}

LawParam Scale(std::string name, std::vector<double> grid, std::string meaning) {
  return {std::move(name), ParamKind::kLogScale, std::move(grid), std::move(meaning)};
}

LawParam Linear(std::string name, std::vector<double> grid, std::string meaning) {
  return {std::move(name), ParamKind::kLinear, std::move(grid), std::move(meaning)};
}

const LawInput kN{"N", InputTransform::kLog, "parameters"};
const LawInput kD{"D", InputTransform::kLog, "training tokens"};
const LawInput kC{"C", InputTransform::kLog, "training FLOPs"};
const LawInput kS{"S", InputTransform::kLogOneMinus, "sparsity: inactive fraction of parameters"};
const LawInput kG{"G", InputTransform::kLog, "granularity"};
const LawInput kExperts{"E_count", InputTransform::kLog, "number of experts"};

Law Make(std::string name, std::string formula, std::string citation) {
  Law l;
  l.name = std::move(name);
  l.formula = std::move(formula);
  l.citation = std::move(citation);
  return l;
}

std::vector<Law> MakeLaws() {
  std::vector<Law> laws;
  const std::vector<double> kScaleGrid = Range(0, 25, 5);     // a, b ∈ {0, 5, …, 25}
  const std::vector<double> kFloorGrid = Range(-1, 1, 0.5);   // e ∈ {−1, −0.5, …, 1}
  const std::vector<double> kExponentGrid = Range(0, 2, 0.5); // α, β ∈ {0, 0.5, …, 2}
  {
    Law l = Make("compute", "L = E + A*C^(-alpha)",
          "compute-only power law with floor (Marin MoE recipe: L = 1.6 + 88.32*C^-0.0941)");
    l.inputs = {kC};
    l.params = {Scale("E", kFloorGrid, "irreducible loss"), Scale("A", kScaleGrid, "scale"),
                Linear("alpha", {0, 0.05, 0.1, 0.2, 0.5}, "compute exponent")};
    l.terms = {{{{0, 1, {}}}}, {{{1, 1, {}}, {2, -1, {0}}}}};
    laws.push_back(std::move(l));
  }
  {
    Law l = Make("chinchilla", "L = E + A/N^alpha + B/D^beta",
          "Hoffmann et al. 2022, eq. 2 and Approach 3 (Huber delta=1e-3 on log loss, "
          "4500-start grid, as re-run by Besiroglu et al. 2024)");
    l.inputs = {kN, kD};
    l.params = {Scale("E", kFloorGrid, "irreducible loss"),
                Scale("A", kScaleGrid, "parameter term scale"),
                Scale("B", kScaleGrid, "data term scale"),
                Linear("alpha", kExponentGrid, "parameter exponent"),
                Linear("beta", kExponentGrid, "data exponent")};
    l.terms = {{{{0, 1, {}}}}, {{{1, 1, {}}, {3, -1, {0}}}}, {{{2, 1, {}}, {4, -1, {1}}}}};
    laws.push_back(std::move(l));
  }
  {
    Law l = Make("sparse", "L = E + A*(1-S)^gamma/N^alpha + B/D^beta",
          "Chinchilla (Hoffmann et al. 2022) with a sparsity factor on the parameter term; N = "
          "active parameters, S = 1 - active/total");
    l.inputs = {kN, kD, kS};
    l.params = {Scale("E", kFloorGrid, "irreducible loss"),
                Scale("A", kScaleGrid, "active-parameter term scale"),
                Scale("B", kScaleGrid, "data term scale"),
                Linear("alpha", kExponentGrid, "active-parameter exponent"),
                Linear("beta", kExponentGrid, "data exponent"),
                Linear("gamma", {0, 1}, "sparsity exponent")};
    l.terms = {{{{0, 1, {}}}},
               {{{1, 1, {}}, {3, -1, {0}}, {5, 1, {2}}}},
               {{{2, 1, {}}, {4, -1, {1}}}}};
    laws.push_back(std::move(l));
  }
  {
    Law l = Make("abnar",
          "L = e + a*N^alpha + b*D^beta + c*(1-S)^lambda + d*(1-S)^delta*N^gamma",
          "Abnar et al. 2025, Parameters vs FLOPs: scaling laws for optimal sparsity for MoE "
          "language models (N total parameters, S sparsity; exponents alpha, beta, gamma < 0)");
    l.inputs = {kN, kD, kS};
    l.params = {Scale("e", {0, 1}, "irreducible loss"),
                Scale("a", {0, 5, 10}, "parameter term scale"),
                Scale("b", {0, 5, 10}, "data term scale"),
                Scale("c", {-2, 0}, "sparsity term scale"),
                Scale("d", {0, 5, 10}, "sparsity-parameter interaction scale"),
                Linear("alpha", {-0.5, -0.2}, "parameter exponent"),
                Linear("beta", {-0.5, -0.2}, "data exponent"),
                Linear("gamma", {-0.5, -0.2}, "interaction parameter exponent"),
                Linear("lambda", {0, 1}, "sparsity exponent"),
                Linear("delta", {0, 1}, "interaction sparsity exponent")};
    l.terms = {{{{0, 1, {}}}},
               {{{1, 1, {}}, {5, 1, {0}}}},
               {{{2, 1, {}}, {6, 1, {1}}}},
               {{{3, 1, {}}, {8, 1, {2}}}},
               {{{4, 1, {}}, {9, 1, {2}}, {7, 1, {0}}}}};
    laws.push_back(std::move(l));
  }
  {
    Law l = Make("krajewski", "L = c + (g/G^gamma + a)/N^alpha + b/D^beta",
          "Krajewski et al. 2024, Scaling laws for fine-grained mixture of experts, arXiv "
          "2402.07871 (G granularity)");
    l.inputs = {kN, kD, kG};
    l.params = {Scale("a", {0, 5, 10}, "parameter term scale"),
                Scale("b", {0, 5, 10}, "data term scale"),
                Scale("c", {0, 1}, "irreducible loss"),
                Scale("g", {0, 5, 10}, "granularity term scale"),
                Linear("alpha", {0.2, 0.5}, "parameter exponent"),
                Linear("beta", {0.2, 0.5}, "data exponent"),
                Linear("gamma", {0, 0.5}, "granularity exponent")};
    l.terms = {{{{2, 1, {}}}},
               {{{3, 1, {}}, {6, -1, {2}}, {4, -1, {0}}}},
               {{{0, 1, {}}, {4, -1, {0}}}},
               {{{1, 1, {}}, {5, -1, {1}}}}};
    laws.push_back(std::move(l));
  }
  {
    Law l = Make("clark", "log L = a*log N + b*log E + c*log N*log E + d",
          "Clark et al. 2022, Unified scaling laws for routed language models, eq. 1 (natural "
          "logs; E as given, no saturation transform)");
    l.inputs = {kN, kExperts};
    l.params = {Linear("a", {-0.1, 0}, "log-parameter slope"),
                Linear("b", {-0.1, 0}, "log-expert slope"),
                Linear("c", {0}, "interaction"), Linear("d", {1}, "intercept")};
    l.terms = {{{{3, 1, {}}, {0, 1, {0}}, {1, 1, {1}}, {2, 1, {0, 1}}}}};
    laws.push_back(std::move(l));
  }
  {
    Law l = Make("ludziejewski",
          "L = a*E^delta*N^(alpha + gamma*ln E) + b*E^omega*D^(beta + zeta*ln E) + c",
          "Ludziejewski et al. 2025, Joint MoE scaling laws, arXiv 2502.05172 (N active "
          "parameters, E_count the transformed expert count E-hat as given; alpha, beta < 0 as "
          "written)");
    l.inputs = {kN, kD, kExperts};
    l.params = {Scale("a", {0, 5, 10}, "parameter term scale"),
                Scale("b", {0, 5, 10}, "data term scale"),
                Scale("c", {0, 1}, "irreducible loss"),
                Linear("alpha", {-0.5, -0.2}, "parameter exponent"),
                Linear("beta", {-0.5, -0.2}, "data exponent"),
                Linear("gamma", {0}, "expert modulation of alpha"),
                Linear("delta", {0}, "expert exponent of the parameter term"),
                Linear("omega", {0}, "expert exponent of the data term"),
                Linear("zeta", {0}, "expert modulation of beta")};
    l.terms = {{{{0, 1, {}}, {6, 1, {2}}, {3, 1, {0}}, {5, 1, {2, 0}}}},
               {{{1, 1, {}}, {7, 1, {2}}, {4, 1, {1}}, {8, 1, {2, 1}}}},
               {{{2, 1, {}}}}};
    laws.push_back(std::move(l));
  }
  return laws;
}

}  // namespace

const std::vector<Law>& BuiltinLaws() {
  static const std::vector<Law> laws = MakeLaws();
  return laws;
}

std::vector<std::string> LawNames() {
  std::vector<std::string> names;
  for (const Law& l : BuiltinLaws()) names.push_back(l.name);
  return names;
}

const Law& FindLaw(std::string_view name) {
  for (const Law& l : BuiltinLaws()) {
    if (l.name == name) return l;
  }
  const std::vector<std::string> names = LawNames();
  throw InputError(fmt::format("--law: unknown law '{}'{}; known: {}", name,
                               DidYouMean(name, names), fmt::join(names, ", ")));
}

}  // namespace mosaic::scaling
