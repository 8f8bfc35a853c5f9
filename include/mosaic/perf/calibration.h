// Calibration of the efficiency profiles against measured training throughput, and validation.
//
// Rows come from a CSV in the format of published.csv (tests/fixtures/throughput): model preset,
// hardware, GPU count, the publisher's layout (tp, pp, vpp, ep, cp, dp_kind = zero1 | fsdp |
// "fsdpF within a rack + dpD across racks"), micro and global batch, sequence length, number
// format, routing, and a measurement: tokens/s per GPU, else model TFLOP/s per GPU (converted with
// mosaic's physical FLOPs), else MFU (converted through a row of the same model and device that
// gives both tokens/s and MFU, so the publisher's FLOP convention cancels). The recompute policy,
// which publishers rarely state, is the least one that fits in memory.
//
// Fit (Ceres Solver, bounded trust region, numeric derivatives): residual log(predicted /
// measured tokens/s) per row; parameters: each profile's GEMM efficiency, and the shared GEMM
// latency, fp8 gain, FSDP and EP overlap, scale-up and scale-out link efficiency and per-layer
// overhead. The
// leave-one-out error refits without each row and predicts it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mosaic/perf/dropping.h"
#include "mosaic/perf/layout.h"
#include "mosaic/perf/profile.h"
#include "mosaic/perf/step_model.h"

namespace mosaic {

struct MeasuredRow {
  std::string id;
  std::string model;
  std::string hardware;
  int64_t gpus = 0;
  Layout layout;
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  NumberFormat format = NumberFormat::kBf16;
  RoutingPolicy routing = RoutingPolicy::kDropless;
  double capacity_factor = 1;
  double measured_tokens_per_s_per_gpu = 0;
  std::string basis;     // "tokens/s", "TFLOP/s", "MFU via <row>"
  std::string profile;   // the profile the row belongs to
  std::string source;
};

// Reads rows; throws InputError (file:line, column, value) on a malformed row, an unknown
// dp_kind, routing or precision, a row without any measurement, or a file without rows.
std::vector<MeasuredRow> ReadMeasurements(const std::string& path);

struct RowResult {
  std::string id;
  std::string profile;
  std::string layout;           // the publisher's layout with the chosen recompute policy
  bool valid = false;           // passes CheckLayout
  std::string invalid_rule;     // the rule it breaks when !valid (left out of every figure)
  bool fits = false;            // fits in memory with some recompute policy
  double peak_memory_gb = 0;
  double measured = 0;          // tokens/s per GPU
  double predicted = 0;         // in-sample
  double loo_predicted = 0;     // leave-one-out; 0 when not computed
  std::string basis;
  int64_t search_rank = 0;      // rank of the publisher's layout in the search (0 = not searched)
  int64_t search_feasible = 0;
  double best_over_published = 0;  // predicted speed of the best layout / the publisher's
  std::string best_layout;
};

struct CalibrationResult {
  ProfileSet profiles;
  std::vector<RowResult> rows;
  double rms_log_error = 0;       // in-sample, sqrt(mean(log(pred/meas)²))
  double loo_rms_log_error = 0;  // 0 when leave-one-out was not run
  std::vector<std::string> left_out;  // ids of invalid rows, in no figure
  std::string solver_report;
  DropFit drop_fit;
};

// Fits `initial` to `rows` (Ceres, residuals log(predicted / measured tokens/s per GPU), every
// parameter inside its physical bound; two starts: `initial` and the middle of the bounds) and
// reports every row in-sample and leave-one-out. Profiles without rows keep their values. Throws
// InputError when the valid rows are fewer than the fitted parameters (the used profiles' GEMM
// efficiencies and the fitted shared parameters).
CalibrationResult Calibrate(const std::vector<MeasuredRow>& rows, const ProfileSet& initial);

// Predicts every row with `profiles`; with `leave_one_out` (and at least two valid rows), refits
// without each row; with `search`, ranks the publisher's layout among all layouts of the row's
// cluster. Rows whose layout breaks a rule are left out of every figure (and listed); throws
// InputError when no row is valid.
CalibrationResult ValidateRows(const std::vector<MeasuredRow>& rows, const ProfileSet& profiles,
                               bool leave_one_out, bool search);

// The per-row table (or JSON) of a calibration or validation.
std::string RenderCalibration(const CalibrationResult& result, bool json);

}  // namespace mosaic
