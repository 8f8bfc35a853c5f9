#include "mosaic/hardware/hardware.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "mosaic/util/embedded_data.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/toml_reader.h"
#include "mosaic/util/toml_util.h"

namespace mosaic {
namespace {

constexpr std::string_view kDir = "hardware/";
constexpr std::string_view kSuffix = ".toml";
// Largest scale-up domain accepted (GPUs); far above any built (GB200 NVL576 has 576).
constexpr int64_t kMaxDomainGpus = int64_t{1} << 20;

// The most an 8-bit peak may be, as a multiple of the bf16 peak (Hopper and Blackwell: 2).
constexpr double kMax8BitOverBf16 = 4;

// Keys a device file must set, with what each means (for the message when one is missing).
constexpr std::pair<std::string_view, std::string_view> kRequired[] = {
    {"name", "the device's name, which picks its efficiency profile (h100 runs megatron-h100)"},
    {"peak_bf16_tflops", "dense bf16 peak per GPU, TFLOP/s"},
    {"hbm_gb", "memory per GPU, GB"},
    {"hbm_tb_per_s", "memory bandwidth per GPU, TB/s"},
    {"scale_up_gb_per_s", "scale-up bandwidth per GPU per direction, GB/s"},
    {"scale_up_domain_gpus", "GPUs in one scale-up domain"},
    {"scale_out_gbit_per_s", "NIC bandwidth per GPU per direction, Gbit/s"}};

constexpr std::string_view kFields[] = {
    "name",           "description",          "peak_bf16_tflops",
    "peak_fp8_tflops", "peak_mxfp8_tflops",   "hbm_gb",              "hbm_tb_per_s",
    "scale_up_gb_per_s", "scale_up_domain_gpus", "scale_up_domain_gpus_used",
    "scale_out_gbit_per_s", "host_link_gb_per_s", "host_memory_gb"};

std::vector<std::string> FieldList() {
  return std::vector<std::string>(std::begin(kFields), std::end(kFields));
}

double ParseNumber(std::string_view field, std::string_view text, const std::string& where) {
  const std::optional<double> value = ParseDecimal(text);
  if (!value) {
    throw InputError(fmt::format("{}: {} = {}. Violated constraint: {} is a number", where, field,
                                 Printable(text), field));
  }
  return *value;
}

// The physical range of one numeric field: [min, max] in the field's unit, far around every device
// built (the fastest GPU has 5 PFLOP/s fp8, 288 GB at 8 TB/s, 900 GB/s NVLink, 800 Gbit/s NICs)
// and tight enough that step times, MFU and memory stay readable numbers. `zero_allowed`: 0 also
// means "not supported" (an fp8 peak) or "all of them" (the used domain size). Counts are whole.
struct FieldRange {
  std::string_view field;
  double min;
  double max;
  bool zero_allowed;
  bool whole;
  std::string_view unit;
};

constexpr FieldRange kRanges[] = {
    {"peak_bf16_tflops", 0.1, 1e5, false, false, "TFLOP/s"},
    {"peak_fp8_tflops", 0.1, 1e5, true, false, "TFLOP/s; 0 = no fp8"},
    {"peak_mxfp8_tflops", 0.1, 1e5, true, false, "TFLOP/s; 0 = no MXFP8 tensor cores"},
    {"hbm_gb", 0.1, 1e5, false, false, "GB"},
    {"hbm_tb_per_s", 0.01, 1e3, false, false, "TB/s"},
    {"scale_up_gb_per_s", 0.1, 1e5, false, false, "GB/s"},
    {"scale_up_domain_gpus", 1, static_cast<double>(kMaxDomainGpus), false, true, "GPUs"},
    {"scale_up_domain_gpus_used", 1, static_cast<double>(kMaxDomainGpus), true, true,
     "GPUs; 0 = the whole domain"},
    {"scale_out_gbit_per_s", 0.1, 1e6, false, false, "Gbit/s"},
    {"host_link_gb_per_s", 0.1, 1e5, true, false, "GB/s per direction; 0 = not given"},
    {"host_memory_gb", 0.1, 1e6, true, false, "GB per GPU; 0 = not given"},
};

// The rule of a field's range as the error states it: "peak_fp8_tflops is 0 or in [0.1, 100000]
// (TFLOP/s; 0 = no fp8)", "scale_up_domain_gpus is a whole number in [1, 1048576] (GPUs)".
std::string RangeRule(const FieldRange& r) {
  return fmt::format("{} is {}{}in [{}, {}] ({})", r.field, r.zero_allowed ? "0 or " : "",
                     r.whole ? "a whole number " : "", r.min, r.max, r.unit);
}

// Sets one field from text, checked against its range (the one check of a value, for device files
// and --set alike); `where` labels errors.
void SetField(HardwareSpec& h, std::string_view field, const std::string& text,
              const std::string& where) {
  if (field == "name") { h.name = text; return; }
  if (field == "description") { h.description = text; return; }
  std::vector<std::string> names = FieldList();
  const FieldRange* range = nullptr;
  for (const FieldRange& r : kRanges) {
    if (r.field == field) range = &r;
  }
  if (range == nullptr) {
    throw InputError(fmt::format("{}: unknown hardware field '{}'{}", where, Printable(field),
                                 DidYouMean(field, names)));
  }
  const double v = ParseNumber(field, text, where);
  // NaN fails every comparison; a whole number in range converts to int64_t exactly.
  const bool in_range = (range->zero_allowed && v == 0) || (v >= range->min && v <= range->max);
  if (!in_range || (range->whole && v != std::floor(v))) {
    throw InputError(fmt::format("{}: {} = {}. Violated constraint: {}", where, field, text,
                                 RangeRule(*range)));
  }
  if (field == "peak_bf16_tflops") h.peak_bf16_tflops = v;
  else if (field == "peak_fp8_tflops") h.peak_fp8_tflops = v;
  else if (field == "peak_mxfp8_tflops") h.peak_mxfp8_tflops = v;
  else if (field == "hbm_gb") h.hbm_gb = v;
  else if (field == "hbm_tb_per_s") h.hbm_tb_per_s = v;
  else if (field == "scale_up_gb_per_s") h.scale_up_gb_per_s = v;
  else if (field == "scale_up_domain_gpus") h.scale_up_domain_gpus = static_cast<int64_t>(v);
  else if (field == "scale_up_domain_gpus_used") h.scale_up_domain_gpus_used = static_cast<int64_t>(v);
  else if (field == "scale_out_gbit_per_s") h.scale_out_gbit_per_s = v;
  else if (field == "host_link_gb_per_s") h.host_link_gb_per_s = v;
  else if (field == "host_memory_gb") h.host_memory_gb = v;
}

// The rules between fields (each field's own range is checked as it is set). Errors name a
// field's place in `field_where` (its file:line:column) when it has one, else `where`.
void ValidateHardware(const HardwareSpec& h, const std::string& where,
                      const std::map<std::string, std::string>& field_where = {}) {
  auto at = [&](const std::string& field) {
    const auto it = field_where.find(field);
    return it != field_where.end() ? it->second : where;
  };
  if (h.name.empty()) {
    throw InputError(fmt::format("{}: name = ''. Violated constraint: a device has a name", where));
  }
  if (h.scale_up_domain_gpus_used > h.scale_up_domain_gpus) {
    throw InputError(fmt::format("{}: scale_up_domain_gpus_used = {}. Violated constraint: "
                                 "scale_up_domain_gpus_used <= scale_up_domain_gpus ({})",
                                 at("scale_up_domain_gpus_used"), h.scale_up_domain_gpus_used,
                                 h.scale_up_domain_gpus));
  }
  // An 8-bit format's tensor cores run at twice the bf16 rate on Hopper and Blackwell: a peak
  // below the bf16 one (fp8 would come out slower than bf16) or past 4× it (MFU, taken against
  // the bf16 peak, past 1) is a unit slip.
  for (const auto& [field, peak] : {std::pair{"peak_fp8_tflops", h.peak_fp8_tflops},
                                    std::pair{"peak_mxfp8_tflops", h.peak_mxfp8_tflops}}) {
    if (peak > 0 && (peak < h.peak_bf16_tflops || peak > kMax8BitOverBf16 * h.peak_bf16_tflops)) {
      throw InputError(fmt::format("{}: {} = {}. Violated constraint: 0 (none) or between "
                                   "peak_bf16_tflops and {} times it ({} to {})",
                                   at(field), field, peak, kMax8BitOverBf16, h.peak_bf16_tflops,
                                   kMax8BitOverBf16 * h.peak_bf16_tflops));
    }
  }
}

// The device of a file's text; `field_where` gets each field's file:line:column.
HardwareSpec FromToml(std::string_view text, const std::string& origin,
                      std::map<std::string, std::string>* field_where) {
  toml::table table = ParseToml(text, origin);
  HardwareSpec h;
  h.origin = origin;
  for (const auto& [key, meaning] : kRequired) {
    if (!table.contains(key)) {
      throw LocatedError(FileLocation(origin),
                         fmt::format("{} is missing. Violated constraint: a device file sets {} "
                                     "({})",
                                     key, key, meaning));
    }
  }
  for (auto&& [key, node] : table) {
    const std::string field(key.str());
    const std::string where = LocationOf(node, origin, text).ToString();
    (*field_where)[field] = where;
    if (field == "sources") {
      if (const toml::table* sources = node.as_table()) {
        for (auto&& [k, v] : *sources) {
          if (auto s = v.as_string()) h.sources[std::string(k.str())] = s->get();
        }
      }
      continue;
    }
    // name and description are strings, every other field a number (hbm_gb = "80" is a
    // quoted number, most likely a slip).
    const bool text_field = field == "name" || field == "description";
    std::string value;
    const auto* string = node.as_string();
    const auto* integer = node.as_integer();
    const auto* floating = node.as_floating_point();
    if (string != nullptr && text_field) {
      value = string->get();
    } else if (integer != nullptr && !text_field) {
      value = std::to_string(integer->get());
    } else if (floating != nullptr && !text_field) {
      value = fmt::format("{}", floating->get());
    } else {
      throw InputError(fmt::format("{}: {} has type {}. Violated constraint: {} is a {}", where,
                                   field, TomlTypeName(node), field,
                                   text_field ? "string" : "number"));
    }
    SetField(h, field, value, where);
  }
  return h;
}

}  // namespace

std::span<const std::string_view> HardwareFieldNames() { return kFields; }

std::vector<std::string> HardwareNames() {
  std::vector<std::string> names;
  for (const EmbeddedFile& file : EmbeddedFiles()) {
    if (file.path.starts_with(kDir) && file.path.ends_with(kSuffix)) {
      std::string_view n = file.path.substr(kDir.size());
      names.emplace_back(n.substr(0, n.size() - kSuffix.size()));
    }
  }
  return names;
}

std::string DeviceName(std::string_view name_or_path) {
  return IsPathArgument(name_or_path) ? LoadHardware(name_or_path).name
                                      : std::string(name_or_path);
}

HardwareSpec LoadHardware(std::string_view name_or_path, std::span<const FieldOverride> overrides) {
  const std::string arg(name_or_path);
  // A path (a directory included) is read as a file, so that its error is the file's.
  if (IsPathArgument(arg)) {
    return LoadHardwareFromToml(ReadTextFile(arg), arg, overrides);
  }
  auto content = FindEmbeddedFile(fmt::format("{}{}{}", kDir, name_or_path, kSuffix));
  if (!content) {
    std::vector<std::string> names = HardwareNames();
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("unknown hardware '{}'{}; known: {}", Printable(name_or_path),
                                 DidYouMean(name_or_path, names), list));
  }
  return LoadHardwareFromToml(*content, fmt::format("hardware {}", name_or_path), overrides);
}

HardwareSpec LoadHardwareFromToml(std::string_view toml_text, const std::string& origin,
                                  std::span<const FieldOverride> overrides) {
  std::map<std::string, std::string> field_where;
  HardwareSpec h = FromToml(toml_text, origin, &field_where);
  ValidateHardware(h, h.origin, field_where);
  // The rules between fields hold once every override is applied (raising both peaks takes two).
  std::vector<std::string> flags;
  std::map<std::string, std::string> set_by_override;  // field → its --set value
  for (const FieldOverride& o : overrides) {
    const std::string where =
        fmt::format("--set hardware.{}={}", Printable(o.field), Printable(o.value));
    // A field set twice would keep the last value silently, as a model field's would.
    if (const auto [it, fresh] = set_by_override.emplace(o.field, o.value); !fresh) {
      throw InputError(fmt::format("{}: hardware.{} is set twice (to {} and to {}). Violated "
                                   "constraint: each field at most once",
                                   where, Printable(o.field), Printable(it->second),
                                   Printable(o.value)));
    }
    SetField(h, o.field, o.value, where);
    h.sources[o.field] = where;
    flags.push_back(where);
  }
  if (!flags.empty()) ValidateHardware(h, fmt::format("{}", fmt::join(flags, " ")));
  return h;
}

Cluster MakeCluster(const HardwareSpec& device, int64_t gpus) {
  if (gpus < 1) {
    throw InputError(fmt::format("--gpus = {}. Violated constraint: gpus >= 1", gpus));
  }
  Cluster c;
  c.device = device;
  c.gpus = gpus;
  const int64_t domain = device.domain_gpus();
  std::string up_name = device.name.starts_with("tpu") ? "ici"
                        : domain > 8                   ? "nvlink-rack"
                                                       : "nvlink-node";
  c.domains.push_back({up_name, domain, device.scale_up_gb_per_s * 1e9});
  c.domains.push_back({"network", std::max(gpus, domain), device.scale_out_gbit_per_s * 1e9 / 8});
  return c;
}

}  // namespace mosaic
