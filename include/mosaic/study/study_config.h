// An experiment-ladder study: a base model family, the rungs of the ladder, the training recipe
// that turns a model into a token budget, steps, FLOPs and wall-clock, and the options (arms) being
// compared. Loaded from TOML (data/studies/fsdp-vs-ep.toml is the seed-000 study, embedded).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/model/flops.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/study/decision_spec.h"

namespace mosaic {

// Which "active params" a study budgets with (model/param_count.h defines each).
enum class ActiveParamsConvention { kInclusive, kNoEmbedding, kMatmulNoEmbedding };
std::string_view ToString(ActiveParamsConvention convention);  // "inclusive", ...
std::optional<ActiveParamsConvention> ActiveParamsConventionFromString(std::string_view text);

// A field override whose value may be an integer expression in the rung's d_model:
// "d", "d/2", "2*d", "3*d/2" (products and exact quotients of integers and d, left to right).
struct ArmOverride {
  std::string field;
  std::string value;     // as written; resolved per rung by ResolveOverride
  SourceLocation where;  // its place in the study file
};

// One option being compared, e.g. "ep64": the base model with overrides, plus how it is run.
struct Arm {
  std::string name;
  std::string description;
  // The parallel layout, for reports, in perf/layout.h's syntax ("ep=64", "fsdp=64, moe_chunk=4").
  std::string layout;
  std::vector<ArmOverride> overrides;  // model fields that differ from the base model
};

// One rung of the ladder.
struct Rung {
  int64_t d_model = 0;
  int64_t racks = 1;                    // racks (scale-up domains) the rung trains on
  std::vector<ArmOverride> overrides;   // shape overrides for this rung (e.g. layers)
  SourceLocation d_model_where;         // where its d_model is written
};

// Eval and checkpoint cadence: rungs with d_model >= min_d_model use every_steps (of the rules a
// rung reaches, the one with the largest min_d_model, whatever their order; min_d_model is
// unique among a study's rules).
struct CadenceRule {
  int64_t min_d_model = 0;
  int64_t every_steps = 0;
};

// How token budgets are derived for arms other than the reference (the first arm).
enum class BudgetBasis {
  kReference,  // every arm trains the reference arm's token budget (as the seed-000 runs did)
  kOwnArm,     // each arm trains tokens_per_active_param × its own active params
};
std::string_view ToString(BudgetBasis basis);  // "reference", "arm"
std::optional<BudgetBasis> BudgetBasisFromString(std::string_view text);

struct StudyConfig {
  std::string name;
  std::string title;
  std::string origin;      // file path or "embedded data/studies/NAME.toml"
  // An embedded preset: the files it names beside it (its results) are read from the embedded
  // data, never from a file of that name under the working directory.
  bool embedded = false;
  std::string model;       // preset name or model TOML path of the ladder's base shape
  std::vector<Rung> rungs;
  std::vector<Arm> arms;   // the first arm is the reference; at least one
  std::vector<CadenceRule> cadence;

  int64_t tokens_per_active_param = 20;
  ActiveParamsConvention active_params_convention = ActiveParamsConvention::kMatmulNoEmbedding;
  BudgetBasis budget_basis = BudgetBasis::kReference;
  int64_t batch_seqs_per_rack = 1024;  // sequences per step per rack
  int64_t seq_len = 4096;              // training sequence length in tokens
  int64_t gpus_per_rack = 64;
  double peak_flops_per_gpu = 0;       // FLOP/s, dense bf16 (planning convention)
  double assumed_mfu = 0;              // fraction, e.g. 0.15
  FlopConvention flop_convention = FlopConvention::kLevanterTable;

  // The optional decision sections (study/decision_spec.h), read by `mosaic decide`.
  DecisionSpec decision;
};

// Names of the embedded studies (data/studies/*.toml), sorted.
std::vector<std::string> StudyNames();

// The name of the study `mosaic plan` runs with no argument.
inline constexpr std::string_view kDefaultStudy = "fsdp-vs-ep";

// Loads a study from a TOML file path, or an embedded study by name. Throws InputError with
// file:line:col, field, value and rule on any problem (syntax, unknown key with "did you mean",
// wrong type, non-positive counts, MFU outside (0, 1], empty rungs or arms, an arm layout that
// does not parse, two rungs of the same d_model, and in the decision sections an arm or rung the
// study does not have).
StudyConfig LoadStudy(std::string_view name_or_path);

// Parses study TOML text; `origin` names it in messages.
StudyConfig LoadStudyFromToml(std::string_view toml_text, const std::string& origin);

// The value of `override_value` for a rung with hidden size `d_model`. An integer field takes an
// integer or an expression of integers, d, * and / evaluated left to right exactly ("d/2",
// "3*d/2"); other fields are returned as written. Throws InputError naming the field, the value,
// the rung and the rule for a malformed expression, a division by zero, an inexact quotient
// ("d/3" with d = 1024) or a result outside the 64-bit range.
std::string ResolveOverride(const ArmOverride& override_value, int64_t d_model);

}  // namespace mosaic
