// A log directory shaped as seed 004 describes it (seven one-switch ablations of a 329M looped MoE,
// trained on one cluster; the base recipe's runs on another), written with the project's event
// writer, with every value known in closed form so that tests can check what the ablation job
// recovers:
//
//   ablation/<run>/events.out.tfevents.*  eval/loss every 250 steps, train/loss, train/grad_norm
//                                         and train/lr every 10 steps (float32 simple_value), and
//                                         module_diag/L<ll>/{attn,moe}/{act_norm_mean,
//                                         act_var_mean,grad_norm_mean} every 50 steps, the
//                                         gradient norms always 0 (not collected under FSDP2);
//   ablation/<run>/module_diag.csv        every 50 steps, `H/L<ll>/<branch>/cH<hh>/<metric>` for
//                                         10 layers, attn and moe, each of the run's loops and
//                                         act_norm, act_var, eff_rank, top_sv, mean_cos; eff_rank
//                                         and top_sv blank before step 500 (columns that appear
//                                         over time);
//   baseline/<run>/events.out.tfevents.*  the base recipe at H = 3, 6, 9, 12 (10000 steps) and
//                                         H = 3 over 5000 steps.
//
// nobpk_H9_mb8 hits a non-finite gradient at step 1500 and restarts from its step-1000 snapshot
// into a second event file (steps 1000–1500 logged twice, the second pass 0.004 higher in loss and
// 1% higher in the diagnostics there; later steps as the formulas below), then hits a second
// non-finite gradient at step 1852;
// nobpk_H12_mb8 spikes in train/loss at step 8390, hits a non-finite gradient at step 8400 and
// restarts from step 8000. The first pass is the result.
//
// eval/loss of an ablation run = BaseEvalLoss(step, its schedule, its loops)
//                                + effect × min(1, step / (schedule / 2))
//                                + kPlatformOffset + EvalNoise(step);
// eval/loss of a baseline run  = BaseEvalLoss(step, its schedule, its loops).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mosaic::testing {

inline constexpr double kPlatformOffset = 0.0375;  // ablation cluster − baseline cluster, nats
inline constexpr double kEvalNoise = 0.002;        // amplitude of the ablation runs' eval noise
inline constexpr int64_t kEvalEvery = 250;
inline constexpr int64_t kDiagEvery = 50;

struct SeedRun {
  std::string name;
  int loops = 3;
  int64_t steps = 10000;    // schedule length (WSD: 10% warmup, 10% linear decay to 0.1×)
  double effect = 0;        // the switch's effect on eval/loss once ramped up (ablation runs)
  std::string base_run;     // the baseline run it is meant to be compared with
  bool pair_flag = false;   // named with --pair (nobpk_H3 is the offset pair)
};

// The seven ablation runs, in name order.
const std::vector<SeedRun>& SeedAblationRuns();
// The baseline runs, in name order.
const std::vector<SeedRun>& SeedBaselineRuns();
const SeedRun& FindSeedRun(const std::string& name);

// The base recipe's eval loss at `step` of a `schedule_steps` schedule with `loops` loops.
double BaseEvalLoss(int64_t step, int64_t schedule_steps, int loops);
// ±kEvalNoise, alternating with the eval index step / kEvalEvery (+ at odd indexes: 250, 750, ...).
double EvalNoise(int64_t step);
// The eval loss an ablation run logs at `step` (first pass).
double AblationEvalLoss(const SeedRun& run, int64_t step);
// The run's learning rate at `step` (peak 2e-4).
double LearningRate(int64_t step, int64_t schedule_steps);

// Per-loop diagnostic values written to module_diag.csv (first pass).
double DiagActNorm(const SeedRun& run, int loop, int layer, bool moe, int64_t step);
double DiagEffRank(const SeedRun& run, int loop, int layer, bool moe, int64_t step);
// The act_norm growth rate of `loop`: act_norm ∝ 1 + rate × step / steps.
double DiagNormGrowthRate(const SeedRun& run, int loop);

// Writes <root>/ablation/<run>/... and <root>/baseline/<run>/... (creating the directories).
void WriteSeed004Logs(const std::string& root);

}  // namespace mosaic::testing
