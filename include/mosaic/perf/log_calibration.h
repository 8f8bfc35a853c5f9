// Calibration of a profile from a team's own training logs: each run's measured throughput is read
// from its logs through the run reader (runs/run.h: TensorBoard event files, CSV, JSONL), its
// model, cluster and layout from a small TOML file beside the logs, and the measurements become
// MeasuredRow's that Calibrate (calibration.h) fits with the shared physics fixed
// (CalibrationScope::kTeamProfiles). Data flows from logs to the fit, never back.
//
// The run file (docs/guide.md, "Calibrating from your own logs"), `perf_runs.toml` in a log
// directory or one file given for many runs:
//
//   [defaults]                       # optional; any key of a run but `run`
//   model = "qwen3-30b-a3b"          # preset, or a model TOML path (relative to this file)
//   hardware = "h100"                # device name or TOML path
//   profile = "acme-h100"            # the profile to fit; a new name starts from the device's
//   seq_len = 4096
//   format = "fp8"                   # bf16 | fp8 | mxfp8
//   routing = "balanced"             # dropless | balanced | capacity | fixed-cells
//   capacity_factor = 1.0            # capacity and fixed-cells routing
//   tag = "throughput/tokens_per_sec_per_gpu"
//   metric = "tokens_per_s_per_gpu"  # tokens_per_s_per_gpu | tokens_per_s | step_seconds |
//                                    # wall_time (the step time from the tag's wall times)
//   skip_steps = 20                  # warm-up steps left out, counted from the first logged
//
//   [[run]]
//   run = "ep8-pp2"                  # the run's name as `mosaic runs LOGDIR...` prints it
//   gpus = 16
//   layout = "pp=2,vpp=12,ep=8,dp=8,mbs=1,recompute=modules"
//   global_batch = 512
//
// A run's measurement is the median over its kept points (robust to the spikes of checkpoints and
// evaluations), converted to tokens/s per GPU: tokens_per_s / gpus, global_batch·seq_len /
// (step_seconds·gpus); wall_time takes the median of Δwall_time/Δstep between consecutive kept
// points.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_config.h"
#include "mosaic/perf/calibration.h"
#include "mosaic/perf/layout.h"
#include "mosaic/perf/profile.h"
#include "mosaic/perf/step_model.h"
#include "mosaic/runs/run.h"

namespace mosaic {

enum class ThroughputMetric { kTokensPerSecondPerGpu, kTokensPerSecond, kStepSeconds, kWallTime };
// "tokens_per_s_per_gpu", "tokens_per_s", "step_seconds", "wall_time"
std::string_view ToString(ThroughputMetric metric);
std::optional<ThroughputMetric> ThroughputMetricFromString(std::string_view text);

// One run of a run file, with [defaults] applied and paths resolved against the file's folder.
struct ThroughputRunSpec {
  std::string run;
  std::string model;
  std::string hardware;
  ModelConfig model_config;  // `model`, loaded when the key is read
  HardwareSpec device;       // `hardware`, loaded when the key is read
  std::string profile;
  int64_t gpus = 0;
  Layout layout;
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  NumberFormat format = NumberFormat::kBf16;
  RoutingPolicy routing = RoutingPolicy::kDropless;
  double capacity_factor = 1;
  std::string tag;
  ThroughputMetric metric = ThroughputMetric::kTokensPerSecondPerGpu;
  int64_t skip_steps = 0;
  std::string origin;  // "file:line" of the run's table, for messages
};

// The name of the run file looked for in each log directory.
inline constexpr std::string_view kRunFileName = "perf_runs.toml";

// The most a run's global_batch or seq_len may be (as `mosaic perf --batch` and `--seq` cap them).
inline constexpr int64_t kMaxJobSize = int64_t{1} << 30;

// The fewest kept values (after skip_steps) a run's measurement is the median of.
inline constexpr int kMinMeasuredSteps = 5;

// Parses a run file. Throws InputError (file:line:col, key, value, rule) on syntax, an unknown key
// (did you mean), a missing required key (model, hardware, gpus, layout, global_batch, seq_len,
// tag; `run` in every [[run]]), a value of the wrong type or out of range (positive integers,
// global_batch and seq_len at most kMaxJobSize, capacity_factor in [0.01, 1000] as
// --capacity-factor, skip_steps >= 0), a capacity_factor a [[run]] gives itself under a routing
// that caps no tokens (dropless, balanced), a model or device that does not load, an unknown
// format, routing or metric, a layout
// ParseLayout refuses or one that breaks a rule of CheckLayout (layout.h) for the run's model,
// GPUs, batch and device, a run named twice, or a file without runs. `profile` defaults to the
// device's (ProfileSet::ForHardware).
std::vector<ThroughputRunSpec> ParseLogRunFile(std::string_view toml_text, const std::string& origin,
                                        const ProfileSet& profiles);

// A run's measured speed and how many points it rests on.
struct LogThroughput {
  double tokens_per_s_per_gpu = 0;
  int64_t points = 0;     // values (or wall-time gaps) the median is taken over
  int64_t left_out = 0;   // kept points whose value is not finite or not > 0 (a logging glitch)
};

// Tokens/s per GPU measured in `run` as `spec` says (the median of the kept points, see above;
// values that are not finite or not > 0 are left out and counted). Throws InputError naming the
// run and the rule when the run has no `tag` (with its closest tag), has no wall times (metric
// wall_time on a log without them), or keeps fewer than kMinMeasuredSteps values (wall-time
// gaps for wall_time), or gives a non-positive measurement.
LogThroughput MeasuredTokensPerSecondPerGpu(const runs::Run& run, const ThroughputRunSpec& spec);

// The measured rows of the runs under `logdirs`: each log directory's run file (kRunFileName in
// it), or `run_file` for all of them when not empty (run names then as DiscoverRuns(logdirs)
// gives them). Every run of a run file must be found (did you mean) and every log read through
// runs::LoadRun with the first-pass restart policy. Rows are named by run, basis "log <tag>".
// `input_files`, when not null, receives every log file under `logdirs` (runs::LogFiles, read or
// not) and every run file: the inputs an output may not replace.
std::vector<MeasuredRow> MeasurementsFromLogs(const std::vector<std::string>& logdirs,
                                              const std::string& run_file,
                                              const ProfileSet& profiles,
                                              std::vector<std::string>* input_files = nullptr);

// `profiles` with every profile the rows name: a name not in the set is added as a copy of
// ProfileSet::ForHardware(hardware of its first row), renamed, uncalibrated, its stack "fitted
// from logs".
ProfileSet WithProfilesOf(const std::vector<MeasuredRow>& rows, const ProfileSet& profiles);

// Fits the rows' profiles (GEMM efficiency and per-step overhead; the shared physics fixed) with
// Calibrate(..., CalibrationScope::kTeamProfiles).
CalibrationResult CalibrateFromLogs(const std::vector<MeasuredRow>& rows,
                                    const ProfileSet& profiles);

}  // namespace mosaic
