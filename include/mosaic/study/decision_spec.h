// The decision sections of a study file (seed 000's "Decision Point"): where each arm's results
// come from, its throughput, the target the decision is for, the scaling-law conversion, the rule
// as data and the measured run-to-run noise. Every section is optional for `mosaic plan`;
// `mosaic decide` needs [results] and [rule] (decision/decision.h). Pure data: the decision job
// reads it, loads the results and applies the rule.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic {

// Which of the two losses a study records per run the decision uses. Capacity-limited arms
// evaluate with their training-time routing (tokens dropped) and can be re-evaluated dropless
// (seed 000: "rerun evals with dropless FSDP moe_chunk=1").
enum class DecisionLoss { kDropless, kWithDrop };
std::string_view ToString(DecisionLoss loss);  // "dropless", "with_drop"
std::optional<DecisionLoss> DecisionLossFromString(std::string_view text);

// A run of the ladder found in training logs: the run reader's name for it (path relative to
// the log directory, as `mosaic runs` prints it).
struct LogRunSpec {
  std::string arm;
  int64_t d_model = 0;
  std::string run;
  SourceLocation where;
};

// [results]: one loss per (arm, rung), from a CSV or from training logs.
//   CSV:  csv = "FILE" with columns arm, d_model, loss_dropless and/or loss_with_drop, and
//         optionally dropped_share (fraction of routed assignments dropped in training) and run
//         (a run name, shown in reports). Column names are settings.
//   logs: logs = ["DIR", ...], tag = "eval/loss", last_k = 1, and either run_pattern =
//         "{arm}-d{d_model}" (the run name of every arm and rung) or [[results.runs]] entries.
//         A log-read loss fills loss_dropless unless `loss` says with_drop; dropped_tag names a
//         scalar tag holding the dropped share (optional).
struct ResultsSpec {
  std::string csv;                    // path as resolved (beside the study file, or embedded)
  std::string arm_column = "arm";
  std::string d_model_column = "d_model";
  std::string dropless_column = "loss_dropless";
  std::string with_drop_column = "loss_with_drop";
  std::string dropped_column = "dropped_share";
  std::string run_column = "run";
  std::vector<std::string> logs;      // log directories (resolved like csv)
  std::string tag;
  std::string dropped_tag;
  int64_t last_k = 1;
  std::string run_pattern;
  std::vector<LogRunSpec> runs;
  DecisionLoss loss = DecisionLoss::kDropless;  // which loss decides
  SourceLocation where;               // the [results] table
  // csv and logs as the study writes them, and where (for CheckResultsExist's errors).
  std::string csv_written;
  std::vector<std::string> logs_written;
  SourceLocation csv_where, logs_where;
};

// Checks that the files [results] names exist: a study is planned (`mosaic plan`) before its
// results are, so LoadStudy does not require them; `mosaic decide` does. Throws InputError at
// the csv or logs key, naming the path as written, where it was looked for, and the rule.
void CheckResultsExist(const ResultsSpec& results);

// A tokens/s figure for one arm, with where it comes from.
struct MeasuredThroughput {
  std::string arm;
  double tokens_per_s = 0;  // whole job
  int64_t gpus = 0;         // the GPUs that produced it
  double mfu = 0;           // fraction; 0 when not given
  double dropped_share = -1;  // of routed assignments during the measurement; < 0 when not given
  std::string source;
  SourceLocation where;
};

// [throughput]: measured rows ([[throughput.measured]]) and/or the performance model
// (model = true: every arm's target shape on the target cluster; layout = "search" takes the
// best layout mosaic finds, "arm" each arm's own layout from [[target.arms]]).
struct ThroughputSpec {
  std::vector<MeasuredThroughput> measured;
  bool model = false;
  std::string layout = "search";  // "search" | "arm"
};

// How one arm runs at the target (for the performance model).
struct TargetArm {
  std::string arm;
  std::string model;             // preset or model TOML of the arm's target shape
  std::string layout;            // perf layout string, e.g. "ep=64,fsdp=64,mbs=16,recompute=full"
  std::string routing = "auto";  // auto | dropless | balanced | capacity | fixed-cells
  double capacity_factor = 0;    // 0: none
  SourceLocation where;
  SourceLocation model_where, layout_where;  // where model and layout are written, for errors
};

// [target]: the shape and budget the decision is for.
struct TargetSpec {
  std::string description;
  double tokens = 0;             // training tokens of the target run; 0: not given
  double compute_flops = 0;      // the target budget C in the ladder's FLOP convention; 0: derived
                                 // as 3 × forward FLOPs per token of the default arm's target
                                 // model (the study's convention) × tokens. At least one of the
                                 // two is given; compute_flops wins when both are.
  std::string hardware;          // device preset or file
  int64_t gpus = 0;
  int64_t batch_seqs = 0;        // sequences per step
  int64_t seq_len = 0;           // 0: the study's
  std::string profile;           // perf profile ("" = the device's default)
  std::string format = "bf16";
  std::vector<TargetArm> arms;
  SourceLocation where;
};

// [fit]: the scaling law fitted per arm (loss against the rung's training compute C).
// law = "compute" (L = E + A·C^(−alpha)) or "chinchilla" (inputs N = active params, D = tokens);
// pin = { E = 1.6, alpha = 0.0941 } fixes parameters (Marin's conversion); rungs = "common"
// fits every arm on the rungs all compared arms have results for (default, so that no arm's fit
// reaches scales the other's does not), "all" on every rung it has.
struct FitSpec {
  std::string law = "compute";
  std::vector<std::pair<std::string, double>> pins;
  std::string rungs = "common";  // "common" | "all"
  int64_t bootstrap = 1000;
  uint64_t seed = 0;
  double confidence = 0.95;
};

// [rule]: seed 000's rule as data. The challenger is picked only if every listed criterion
// passes; otherwise the default arm stands.
struct RuleSpec {
  std::string default_arm;
  std::string challenger;
  double threshold = 0.05;                  // minimum projected advantage (fraction)
  std::string measure = "effective_compute";  // "effective_compute" | "loss"
  std::vector<std::string> criteria;        // names from decision/criteria.h
  SourceLocation where;
  SourceLocation default_where, challenger_where;  // where each arm is named, for errors
};

// [noise]: the spread of repeated identical runs.
struct NoiseSpec {
  double loss_spread = 0;            // max − min of the loss over identical runs (nats)
  SourceLocation loss_spread_where;  // where loss_spread is written, for errors
  int64_t d_model = 0;               // the rung they ran at
  SourceLocation d_model_where;      // where d_model is written, for errors
  int64_t runs = 0;
  double effective_compute_spread = 0;  // as the source states it (fraction), 0 when not given
  std::string source;
};

// [[context_extension]]: outcomes of context-extension runs of an arm.
enum class ExtensionOutcome {
  kSmooth,       // ran to the end and compared: no loss or drop-rate anomaly
  kNotSmooth,    // ran, with a loss or dropping problem
  kCompleted,    // ran, but the comparison that would say smooth or not is missing
  kInterrupted,  // did not finish (faults, preemption)
};
std::string_view ToString(ExtensionOutcome outcome);  // "smooth", "not_smooth", ...
std::optional<ExtensionOutcome> ExtensionOutcomeFromString(std::string_view text);

struct ContextExtension {
  std::string arm;
  std::string variant;   // e.g. "ep64 -> fsdp-chunk1"
  int64_t d_model = 0;
  int64_t seq_len = 0;
  ExtensionOutcome outcome = ExtensionOutcome::kInterrupted;
  std::string source;
  std::string note;
  SourceLocation where;
  SourceLocation d_model_where;  // where d_model is written (the entry's header when it is not)
};

// The criteria a [rule] may list (decision/criteria.h evaluates each):
//   projected_advantage   the challenger's projected advantage at the target >= threshold
//   wins_at_largest_rung  the challenger's loss is lower at the study's largest rung
//   context_extension     the challenger's context extension was run and is smooth
//   no_anomalies          no gradient or loss anomaly in the challenger's runs (run health)
inline constexpr std::array<std::string_view, 4> kCriterionNames = {
    "projected_advantage", "wins_at_largest_rung", "context_extension", "no_anomalies"};

struct DecisionSpec {
  std::optional<ResultsSpec> results;
  ThroughputSpec throughput;
  std::optional<TargetSpec> target;
  FitSpec fit;
  std::optional<RuleSpec> rule;
  std::optional<NoiseSpec> noise;
  std::vector<ContextExtension> context_extension;
};

class TableReader;
struct StudyConfig;

// Registers the handlers of the decision sections ([results], [throughput], [target], [fit],
// [rule], [noise], [[context_extension]]) on the study's top-level reader; they fill `spec`.
// Paths in [results] are resolved beside the study file (`origin`), or among the embedded data
// files for an embedded study. Throws InputError with file:line:col, key, value and rule.
void AddDecisionHandlers(TableReader& reader, DecisionSpec& spec);

// Checks the sections against the study once it is read: arms and rungs named anywhere exist,
// the rule's default and challenger differ, the threshold is in (0, 1), criteria are known.
void ValidateDecisionSpec(const StudyConfig& study);

}  // namespace mosaic
