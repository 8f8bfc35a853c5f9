// The decision job (seed 000, `mosaic decide`): joins the ladder plan, each arm's results per
// rung, per-arm scaling-law fits with bootstrap intervals, throughput (measured and from the
// performance model) and run health into the criteria of the study's rule and a verdict.
//
// Effective compute (docs: scaling; Marin's "equal-TPS speedup"): with the default arm's fit
// L_d(C), the challenger's loss L at compute C is worth C' = L_d⁻¹(L); the multiplier is C'/C.
// For L = E + A·C^(−α) with E and α pinned this is ((L_d(C) − E)/(L − E))^(1/α), independent of A:
// at a rung both arms ran, the observed losses give the study's printed figure (1.177 for EP64 and
// 0.988 for FSDP chunk 4 at d768). At the target, both arms' fits are evaluated at the target
// budget; the wall-clock advantage multiplies by the tokens/s ratio.
// C of a rung is the reference arm's training FLOPs in the study's convention (study/ladder.h):
// the ladder's matched budget, as the study's own conversion uses it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mosaic/decision/criteria.h"
#include "mosaic/perf/perf_request.h"
#include "mosaic/scaling/bootstrap.h"
#include "mosaic/scaling/fit.h"
#include "mosaic/study/ladder.h"

namespace mosaic {

// One arm at one rung.
struct RungResult {
  std::string arm;
  int64_t d_model = 0;
  double compute_flops = 0;              // the rung's C (reference arm's training FLOPs)
  std::optional<double> loss_dropless;
  std::optional<double> loss_with_drop;
  std::optional<double> dropped_share;   // of routed assignments, in training
  std::string run;                       // run name, when known
  std::string source;                    // "file:line" or "logdir/run (tag, last k)"
  std::vector<std::string> anomalies;    // from run health (logs only)
  bool logs_grad_norm = false;           // its log has a gradient-norm tag (runs::IsGradNormTag)

  // The loss the decision uses (spec.results.loss), or nullopt.
  std::optional<double> Loss(DecisionLoss which) const {
    return which == DecisionLoss::kDropless ? loss_dropless : loss_with_drop;
  }
};

// A per-arm scaling-law fit and its projection to the target.
struct ArmFit {
  std::string arm;
  std::vector<int64_t> rungs;            // the rungs fitted
  bool fitted = false;
  std::string why_not;                   // when not fitted
  std::string settle;                    // when not fitted: what would let the arm be fitted
  scaling::FitSummary fit;
  std::optional<scaling::BootstrapResult> bootstrap;
  // Why the arm has no bootstrap intervals though [fit] bootstrap asks for them ("ep64 is fitted
  // on one rung"); "" when it has them or none were asked.
  std::string no_interval;
  double target_loss = 0;                // at the target budget
  std::optional<scaling::Interval> target_loss_interval;

  // The fit's cautions, then the bootstrap's (scaling::FitSummary::cautions,
  // scaling::BootstrapResult::cautions).
  std::vector<std::string> Cautions() const {
    std::vector<std::string> all = fit.cautions;
    if (bootstrap) all.insert(all.end(), bootstrap->cautions.begin(), bootstrap->cautions.end());
    return all;
  }
};

// An arm's tokens/s under one throughput source.
struct ArmThroughput {
  std::string arm;
  bool known = false;
  std::string why_not;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;                        // 0 when not known
  double dropped_share = -1;             // < 0 when not known
  std::string source;                    // measured row's source, or the layout
  std::optional<LayoutEstimate> estimate;  // the performance model's estimate
};

// The projection and the criteria under one throughput source.
struct Scenario {
  std::string name;                      // "measured", "model", or "none" (no throughput given)
  std::string description;
  std::vector<ArmThroughput> arms;       // every arm of the study, in study order
  std::optional<double> tokens_per_s_ratio;  // challenger over default
  std::optional<double> wall_clock;          // effective compute × ratio
  std::optional<scaling::Interval> wall_clock_interval;
  std::optional<double> loss_advantage;      // (L_d(C) − L_c(r·C)) / L_d(C)
  std::vector<CriterionResult> criteria;
  Verdict verdict;
  // What the ratio leaves out, one sentence each: an arm's tokens/s measured while dropping
  // tokens when the deciding losses are dropless.
  std::vector<std::string> notes;

  // The source in words, for headings: "measured throughput", "model throughput", "no
  // throughput".
  std::string ThroughputText() const {
    return name == "none" ? "no throughput" : name + " throughput";
  }
};

struct NoiseSummary {
  NoiseSpec spec;
  double default_loss = 0;               // default arm's loss at the noise rung (0: unknown)
  double derived_effective_compute = 0;  // the loss spread as effective compute there (fraction)
  double used_effective_compute = 0;     // stated when given, else derived
};

struct Decision {
  StudyConfig study;
  LadderPlan plan;
  std::vector<RungResult> results;       // arm-major, rung order; only (arm, rung) with a result
  std::vector<std::string> result_notes; // e.g. runs not found in the logs
  bool logs_read = false;
  scaling::Law law;
  std::vector<ArmFit> fits;              // default arm first, then the challenger
  // Effective compute of every arm against the default at each rung both ran (arm, d, value).
  struct RungMultiplier {
    std::string arm;
    int64_t d_model = 0;
    double effective_compute = 0;
  };
  std::vector<RungMultiplier> rung_multipliers;
  double target_compute_flops = 0;
  std::string target_compute_rule;       // how it was obtained
  // Set when the target budget is below every fitted rung's training FLOPs (the default arm's,
  // in the study's convention): the projection runs the law below the data. "" otherwise.
  std::string target_below_ladder;
  std::optional<double> effective_compute;  // at the target
  std::optional<scaling::Interval> effective_compute_interval;
  // Whether the two arms' bootstraps are paired: both fitted on the same rungs, each resample
  // draws the same rungs of both (BootstrapOptions::run_keys), so what their losses share at a
  // rung (its data, its seed) cancels in the interval; else each arm is resampled on its own.
  bool paired_bootstrap = false;
  std::string missing_fit;               // why effective_compute is missing
  std::string settle_fit;                // what would give it ("" when it is known)
  // With [fit] rungs = "common": the same projection with each arm fitted on every rung it ran
  // (a sensitivity figure, shown beside the deciding one), and which rungs those were.
  std::optional<double> effective_compute_all_rungs;
  std::string all_rungs_note;
  std::optional<NoiseSummary> noise;
  bool inside_noise = false;             // the projected effective-compute gain is inside the noise
  std::vector<Scenario> scenarios;       // measured first, then model; one at least

  // The result of `arm` at rung `d_model`, or nullptr.
  const RungResult* Find(const std::string& arm, int64_t d_model) const;
};

struct DecideOptions {
  int threads = 2;  // bootstrap threads
};

// Runs the decision job on `study`. Throws InputError when the study has no [results] or [rule],
// a results file or log directory cannot be read, a CSV names an unknown arm or rung or has a
// malformed cell, or a target model, device, profile or layout is invalid (each located in its
// file). Missing results are not errors: they make criteria UNKNOWN.
Decision Decide(const StudyConfig& study, const DecideOptions& options = {});

// The files a study names as it is given (`study_path`: its file or embedded name): the study,
// its model, its [target] device and arms' models, its results CSV and every log file under its
// results directories, so that no command's output overwrites one (plan and decide refuse an
// --output among them).
std::vector<std::string> StudyInputFiles(const std::string& study_path, const StudyConfig& study);

}  // namespace mosaic
