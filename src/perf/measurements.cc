#include "mosaic/perf/measurements.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <map>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/flops.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/util/csv.h"
#include "mosaic/util/error.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"

namespace mosaic {
namespace {

// The largest GPU count and sequence count (batch, micro-batch, sequence length) a row may give:
// the bounds `mosaic perf` puts on --gpus, --batch and --seq.
constexpr int64_t kMaxRowGpus = int64_t{1} << 24;
constexpr int64_t kMaxRowSequences = int64_t{1} << 30;
// The least MFU (of the bf16 peak, causal count) a measured figure may imply.
constexpr double kMinMeasuredMfu = 1e-3;

// The layout keys the pipeline_split column takes: the uneven pipeline split's (layout.h).
const std::vector<std::string>& PipelineSplitKeys() {
  static const std::vector<std::string> keys = {"pp_first", "pp_last", "pp_embed", "pp_loss",
                                                "pp_layout"};
  return keys;
}

// The pipeline_split cell `value` of the row at `where` ("file:line"): Megatron-Core's uneven
// pipeline split in the layout grammar, its keys only (the other layout keys have columns of
// their own, which a key here would silently contradict). The returned layout holds the split's
// fields and defaults elsewhere.
Layout ParsePipelineSplit(const std::string& value, const std::string& where) {
  const std::string rule = fmt::format(
      "KEY=VALUE items separated by ',', KEY one of {} (the uneven pipeline split; the other "
      "layout keys have columns of their own)",
      fmt::join(PipelineSplitKeys(), ", "));
  bool in_pp_layout = false;  // Megatron's cosmetic commas continue a pp_layout string
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t end = value.find(',', pos);
    if (end == std::string::npos) end = value.size();
    const std::string_view item = TrimSpaces(std::string_view(value).substr(pos, end - pos));
    pos = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      // An empty item is ParseLayout's to name (",," or a ',' at an end).
      if (in_pp_layout || item.empty()) continue;
      throw InputError(fmt::format("{}: pipeline_split = '{}'. Violated constraint: {} (not "
                                   "'{}', which is not KEY=VALUE)",
                                   where, Printable(value), rule, Printable(item)));
    }
    const std::string key(TrimSpaces(item.substr(0, eq)));
    if (std::ranges::find(PipelineSplitKeys(), key) == PipelineSplitKeys().end()) {
      throw InputError(fmt::format("{}: pipeline_split = '{}'. Violated constraint: {} (not "
                                   "'{}'){}",
                                   where, Printable(value), rule, Printable(key),
                                   DidYouMean(key, PipelineSplitKeys())));
    }
    in_pp_layout = key == "pp_layout";
  }
  return ParseLayout(value, where + ": pipeline_split");
}

// The offload_modules cell `value` of the row at `where`: Megatron-Core's --offload-modules names
// joined by '+' (layout.h: ParseOffloadModuleNames), nothing else; the OffloadModule bits.
uint32_t ParseOffloadModules(const std::string& value, const std::string& where) {
  const std::string rule = fmt::format(
      "module names joined by '+', each one of {}, and nothing else (the other layout keys have "
      "columns of their own)",
      fmt::join(kOffloadModuleNames, ", "));
  std::string why = "(',' does not separate modules: join them by '+', e.g. expert_fc1+moe_act)";
  const std::optional<uint32_t> modules =
      value.find(',') == std::string::npos ? ParseOffloadModuleNames(value, &why) : std::nullopt;
  if (!modules) {
    throw InputError(fmt::format("{}: offload_modules = '{}'. Violated constraint: {} {}", where,
                                 Printable(value), rule, why));
  }
  return *modules;
}

}  // namespace

std::string ProfileFor(const std::string& hardware, const std::string& source) {
  std::string lower = source;
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find("marin") != std::string::npos && hardware == "gb200-nvl72") return "marin-gb200";
  if (lower.find("maxtext") != std::string::npos) return "maxtext-" + hardware;
  if (hardware == "gb200-nvl72") return "megatron-gb200";
  if (hardware == "gb300-nvl72") return "megatron-gb300";
  return "megatron-" + hardware;
}

double PeakTflops(const HardwareSpec& device, NumberFormat format) {
  const double fp8 = device.peak_fp8_tflops > 0 ? device.peak_fp8_tflops : device.peak_bf16_tflops;
  switch (format) {
    case NumberFormat::kBf16: return device.peak_bf16_tflops;
    case NumberFormat::kFp8: return fp8;
    case NumberFormat::kMxfp8: return device.peak_mxfp8_tflops > 0 ? device.peak_mxfp8_tflops : fp8;
  }
  return device.peak_bf16_tflops;
}

void CheckTokensPerSecondIsPossible(double tokens_per_s_per_gpu, const ModelShape& shape,
                                    const HardwareSpec& device, NumberFormat format,
                                    const std::string& what) {
  const double peak = PeakTflops(device, format);
  const double implied = tokens_per_s_per_gpu * shape.causal_model_flops_per_token / 1e12;
  if (implied > peak) {
    // The FLOPs per token grow with the sequence: a seq_len past the model's own maximum is as
    // likely the wrong cell as the measured figure.
    const std::string long_sequence =
        shape.config.max_seq_len > 0 && shape.seq_len > shape.config.max_seq_len
            ? fmt::format(" at seq_len {}, {:.3g}× {}'s max_seq_len {}: check that cell too",
                          shape.seq_len,
                          static_cast<double>(shape.seq_len) / shape.config.max_seq_len,
                          shape.config.name, shape.config.max_seq_len)
            : "";
    throw InputError(fmt::format(
        "{} = {}. Violated constraint: at most {:.6g} tokens/s per GPU, what the {}'s {} peak of "
        "{} TFLOP/s runs of {} at {:.4g} model FLOPs per token (causal count){}",
        what, tokens_per_s_per_gpu, peak * 1e12 / shape.causal_model_flops_per_token, device.name,
        ToString(format), peak, shape.config.name, shape.causal_model_flops_per_token,
        long_sequence));
  }
  // Nor does a training run of a model worth calibrating on run below 0.1% of the bf16 peak (the
  // lowest published MFUs are a few percent): such a figure is in the wrong unit (per node, per
  // minute, thousands) or a typo, and would drag the fit as far as one above the peak.
  const double floor_tflops = kMinMeasuredMfu * device.peak_bf16_tflops;
  if (tokens_per_s_per_gpu > 0 && implied < floor_tflops) {
    throw InputError(fmt::format(
        "{} = {}. Violated constraint: at least {:.4g} tokens/s per GPU, {:g}% of the {}'s bf16 "
        "peak of {} TFLOP/s at {:.4g} model FLOPs per token of {} (causal count)",
        what, tokens_per_s_per_gpu, floor_tflops * 1e12 / shape.causal_model_flops_per_token,
        100 * kMinMeasuredMfu, device.name, device.peak_bf16_tflops,
        shape.causal_model_flops_per_token, shape.config.name));
  }
}

void CheckMfuAgreesWithTokensPerSecond(double mfu_pct, double tokens_per_s_per_gpu,
                                       double flops_per_token, const HardwareSpec& device,
                                       std::string_view mfu_what, std::string_view tokens_what) {
  if (!(tokens_per_s_per_gpu > 0 && mfu_pct > 0)) return;
  // The range spans the bf16 peak (high) and the fastest 8-bit one (low).
  const double model_tflops = tokens_per_s_per_gpu * flops_per_token / 1e12;
  const double low = 100 * model_tflops / std::max(PeakTflops(device, NumberFormat::kFp8),
                                                   PeakTflops(device, NumberFormat::kMxfp8));
  const double high = 100 * model_tflops / PeakTflops(device, NumberFormat::kBf16);
  if (mfu_pct > 2 * high || mfu_pct < low / 2) {
    throw InputError(fmt::format(
        "{} = {:.6g} with {} = {}, which is {:.3g}% of the {}'s bf16 peak ({:.3g}% of its fp8 peak) "
        "at {:.4g} model FLOPs per token. Violated constraint: the two agree within a factor of 2",
        mfu_what, mfu_pct, tokens_what, tokens_per_s_per_gpu, high, device.name, low,
        flops_per_token));
  }
}

std::vector<MeasuredRow> ParseMeasurements(std::string_view text, const std::string& path) {
  std::vector<CsvRecord> records = ParseCsvRecords(text, path);
  if (records.empty()) throw InputError(fmt::format("{}: empty file (no header row)", path));
  // One rule for every cell, header and ids included, quoted or not: the ASCII whitespace at
  // either end is no part of it (" P1" is P1, "tpu-v5p " is tpu-v5p, " 8" is 8).
  for (CsvRecord& record : records) {
    for (CsvField& f : record.fields) f.text = std::string(TrimAsciiWhitespace(f.text));
  }
  std::vector<std::string> header;
  for (const CsvField& f : records.front().fields) header.push_back(f.text);
  static const std::vector<std::string> kRequired = {
      "id", "model", "hardware", "gpus", "tp", "pp", "vpp", "ep", "cp", "dp_kind", "micro_batch",
      "global_batch", "seq_len", "precision", "routing", "measured_tokens_per_s_per_gpu",
      "measured_tflops_per_gpu", "measured_mfu_pct", "source"};
  static const std::vector<std::string> kOptional = {"notes", "recompute", "flop_convention",
                                                     "pipeline_split", "a2a_overlap", "dispatch",
                                                     "offload_layers", "offload_modules",
                                                     "profile"};
  // A column twice would be read from one copy; a misspelt one would be ignored.
  CheckUniqueColumnNames(records.front(), path);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) {
    col.emplace(header[i], i);
    const bool known = std::ranges::find(kRequired, header[i]) != kRequired.end() ||
                       std::ranges::find(kOptional, header[i]) != kOptional.end();
    if (!known) {
      std::vector<std::string> names = kRequired;
      names.insert(names.end(), kOptional.begin(), kOptional.end());
      throw InputError(fmt::format("{}:1: unknown column '{}'{}. Violated constraint: one of {}",
                                   path, Printable(header[i]), DidYouMean(header[i], names),
                                   fmt::join(names, ", ")));
    }
  }
  for (const std::string& needed : kRequired) {
    if (!col.contains(needed)) {
      throw InputError(fmt::format("{}:1: missing column '{}'", path, needed));
    }
  }
  std::vector<MeasuredRow> rows;
  std::vector<double> mfu;  // measured MFU % per row (0 when absent)
  std::vector<int> lines;   // the line of each row, for messages
  // The models and devices the rows name, each loaded once: an unknown name or a file that does
  // not load is an error of the row that names it first.
  std::map<std::string, ModelSpec> models;
  std::map<std::string, HardwareSpec> devices;
  std::map<std::string, int> id_lines;  // each id's line
  for (size_t record = 1; record < records.size(); ++record) {
    const int line_no = records[record].line;
    if (records[record].fields.size() != header.size()) {
      throw InputError(fmt::format("{}:{}: {} fields, the header has {}. Violated constraint: "
                                   "every row has the header's columns",
                                   path, line_no, records[record].fields.size(), header.size()));
    }
    std::vector<std::string> cells;
    for (CsvField& f : records[record].fields) cells.push_back(std::move(f.text));
    auto cell = [&](const char* name) -> const std::string& { return cells[col[name]]; };
    // A positive integer up to `max` (the bound `mosaic perf` puts on the same flag).
    auto integer = [&](const char* name, int64_t max) {
      const std::string& v = cell(name);
      try {
        size_t used = 0;
        int64_t x = std::stoll(v, &used);
        if (used != v.size() || x < 1 || x > max) throw std::invalid_argument(v);
        return x;
      } catch (const std::exception&) {
        throw InputError(fmt::format("{}:{}: {} = '{}'. Violated constraint: an integer in [1, "
                                     "{}]",
                                     path, line_no, name, Printable(v), max));
      }
    };
    // A measurement: blank when the source did not give it (0), else a finite number > 0.
    auto number = [&](const char* name) {
      const std::string& v = cell(name);
      if (v.empty()) return 0.0;
      // Decimal only (ParseDecimal): strtod would also read 0x510 and 0x1p10.
      const double x = ParseDecimal(v).value_or(-1);
      if (!std::isfinite(x) || x <= 0) {
        throw InputError(fmt::format(
            "{}:{}: {} = '{}'. Violated constraint: blank or a finite decimal number > 0", path,
            line_no, name, Printable(v)));
      }
      return x;
    };
    MeasuredRow r;
    r.where = fmt::format("{}:{}", path, line_no);
    r.id = cell("id");
    if (r.id.empty()) {
      throw InputError(fmt::format("{}:{}: id = '{}'. Violated constraint: a row has an id (the "
                                   "name every figure gives it)",
                                   path, line_no, Printable(r.id)));
    }
    // Every figure names one row: an id twice would also be fitted while "left out".
    if (auto [it, fresh] = id_lines.emplace(r.id, line_no); !fresh) {
      throw InputError(fmt::format("{}:{}: id = '{}'. Violated constraint: ids are unique (line "
                                   "{} has it)",
                                   path, line_no, Printable(r.id), it->second));
    }
    // A model or device file is read from the CSV's own directory where it is there, else from
    // the directory of the file the CSV links to, else from the working directory
    // (ResolveBeside); a missing one (or a directory) is the row's error.
    auto file_cell = [&](const char* name) {
      const std::string& v = cell(name);
      if (!IsPathArgument(v)) return v;
      const std::string resolved = ResolveBeside(v, path);
      if (!InputFileExists(resolved)) {
        throw InputError(fmt::format("{}:{}: {} = '{}' (row {}). Violated constraint: {}", path,
                                     line_no, name, Printable(v), Printable(r.id),
                                     MissingInputFileRule(resolved, path)));
      }
      return resolved;
    };
    // The file or preset `v` (column `name`, resolved) loaded once per file; "file:line: column =
    // '<the cell>' (row <id>): <the loader's message>" when it does not load, the message naming
    // the value and the rule, as a missing file's error names the row.
    auto loaded = [&](const char* name, const std::string& v, auto& cache, auto load)
        -> const auto& {
      auto it = cache.find(v);
      if (it == cache.end()) {
        try {
          it = cache.emplace(v, load(v)).first;
        } catch (const InputError& e) {
          throw InputError(fmt::format("{}:{}: {} = '{}' (row {}): {}", path, line_no, name,
                                       Printable(cell(name)), Printable(r.id), e.what()));
        }
      }
      return it->second;
    };
    r.model = file_cell("model");
    r.hardware = file_cell("hardware");
    r.source = cell("source");
    const ModelSpec& model =
        loaded("model", r.model, models, [](const std::string& v) { return LoadModel(v); });
    const HardwareSpec& device = loaded("hardware", r.hardware, devices,
                                        [](const std::string& v) { return LoadHardware(v); });
    r.device = device.name;
    r.gpus = integer("gpus", kMaxRowGpus);
    Layout& l = r.layout;
    l.tp = integer("tp", kMaxRowGpus);
    l.pp = integer("pp", kMaxRowGpus);
    l.vpp = integer("vpp", kMaxRowGpus);
    l.ep = integer("ep", kMaxRowGpus);
    l.cp = integer("cp", kMaxRowGpus);
    l.mbs = integer("micro_batch", kMaxRowSequences);
    // The data-parallel size is what the GPUs leave: a row whose tp·pp·cp does not divide them
    // (or whose fsdp does not divide that size) has no layout, and is left out of the figures
    // under that rule (PreparedRow), as a row CheckLayout refuses is.
    const int64_t model_parallel = l.tp * l.pp * l.cp;
    if (r.gpus % model_parallel != 0) {
      r.layout_rule = fmt::format("tp·pp·cp divides gpus ({}·{}·{} = {} does not divide {})", l.tp,
                                  l.pp, l.cp, model_parallel, r.gpus);
    }
    const int64_t data = std::max<int64_t>(1, r.gpus / model_parallel);
    const std::string& kind = cell("dp_kind");
    if (kind == "zero1") {
      l.dp = data;
    } else if (kind == "fsdp") {
      l.fsdp = data;
    } else if (kind.starts_with("fsdp") && kind.find("dp") != std::string::npos) {
      // "fsdp64 within a rack + dp2 across racks"
      int64_t fsdp = 0;
      if (std::from_chars(kind.data() + 4, kind.data() + kind.size(), fsdp).ec != std::errc() ||
          fsdp < 1) {
        throw InputError(fmt::format("{}:{}: dp_kind = '{}'. Violated constraint: zero1, fsdp or "
                                     "'fsdpN ... + dpM ...' with N a positive integer",
                                     path, line_no, Printable(kind)));
      }
      if (data % fsdp != 0 && r.layout_rule.empty()) {
        r.layout_rule = fmt::format("fsdp divides the data-parallel size gpus / (tp·pp·cp) (fsdp "
                                    "{} of dp_kind '{}' does not divide {})",
                                    fsdp, Printable(kind), data);
      }
      l.fsdp = fsdp;
      l.dp = std::max<int64_t>(1, data / l.fsdp);
    } else {
      throw InputError(fmt::format("{}:{}: dp_kind = '{}'. Violated constraint: zero1, fsdp or "
                                   "'fsdpN ... + dpM ...'",
                                   path, line_no, Printable(kind)));
    }
    // Megatron-Core's uneven pipeline split, in the layout grammar ("pp_embed=1,pp_loss=1",
    // "pp_first=3,pp_last=2"); blank or absent: layers spread evenly.
    if (col.contains("pipeline_split") && !cell("pipeline_split").empty()) {
      const Layout split = ParsePipelineSplit(cell("pipeline_split"), r.where);
      l.pp_first = split.pp_first;
      l.pp_last = split.pp_last;
      l.pp_embed = split.pp_embed;
      l.pp_loss = split.pp_loss;
      l.pp_layout = split.pp_layout;
    }
    // Megatron-Core's EP all-to-all overlap (layout.h: a2a_overlap): 1 when the source's recipe
    // sets it; blank or absent: 0.
    if (col.contains("a2a_overlap") && !cell("a2a_overlap").empty()) {
      const std::string& v = cell("a2a_overlap");
      if (v != "0" && v != "1") {
        throw InputError(fmt::format("{}:{}: a2a_overlap = '{}'. Violated constraint: 0, 1 or "
                                     "blank",
                                     path, line_no, Printable(v)));
      }
      l.a2a_overlap = v == "1" ? 1 : 0;
    }
    // The EP all-to-all's path across scale-up domains (layout.h: dispatch) where the source's
    // recipe is not its profile's default; blank or absent: the profile's.
    if (col.contains("dispatch") && !cell("dispatch").empty()) {
      const std::string& v = cell("dispatch");
      const std::optional<Dispatch> d = DispatchFromString(v);
      if (!d) {
        throw InputError(fmt::format("{}:{}: dispatch = '{}'. Violated constraint: flat, "
                                     "hierarchical or blank",
                                     path, line_no, Printable(v)));
      }
      l.dispatch = *d;
    }
    // Activation offload to host memory (layout.h: offload_layers): the layers per pipeline rank
    // whose saved activations the source's recipe holds on the host; blank or absent: none.
    if (col.contains("offload_layers") && !cell("offload_layers").empty()) {
      l.offload_layers = integer("offload_layers", kMaxLayoutDegree);
    }
    // Fine-grained offload (layout.h: offload_modules), the modules as the layout string writes
    // them ("expert_fc1+moe_act"); blank or absent: none.
    if (col.contains("offload_modules") && !cell("offload_modules").empty()) {
      l.offload_modules = ParseOffloadModules(cell("offload_modules"), r.where);
    }
    r.global_batch = integer("global_batch", kMaxRowSequences);
    r.seq_len = integer("seq_len", kMaxRowSequences);
    auto format = NumberFormatFromString(cell("precision"));
    if (!format) {
      throw InputError(fmt::format("{}:{}: precision = '{}'. Violated constraint: bf16, fp8 or "
                                   "mxfp8",
                                   path, line_no, Printable(cell("precision"))));
    }
    r.format = *format;
    const std::string& routing = cell("routing");
    if (routing == "dropless-forced-balance") {
      r.routing = RoutingPolicy::kBalanced;
    } else if (routing == "dropless" || routing == "dropless-chunk1" || routing == "dense") {
      r.routing = RoutingPolicy::kDropless;
    } else if (routing == "token-drop") {
      r.routing = RoutingPolicy::kCapacity;
      r.capacity_factor = 1.0;
    } else if (routing.starts_with("capacity-factor-") || routing.starts_with("token-drop-")) {
      // "capacity-factor-1.0 (9.97% dropped)": Marin's fixed all-to-all cells at a factor;
      // "token-drop-1.25": a per-expert capacity (Megatron's token drop, MaxText's dropping) at
      // a factor. The factor, then an optional note.
      const bool marin = routing.starts_with("capacity-factor-");
      const std::string_view prefix = marin ? "capacity-factor-" : "token-drop-";
      r.routing = marin ? RoutingPolicy::kFixedCells : RoutingPolicy::kCapacity;
      double factor = 0;
      const char* end = routing.data() + routing.size();
      const auto [after, ec] = std::from_chars(routing.data() + prefix.size(), end, factor);
      // The note, if any, is set apart by a space or a parenthesis ("1.25x" is no factor).
      const bool noted = after == end || *after == ' ' || *after == '(';
      if (ec != std::errc() || !noted || !std::isfinite(factor) || factor <= 0 ||
          factor > kMaxCapacityFactor) {
        throw InputError(fmt::format("{}:{}: routing = '{}'. Violated constraint: {}F with F a "
                                     "number in (0, {:g}], then optionally a note after a space",
                                     path, line_no, Printable(routing), prefix,
                                     kMaxCapacityFactor));
      }
      r.capacity_factor = factor;
    } else if (routing.starts_with("fsdp-control")) {
      // Experts gathered in 4 chunks, each chunk's tokens capped at its fair share (seed 000):
      // Marin's capping, with no all-to-all cells to cap at ep 1.
      r.routing = RoutingPolicy::kFixedCells;
      r.capacity_factor = 1.0;
      l.moe_chunk = 4;
    } else {
      throw InputError(fmt::format("{}:{}: routing = '{}'. Violated constraint: dense, dropless, "
                                   "dropless-chunk1, dropless-forced-balance, token-drop, "
                                   "token-drop-F, capacity-factor-F or fsdp-control...",
                                   path, line_no, Printable(routing)));
    }
    // A routing names how experts are fed: a dense model has none to feed, a MoE model one.
    if ((routing == "dense") == model.config.is_moe()) {
      throw InputError(fmt::format("{}:{}: routing = '{}'. Violated constraint: {}", path, line_no,
                                   Printable(routing),
                                   model.config.is_moe()
                                       ? fmt::format("a MoE routing for {} (a MoE model)",
                                                     r.model)
                                       : fmt::format("dense for {} (a dense model)", r.model)));
    }
    // The stack's profile when the row names it (torchtitan's runs: torch-eager-h100), else the
    // publisher's by source and device.
    r.profile = col.contains("profile") && !cell("profile").empty()
                    ? cell("profile")
                    : ProfileFor(r.device, r.source);
    if (col.contains("recompute") && !cell("recompute").empty()) {
      r.recompute = RecomputeFromString(cell("recompute"));
      if (!r.recompute) {
        throw InputError(fmt::format("{}:{}: recompute = '{}'. Violated constraint: blank, none, "
                                     "selective, modules, moe or full",
                                     path, line_no, Printable(cell("recompute"))));
      }
    }
    FlopConvention convention = FlopConvention::kFullSquare;
    if (col.contains("flop_convention") && !cell("flop_convention").empty()) {
      const std::string& name = cell("flop_convention");
      // The names a study file takes ("physical" is full-square's former name), but the table
      // convention, which counts no measured run.
      const std::optional<FlopConvention> named = FlopConventionFromString(name);
      if (named && *named != FlopConvention::kLevanterTable) {
        convention = *named;
      } else {
        throw InputError(fmt::format("{}:{}: flop_convention = '{}'. Violated constraint: blank, "
                                     "full-square (or its former name, physical) or causal",
                                     path, line_no, Printable(name)));
      }
    }
    const double tokens = number("measured_tokens_per_s_per_gpu");
    const double tflops = number("measured_tflops_per_gpu");
    mfu.push_back(number("measured_mfu_pct"));
    lines.push_back(line_no);
    // No GPU runs above the peak of the row's precision: a figure that implies it is a typo or a
    // unit slip, and one such row would pull the whole fit. A full-square count of the same work
    // is larger than the causal one by the attention it adds.
    const ModelShape row_shape = [&] {
      try {
        return MakeModelShape(model.config, r.seq_len);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}:{}: {}", path, line_no, e.what()));
      }
    }();
    const bool causal = convention == FlopConvention::kCausal;
    const double row_flops_per_token =
        causal ? row_shape.causal_model_flops_per_token : row_shape.model_flops_per_token;
    const double peak_tflops = PeakTflops(device, r.format) * row_flops_per_token /
                               row_shape.causal_model_flops_per_token;
    if (mfu.back() > 100) {
      throw InputError(fmt::format("{}:{}: measured_mfu_pct = {}. Violated constraint: at most 100",
                                   path, line_no, mfu.back()));
    }
    if (tflops > 0 && tflops < kMinMeasuredMfu * device.peak_bf16_tflops) {
      throw InputError(fmt::format("{}:{}: measured_tflops_per_gpu = {}. Violated constraint: at "
                                   "least {:g}, {:g}% of the {}'s bf16 peak of {} TFLOP/s",
                                   path, line_no, tflops, kMinMeasuredMfu * device.peak_bf16_tflops,
                                   100 * kMinMeasuredMfu, device.name, device.peak_bf16_tflops));
    }
    if (tflops > peak_tflops) {
      throw InputError(fmt::format("{}:{}: measured_tflops_per_gpu = {}. Violated constraint: at "
                                   "most {:.6g}, the {}'s {} peak of {} TFLOP/s in the row's {} "
                                   "count",
                                   path, line_no, tflops, peak_tflops, device.name,
                                   ToString(r.format), PeakTflops(device, r.format),
                                   causal ? "causal" : "full-square"));
    }
    CheckTokensPerSecondIsPossible(tokens, row_shape, device, r.format,
                                   fmt::format("{}:{}: measured_tokens_per_s_per_gpu", path,
                                               line_no));
    // Two figures of one run agree within a factor of 2 (FLOP counts differ between publishers
    // by less: a GLU counted as two matrices, the attention square or its half).
    if (tokens > 0 && tflops > 0) {
      const double implied = tokens * row_flops_per_token / 1e12;
      r.tflops_over_tokens = tflops / implied;
      if (tflops > 2 * implied || tflops < implied / 2) {
        throw InputError(fmt::format(
            "{}:{}: measured_tflops_per_gpu = {} with measured_tokens_per_s_per_gpu = {}, which "
            "is {:.4g} TFLOP/s at {:.4g} model FLOPs per token. Violated constraint: the two "
            "agree within a factor of 2",
            path, line_no, tflops, tokens, implied, row_flops_per_token));
      }
    }
    try {
      CheckMfuAgreesWithTokensPerSecond(mfu.back(), tokens, row_flops_per_token, device,
                                        "measured_mfu_pct", "measured_tokens_per_s_per_gpu");
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", path, line_no, e.what()));
    }
    if (tokens == 0 && tflops == 0 && mfu.back() == 0) {
      throw InputError(fmt::format(
          "{}:{}: measured_tokens_per_s_per_gpu, measured_tflops_per_gpu and measured_mfu_pct "
          "are all blank (row {}). Violated constraint: a row gives a measurement: tokens/s per "
          "GPU, model TFLOP/s per GPU or MFU %",
          path, line_no, Printable(r.id)));
    }
    if (tokens > 0) {
      r.measured_tokens_per_s_per_gpu = tokens;
      r.basis = "tokens/s";
    } else if (tflops > 0) {
      // Model TFLOP/s as the source counts them, over mosaic's FLOPs per token in the same
      // convention (a causal count is about half the attention square of a full-square one).
      r.measured_tokens_per_s_per_gpu = tflops * 1e12 / row_flops_per_token;
      r.basis = causal ? "TFLOP/s (causal)" : "TFLOP/s";
    }
    rows.push_back(std::move(r));
  }
  // MFU-only rows: convert through a row of the same model and device with tokens/s and MFU.
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].measured_tokens_per_s_per_gpu > 0) continue;
    for (size_t j = 0; j < rows.size() && mfu[i] > 0; ++j) {
      if (j != i && rows[j].model == rows[i].model && rows[j].hardware == rows[i].hardware &&
          rows[j].layout.ep == rows[i].layout.ep && mfu[j] > 0 && rows[j].basis == "tokens/s") {
        rows[i].measured_tokens_per_s_per_gpu = rows[j].measured_tokens_per_s_per_gpu * mfu[i] / mfu[j];
        rows[i].basis = "MFU via " + rows[j].id;
        break;
      }
    }
    if (rows[i].measured_tokens_per_s_per_gpu <= 0) {
      throw InputError(fmt::format(
          "{}:{}: measured_mfu_pct = '{}' with measured_tokens_per_s_per_gpu and "
          "measured_tflops_per_gpu blank (row {}). Violated constraint: an MFU-only row needs a "
          "row of the same model, hardware and ep that gives both tokens/s per GPU and MFU",
          path, lines[i], mfu[i], Printable(rows[i].id)));
    }
  }
  if (rows.empty()) throw InputError(fmt::format("{}: no measured rows", path));
  return rows;
}

std::vector<MeasuredRow> ReadMeasurements(const std::string& path) {
  return ParseMeasurements(ReadTextFile(path), path);
}

void AddFilesNamedBy(const std::vector<MeasuredRow>& rows, std::vector<std::string>& files) {
  for (const MeasuredRow& r : rows) {
    for (const std::string& cell : {r.model, r.hardware}) {
      if (IsPathArgument(cell) && std::ranges::find(files, cell) == files.end()) {
        files.push_back(cell);
      }
    }
  }
}

}  // namespace mosaic
