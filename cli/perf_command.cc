// mosaic perf MODEL --hardware H --gpus N --layout L: step time, MFU, tokens/s, memory and
// communication of one layout; --search ranks every layout; `perf calibrate` fits the efficiency
// profiles to measured rows; `perf validate` prints the error on every row.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "usage_errors.h"
#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/calibration.h"
#include "mosaic/perf/log_calibration.h"
#include "mosaic/perf/perf_request.h"
#include "mosaic/perf/search.h"
#include "mosaic/perf/step_model.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"
#include "mosaic/util/terminal_text.h"

namespace mosaic::cli {
namespace {

struct PerfOptions {
  std::string model;
  std::vector<std::string> sets;
  std::string hardware;
  int64_t gpus = 0;
  std::string layout;
  int64_t batch = 0;
  int64_t seq = 4096;
  double capacity_factor = 0;
  bool no_capacity_padding = false;
  std::string routing = "auto";
  std::string format = "bf16";
  std::string profile;
  std::string profiles_file;
  int64_t bp_segment = 0;
  bool search = false;
  int64_t top = 10;
  std::string offload = "none";
  std::string dispatch;  // "": the profile's
  bool json = false;
  std::string output;
};

struct CalibrateOptions {
  std::string csv;
  std::string heldout;
  std::vector<std::string> logs;
  std::string runs_file;
  std::string profiles_file;
  bool fit_shared = false;
  std::string output;
  bool json = false;
};

struct ValidateOptions {
  std::string csv;
  std::string heldout;
  std::string profiles_file;
  bool json = false;
  bool search = false;
  std::string output;
};


std::string Gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }

std::string RenderText(const PerfSetup& setup, const Layout& l, const StepEstimate& e) {
  const ModelSpec& spec = setup.spec;
  const Cluster& cluster = setup.cluster;
  const PerfProfile& profile = setup.profile;
  const PerfJob& job = setup.job;
  std::string out;
  out += fmt::format("{} on {} × {} ({} profile, {}), batch {} × seq {}, {}, routing {}\n",
                     Printable(spec.config.name), cluster.gpus, Printable(cluster.device.name),
                     Printable(profile.name), CalibrationText(profile), job.global_batch,
                     job.seq_len, ToString(job.format), RoutingText(setup));
  for (const std::string& note : PerfCautions(setup)) out += "note: " + note + "\n";
  for (const std::string& note : LayoutCautions(setup, l)) out += "note: " + note + "\n";
  for (const std::string& note : EstimateCautions(e, job.format)) out += "note: " + note + "\n";
  out += fmt::format("layout: {}\n\n", ToString(l));
  out += fmt::format("  step time             {:>10.4f} s   ({} micro-batch{} per pipeline)\n",
                     e.step_seconds, e.micro_batches, e.micro_batches == 1 ? "" : "es");
  out += fmt::format("  tokens/s per GPU      {:>10.1f}\n", e.tokens_per_s_per_gpu);
  out += fmt::format("  MFU                   {:>10.4f}     (full-square FLOPs {:.4e} per step / "
                     "(time × {} TFLOP/s bf16 × {} GPUs))\n",
                     e.mfu, e.model_flops_per_step, cluster.device.peak_bf16_tflops, cluster.gpus);
  out += fmt::format("  MFU, causal FLOPs     {:>10.4f}     (the attention below the diagonal)\n",
                     e.mfu_causal);
  out += fmt::format("  dropped assignments   {:>10.4f}\n", e.dropped_fraction);
  // Each memory states whether it fits; the estimate fits when both do (FitsDevice).
  const auto fit_text = [](double bytes, double capacity) {
    return bytes <= capacity ? "fits" : "DOES NOT FIT";
  };
  out += fmt::format("  peak memory per GPU   {:>10} of {} ({})\n", Gb(e.memory.peak_bytes),
                     Gb(e.capacity_bytes), fit_text(e.memory.peak_bytes, e.capacity_bytes));
  if (l.pp > 1) {
    // Which stages set the time and the memory, and what they hold (uneven splits, dense and MoE
    // layers: docs/guide.md).
    const ModelConfig& c = spec.config;
    const bool mixed = c.is_moe() && c.moe_layers() < c.layers;
    const auto held = [&](int64_t layers, int64_t moe) {
      const std::string passes =
          fmt::format("{} layer pass{}", layers, layers == 1 ? "" : "es");
      return mixed ? fmt::format("{} ({} MoE)", passes, moe) : passes;
    };
    out += fmt::format("  pipeline stages       slowest holds {}{}; peak memory on rank {}, "
                       "holding {}\n",
                       held(e.slowest_stage_layers, e.slowest_stage_moe_layers) +
                           (e.slowest_stage_mtp_layers > 0
                                ? fmt::format(", {:.3g} MTP layer{}", e.slowest_stage_mtp_layers,
                                              e.slowest_stage_mtp_layers == 1 ? "" : "s")
                                : ""),
                       e.slowest_stage_holds_output_layer ? " and the output layer" : "",
                       e.memory.peak_stage_rank,
                       held(e.memory.peak_stage_layers, e.memory.peak_stage_moe_layers));
  }
  const bool offloads = l.offload_layers > 0 || l.offload_modules != 0;
  if (offloads) {
    out += fmt::format("  host memory per GPU   {:>10} of {} (offloaded activations; {})\n",
                       Gb(e.memory.host_activation_bytes), Gb(e.host_capacity_bytes),
                       fit_text(e.memory.host_activation_bytes, e.host_capacity_bytes));
  }
  out += "\n";
  const StepBreakdown& t = e.time;
  out += "Time per step (s)\n";
  auto row = [&](std::string_view name, double v, std::string_view note = "") {
    out += fmt::format("  {:<26} {:>10.4f}  {}\n", name, v, note);
  };
  row("compute", t.compute_seconds,
      t.untraced_seconds > 0
          ? "dense GEMMs + expert GEMMs + attention + memory-bound + untraced"
          : "dense GEMMs + expert GEMMs + attention + memory-bound");
  row("  dense GEMMs", t.dense_gemm_seconds);
  row("  expert GEMMs", t.expert_gemm_seconds);
  row("  attention scores", t.attention_seconds);
  row("  memory-bound kernels", t.elementwise_seconds);
  if (t.untraced_seconds > 0) {
    row("  untraced per-token cost", t.untraced_seconds,
        "of a model with attention sinks (docs/guide.md, \"Limits\")");
  }
  row("  of which recompute", t.recompute_seconds);
  row("tensor parallel", t.tp_seconds, "before overlap");
  row("context parallel", t.cp_seconds, "before overlap");
  // The links a collective crosses, named only where it moves something.
  const CollectiveLinks links = LinksOf(cluster, l, profile);
  auto over = [](double seconds, const std::string& link) {
    return seconds > 0 ? "before overlap; over " + link : std::string("before overlap");
  };
  std::string a2a_note = over(t.ep_seconds, links.expert_all_to_all);
  if (t.ep_seconds > 0 && !links.expert_dispatch.empty()) {
    a2a_note += fmt::format(", {} dispatch ({})", links.expert_dispatch,
                            links.expert_dispatch_from == "layout" ? "the layout's"
                                                                   : "the profile's default");
  }
  row("expert all-to-all", t.ep_seconds, a2a_note);
  row("fsdp gather/scatter", t.fsdp_seconds, over(t.fsdp_seconds, links.fsdp));
  row("data-parallel reduce", t.dp_seconds, "before overlap");
  row("pipeline send/recv", t.pp_seconds, "before overlap");
  row("exposed communication", t.exposed_comm_seconds);
  row("host waits", t.host_seconds, "MoE token-count syncs");
  if (offloads) {
    row("activation offload", t.offload_seconds,
        fmt::format("to host memory and back, before overlap; over the host link ({:g} GB/s)",
                    cluster.device.host_link_gb_per_s));
    row("exposed offload", t.exposed_offload_seconds);
  }
  row("pipeline bubble", t.bubble_seconds);
  row("overhead", t.overhead_seconds, "fixed per step");
  out += "\nMemory per GPU\n";
  const MemoryBreakdown& m = e.memory;
  auto mrow = [&](std::string_view name, double v) {
    out += fmt::format("  {:<26} {:>12}\n", name, Gb(v));
  };
  mrow("weights", m.weights_bytes);
  mrow("gradients", m.gradients_bytes);
  mrow("optimizer states", m.optimizer_bytes);
  mrow("fsdp gather buffers", m.gather_buffer_bytes);
  mrow("activations", m.activation_bytes);
  mrow("logits", m.logits_bytes);
  mrow("all-to-all buffers", m.dispatch_bytes);
  mrow("reserve", m.reserve_bytes);
  mrow("peak", m.peak_bytes);
  if (offloads) mrow("host (offloaded)", m.host_activation_bytes);
  return out;
}

// Prints "searching: 42% (1,234,567 layouts)" over itself on stderr, from one second after the
// search starts and at most ten times a second, and clears the line when the search ends.
std::function<void(double, int64_t)> SearchProgressPrinter() {
  using Clock = std::chrono::steady_clock;
  struct State {
    Clock::time_point start = Clock::now();
    Clock::time_point last{};
    bool shown = false;
  };
  auto state = std::make_shared<State>();
  return [state](double fraction, int64_t evaluated) {
    const Clock::time_point now = Clock::now();
    if (fraction >= 1.0) {
      if (state->shown) std::fputs("\r\033[K", stderr);
      return;
    }
    if (now - state->start < std::chrono::seconds(1)) return;
    if (state->shown && now - state->last < std::chrono::milliseconds(100)) return;
    state->last = now;
    state->shown = true;
    std::fprintf(stderr, "\rsearching: %3.0f%% (%s layouts)", 100 * fraction,
                 FormatThousands(evaluated).c_str());
    std::fflush(stderr);
  };
}

std::string RenderSearch(const SearchResult& r, const PerfOptions& o, const PerfSetup& setup) {
  const Cluster& cluster = setup.cluster;
  const PerfProfile& profile = setup.profile;
  if (o.json) {
    return DumpJson(SearchJson(setup, r)) + "\n";
  }
  std::string out = fmt::format("profile: {} ({}); routing {}", Printable(profile.name),
                                CalibrationText(profile), RoutingText(setup));
  if (AllToAllCanCrossDomains(setup)) {
    // The all-to-all's path across scale-up domains, which the layouts below write only when
    // --dispatch sets it.
    out += fmt::format("; EP all-to-all across domains {} ({})",
                       ToString(ResolveDispatch(r.dispatch, profile.hierarchical_dispatch)),
                       r.dispatch == Dispatch::kProfile
                           ? "the profile's default; --dispatch sets it"
                           : "--dispatch");
  }
  out += "\n";
  for (const std::string& note : PerfCautions(setup)) out += "note: " + note + "\n";
  for (const std::string& note : SearchCautions(setup, r)) out += "note: " + note + "\n";
  out += fmt::format(
      "{} layouts evaluated on {} × {}: {} feasible; rejected: {}\n\n", r.evaluated,
      cluster.gpus, Printable(cluster.device.name), r.feasible(), r.RejectedText());
  if (r.best.empty()) {
    out += "No feasible layout.\n";
    // Out of memory under every policy: offload is the one lever left, where some layout's
    // weights, gradients, optimizer states and buffers leave room for activations.
    if (o.offload == "none" &&
        r.least_memory_without_activations_bytes <= setup.hardware.hbm_gb * 1e9 &&
        setup.hardware.host_link_gb_per_s > 0 && setup.hardware.host_memory_gb > 0) {
      out += "Layouts over the HBM under every recompute policy may fit with activation offload: "
             "--offload modules or --offload layers tries it.\n";
    }
    return out;
  }
  out += fmt::format("{:>4} {:>12} {:>8} {:>9} {:>10} {:>8}  {}\n", "rank", "tokens/s/GPU",
                     "MFU(fs)", "step s", "memory GB", "dropped", "layout");
  if (setup.job.format != NumberFormat::kBf16) {
    out += fmt::format("     (MFU(fs): full-square FLOPs against the bf16 dense peak; {} matrix "
                       "multiplies run faster than that peak, so it can pass 1)\n",
                       ToString(setup.job.format));
  }
  int64_t rank = 1;
  for (const SearchCandidate& c : r.best) {
    out += fmt::format("{:>4} {:>12.1f} {:>8.4f} {:>9.3f} {:>10.2f} {:>8.4f}  {}\n", rank++,
                       c.estimate.tokens_per_s_per_gpu, c.estimate.mfu, c.estimate.step_seconds,
                       c.estimate.memory.peak_bytes / 1e9, c.estimate.dropped_fraction,
                       ToString(c.layout));
  }
  out += "\nRejected (examples)\n";
  for (const Rejection& x : r.examples) {
    out += fmt::format("  {:<17} {}  ({})\n", ToString(x.violation.kind), ToString(x.layout),
                       x.violation.rule);
  }
  return out;
}

void Run(const PerfOptions& o) {
  if (o.model.empty()) throw UsageError("mosaic perf: name a model preset or CONFIG.toml");
  if (o.hardware.empty()) throw UsageError("mosaic perf: --hardware is required (e.g. h100)");
  if (o.gpus < 1) throw UsageError("mosaic perf: --gpus is required (e.g. --gpus 64)");
  if (o.batch < 1) throw UsageError("mosaic perf: --batch is required (sequences per step)");
  CheckOutputIsNotInput(o.output, {o.model, o.hardware, o.profiles_file});
  PerfRequest request;
  for (const std::string& s : o.sets) AddFieldOverride(request, ParseFieldOverride(s));
  auto format = NumberFormatFromString(o.format);
  if (!format) {
    throw UsageError(fmt::format("--format {}: expected bf16, fp8 or mxfp8", o.format));
  }
  if (o.routing != "auto") {
    request.routing = RoutingPolicyFromString(o.routing);
    if (!request.routing) {
      throw UsageError(fmt::format(
          "--routing {}: expected auto, dropless, balanced, capacity or fixed-cells", o.routing));
    }
  }
  request.model = o.model;
  request.hardware = o.hardware;
  request.gpus = o.gpus;
  request.batch = o.batch;
  request.seq = o.seq;
  request.format = *format;
  request.capacity_factor = o.capacity_factor;
  request.pad_to_capacity = !o.no_capacity_padding;
  request.profile = o.profile;
  request.profiles_file = o.profiles_file;
  request.bp_segment_loops = o.bp_segment;
  const PerfSetup setup = PreparePerf(request);
  if (o.search && !o.layout.empty()) {
    throw UsageError("mosaic perf: --layout and --search exclude each other (--search ranks "
                     "every layout; drop one)");
  }
  if (o.search) {
    SearchOptions so;
    so.top = o.top;
    so.offload = *OffloadSearchFromString(o.offload);  // the flag's check admits only these
    if (!o.dispatch.empty()) so.dispatch = *DispatchFromString(o.dispatch);  // likewise
    // A search that runs past a second shows its progress on stderr when stderr is a terminal.
    if (isatty(STDERR_FILENO) != 0) so.progress = SearchProgressPrinter();
    EmitText(o.output, RenderSearch(SearchBestLayouts(setup, so), o, setup));
    return;
  }
  if (o.layout.empty()) throw UsageError("mosaic perf: --layout is required (or use --search)");
  // A layout that does not parse is a malformed flag value; one that does not suit the model or
  // job is bad input (EvaluateLayout).
  try {
    (void)ParseLayout(o.layout);
  } catch (const InputError& e) {
    throw AsUsageError(e);
  }
  const LayoutEstimate evaluated = EvaluateLayout(setup, o.layout);
  if (o.json) {
    EmitOutput(o.output, DumpJson(PerfJson(setup, evaluated)) + "\n");
  } else {
    EmitText(o.output, RenderText(setup, evaluated.layout, evaluated.estimate));
  }
}

// The calibration's report: JSON, or text with the measured rows' ids and notes escaped.
void EmitCalibration(const std::string& output_path, const CalibrationResult& result, bool json) {
  if (json) {
    EmitOutput(output_path, RenderCalibration(result, true));
  } else {
    EmitText(output_path, RenderCalibration(result, false));
  }
}

void RunCalibrate(const CalibrateOptions& o) {
  if (o.csv.empty() == o.logs.empty()) {
    throw UsageError("perf calibrate: give either a CSV of measured rows or --logs LOGDIR "
                     "(repeatable), not both or neither");
  }
  if (!o.runs_file.empty() && o.logs.empty()) {
    throw UsageError("perf calibrate: --runs names the runs of --logs; give --logs LOGDIR");
  }
  std::vector<std::string> inputs = {o.csv, o.heldout, o.runs_file, o.profiles_file};
  std::vector<MeasuredRow> heldout;
  if (!o.heldout.empty()) heldout = ReadMeasurements(o.heldout);
  ProfileSet starting = LoadProfiles(o.profiles_file);
  std::vector<MeasuredRow> rows;
  CalibrationScope scope = CalibrationScope::kTeamProfiles;
  std::string what;
  if (!o.logs.empty()) {
    // The logs and their run files are inputs too: the output may replace none of them.
    rows = MeasurementsFromLogs(o.logs, o.runs_file, starting, &inputs);
    starting = WithProfilesOf(rows, starting);
    what = fmt::format("--logs {}{}", fmt::join(o.logs, " "),
                       o.runs_file.empty() ? "" : " --runs " + o.runs_file);
  } else {
    rows = ReadMeasurements(o.csv);
    scope = o.fit_shared ? CalibrationScope::kSharedAndProfiles : CalibrationScope::kProfiles;
    what = o.csv + (o.fit_shared ? " --fit-shared" : "");
  }
  if (!o.profiles_file.empty()) what += " --profiles " + o.profiles_file;
  // The model and device files the rows name are inputs too.
  AddFilesNamedBy(rows, inputs);
  AddFilesNamedBy(heldout, inputs);
  CheckOutputIsNotInput(o.output, inputs);
  const CalibrationResult result = Calibrate(rows, starting, heldout, scope);
  std::string header = fmt::format(
      "# Efficiency profiles of the step model (include/mosaic/perf/profile.h), fitted by\n"
      "# `mosaic perf calibrate {}` (Ceres, log tokens/s residuals): {}\n"
      "# in-sample RMS log error {:.4f}, leave-one-out {:.4f}{}.\n",
      what, result.solver_report, result.rms_log_error, result.loo_rms_log_error,
      result.heldout.rows > 0
          ? fmt::format("; {} held-out rows (never fitted): RMS log error {:.4f}, median |error| "
                        "{:.1f}%",
                        result.heldout.rows, result.heldout.rms_log_error,
                        100 * result.heldout.median_abs_error)
          : "");
  if (!o.output.empty()) WriteFileAtomically(o.output, ProfilesToToml(result.profiles, header));
  EmitCalibration("", result, o.json);
}

void RunValidate(const ValidateOptions& o) {
  std::vector<std::string> inputs = {o.csv, o.profiles_file, o.heldout};
  std::vector<MeasuredRow> rows = ReadMeasurements(o.csv);
  std::vector<MeasuredRow> heldout;
  if (!o.heldout.empty()) heldout = ReadMeasurements(o.heldout);
  // The model and device files the rows name are inputs too.
  AddFilesNamedBy(rows, inputs);
  AddFilesNamedBy(heldout, inputs);
  CheckOutputIsNotInput(o.output, inputs);
  ProfileSet profiles = LoadProfiles(o.profiles_file);
  CalibrationResult result =
      ValidateRows(rows, profiles, /*leave_one_out=*/true, o.search, heldout);
  EmitCalibration(o.output, result, o.json);
}

// The measurements positional of calibrate and validate.
constexpr const char* kMeasurementsHelp =
    "CSV of measured rows in the format of tests/fixtures/throughput/published.csv, whose README "
    "gives every column (optional: notes, recompute, flop_convention, pipeline_split, "
    "a2a_overlap, dispatch, offload_layers, offload_modules, profile)";

}  // namespace

void AddPerfCommand(CLI::App& root) {
  auto o = std::make_shared<PerfOptions>();
  CLI::App* cmd = root.add_subcommand(
      "perf",
      "Step time, MFU, tokens/s, memory, communication and token dropping of a parallel layout;\n"
      "--search ranks every layout. Subcommands: calibrate, validate.\n\nExamples:\n"
      "  mosaic perf marin-hero-fsdp --hardware gb200-nvl72 --gpus 64 \\\n"
      "      --layout \"tp=1,pp=1,ep=64,fsdp=64,mbs=16,recompute=full\" --batch 1024 --seq 4096 \\\n"
      "      --capacity-factor 1.0 --profile marin-gb200\n"
      "  mosaic perf deepseek-v3 --hardware h100 --gpus 1024 --batch 8192 --format fp8 --search\n"
      "  mosaic perf looped-moe-329m --set loops=9 --hardware h100 --set hardware.hbm_gb=96 \\\n"
      "      --gpus 8 --layout fsdp=8,mbs=16 --batch 1024 --seq 1024\n"
      "  mosaic perf calibrate tests/fixtures/throughput/published.csv --output profiles.toml\n"
      "  mosaic perf validate tests/fixtures/throughput/published.csv");
  cmd->require_subcommand(0, 1);
  cmd->add_option("model", o->model, "model preset name or path to a model TOML file");
  cmd->add_option("--set", o->sets,
                  "override a model field FIELD=VALUE, or a device field hardware.FIELD=VALUE")
      ->take_all();
  cmd->add_option("--hardware", o->hardware, "device name (h100, h200, h800, b200, gb200-nvl72, "
                                             "gb300-nvl72, tpu-v5p, tpu-v6e) or a device TOML "
                                             "file");
  cmd->add_option("--gpus", o->gpus, "GPU count")->check(CLI::Range(int64_t{1}, kMaxPerfGpus));
  cmd->add_option("--layout", o->layout,
                  "tp=,pp=,vpp=,cp=,dp=,fsdp=,ep=,etp=,mbs=,recompute=none|selective|modules|moe|full,"
                  "moe_chunk=; uneven pipeline stages (Megatron-Core): pp_first=,pp_last= "
                  "(layers on the first/last stage), pp_embed=1,pp_loss=1 (embedding/loss "
                  "counted as a layer) or pp_layout=Et|(tt|)*30mL (Megatron-Core's layout "
                  "string); a2a_overlap=1 (EP all-to-all overlap); dispatch=flat|hierarchical "
                  "(the EP all-to-all across nodes: NCCL's, or DeepEP/HybridEP's; left out: the "
                  "profile's); offload_layers=N (the "
                  "activations of N layers per rank held in host memory) or "
                  "offload_modules=expert_fc1+moe_act (the saved inputs of those modules, "
                  "Megatron-Core's fine-grained offloading) (a missing key is 1)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // Nothing, or spaces alone, would read as a missing --layout: a usage error either
            // way. Commas are ParseLayout's to report (an empty item).
            return text.find_first_not_of(' ') == std::string::npos
                       ? "an empty layout: give at least one KEY=VALUE, e.g. dp=8"
                       : "";
          },
          "KEY=VALUE,..."));
  cmd->add_option("--batch", o->batch, "global batch in sequences")
      ->check(CLI::Range(int64_t{1}, kMaxPerfBatch));
  cmd->add_option("--seq", o->seq, "sequence length in tokens")
      ->check(CLI::Range(int64_t{1}, kMaxSeqLen))
      ->default_val(4096);
  cmd->add_option("--capacity-factor", o->capacity_factor,
                  "expert capacity factor (routing becomes 'capacity' unless --routing is "
                  "given; default: the model's capacity_factor when it has one)")
      ->check(InRange(0.01, kMaxCapacityFactor));
  cmd->add_option("--routing", o->routing,
                  "auto | dropless | balanced | capacity | fixed-cells")->default_val("auto");
  cmd->add_flag("--no-capacity-padding", o->no_capacity_padding,
                "capacity routing: experts compute the tokens they keep, not their padded "
                "capacity (Megatron-Core without --moe-pad-expert-input-to-capacity)");
  cmd->add_option("--format", o->format, "bf16 | fp8 | mxfp8")->default_val("bf16");
  cmd->add_option("--profile", o->profile,
                  "efficiency profile (default: the device's shipped one, megatron-<device> first, "
                  "else its closest calibrated sibling's, else generic-<device>)")
      ->check(NotEmpty("NAME"));
  cmd->add_option("--profiles", o->profiles_file, "profile file (default: the shipped one)")
      ->check(NotEmpty("FILE"));
  cmd->add_option("--bp-segment", o->bp_segment,
                  "looped models: loops per backprop segment (0 = all loops in one graph)")
      ->check(CLI::Range(int64_t{0}, kMaxModelLayers));
  CLI::Option* search = cmd->add_flag("--search", o->search, "rank every valid layout");
  cmd->add_option("--top", o->top, "layouts printed by --search")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->default_val(10)
      ->needs(search);
  cmd->add_option("--offload", o->offload,
                  "what --search tries for a layout no recompute policy it may use fits (the "
                  "all-to-all overlap allows neither full nor moe): none, modules "
                  "(offload_modules=expert_fc1+moe_act, then every module) or layers "
                  "(offload_layers = every layer of a rank)")
      ->check(CLI::IsMember({"none", "modules", "layers"}))
      ->default_val("none")
      ->needs(search);
  cmd->add_option("--dispatch", o->dispatch,
                  "how the EP all-to-all crosses nodes in every layout --search tries (layout key "
                  "dispatch): flat (NCCL's all-to-all, Megatron-Core's alltoall dispatcher) or "
                  "hierarchical (DeepEP, HybridEP); left out, the profile's default")
      ->check(CLI::IsMember({"flat", "hierarchical"}))
      ->needs(search);
  cmd->add_flag("--json", o->json, "machine-readable output");
  AddOutputOption(cmd, &o->output);
  cmd->callback([o, cmd] {
    if (cmd->get_subcommands().empty()) Run(*o);
  });

  auto c = std::make_shared<CalibrateOptions>();
  CLI::App* cal = cmd->add_subcommand(
      "calibrate",
      "Fit the efficiency profiles (Ceres) to measured rows and print the error on every row;\n"
      "with --logs, fit your own stack's profile to your training logs (docs/guide.md,\n"
      "\"Calibrating from your own logs\").\n\n"
      "Examples:\n  mosaic perf calibrate tests/fixtures/throughput/published.csv \\\n"
      "      --heldout tests/fixtures/throughput/heldout.csv --output data/perf/profiles.toml\n"
      "  mosaic perf calibrate --logs runs/ --output my_profiles.toml");
  cal->add_option("measurements", c->csv, kMeasurementsHelp);
  TakesList(cal->add_option("--logs", c->logs,
                  "training log directories (event files, CSV, JSONL), each with a "
                  "perf_runs.toml naming its runs' model, cluster and layout: fits the runs' "
                  "profile (GEMM efficiency, per-step overhead), the shared physics fixed "
                  "(one or more; repeatable)")
                ->take_all());
  cal->add_option("--runs", c->runs_file,
                  "one run file for all of --logs (instead of a perf_runs.toml in each)")
      ->check(NotEmpty("FILE"));
  cal->add_flag("--fit-shared", c->fit_shared,
                "also refit the shared physics (link efficiencies, overlaps, fp8 gain, host "
                "sync) on the measured rows, not only each profile's GEMM efficiency and "
                "per-expert cost")
      ->excludes("--logs");
  cal->add_option("--heldout", c->heldout,
                  "CSV of held-out rows: never fitted, their error reported apart")
      ->check(NotEmpty("FILE"));
  cal->add_option("--profiles", c->profiles_file,
                  "the profiles to start from: their fixed parameters (memory habits, flags, "
                  "the shared physics) are kept (default: the shipped ones)")
      ->check(NotEmpty("FILE"));
  AddOutputOption(cal, &c->output, "write the fitted profiles (TOML) to FILE");
  cal->add_flag("--json", c->json, "machine-readable output");
  cal->callback([c] { RunCalibrate(*c); });

  auto v = std::make_shared<ValidateOptions>();
  CLI::App* val = cmd->add_subcommand(
      "validate",
      "Predict every measured row with the shipped (or given) profiles: in-sample,\n"
      "leave-one-out and held-out error (RMS log error, median |error|, worst row), and the\n"
      "rank of the publisher's layout in the search.\n\n"
      "Example:\n  mosaic perf validate tests/fixtures/throughput/published.csv \\\n"
      "      --heldout tests/fixtures/throughput/heldout.csv");
  val->add_option("measurements", v->csv, kMeasurementsHelp)
      ->required();
  val->add_option("--heldout", v->heldout,
                  "CSV of held-out rows: predicted with the profiles, never fitted, their error "
                  "reported apart")
      ->check(NotEmpty("FILE"));
  val->add_option("--profiles", v->profiles_file, "profile file (default: the shipped one)")
      ->check(NotEmpty("FILE"));
  val->add_flag("--search", v->search, "also search each row's cluster for the best layout");
  val->add_flag("--json", v->json, "machine-readable output");
  AddOutputOption(val, &v->output);
  val->callback([v] { RunValidate(*v); });
}

}  // namespace mosaic::cli
