// Scaling-law forms whose logarithm is a log-sum-exp of terms linear in the fitted parameters:
//
//   log L̂(x; θ) = LSE_k( v_k(x) · θ ),   v_k(x) = Σ_f sign_f · Π log-inputs_f · e_{param_f}
//
// Every published form mosaic fits has this shape once positive scales are parametrised by their
// logarithm (A = e^a, as in Hoffmann et al. 2022, Approach 3, and Besiroglu et al. 2024):
//   compute      L = E + A·C^(−alpha)                         (Marin MoE recipe; Kaplan-style)
//   chinchilla   L = E + A/N^alpha + B/D^beta                 (Hoffmann et al. 2022, eq. 2)
//   sparse       L = E + A·(1−S)^gamma/N^alpha + B/D^beta     (Chinchilla with a sparsity factor)
//   abnar        L = e + a·N^alpha + b·D^beta + c·(1−S)^lambda + d·(1−S)^delta·N^gamma
//                                                              (Abnar et al. 2025, "Parameters vs
//                                                              FLOPs", ICML 2025, arXiv 2501.12370:
//                                                              the sparsity-aware law; exponents
//                                                              alpha, beta, gamma < 0 as written)
//   krajewski    L = c + (g/G^gamma + a)/N^alpha + b/D^beta    (Krajewski, Ludziejewski et al. 2024,
//                                                              "Scaling Laws for Fine-Grained MoE",
//                                                              arXiv 2402.07871 / ICML 2024: the
//                                                              joint law in N, D and granularity G)
//   clark        log L = a·log N + b·log E + c·log N·log E + d (Clark et al. 2022, "Unified Scaling
//                                                              Laws for Routed Language Models",
//                                                              eq. 1, the bilinear law; N the dense
//                                                              base model's parameters, E experts,
//                                                              used as given: derive the saturated
//                                                              Ê with --column when wanted. Natural
//                                                              logs here: coefficients fitted with
//                                                              base-10 logs map as a, b unchanged,
//                                                              c/ln 10, d·ln 10)
//   ludziejewski L = a·Ê^delta·N^(alpha + gamma·ln Ê) + b·Ê^omega·D^(beta + zeta·ln Ê) + c
//                                                              (Ludziejewski et al. 2025, "Joint MoE
//                                                              Scaling Laws", ICML 2025, arXiv
//                                                              2502.05172; N active parameters, Ê
//                                                              the paper's transformed expert count,
//                                                              read from E_count as given; alpha,
//                                                              beta < 0 as written)
// Parameter names follow each paper. Inputs: N parameters (active for MoE forms unless stated),
// D tokens, C FLOPs, S sparsity = inactive fraction of parameters (MOSAIC definition), G
// granularity, E_count expert count.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mosaic::scaling {

// The most parameters a law may have (fixed-capacity buffers in the solver).
inline constexpr int kMaxLawParams = 12;

// How a parameter is stored in θ. kLogScale: θ = log(value), value > 0 (A, B, E scales).
// kLinear: θ = value (exponents, and the coefficients of Clark's log-linear form).
enum class ParamKind { kLogScale, kLinear };

// How an input enters the features. kLog: log(x), x > 0. kLogOneMinus: log(1 − x), 0 <= x < 1
// (sparsity S, so that (1−S)^gamma is linear in gamma after the log).
// kRaw: x as given, any finite value (the inputs of a user-written expression, which never go
// through the features).
enum class InputTransform { kLog, kLogOneMinus, kRaw };

struct LawParam {
  std::string name;           // as in the paper: "E", "A", "alpha"
  ParamKind kind = ParamKind::kLogScale;
  std::vector<double> grid;   // default multi-start values of θ (log scale for kLogScale)
  std::string meaning;
};

struct LawInput {
  std::string name;  // column name in the data: "N", "D", "C", "S", "G", "E_count"
  InputTransform transform = InputTransform::kLog;
  std::string meaning;
};

// One additive piece of a term's exponent: sign · θ[param] · Π_{i in inputs} t_i(x), where t_i is
// the transformed input i (an empty product is 1).
struct Factor {
  int param = 0;
  double sign = 1;
  std::vector<int> inputs;
};

struct LawTerm {
  std::vector<Factor> factors;
};

struct Law {
  std::string name;
  std::string formula;   // human-readable, e.g. "L = E + A/N^alpha + B/D^beta"
  std::string citation;  // paper and equation
  std::vector<LawInput> inputs;
  std::vector<LawParam> params;
  std::vector<LawTerm> terms;

  // Index of the parameter or input called `name`, or -1.
  int ParamIndex(std::string_view name) const;
  int InputIndex(std::string_view name) const;

  // The parameter's value from its θ coordinate (exp for kLogScale) and back. ToTheta throws
  // InputError when a kLogScale value is not positive.
  double ToValue(int param, double theta) const;
  double ToTheta(int param, double value) const;

  // True for a kLinear parameter whose start grid is all >= 0: an exponent the law's form expects
  // non-negative (a negative one makes the loss grow with scale).
  bool ExpectsNonNegative(int param) const;

  // Predicted loss at raw inputs x (one value per input, in `inputs` order) for θ.
  double Predict(const double* x, const double* theta) const;

  // Fills v (terms.size() × params.size(), row-major) with the term feature vectors at raw
  // inputs x. Assumes x is valid (see ValidateInput).
  void Features(const double* x, double* v) const;

  // Empty when x_i is a valid value for input i, else the violated rule ("N > 0", "0 <= S < 1").
  std::string ValidateInput(int input, double x) const;
};

// The built-in laws, by name ("compute", "chinchilla", "sparse", "abnar", "krajewski", "clark",
// "ludziejewski"). FindLaw throws InputError with a did-you-mean for an unknown name.
const std::vector<Law>& BuiltinLaws();
const Law& FindLaw(std::string_view name);
// The names of BuiltinLaws(), in the same order.
std::vector<std::string> LawNames();

}  // namespace mosaic::scaling
