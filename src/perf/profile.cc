#include "mosaic/perf/profile.h"

#include "mosaic/perf/layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "mosaic/util/embedded_data.h"
#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/toml_util.h"

namespace mosaic {
namespace {

struct SharedField {
  std::string_view name;
  double SharedPerfParams::*member;
};

constexpr SharedField kSharedFields[] = {
    {"gemm_latency_seconds", &SharedPerfParams::gemm_latency_seconds},
    {"gemm_half_size", &SharedPerfParams::gemm_half_size},
    {"elementwise_passes", &SharedPerfParams::elementwise_passes},
    {"attention_efficiency", &SharedPerfParams::attention_efficiency},
    {"fp8_gain", &SharedPerfParams::fp8_gain},
    {"scale_up_efficiency", &SharedPerfParams::scale_up_efficiency},
    {"scale_out_efficiency", &SharedPerfParams::scale_out_efficiency},
    {"collective_latency_seconds", &SharedPerfParams::collective_latency_seconds},
    {"overlap_tp", &SharedPerfParams::overlap_tp},
    {"overlap_cp", &SharedPerfParams::overlap_cp},
    {"overlap_fsdp", &SharedPerfParams::overlap_fsdp},
    {"overlap_dp", &SharedPerfParams::overlap_dp},
    {"overlap_pp", &SharedPerfParams::overlap_pp},
    {"overlap_contention", &SharedPerfParams::overlap_contention},
    {"moe_sync_seconds", &SharedPerfParams::moe_sync_seconds},
    {"unfused_attention_passes", &SharedPerfParams::unfused_attention_passes},
    {"fp8_quantize_seconds", &SharedPerfParams::fp8_quantize_seconds},
};

struct ProfileField {
  std::string_view name;
  double PerfProfile::*member;
};

constexpr ProfileField kProfileFields[] = {
    {"gemm_efficiency", &PerfProfile::gemm_efficiency},
    {"step_overhead_seconds", &PerfProfile::step_overhead_seconds},
    {"activation_factor", &PerfProfile::activation_factor},
    {"memory_reserve_gb", &PerfProfile::memory_reserve_gb},
    {"scale_up_efficiency", &PerfProfile::scale_up_efficiency},
    {"logits_fraction", &PerfProfile::logits_fraction},
    {"grad_bytes_per_param", &PerfProfile::grad_bytes_per_param},
    {"optimizer_bytes_per_param", &PerfProfile::optimizer_bytes_per_param},
    {"expert_group_seconds", &PerfProfile::expert_group_seconds},
    {"overlap_fsdp", &PerfProfile::overlap_fsdp},
    {"overlap_ep", &PerfProfile::overlap_ep},
};

struct ProfileFlag {
  std::string_view name;
  bool PerfProfile::*member;
};

constexpr ProfileFlag kProfileFlags[] = {
    {"moe_host_sync", &PerfProfile::moe_host_sync},
    {"fused_attention_sinks", &PerfProfile::fused_attention_sinks},
    {"hierarchical_dispatch", &PerfProfile::hierarchical_dispatch},
};

// Every profile parameter is a time, a size, a count, a fraction or a factor: finite and >= 0.
double Number(const toml::node& node, const std::string& where, std::string_view key) {
  double x = 0;
  if (auto v = node.as_floating_point()) {
    x = v->get();
  } else if (auto i = node.as_integer()) {
    x = static_cast<double>(i->get());
  } else {
    throw InputError(fmt::format("{}: {} has type {}. Violated constraint: a number", where, key,
                                 TomlTypeName(node)));
  }
  if (!std::isfinite(x) || x < 0) {
    throw InputError(
        fmt::format("{}: {} = {}. Violated constraint: a finite number >= 0", where, key, x));
  }
  // Shares (efficiencies, overlaps, the fp8 gain, the logits held) are fractions of a whole.
  const bool fraction = key.starts_with("overlap_") || key.ends_with("_efficiency") ||
                        key == "fp8_gain" || key == "logits_fraction";
  if (fraction && x > 1) {
    throw InputError(fmt::format("{}: {} = {}. Violated constraint: {} <= 1", where, key, x, key));
  }
  // Rates divide: a zero efficiency would be an infinite time. (A profile's scale_up_efficiency
  // of 0 means the shared value.)
  const bool divisor = key == "gemm_efficiency" || key == "attention_efficiency";
  if (divisor && x <= 0) {
    throw InputError(fmt::format("{}: {} = {}. Violated constraint: {} > 0", where, key, x, key));
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
  throw InputError(fmt::format("unknown perf profile '{}'{}; known: {}", Printable(name),
                               DidYouMean(name, names), fmt::join(names, ", ")));
}

std::string CalibrationText(const PerfProfile& profile) {
  return profile.calibrated ? "calibrated on " + profile.hardware : "uncalibrated defaults";
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
  PerfProfile generic;
  generic.name = "generic";
  generic.hardware = std::string(hardware);
  generic.stack = "uncalibrated defaults";
  return generic;
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
            set.shared.*f.member = Number(v, at, f.name);
            // The shared link efficiencies divide (a profile's 0 means the shared one).
            if (f.name.ends_with("_efficiency") && set.shared.*f.member <= 0) {
              throw InputError(fmt::format("{}: {} = {}. Violated constraint: {} > 0", at, f.name,
                                           set.shared.*f.member, f.name));
            }
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
                                       LocationOf(v, origin, text).ToString(), k.str(),
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
        p.calibrated = true;
        for (auto&& [k, v] : *pt) {
          const std::string at = LocationOf(v, origin, text).ToString();
          const bool text_key = k.str() == "hardware" || k.str() == "stack" ||
                                k.str() == "source" || k.str() == "recompute";
          if (text_key && !v.is_string()) {
            throw InputError(fmt::format("{}: {} has type {}. Violated constraint: a string", at,
                                         k.str(), TomlTypeName(v)));
          }
          if (k.str() == "hardware") {
            p.hardware = v.value_or(std::string());
            if (p.hardware.empty()) {
              throw InputError(fmt::format("{}: hardware = \"\". Violated constraint: a device "
                                           "name",
                                           at));
            }
            continue;
          }
          if (k.str() == "stack") { p.stack = v.value_or(std::string()); continue; }
          if (k.str() == "source") { p.source = v.value_or(std::string()); continue; }
          if (k.str() == "calibrated") {
            if (!v.is_boolean()) {
              throw InputError(fmt::format("{}: calibrated has type {}. Violated constraint: true "
                                           "or false",
                                           at, TomlTypeName(v)));
            }
            p.calibrated = v.value_or(true);
            continue;
          }
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
          for (const ProfileFlag& f : kProfileFlags) {
            if (f.name == k.str()) {
              const toml::value<bool>* flag = v.as_boolean();
              if (flag == nullptr) {
                throw InputError(fmt::format("{}: {} has type {}. Violated constraint: true or false",
                                             at, f.name, TomlTypeName(v)));
              }
              p.*f.member = flag->get();
              found = true;
            }
          }
          for (const ProfileField& f : kProfileFields) {
            if (f.name == k.str()) {
              p.*f.member = Number(v, at, f.name);
              found = true;
            }
          }
          if (!found) {
            std::vector<std::string> names = Names(kProfileFields);
            for (const ProfileFlag& f : kProfileFlags) names.emplace_back(f.name);
            throw InputError(fmt::format("{}: unknown profile parameter '{}'{}", at, k.str(),
                                         DidYouMean(k.str(), names)));
          }
        }
        // A profile without its device or its GEMM efficiency would silently take defaults.
        for (const char* required : {"hardware", "gemm_efficiency"}) {
          if (!pt->contains(required)) {
            throw InputError(fmt::format("{}: profile '{}' has no {}. Violated constraint: every "
                                         "profile sets hardware and gemm_efficiency",
                                         LocationOf(pnode, origin, text).ToString(), p.name,
                                         required));
          }
        }
        set.profiles.push_back(std::move(p));
      }
    } else {
      throw InputError(fmt::format("{}: unknown section '{}' (expected shared or profiles)", where,
                                   key.str()));
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
