// The experiment-ladder planner: for every arm of a study and every rung, the model's shape and
// active parameters, the token budget, steps, training FLOPs and the estimated wall-clock
// (seed 000; docs/accounting.md "The ladder table of seed 000"):
//   token budget  = tokens_per_active_param × active params (the study's convention; of the
//                   reference arm unless budget_basis = "arm")
//   steps         = round(token budget / (batch_seqs_per_rack × racks × seq_len)), half to even
//   train FLOPs   = 3 × forward FLOPs per token (model/flops.h, the study's convention) × budget
//   est. time     = train FLOPs / (assumed_mfu × peak_flops_per_gpu × gpus_per_rack × racks)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mosaic/study/study_config.h"

namespace mosaic {

struct LadderRow {
  std::string arm;
  int64_t d_model = 0;
  int64_t layers = 0;
  int64_t racks = 0;
  int64_t active_params = 0;            // under study.active_params_convention
  int64_t active_params_inclusive = 0;  // embedding and lm_head included
  int64_t total_params = 0;
  int64_t token_budget = 0;             // tokens
  int64_t tokens_per_step = 0;
  int64_t steps = 0;
  int64_t forward_flops_per_token = 0;                 // study's FLOP convention
  int64_t forward_flops_per_token_levanter_table = 0;  // each convention, for comparison
  int64_t forward_flops_per_token_physical = 0;
  double train_flops = 0;                              // study's FLOP convention
  double train_flops_levanter_table = 0;
  double train_flops_physical = 0;
  double est_hours = 0;
  int64_t eval_every_steps = 0;  // 0 when the study sets no cadence
  int64_t evals = 0;             // steps / eval_every_steps, rounded down
  std::vector<std::string> overrides;  // model overrides applied for this arm and rung
};

struct LadderPlan {
  StudyConfig study;
  std::vector<LadderRow> rows;  // arm-major: every rung of arms[0], then of arms[1], ...
};

// Plans every (arm, rung). Throws InputError when a rung's model is invalid (the message names the
// study file, the arm, the rung and the rule), when a token budget, tokens per step or GPU count
// passes 64 bits, or when a rung's step budget rounds to 0 (its token budget is under half a
// step).
LadderPlan PlanLadder(const StudyConfig& study);

// Round-half-to-even integer quotient (Python's round(a / b)) for a >= 0, b > 0.
int64_t RoundDivideHalfEven(int64_t numerator, int64_t denominator);

}  // namespace mosaic
