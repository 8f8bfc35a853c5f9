// The ablation job: one-switch ablation runs trained on one cluster, compared with baseline runs
// of the base recipe trained on another, after taking out the platform offset between the two
// clusters (seed 004; docs/logs.md "Health checks"). The offset is measured with an equivalent
// pair: an ablation run that is mathematically the base recipe (seed 004: nobpk_H3) and its
// baseline run.
//
// For tag y (e.g. eval/loss), with a = a run of the ablation directory and b = its baseline run:
//   offset      o = mean over the common steps s of the equivalent pair of (a_s − b_s), its sample
//               standard deviation sd and standard error SE = sd / sqrt(n) (compare.h: B − A with
//               A the baseline run);
//   difference  d_s = a_s − b_s at each compared step, and d at the compared (final) one;
//   effect      e = d − o, the switch's effect with the platform offset taken out;
//   noise       σ, the noise of one difference d_s, from the run's own last `noise_window`
//               compared points by the mean square successive difference,
//               σ² = Σ (d_{i+1} − d_i)² / (2 (m − 1)) (von Neumann, Kent, Bellinson and Hart,
//               Ann. Math. Statist. 12 (1941) 153), which a slow trend in d barely inflates; with
//               fewer than 3 points the offset pair's sd stands in for it;
//   uncertainty u = sqrt(SE² + σ²) (the offset's error and the run's own noise, independent);
//   inside      |e| <= sigmas × sqrt(SE² + sd²): the effect is no larger than what the equivalent
//               pair itself shows at one step (its spread and the error of its mean), so it cannot
//               be told from the platform offset's uncertainty.
// Compared steps: with Alignment::kStep the steps both runs logged with finite values (a run
// shorter than its baseline is compared at its own final step, where the baseline is still
// mid-schedule); with kScheduleFraction the run's step s is matched to the baseline's step
// s × L_b / L_a (L: each run's schedule length, its last logged step), the baseline's value read
// there or linearly interpolated between its neighbouring points. The final compared point is
// the last one.
//
// Run health per run: health.h's findings with the restarts merged into the ranges of steps
// logged twice (the run's restart policy chose which pass is kept), the non-finite values and
// spikes per tag, and whether the run ended before its schedule did: its learning-rate tag's last
// value is still above `unfinished_lr_fraction` × its peak (a WSD or cosine schedule ends at a
// fraction of the peak).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/runs/compare.h"
#include "mosaic/runs/health.h"
#include "mosaic/runs/module_diag.h"
#include "mosaic/runs/run.h"

namespace mosaic::runs {

enum class Alignment { kStep, kScheduleFraction };
std::string_view ToString(Alignment alignment);  // "step", "fraction"
// Throws InputError "--align = X. Violated constraint: one of step, fraction".
Alignment AlignmentFromString(std::string_view text);

// An ablation run and the baseline run it is compared with.
struct RunPair {
  std::string run;
  std::string base_run;
};

// Parses "RUN=BASE_RUN" given to `flag`; throws InputError (FieldError naming the flag, the value
// and the rule) when either side is empty or there is no '='.
RunPair ParseRunPair(std::string_view flag, std::string_view text);

struct AblationOptions {
  std::string tag = "eval/loss";
  RunPair offset_pair;          // the equivalent pair (required)
  std::vector<RunPair> pairs;   // explicit pairs; other runs take the offset pair's baseline run
  Alignment alignment = Alignment::kStep;
  double sigmas = 2.0;          // width of the "inside the offset's uncertainty" band
  int noise_window = 10;        // compared points used for a run's own noise
  double unfinished_lr_fraction = 0.5;
  // The learning-rate tag (case-insensitive regular expression; the first matching tag is used).
  std::string lr_tags = "(^|/)(lr|learning[_-]?rate)(/|$)";
  HealthOptions health;
  DiagOptions diagnostics;
};

// Steps [from_step, to_step] written again in `file`, in `tags` tags (a resume from a snapshot).
struct LoggedTwice {
  std::string file;
  int64_t from_step = 0;
  int64_t to_step = 0;
  int64_t tags = 0;
};

enum class RunEnd { kFinished, kEndedEarly, kUnknown };
std::string_view ToString(RunEnd end);  // "finished", "ended early", "unknown"

struct RunHealth {
  std::string run;
  RestartPolicy policy = RestartPolicy::kFirst;
  std::vector<LoggedTwice> logged_twice;  // by file, then step
  std::vector<Finding> non_finite;        // per tag (health.h)
  std::vector<Finding> spikes;            // per tag
  std::vector<Finding> other;             // every other finding but restarts (gaps, stalls, ...)
  int64_t last_step = 0;                  // over every scalar tag
  RunEnd end = RunEnd::kUnknown;
  std::string end_reason;  // e.g. "train/lr ends at 2e-05, 0.1 × its peak 0.0002"

  bool Healthy() const;  // no restart, non-finite value, spike or other finding; not ended early
};

// The health of one run.
RunHealth CheckRunHealth(const Run& run, const AblationOptions& options);

// One compared point: the run at `step`, its baseline at `base_step` (equal under kStep).
struct ComparedPoint {
  int64_t step = 0;
  double base_step = 0;
  double fraction = 0;  // step / the run's schedule length
  double value = 0;
  double base_value = 0;
  bool base_interpolated = false;
  double difference = 0;  // value − base_value
  double effect = 0;      // difference − offset
};

enum class NoiseSource { kRun, kOffsetPair };
std::string_view ToString(NoiseSource source);  // "run", "offset pair"

struct AblationRow {
  std::string run;
  std::string base_run;
  bool offset_pair = false;  // this row is the equivalent pair
  bool explicit_pair = false;  // named with --pair (or the offset pair); else the default baseline
  int64_t run_steps = 0;   // schedule lengths (last logged step over every tag)
  int64_t base_steps = 0;
  int64_t run_tag_steps = 0;   // last step of the compared tag (its value finite or not)
  int64_t base_tag_steps = 0;
  Alignment alignment = Alignment::kStep;
  std::string compared_at;  // e.g. "final step 10000", "step 5000 (run's final; baseline to 10000)"
  std::vector<ComparedPoint> points;  // every compared point, by step
  ComparedPoint final_point;          // the last one
  double noise = 0;
  NoiseSource noise_source = NoiseSource::kRun;
  double effect = 0;
  double uncertainty = 0;
  bool inside_offset_uncertainty = false;
  RunHealth health;
  LoopDiagnostics diagnostics;
};

// Where an ablation row's final compared point lies: at matched schedule fractions, or (matched
// steps) at the compared tag's final step in both runs, in the run only (the baseline goes on),
// in the baseline only (the run goes on), or at the last step the two share before either ends.
enum class ComparedEnd { kFraction, kBothFinal, kRunFinal, kBaseFinal, kLastCommon };

// The ComparedEnd of `row`, from its alignment, final point and compared tags' last steps.
ComparedEnd ComparedEndOf(const AblationRow& row);

struct Ablation {
  AblationOptions options;
  std::string ablation_dir;  // as given (for the report)
  std::string baseline_dir;
  SeriesOffset offset;
  double offset_band = 0;  // sqrt(SE² + sd²)
  std::vector<AblationRow> rows;  // the offset pair first, then by run name
  std::vector<RunHealth> baseline_health;  // the baseline runs used, by name
  // Runs left out and why; under --align fraction, a compared tag ending before 90% of its run's
  // last step.
  std::vector<std::string> notes;
};

// Compares every run of `ablation_runs` that has the tag with its baseline run in
// `baseline_runs`. Throws InputError (naming the flag, the value and the rule, with a "did you
// mean") when a run of a pair is not found or lacks the tag, or the offset pair shares no step with
// a finite value.
Ablation AnalyzeAblation(const std::vector<Run>& ablation_runs,
                         const std::vector<Run>& baseline_runs, const AblationOptions& options);

// Loads the runs under both directories (run.h) and analyses them.
Ablation RunAblation(const std::string& ablation_dir, const std::string& baseline_dir,
                     const AblationOptions& options, const LoadOptions& load = {});

}  // namespace mosaic::runs
