#include "mosaic/perf/profile.h"

#include "mosaic/hardware/hardware.h"
#include "mosaic/perf/layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <span>

#include "mosaic/util/embedded_data.h"
#include "mosaic/util/error.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/toml_util.h"

namespace mosaic {
namespace {

// The physical range of a profile parameter, and why: a value outside it is a typo or a unit
// slip, and a huge one would turn a step time into inf or NaN.
struct Range {
  double lo, hi;
  std::string_view why;
};

// Shares of a whole: efficiencies, overlaps, the fp8 gain, the logits held.
constexpr Range kShare{0, 1, "a share of a whole"};
// A rate divides a time: below 1% of the peak would be a step a hundred times too slow.
constexpr Range kRateShare{0.01, 1, "a share of the peak rate, which divides a time"};

// Whether a profile parameter may be left out of a file, and what 0 means.
enum class Unset {
  kRequired,     // left out, it would silently take a built-in default
  kShared,       // left out: the shared value applies
  kSharedOrZero,  // left out or 0: the shared value applies
  kZero           // left out: 0, what the model charged before the key existed
};

// A number of a profile file: its key, where it goes, its range and whether it may be left out.
template <typename Params>
struct NumberField {
  std::string_view name;
  double Params::*member;
  Range range;
  Unset unset = Unset::kRequired;
  const char* count_of = nullptr;  // a count: a whole number of these ("rows"); null for none
};
using SharedField = NumberField<SharedPerfParams>;
using ProfileField = NumberField<PerfProfile>;

constexpr SharedField kSharedFields[] = {
    {"gemm_latency_seconds", &SharedPerfParams::gemm_latency_seconds,
     {0, 1e-3, "a kernel's launch and tail take microseconds"}},
    {"gemm_half_size", &SharedPerfParams::gemm_half_size,
     {0, 65536, "a GEMM dimension in rows"}, Unset::kRequired, "rows"},
    {"elementwise_passes", &SharedPerfParams::elementwise_passes,
     {0, 100, "reads and writes of a layer's activations per step"}, Unset::kRequired, "passes"},
    {"attention_efficiency", &SharedPerfParams::attention_efficiency, kRateShare},
    {"fp8_gain", &SharedPerfParams::fp8_gain, kShare},
    {"scale_up_efficiency", &SharedPerfParams::scale_up_efficiency, kRateShare},
    {"scale_out_efficiency", &SharedPerfParams::scale_out_efficiency, kRateShare},
    {"collective_latency_seconds", &SharedPerfParams::collective_latency_seconds,
     {0, 1e-2, "a collective call's latency is microseconds"}},
    {"overlap_tp", &SharedPerfParams::overlap_tp, kShare},
    {"overlap_cp", &SharedPerfParams::overlap_cp, kShare},
    {"overlap_fsdp", &SharedPerfParams::overlap_fsdp, kShare},
    {"overlap_dp", &SharedPerfParams::overlap_dp, kShare},
    {"overlap_pp", &SharedPerfParams::overlap_pp, kShare},
    {"overlap_contention", &SharedPerfParams::overlap_contention, kShare},
    {"moe_sync_seconds", &SharedPerfParams::moe_sync_seconds,
     {0, 0.1, "host time per MoE layer pass is milliseconds"}},
    {"unfused_attention_passes", &SharedPerfParams::unfused_attention_passes,
     {0, 100, "passes over the score matrix per layer"}, Unset::kRequired, "passes"},
    {"untraced_sink_model_seconds", &SharedPerfParams::untraced_sink_model_seconds,
     {0, 1e-4, "a step takes microseconds per token and layer"}, Unset::kZero},
    {"fp8_quantize_seconds", &SharedPerfParams::fp8_quantize_seconds,
     {0, 1e-2, "a few small kernels per expert take microseconds"}},
};

constexpr ProfileField kProfileFields[] = {
    {"gemm_efficiency", &PerfProfile::gemm_efficiency, kRateShare},
    {"step_overhead_seconds", &PerfProfile::step_overhead_seconds,
     {0, 3600, "a fixed cost per step, at most an hour"}},
    {"activation_factor", &PerfProfile::activation_factor,
     {0.1, 100, "stored activations relative to the fused-kernel count; what a stack leaves out "
                "of them is a recompute policy or offload, not this factor"}},
    {"memory_reserve_gb", &PerfProfile::memory_reserve_gb,
     {0, 1e5, "GB held per GPU beside the model"}},
    {"scale_up_efficiency", &PerfProfile::scale_up_efficiency, kRateShare, Unset::kSharedOrZero},
    {"logits_fraction", &PerfProfile::logits_fraction, kShare},
    {"grad_bytes_per_param", &PerfProfile::grad_bytes_per_param,
     {0, 16, "bytes per parameter; fp32 gradients take 4"}},
    {"optimizer_bytes_per_param", &PerfProfile::optimizer_bytes_per_param,
     {0, 64, "bytes per parameter; Adam's fp32 master weights and moments take 12"}},
    {"expert_group_seconds", &PerfProfile::expert_group_seconds,
     {0, 1e-2, "one expert GEMM's cost beyond its FLOPs is microseconds"}},
    {"grouped_gemm_row_tile", &PerfProfile::grouped_gemm_row_tile,
     {0, 65536, "rows per tile of the grouped GEMM kernel; 0: none"}, Unset::kZero, "rows"},
    {"overlap_fsdp", &PerfProfile::overlap_fsdp, kShare, Unset::kShared},
    {"overlap_ep", &PerfProfile::overlap_ep, kShare},
};

struct ProfileFlag {
  std::string_view name;
  bool PerfProfile::*member;
};

constexpr ProfileFlag kProfileFlags[] = {
    {"moe_host_sync", &PerfProfile::moe_host_sync},
    {"fused_attention_sinks", &PerfProfile::fused_attention_sinks},
    {"hierarchical_dispatch", &PerfProfile::hierarchical_dispatch},
    {"paired_a2a_overlap", &PerfProfile::paired_a2a_overlap},
};
// Flags a file may leave out, which calibrate writes: `calibrated` (false: set by hand),
// `moe_calibrated` (left out, `calibrated`'s value), `ep_calibrated` (left out,
// `moe_calibrated`'s) and `untraced_sink_model_cost` (left out, false).
constexpr ProfileFlag kOptionalProfileFlags[] = {
    {"calibrated", &PerfProfile::calibrated},
    {"moe_calibrated", &PerfProfile::moe_calibrated},
    {"ep_calibrated", &PerfProfile::ep_calibrated},
    {"untraced_sink_model_cost", &PerfProfile::untraced_sink_model_cost},
};

// A parameter of `field`'s kind: a number inside its physical range (or 0 where 0 takes the shared
// value), whole where the field is a count.
template <typename Params>
double Number(const toml::node& node, const std::string& where, const NumberField<Params>& field) {
  const std::string_view key = field.name;
  const Range& range = field.range;
  const bool zero_means_shared = field.unset == Unset::kSharedOrZero;
  double x = 0;
  if (auto v = node.as_floating_point()) {
    x = v->get();
  } else if (auto i = node.as_integer()) {
    x = static_cast<double>(i->get());
  } else {
    throw InputError(fmt::format("{}: {} = {} has type {}. Violated constraint: a number", where,
                                 key, TomlValueText(node), TomlTypeName(node)));
  }
  if (x == 0) x = 0;  // -0 is 0: no parameter prints or writes a negative zero
  if (zero_means_shared && x == 0) return x;
  if (!std::isfinite(x) || x < range.lo || x > range.hi) {
    throw InputError(fmt::format("{}: {} = {}. Violated constraint: {} <= {} <= {} ({}{})", where,
                                 key, x, range.lo, key, range.hi, range.why,
                                 zero_means_shared ? "; 0 takes the shared value" : ""));
  }
  if (field.count_of != nullptr && x != std::floor(x)) {
    throw InputError(fmt::format("{}: {} = {}. Violated constraint: a whole number of {}", where,
                                 key, x, field.count_of));
  }
  return x;
}

template <typename Fields>
std::vector<std::string> Names(const Fields& fields) {
  std::vector<std::string> names;
  for (const auto& f : fields) names.emplace_back(f.name);
  return names;
}

}  // namespace

const PerfProfile& ProfileSet::Get(std::string_view name) const {
  std::vector<std::string> names;
  for (const PerfProfile& p : profiles) {
    if (p.name == name) return p;
    names.push_back(p.name);
  }
  throw InputError(fmt::format("unknown perf profile '{}'{}; known: {}, and generic-DEVICE (the "
                               "device's uncalibrated defaults)",
                               Printable(name), DidYouMean(name, names), fmt::join(names, ", ")));
}

std::string CalibrationText(const PerfProfile& profile) {
  if (profile.calibrated) return "calibrated on " + profile.hardware;
  return IsGenericProfile(profile.name) ? "uncalibrated defaults"
                                        : "uncalibrated: set by hand for " + profile.hardware;
}

std::string DeviceNameOf(const PerfProfile& profile) {
  return DeviceName(profile.hardware);
}

std::string GenericProfileName(std::string_view hardware) {
  return "generic-" + std::string(hardware);
}

bool IsGenericProfile(std::string_view name) {
  return name == "generic" || name.starts_with("generic-");
}

std::string_view CalibratedSibling(std::string_view hardware) {
  if (hardware == "h200" || hardware == "h800") return "h100";
  if (hardware == "gb200" || hardware.starts_with("gb200-")) return "gb200-nvl72";
  if (hardware == "gb300" || hardware.starts_with("gb300-")) return "gb200-nvl72";
  return "";
}

PerfProfile ProfileSet::ForHardware(std::string_view hardware) const {
  const std::string_view sibling = CalibratedSibling(hardware);
  for (bool megatron : {true, false}) {
    for (std::string_view device : {hardware, sibling}) {
      if (device.empty()) continue;
      for (const PerfProfile& p : profiles) {
        if (p.hardware == device && (!megatron || p.name.starts_with("megatron-"))) return p;
      }
    }
  }
  return Generic(hardware);
}

PerfProfile ProfileSet::Generic(std::string_view hardware) const {
  PerfProfile generic;
  generic.name = GenericProfileName(hardware);
  generic.hardware = std::string(hardware);
  generic.stack = "uncalibrated defaults";
  return generic;
}

PerfProfile ProfileSet::Resolve(std::string_view name, std::string_view device,
                                std::string_view field) const {
  if (name.empty()) return ForHardware(device);
  const std::string own = GenericProfileName(device);
  if (name == own) return Generic(device);
  if (IsGenericProfile(name)) {
    throw InputError(fmt::format("{} = {}. Violated constraint: uncalibrated defaults are those of "
                                 "the device run, {}",
                                 field, Printable(name), own));
  }
  return Get(name);
}

ProfileSet ParseProfiles(std::string_view text, const std::string& origin) {
  toml::table table = ParseToml(text, origin);
  ProfileSet set;
  for (auto&& [key, node] : table) {
    const std::string where = LocationOf(node, origin, text).ToString();
    if (key.str() == "shared") {
      const toml::table* t = node.as_table();
      if (t == nullptr) throw InputError(fmt::format("{}: [shared] must be a table", where));
      for (auto&& [k, v] : *t) {
        bool found = false;
        for (const SharedField& f : kSharedFields) {
          if (f.name == k.str()) {
            const std::string at = LocationOf(v, origin, text).ToString();
            set.shared.*f.member = Number(v, at, f);
            found = true;
          }
        }
        if (!found && k.str() == "overlap_ep") {
          // Files written before the EP overlap became each stack's.
          throw InputError(fmt::format(
              "{}: overlap_ep = {} in [shared]. Violated constraint: overlap_ep is a profile "
              "parameter (each stack hides its own share of the EP all-to-all); move it into "
              "each [profiles.NAME] table",
              LocationOf(v, origin, text).ToString(), TomlValueText(v)));
        }
        if (!found) {
          throw InputError(fmt::format("{}: unknown shared parameter '{}'{}",
                                       KeyLocationOf(k, v, origin, text).ToString(),
                                       Printable(k.str()),
                                       DidYouMean(k.str(), Names(kSharedFields))));
        }
      }
    } else if (key.str() == "profiles") {
      const toml::table* t = node.as_table();
      if (t == nullptr) throw InputError(fmt::format("{}: [profiles] must be a table", where));
      for (auto&& [name, pnode] : *t) {
        const toml::table* pt = pnode.as_table();
        if (pt == nullptr) {
          throw InputError(fmt::format("{}: profiles.{} has type {}. Violated constraint: a "
                                       "[profiles.NAME] table",
                                       LocationOf(pnode, origin, text).ToString(), name.str(),
                                       TomlTypeName(pnode)));
        }
        PerfProfile p;
        p.name = std::string(name.str());
        if (p.name.empty() || std::isspace(static_cast<unsigned char>(p.name.front())) ||
            std::isspace(static_cast<unsigned char>(p.name.back()))) {
          throw InputError(fmt::format("{}: [profiles.\"{}\"]. Violated constraint: a name that "
                                       "is not empty and neither begins nor ends with a space "
                                       "(--profile and a measurement's profile cell name it "
                                       "trimmed)",
                                       LocationOf(pnode, origin, text).ToString(),
                                       Printable(p.name)));
        }
        if (IsGenericProfile(p.name)) {
          throw InputError(fmt::format("{}: [profiles.\"{}\"]. Violated constraint: a name other "
                                       "than 'generic' and 'generic-…', which name a device's "
                                       "uncalibrated defaults (--profile generic-DEVICE)",
                                       LocationOf(pnode, origin, text).ToString(),
                                       Printable(p.name)));
        }
        for (auto&& [k, v] : *pt) {
          const std::string at = LocationOf(v, origin, text).ToString();
          const bool text_key = k.str() == "hardware" || k.str() == "stack" ||
                                k.str() == "source" || k.str() == "recompute";
          if (text_key && !v.is_string()) {
            throw InputError(fmt::format("{}: {} = {} has type {}. Violated constraint: a string",
                                         at, k.str(), TomlValueText(v), TomlTypeName(v)));
          }
          if (k.str() == "hardware") {
            p.hardware = v.value_or(std::string());
            if (p.hardware.empty()) {
              throw InputError(fmt::format("{}: hardware = \"\". Violated constraint: a device "
                                           "name",
                                           at));
            }
            // A device name that is no device would leave the profile matched to nothing: the
            // default profile of its device would then be another stack's.
            if (IsPathArgument(p.hardware)) {
              try {
                LoadHardware(p.hardware);
              } catch (const InputError& e) {
                throw InputError(fmt::format("{}: hardware = \"{}\". Violated constraint: a "
                                             "device file that loads ({})",
                                             at, Printable(p.hardware), e.what()));
              }
            } else if (const std::vector<std::string> devices = HardwareNames();
                       std::ranges::find(devices, p.hardware) == devices.end()) {
              throw InputError(fmt::format(
                  "{}: hardware = \"{}\". Violated constraint: a shipped device ({}) or a device "
                  "file{}",
                  at, Printable(p.hardware), fmt::join(devices, ", "),
                  DidYouMean(p.hardware, devices)));
            }
            continue;
          }
          if (k.str() == "stack") { p.stack = v.value_or(std::string()); continue; }
          if (k.str() == "source") { p.source = v.value_or(std::string()); continue; }
          if (k.str() == "recompute") {
            p.recompute = v.value_or(std::string());
            if (!p.recompute.empty() && !RecomputeFromString(p.recompute)) {
              throw InputError(fmt::format("{}: recompute = '{}'. Violated constraint: none, "
                                           "selective, modules, moe or full",
                                           at, p.recompute));
            }
            continue;
          }
          bool found = false;
          using Flags = std::span<const ProfileFlag>;
          for (Flags flags : {Flags(kProfileFlags), Flags(kOptionalProfileFlags)}) {
            for (const ProfileFlag& f : flags) {
              if (f.name != k.str()) continue;
              const toml::value<bool>* flag = v.as_boolean();
              if (flag == nullptr) {
                throw InputError(fmt::format("{}: {} = {} has type {}. Violated constraint: "
                                             "true or false",
                                             at, f.name, TomlValueText(v), TomlTypeName(v)));
              }
              p.*f.member = flag->get();
              found = true;
            }
          }
          for (const ProfileField& f : kProfileFields) {
            if (f.name == k.str()) {
              p.*f.member = Number(v, at, f);
              found = true;
            }
          }
          if (!found) {
            std::vector<std::string> names = Names(kProfileFields);
            for (const ProfileFlag& f : kProfileFlags) names.emplace_back(f.name);
            for (const ProfileFlag& f : kOptionalProfileFlags) names.emplace_back(f.name);
            throw InputError(fmt::format("{}: unknown profile parameter '{}'{}",
                                         KeyLocationOf(k, v, origin, text).ToString(),
                                         Printable(k.str()),
                                         DidYouMean(k.str(), names)));
          }
        }
        // A parameter left out would silently take a built-in default, not a calibrated value;
        // only those whose absence means "the shared value" may be.
        std::vector<std::string_view> required = {"hardware"};
        for (const ProfileFlag& f : kProfileFlags) required.push_back(f.name);
        for (const ProfileField& f : kProfileFields) {
          if (f.unset == Unset::kRequired) required.push_back(f.name);
        }
        for (std::string_view key : required) {
          if (!pt->contains(key)) {
            throw InputError(fmt::format("{}: profile '{}' has no {}. Violated constraint: every "
                                         "profile sets every parameter but overlap_fsdp and "
                                         "scale_up_efficiency (left out: the shared value), "
                                         "grouped_gemm_row_tile (left out: 0), recompute (left "
                                         "out: the least that fits), stack and source (left out: "
                                         "none) and the flags calibrated (left out: false), "
                                         "moe_calibrated, ep_calibrated (left out: the flag "
                                         "before's value) and untraced_sink_model_cost (left "
                                         "out: false)",
                                         LocationOf(pnode, origin, text).ToString(), p.name, key));
          }
        }
        if (!pt->contains("moe_calibrated")) p.moe_calibrated = p.calibrated;
        if (!pt->contains("ep_calibrated")) p.ep_calibrated = p.moe_calibrated;
        set.profiles.push_back(std::move(p));
      }
    } else {
      // A device file given as profiles is the likely slip: its keys sit at the top level.
      throw InputError(fmt::format("{}: {} '{}' at the top level. Violated constraint: a profile "
                                   "file holds only the tables [shared] and [profiles.NAME]{}",
                                   where, node.is_table() ? "table" : "key",
                                   Printable(key.str()),
                                   std::ranges::count(HardwareFieldNames(), key.str()) > 0
                                       ? " (this looks like a device file: give it to --hardware)"
                                       : ""));
    }
  }
  if (const toml::table* shared = table["shared"].as_table()) {
    for (const SharedField& f : kSharedFields) {
      if (f.unset == Unset::kRequired && !shared->contains(f.name)) {
        throw InputError(fmt::format("{}: [shared] has no {}. Violated constraint: [shared] sets "
                                     "every shared parameter but untraced_sink_model_seconds "
                                     "(left out: 0)",
                                     LocationOf(*shared, origin, text).ToString(), f.name));
      }
    }
  }
  if (!table.contains("shared") || set.profiles.empty()) {
    throw InputError(fmt::format("{}: a profile file has a [shared] table and at least one "
                                 "[profiles.NAME] table",
                                 origin));
  }
  return set;
}

ProfileSet LoadProfiles(const std::string& path) {
  if (!path.empty()) return ParseProfiles(ReadTextFile(path), path);
  auto text = FindEmbeddedFile("perf/profiles.toml");
  if (!text) return ProfileSet{};
  return ParseProfiles(*text, "perf/profiles.toml");
}

namespace {

// `text` as a TOML basic string ("..." with \" \\ and control characters escaped; TOML v1.0.0,
// "String"), usable as a value and as a quoted key.
std::string TomlQuoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\u{:04X}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string ProfilesToToml(const ProfileSet& set, const std::string& header) {
  std::string out = header;
  out += "\n[shared]\n";
  for (const SharedField& f : kSharedFields) {
    out += fmt::format("{} = {}\n", f.name, set.shared.*f.member);
  }
  for (const PerfProfile& p : set.profiles) {
    out += fmt::format("\n[profiles.{}]\nhardware = {}\nstack = {}\nsource = {}\n",
                       TomlQuoted(p.name), TomlQuoted(p.hardware), TomlQuoted(p.stack),
                       TomlQuoted(p.source));
    if (!p.recompute.empty()) out += fmt::format("recompute = {}\n", TomlQuoted(p.recompute));
    out += fmt::format("calibrated = {}\n", p.calibrated);
    if (p.moe_calibrated != p.calibrated) {
      out += fmt::format("moe_calibrated = {}\n", p.moe_calibrated);
    }
    if (p.ep_calibrated != p.moe_calibrated) {
      out += fmt::format("ep_calibrated = {}\n", p.ep_calibrated);
    }
    if (p.untraced_sink_model_cost) out += "untraced_sink_model_cost = true\n";
    for (const ProfileFlag& f : kProfileFlags) {
      out += fmt::format("{} = {}\n", f.name, p.*f.member);
    }
    for (const ProfileField& f : kProfileFields) {
      if (p.*f.member == kUnsetShare) continue;  // left out: the shared value applies
      out += fmt::format("{} = {}\n", f.name, p.*f.member);
    }
  }
  return out;
}

}  // namespace mosaic
