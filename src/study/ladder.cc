#include "mosaic/study/ladder.h"

#include <fmt/format.h>

#include "mosaic/model/param_count.h"

namespace mosaic {

int64_t RoundDivideHalfEven(int64_t numerator, int64_t denominator) {
  const int64_t quotient = numerator / denominator;
  const int64_t twice_remainder = 2 * (numerator % denominator);
  if (twice_remainder > denominator) return quotient + 1;
  if (twice_remainder == denominator) return quotient + (quotient % 2);
  return quotient;
}

namespace {

int64_t ActiveParams(const ParamCount& p, ActiveParamsConvention convention) {
  switch (convention) {
    case ActiveParamsConvention::kInclusive: return p.active_params;
    case ActiveParamsConvention::kNoEmbedding: return p.active_params_no_embedding;
    case ActiveParamsConvention::kMatmulNoEmbedding: return p.active_params_matmul_no_embedding;
  }
  return 0;
}

__extension__ using Int128 = __int128;

// 3 × forward × tokens, computed exactly in 128 bits and rounded once to double.
double TrainFlops(int64_t forward_flops_per_token, int64_t tokens) {
  const Int128 exact = static_cast<Int128>(3) * forward_flops_per_token * tokens;
  return static_cast<double>(exact);
}

// a × b, or an InputError naming the study, the rung, the product and its factors when it passes
// 64 bits (a token budget or a batch no ladder can have).
int64_t CheckedProduct(const StudyConfig& study, const std::string& where, std::string_view what,
                       std::string_view factors, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw InputError(fmt::format("{}: {}: {} = {} = {} × {} passes 2^63 - 1; lower {}",
                                 study.origin, where, what, factors, a, b, factors));
  }
  return product;
}

// The rule with the largest min_d_model the rung reaches, in whatever order the file lists them.
int64_t EvalEvery(const StudyConfig& study, int64_t d_model) {
  int64_t every = 0, from = -1;
  for (const CadenceRule& rule : study.cadence) {
    if (d_model >= rule.min_d_model && rule.min_d_model > from) {
      every = rule.every_steps;
      from = rule.min_d_model;
    }
  }
  return every;
}

}  // namespace

LadderPlan PlanLadder(const StudyConfig& study) {
  LadderPlan plan;
  plan.study = study;
  std::vector<int64_t> reference_budgets;
  for (size_t a = 0; a < study.arms.size(); ++a) {
    const Arm& arm = study.arms[a];
    for (size_t r = 0; r < study.rungs.size(); ++r) {
      const Rung& rung = study.rungs[r];
      LadderRow row;
      row.arm = arm.name;
      row.d_model = rung.d_model;
      row.racks = rung.racks;
      // The rung's width, from the study.
      std::vector<FieldOverride> overrides = {
          {"d_model", std::to_string(rung.d_model), SourceLocation{study.origin, 0, 0, ""}}};
      // An override that does not resolve at this rung is placed at its key.
      auto placed = [&](const SourceLocation& where) {
        SourceLocation file;
        file.origin = study.origin;
        return where.origin.empty() ? file : where;
      };
      for (const std::vector<ArmOverride>* list : {&rung.overrides, &arm.overrides}) {
        for (const ArmOverride& o : *list) {
          try {
            overrides.push_back({o.field, ResolveOverride(o, rung.d_model), o.where});
          } catch (const InputError& error) {
            throw LocatedError(placed(o.where), fmt::format("arm '{}', rung d{}: {}", arm.name,
                                                            rung.d_model, error.what()));
          }
        }
      }
      for (size_t i = 1; i < overrides.size(); ++i) {
        row.overrides.push_back(overrides[i].field + "=" + overrides[i].value);
      }
      ModelSpec spec;
      try {
        spec = LoadModel(study.model, overrides);
      } catch (const InputError& error) {
        // Which of the rung's shape and the arm's overrides broke the model is the rule's to say
        // (listed after "after", each where it was written). The error is placed at the study's
        // line that set the field (the override's key: "study.toml:23:17: arm 'a', rung d768:
        // top_k = …"); a rule located at no line of the study nor shown on a line of its own
        // (the rung's shape alone) at the rung's d_model; any other (a line of the model's own
        // file) in the study, its own location kept in its text.
        const std::string context = fmt::format("arm '{}', rung d{}", arm.name, rung.d_model);
        const SourceLocation* where = error.where();
        const bool in_study = where != nullptr && where->origin == study.origin;
        const bool unlocated =
            where == nullptr || (where->source_line.empty() && (!in_study || where->line == 0));
        if (unlocated && !rung.d_model_where.origin.empty()) {
          throw LocatedError(rung.d_model_where, fmt::format("{}: {}", context,
                                                             in_study ? error.body()
                                                                      : error.what()));
        }
        if (in_study) throw LocatedError(*where, fmt::format("{}: {}", context, error.body()));
        throw InputError(fmt::format("{}: {}: {}", study.origin, context, error.what()));
      }
      const ParamCount params = CountParams(spec.config);
      row.layers = spec.config.layers;
      row.active_params = ActiveParams(params, study.active_params_convention);
      row.active_params_inclusive = params.active_params;
      row.total_params = params.total_params;
      const std::string where = fmt::format("arm '{}', rung d{}", arm.name, rung.d_model);
      const int64_t own_budget =
          CheckedProduct(study, where, "token budget", "tokens_per_active_param × active params",
                         study.tokens_per_active_param, row.active_params);
      if (a == 0) reference_budgets.push_back(own_budget);
      row.token_budget =
          study.budget_basis == BudgetBasis::kReference ? reference_budgets[r] : own_budget;
      row.tokens_per_step = CheckedProduct(
          study, where, "tokens per step", "batch_seqs_per_rack × racks × seq_len",
          CheckedProduct(study, where, "sequences per step", "batch_seqs_per_rack × racks",
                         study.batch_seqs_per_rack, rung.racks),
          study.seq_len);
      const int64_t gpus = CheckedProduct(study, where, "GPUs", "gpus_per_rack × racks",
                                          study.gpus_per_rack, rung.racks);
      row.steps = RoundDivideHalfEven(row.token_budget, row.tokens_per_step);
      if (row.steps == 0) {
        throw InputError(fmt::format(
            "{}: {}: the step budget rounds to 0 steps: a token budget of {} is less than half "
            "a step of {} tokens (batch_seqs_per_rack {} × racks {} × seq_len {}); every rung "
            "needs at least one step",
            study.origin, where, row.token_budget, row.tokens_per_step, study.batch_seqs_per_rack,
            rung.racks, study.seq_len));
      }
      row.forward_flops_per_token_levanter_table =
          CountFlops(spec.config, {FlopConvention::kLevanterTable, study.seq_len})
              .forward_flops_per_token;
      row.forward_flops_per_token_physical =
          CountFlops(spec.config, {FlopConvention::kPhysical, study.seq_len})
              .forward_flops_per_token;
      row.forward_flops_per_token = study.flop_convention == FlopConvention::kLevanterTable
                                        ? row.forward_flops_per_token_levanter_table
                                        : row.forward_flops_per_token_physical;
      row.train_flops_levanter_table =
          TrainFlops(row.forward_flops_per_token_levanter_table, row.token_budget);
      row.train_flops_physical = TrainFlops(row.forward_flops_per_token_physical, row.token_budget);
      row.train_flops = TrainFlops(row.forward_flops_per_token, row.token_budget);
      const double cluster_flops_per_s =
          study.assumed_mfu * study.peak_flops_per_gpu * static_cast<double>(gpus);
      row.est_hours = row.train_flops / cluster_flops_per_s / 3600.0;
      row.eval_every_steps = EvalEvery(study, rung.d_model);
      row.evals = row.eval_every_steps > 0 ? row.steps / row.eval_every_steps : 0;
      plan.rows.push_back(std::move(row));
    }
  }
  return plan;
}

}  // namespace mosaic
