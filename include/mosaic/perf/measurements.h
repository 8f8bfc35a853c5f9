// Measured training throughput rows (the format of tests/fixtures/throughput/published.csv,
// described in calibration.h), read and checked: each row's model and device loaded, its layout
// parsed, its measurement converted to tokens/s per GPU. What calibration and validation fit and
// predict (calibration.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/hardware/hardware.h"
#include "mosaic/perf/layout.h"
#include "mosaic/perf/step_model.h"

namespace mosaic {

struct MeasuredRow {
  std::string id;
  std::string model;
  std::string hardware;  // as given: a shipped device name or a device file's path
  // The loaded device's name (a device file's `name`, "h100" in a copy of h100.toml): what picks
  // the row's default profile (ProfileFor, ProfileSet::ForHardware). `hardware` when empty.
  std::string device;
  int64_t gpus = 0;
  Layout layout;
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  NumberFormat format = NumberFormat::kBf16;
  RoutingPolicy routing = RoutingPolicy::kDropless;
  double capacity_factor = 1;
  double measured_tokens_per_s_per_gpu = 0;
  std::string basis;     // "tokens/s", "TFLOP/s (full-square)", "TFLOP/s (causal)", "MFU via <row>"
  // A row that gives both tokens/s and TFLOP/s: its TFLOP/s over what its tokens/s imply at
  // mosaic's FLOPs per token in the row's convention (1 when the source counts as mosaic does;
  // tokens/s is what is scored). 0 when the row gives only one of them.
  double tflops_over_tokens = 0;
  std::string profile;   // the profile the row belongs to
  std::string source;
  // The recompute policy the source states; nullopt = the profile's, else the least that fits.
  std::optional<Recompute> recompute;
  std::string where;     // "file:line" of the row in messages; empty when not read from a file
  // A layout rule the row's cells break before a layout can be formed (tp·pp·cp does not divide
  // the GPUs, fsdp does not divide the data-parallel size); empty when none. Such a row is left
  // out of every figure under this rule, as a row whose layout CheckLayout refuses is.
  std::string layout_rule;

  // `device`, else `hardware` (a row built by hand with a shipped name).
  const std::string& DeviceName() const { return device.empty() ? hardware : device; }
};

// The rows of a measurement CSV `text` read from `path` (which labels messages), as CSV records
// (util/csv.h: RFC 4180 quoting, a quoted field may hold commas and line breaks; a byte-order mark,
// CRs and blank lines are ignored). Every cell, quoted or not, header and ids included, is read
// without the ASCII whitespace at either end (spaces, tabs, line breaks). Throws InputError
// (file:line, column, value, rule) on a column twice or one it does not know (did you mean), a row
// whose field count differs from the header's, an unterminated quote, a malformed row, a
// measurement above what the device can run (MFU above 100%, TFLOP/s above the peak of its
// precision, CheckTokensPerSecondIsPossible), tokens/s and TFLOP/s of one row more than a factor of
// 2 apart, an unknown dp_kind, routing or precision, a pipeline_split with a key other than the
// uneven split's (pp_first, pp_last, pp_embed, pp_loss, pp_layout), an offload_modules other than
// module names joined by '+', a model or hardware that does not load (an unknown preset or device
// name, a bad file, a directory), a row without any measurement, or a file without rows; a model or
// hardware error names the row's id. A model or hardware cell that is a relative path
// (IsPathArgument) names a file beside `path` when one is there, else beside the file `path` links
// to (a symbolic link to a file in another folder), else from the working directory
// (ResolveBeside); the row keeps the resolved path. A row whose tp·pp·cp does not divide its GPUs,
// or whose fsdp does not divide the data-parallel size, is read with `layout_rule` set: its layout
// is a rule broken, not a file error.
std::vector<MeasuredRow> ParseMeasurements(std::string_view text, const std::string& path);

// The dense peak of `device` in TFLOP/s per GPU for `format` (hardware.h): bf16's; fp8's (bf16's
// where the device has none); MXFP8's (else fp8's).
double PeakTflops(const HardwareSpec& device, NumberFormat format);

// Throws InputError "<what> = <value>. Violated constraint: at most <N> tokens/s per GPU, what the
// <device>'s <format> peak ... runs of <model> ..." when `tokens_per_s_per_gpu` of the model
// `shape` (its sequence length) would take more model FLOPs per second than PeakTflops(device,
// format), counted the causal way (the smaller count: ModelShape, step_model.h): a typo or a
// unit slip, not a measurement. Likewise ("at least <N> tokens/s per GPU") when a positive
// figure implies less than 0.1% of the device's bf16 peak; 0 (not given) passes.
void CheckTokensPerSecondIsPossible(double tokens_per_s_per_gpu, const ModelShape& shape,
                                    const HardwareSpec& device, NumberFormat format,
                                    const std::string& what);

// Throws InputError "<mfu_what> = <mfu_pct> with <tokens_what> = <tokens>, which is X% of the
// <device>'s bf16 peak (Y% of its fp8 peak) at F model FLOPs per token. Violated constraint: the
// two agree within a factor of 2" when an MFU (in percent) given beside tokens/s per GPU lies
// more than a factor of 2 outside what the tokens/s imply at `flops_per_token` over the device's
// peaks: a publisher may divide by the bf16 or the fp8 peak and count the attention square or its
// half, but not more. Either figure 0 (not given) passes.
void CheckMfuAgreesWithTokensPerSecond(double mfu_pct, double tokens_per_s_per_gpu,
                                       double flops_per_token, const HardwareSpec& device,
                                       std::string_view mfu_what, std::string_view tokens_what);

// ParseMeasurements of the file at `path`; also throws InputError when it cannot be read.
std::vector<MeasuredRow> ReadMeasurements(const std::string& path);

// Appends to `files` the model and device files `rows` name (their `model` and `hardware` cells
// that are paths, IsPathArgument) that it does not hold yet: inputs of a command, which its output
// may not replace.
void AddFilesNamedBy(const std::vector<MeasuredRow>& rows, std::vector<std::string>& files);

// The shipped profile a published row on `hardware` belongs to: Marin's for a Marin source on
// gb200-nvl72 (`source` names it, in any case), MaxText's for the device ("maxtext-<hardware>")
// for a MaxText source, else Megatron-Core's for the device (data/perf/profiles.toml).
std::string ProfileFor(const std::string& hardware, const std::string& source);

}  // namespace mosaic
