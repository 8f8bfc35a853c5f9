#include "mosaic/hardware/hardware.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <utility>

#include "mosaic/util/atomic_file.h"
#include "mosaic/util/embedded_data.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/toml_reader.h"
#include "mosaic/util/toml_util.h"

namespace mosaic {
namespace {

constexpr std::string_view kDir = "hardware/";
constexpr std::string_view kSuffix = ".toml";
// Largest scale-up domain accepted (GPUs); far above any built (GB200 NVL576 has 576).
constexpr int64_t kMaxDomainGpus = int64_t{1} << 20;

// Keys a device file must set, with what each means (for the message when one is missing).
constexpr std::pair<std::string_view, std::string_view> kRequired[] = {
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
    "scale_out_gbit_per_s"};

std::vector<std::string> FieldList() {
  return std::vector<std::string>(std::begin(kFields), std::end(kFields));
}

double ParseNumber(std::string_view field, std::string_view text, const std::string& where) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    throw InputError(fmt::format("{}: {} = {}. Violated constraint: {} is a number", where, field,
                                 text, field));
  }
  return value;
}

// Sets one field from text; `where` labels errors.
void SetField(HardwareSpec& h, std::string_view field, const std::string& text,
              const std::string& where) {
  if (field == "name") { h.name = text; return; }
  if (field == "description") { h.description = text; return; }
  std::vector<std::string> names = FieldList();
  bool known = false;
  for (std::string_view f : kFields) known = known || f == field;
  if (!known) {
    throw InputError(fmt::format("{}: unknown hardware field '{}'{}", where, field,
                                 DidYouMean(field, names)));
  }
  const double v = ParseNumber(field, text, where);
  if (field == "scale_up_domain_gpus" || field == "scale_up_domain_gpus_used") {
    // A GPU count: a whole number in a range that converts to int64_t exactly.
    if (!(v >= 0 && v <= kMaxDomainGpus) || v != static_cast<double>(static_cast<int64_t>(v))) {
      throw InputError(fmt::format("{}: {} = {}. Violated constraint: {} is a whole number of GPUs "
                                   "in [0, {}]",
                                   where, field, text, field, kMaxDomainGpus));
    }
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
}

void Check(bool ok, const std::string& where, std::string_view field, double value,
           std::string_view rule) {
  if (!ok) {
    throw InputError(fmt::format("{}: {} = {}. Violated constraint: {}", where, field, value, rule));
  }
}

void ValidateHardware(const HardwareSpec& h, const std::string& where) {
  Check(h.peak_bf16_tflops > 0, where, "peak_bf16_tflops", h.peak_bf16_tflops,
        "peak_bf16_tflops > 0");
  Check(h.peak_fp8_tflops >= 0, where, "peak_fp8_tflops", h.peak_fp8_tflops,
        "peak_fp8_tflops >= 0");
  Check(h.peak_mxfp8_tflops >= 0, where, "peak_mxfp8_tflops", h.peak_mxfp8_tflops,
        "peak_mxfp8_tflops >= 0");
  Check(h.hbm_gb > 0, where, "hbm_gb", h.hbm_gb, "hbm_gb > 0");
  Check(h.hbm_tb_per_s > 0, where, "hbm_tb_per_s", h.hbm_tb_per_s, "hbm_tb_per_s > 0");
  Check(h.scale_up_gb_per_s > 0, where, "scale_up_gb_per_s", h.scale_up_gb_per_s,
        "scale_up_gb_per_s > 0");
  Check(h.scale_up_domain_gpus >= 1, where, "scale_up_domain_gpus",
        static_cast<double>(h.scale_up_domain_gpus), "scale_up_domain_gpus >= 1");
  Check(h.scale_up_domain_gpus_used >= 0 &&
            h.scale_up_domain_gpus_used <= h.scale_up_domain_gpus,
        where, "scale_up_domain_gpus_used", static_cast<double>(h.scale_up_domain_gpus_used),
        "0 <= scale_up_domain_gpus_used <= scale_up_domain_gpus");
  Check(h.scale_out_gbit_per_s > 0, where, "scale_out_gbit_per_s", h.scale_out_gbit_per_s,
        "scale_out_gbit_per_s > 0");
}

HardwareSpec FromToml(std::string_view text, const std::string& origin) {
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
    if (field == "sources") {
      if (const toml::table* sources = node.as_table()) {
        for (auto&& [k, v] : *sources) {
          if (auto s = v.as_string()) h.sources[std::string(k.str())] = s->get();
        }
      }
      continue;
    }
    std::string value;
    if (auto s = node.as_string()) value = s->get();
    else if (auto i = node.as_integer()) value = std::to_string(i->get());
    else if (auto d = node.as_floating_point()) value = fmt::format("{}", d->get());
    else {
      throw InputError(fmt::format("{}: {} has type {}. Violated constraint: a number or string",
                                   where, field, TomlTypeName(node)));
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

HardwareSpec LoadHardware(std::string_view name_or_path, std::span<const FieldOverride> overrides) {
  const std::string arg(name_or_path);
  if (name_or_path.ends_with(kSuffix) || std::filesystem::is_regular_file(arg)) {
    return LoadHardwareFromToml(ReadFile(arg), arg, overrides);
  }
  auto content = FindEmbeddedFile(fmt::format("{}{}{}", kDir, name_or_path, kSuffix));
  if (!content) {
    std::vector<std::string> names = HardwareNames();
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("unknown hardware '{}'{}; known: {}", name_or_path,
                                 DidYouMean(name_or_path, names), list));
  }
  return LoadHardwareFromToml(*content, fmt::format("hardware {}", name_or_path), overrides);
}

HardwareSpec LoadHardwareFromToml(std::string_view toml_text, const std::string& origin,
                                  std::span<const FieldOverride> overrides) {
  HardwareSpec h = FromToml(toml_text, origin);
  ValidateHardware(h, h.origin);
  for (const FieldOverride& o : overrides) {
    const std::string where = fmt::format("--set hardware.{}={}", o.field, o.value);
    SetField(h, o.field, o.value, where);
    h.sources[o.field] = where;
    ValidateHardware(h, where);
  }
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
