// Calibration of the efficiency profiles against measured training throughput, and validation.
//
// Rows come from a CSV in the format of published.csv (tests/fixtures/throughput): model preset,
// hardware, GPU count, the publisher's layout (tp, pp, vpp, ep, cp, dp_kind = zero1 | fsdp |
// "fsdpF within a rack + dpD across racks"), micro and global batch, sequence length, number
// format, routing ("dense" for a dense model), and a measurement: tokens/s per GPU, else model
// TFLOP/s per GPU (converted with mosaic's FLOPs in the source's convention: the optional
// `flop_convention` column, full-square (PaLM, Levanter, MaxText to mid-2025) when blank or
// causal (Megatron-LM and Megatron-Bridge's tables, MaxText since mid-2025)), else MFU
// (converted through a row of the same model and device that gives both tokens/s and MFU, so the
// publisher's FLOP convention cancels). The
// recompute policy is the optional `recompute` column when the source states it, else the
// profile's documented policy, else the least one that fits in memory. The optional
// `pipeline_split` column gives Megatron-Core's uneven pipeline split in the layout grammar
// (layout.h: pp_first, pp_last, pp_embed, pp_loss, pp_layout); blank spreads the layers evenly. The
// optional `a2a_overlap` column is 1 when the source's recipe overlaps the EP all-to-all with
// the other micro-batch's compute (layout.h: a2a_overlap); blank or 0 when it does not. The
// optional `dispatch` column is flat or hierarchical where the source's recipe crosses the
// scale-up domains otherwise than its profile's stack default (layout.h: dispatch); blank: the
// profile's. The optional `profile` column names the stack's profile (e.g. torch-eager-h100 for torchtitan);
// blank gives the publisher's by source and device (ProfileFor). A held-out row on a device with
// neither that profile nor a calibrated sibling's (a device file of one's own) is predicted with
// the device's uncalibrated defaults (ProfileSet::ForHardware), listed as profile
// "generic-<device>". Every cell is read without the whitespace at its ends (ParseMeasurements).
// A calibration row runs on its profile's device, in ValidateRows as in Calibrate.
//
// Held-out rows (a second CSV of the same format) are never fitted: ValidateRows predicts them
// with the given profiles and reports their error apart from the calibration rows'.
//
// Fit (Ceres Solver, bounded trust region, numeric derivatives): residual log(predicted / measured
// tokens/s) per row; parameters (CalibrationScope): on published rows each used profile's GEMM
// efficiency, its per-expert GEMM cost where it has rows of a MoE model and its EP overlap where
// it has rows of a MoE model with ep > 1 (a dense model's step has neither, a step without EP no
// all-to-all: a profile keeps its file's values for what its rows do not move), and
// the shared fp8 gain, EP overlap, overlap contention, scale-up and scale-out link efficiency, MoE
// host-sync time, the untraced per-token cost of sink models and per-expert fp8 quantization
// cost; on a team's own runs each used profile's GEMM efficiency and per-step overhead. Every
// parameter stays inside a physical bound written beside it in calibration.cc.
// The leave-one-out error refits without each row and predicts it: the row's profile alone on
// its other rows, or, when the shared physics are fitted too, everything on every other row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mosaic/perf/dropping.h"
#include "mosaic/perf/layout.h"
#include "mosaic/perf/measurements.h"
#include "mosaic/perf/profile.h"
#include "mosaic/perf/step_model.h"

namespace mosaic {


struct RowResult {
  std::string id;
  std::string profile;
  std::string profile_device;   // the device the profile is for (DeviceNameOf)
  bool other_device = false;    // profile_device is not the row's device (a sibling's profile,
                                // or one the row names: held-out rows only)
  std::string layout;           // the publisher's layout with the chosen recompute policy
  bool valid = false;           // passes CheckLayout
  std::string invalid_rule;     // the rule it breaks when !valid (left out of every figure)
  bool fits = false;            // fits in memory with some recompute policy
  double peak_memory_gb = 0;
  double measured = 0;          // tokens/s per GPU
  double predicted = 0;         // in-sample
  double loo_predicted = 0;     // leave-one-out; 0 when not computed
  std::string basis;
  double tflops_over_tokens = 0;  // MeasuredRow::tflops_over_tokens (0: one figure given)
  int64_t search_rank = 0;      // rank of the publisher's layout in the search (0 = not searched)
  int64_t search_feasible = 0;
  double best_over_published = 0;  // predicted speed of the best layout / the publisher's
  std::string best_layout;
};

// The error of a set of predictions against their measurements (valid rows only).
struct ErrorSummary {
  int64_t rows = 0;               // rows in the figures
  double rms_log_error = 0;       // sqrt(mean(log(predicted / measured)²))
  double median_abs_error = 0;    // median |predicted / measured − 1|
  std::string worst_id;           // the row with the largest |log(predicted / measured)|
  double worst_error = 0;         // its predicted / measured − 1
};

// Summarises (predicted, measured) pairs named by `ids`; all three the same length, every value
// > 0. An empty input gives rows = 0 and zeros.
ErrorSummary SummarizeErrors(const std::vector<std::string>& ids,
                             const std::vector<double>& predicted,
                             const std::vector<double>& measured);

// Valid rows (calibration and held-out) of one job measured more than once: the same model,
// device, GPU count, layout (the recompute policy aside), global batch and sequence length, as
// different releases, formats or routings of a stack publish it. The measured spread (highest /
// lowest) against the model's ratio for the same two rows shows whether the model follows what
// changed between them; rows of one setting get one prediction, so past a spread of
// (1 + x) / (1 − x) no prediction is within x of both.
struct RepeatedMeasurement {
  std::string job;                   // "model on N × device, layout, batch × seq"
  std::vector<std::string> ids;      // by measured tokens/s, lowest first
  std::vector<double> measured;      // tokens/s per GPU
  std::vector<double> predicted;     // tokens/s per GPU, by the reported profiles
  std::vector<std::string> setting;  // each row's format and routing ("fp8, capacity 1")
  double spread = 1;                 // highest measured / lowest
  double predicted_spread = 1;       // the model's ratio for those two rows
};

struct CalibrationResult {
  ProfileSet profiles;
  std::vector<RowResult> rows;
  double rms_log_error = 0;       // in-sample, sqrt(mean(log(pred/meas)²))
  double loo_rms_log_error = 0;  // 0 when leave-one-out was not run
  ErrorSummary in_sample;         // the calibration rows, predicted by `profiles`
  ErrorSummary leave_one_out;     // each calibration row by a fit without it (rows = 0 if not run)
  // Valid rows not left out: without them their profile would keep fewer distinct configurations
  // (rows differing in more than the measured figure) than it has fitted parameters, so the fit
  // without them could not move off the full fit (a leaked prediction). Each is in no
  // leave-one-out figure.
  std::vector<std::string> loo_not_run;
  std::vector<RowResult> heldout_rows;  // never fitted; predicted by `profiles`
  ErrorSummary heldout;           // rows = 0 without held-out rows
  // Ids of invalid rows (calibration and held-out), in no figure.
  std::vector<std::string> left_out;
  // Jobs measured more than once, widest spread first (RepeatedMeasurement).
  std::vector<RepeatedMeasurement> repeated;
  // Ceres's brief report of the better of the two starts, opening with which start it was
  // ("solver, from the parameters' defaults (...): Ceres Solver Report: ...").
  std::string solver_report;
  DropFit drop_fit;
  // What makes the fitted profiles doubtful, one sentence each (a fit that misses its own rows by
  // more than kMaxFittedRmsLogError): printed beside the figures, and in JSON "cautions".
  std::vector<std::string> cautions;
  // Which parameters this calibration moved (each profile's GEMM efficiency, per-step overhead,
  // per-expert cost and EP overlap, then the shared ones); for a validation, which moves none,
  // those a calibration of its rows with the shared physics would move (not a per-step overhead
  // or, for a profile without MoE rows, a per-expert cost set by hand). Only these are marked
  // "(at bound)".
  std::vector<bool> fitted_params;
};

// The in-sample RMS log error past which a calibration is cautioned (about 40% on a typical row;
// the shipped profiles reach 0.11): the model does not explain those runs, so the profile it
// fitted, often at its bounds, should not be trusted as a description of the stack.
inline constexpr double kMaxFittedRmsLogError = 0.35;

// Fits `initial` to `rows` (Ceres, residuals log(predicted / measured tokens/s per GPU), every
// parameter inside its physical bound; two starts: `initial` and the middle of the bounds) and
// reports every row in-sample and leave-one-out. Profiles without rows keep their values. Throws
// InputError when the valid rows are fewer than the fitted parameters (the used profiles' GEMM
// efficiencies and the fitted shared parameters).
// What a calibration moves (every other parameter keeps `initial`'s value).
//   kProfiles           each used profile's GEMM efficiency and per-expert GEMM cost: the
//                       published rows' default (`perf calibrate CSV`). The shared physics stay as
//                       the shipped file has them: refitted on rows of one layout from two stack
//                       versions (Qwen3-235B on 256 H100: fp8 1633 tokens/s on Megatron-Bridge
//                       26.02, bf16 1862-2132 on Megatron-Core's MoE branch), they run to their
//                       bounds (fp8 gain 1, overlap contention 0.35): the rows disagree, the
//                       physics does not
//   kSharedAndProfiles  the above and the shared physics (`--fit-shared`)
//   kTeamProfiles       each used profile's GEMM efficiency and per-step overhead: a team's own
//                       runs of one stack (`--logs`), which a handful of rows cannot separate from
//                       the physics every stack shares
enum class CalibrationScope { kProfiles, kSharedAndProfiles, kTeamProfiles };

// kTeamProfiles only: the most a run's measurement may differ, either way, from what the starting
// profiles predict (a calibrated profile of the device is within 2-3× of any stack on it; 10× is
// a metric of the wrong kind or a unit slip).
inline constexpr double kMaxTeamRowFactor = 10;

// `heldout` rows are predicted with the fitted profiles and reported apart, never fitted. With
// kTeamProfiles, also throws InputError for a fitted profile with one run, and for a run whose
// measurement is beyond kMaxTeamRowFactor of the starting profiles' prediction (naming the run,
// its file and line, both figures and the factor).
CalibrationResult Calibrate(const std::vector<MeasuredRow>& rows, const ProfileSet& initial,
                            const std::vector<MeasuredRow>& heldout = {},
                            CalibrationScope scope = CalibrationScope::kProfiles);

// Predicts every row with `profiles`; with `leave_one_out` (and at least two valid rows), refits
// without each row; with `search`, ranks the publisher's layout among all layouts of the row's
// cluster. `heldout` rows are predicted with `profiles` (never refitted) and summarised apart.
// Rows whose layout breaks a rule are left out of every figure (and listed); throws InputError
// when no calibration row is valid, and, as Calibrate does, for a calibration row on another
// device than its profile's (its in-sample and leave-one-out figures are a fit's).
CalibrationResult ValidateRows(const std::vector<MeasuredRow>& rows, const ProfileSet& profiles,
                               bool leave_one_out, bool search,
                               const std::vector<MeasuredRow>& heldout = {});

// The per-row table (or JSON) of a calibration or validation.
std::string RenderCalibration(const CalibrationResult& result, bool json);

}  // namespace mosaic
