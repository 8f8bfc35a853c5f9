#include "mosaic/perf/log_calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/measurements.h"
#include "mosaic/util/enum_names.h"
#include "mosaic/util/error.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/toml_util.h"

namespace mosaic {

std::string_view ToString(ThroughputMetric metric) {
  switch (metric) {
    case ThroughputMetric::kTokensPerSecondPerGpu: return "tokens_per_s_per_gpu";
    case ThroughputMetric::kTokensPerSecond: return "tokens_per_s";
    case ThroughputMetric::kStepSeconds: return "step_seconds";
    case ThroughputMetric::kWallTime: return "wall_time";
  }
  return "?";
}

std::optional<ThroughputMetric> ThroughputMetricFromString(std::string_view text) {
  return EnumFromString<ThroughputMetric>(
      text, {ThroughputMetric::kTokensPerSecondPerGpu, ThroughputMetric::kTokensPerSecond,
             ThroughputMetric::kStepSeconds, ThroughputMetric::kWallTime});
}

namespace {

constexpr std::string_view kKeys[] = {"model",   "hardware", "profile",        "gpus",
                                      "layout",  "global_batch", "seq_len",     "format",
                                      "routing", "capacity_factor", "tag",      "metric",
                                      "skip_steps"};

constexpr std::string_view kCapacityFactorRule = "a number in [0.01, 1000]";
static_assert(kMaxCapacityFactor == 1000);

// A model or device named by a path (it has a '/' or ends in .toml) is found beside the run file
// (util/input_path.h); a preset name is kept as written.
std::string Resolve(const std::string& value, const std::string& origin) {
  if (value.find('/') == std::string::npos && !value.ends_with(".toml")) return value;
  return ResolveBeside(value, origin);
}

// Reads the keys of one table (defaults or a run) into `spec`; `seen` collects the keys given.
void ReadKeys(const toml::table& table, const std::string& origin, std::string_view text,
              ThroughputRunSpec& spec, std::set<std::string>& seen, bool allow_run) {
  std::vector<std::string> names(std::begin(kKeys), std::end(kKeys));
  if (allow_run) names.emplace_back("run");
  for (auto&& entry : table) {
    // Named references rather than a structured binding, which clang cannot capture in lambdas.
    const toml::node& node = entry.second;
    const std::string key(entry.first.str());
    const SourceLocation where = LocationOf(node, origin, text);
    auto fail = [&](std::string_view rule) {
      return LocatedError(where, fmt::format("{} = {}. Violated constraint: {}", key,
                                             TomlValueText(node), rule));
    };
    auto string = [&]() {
      auto v = node.as_string();
      if (v == nullptr || v->get().empty()) throw fail("a non-empty string");
      return v->get();
    };
    auto positive = [&](int64_t min) {
      auto v = node.as_integer();
      if (v == nullptr || v->get() < min) {
        throw fail(min > 0 ? "an integer >= 1" : "an integer >= 0");
      }
      return v->get();
    };
    // A batch or sequence beyond 2^30 (as `mosaic perf` caps them) makes a step of no time.
    auto size = [&]() {
      const int64_t x = positive(1);
      if (x > kMaxJobSize) throw fail(fmt::format("an integer in [1, {}]", kMaxJobSize));
      return x;
    };
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      throw LocatedError(KeyLocationOf(entry.first, node, origin, text),
                         fmt::format("unknown key '{}'{}", key, DidYouMean(key, names)));
    }
    seen.insert(key);
    if (key == "run") {
      spec.run = string();
    } else if (key == "model" || key == "hardware") {
      // Loaded here, so that an unknown name or a bad file is an error of this line.
      (key == "model" ? spec.model : spec.hardware) = Resolve(string(), origin);
      try {
        if (key == "model") {
          spec.model_config = LoadModel(spec.model).config;
        } else {
          spec.device = LoadHardware(spec.hardware);
        }
      } catch (const InputError& e) {
        throw LocatedError(where, fmt::format("{}: {}", key, e.what()));
      }
    } else if (key == "profile") {
      spec.profile = string();
      if (spec.profile.find_first_not_of(" \t") == std::string::npos) {
        throw fail("a name that is not blank (the profile's name in the written file and in "
                   "--profile)");
      }
      // "generic-<device>" names the uncalibrated defaults validate predicts held-out rows with;
      // a fitted profile of that name would read as both.
      if (IsGenericProfile(spec.profile)) {
        throw fail("a name other than 'generic' and 'generic-…' (the uncalibrated defaults)");
      }
    } else if (key == "gpus") {
      spec.gpus = positive(1);
    } else if (key == "layout") {
      try {
        spec.layout = ParseLayout(string(), "layout");
      } catch (const InputError& e) {
        throw LocatedError(where, e.what());
      }
    } else if (key == "global_batch") {
      spec.global_batch = size();
    } else if (key == "seq_len") {
      spec.seq_len = size();
    } else if (key == "format") {
      auto f = NumberFormatFromString(string());
      if (!f) throw fail("bf16, fp8 or mxfp8");
      spec.format = *f;
    } else if (key == "routing") {
      auto r = RoutingPolicyFromString(string());
      if (!r) throw fail("dropless, balanced, capacity or fixed-cells");
      spec.routing = *r;
    } else if (key == "capacity_factor") {
      double x = 0;
      if (auto v = node.as_floating_point()) {
        x = v->get();
      } else if (auto i = node.as_integer()) {
        x = static_cast<double>(i->get());
      } else {
        throw fail(kCapacityFactorRule);
      }
      // The range of --capacity-factor (perf_request.cc).
      if (!(x >= 0.01 && x <= kMaxCapacityFactor)) throw fail(kCapacityFactorRule);
      spec.capacity_factor = x;
    } else if (key == "tag") {
      spec.tag = string();
    } else if (key == "metric") {
      auto m = ThroughputMetricFromString(string());
      if (!m) throw fail("tokens_per_s_per_gpu, tokens_per_s, step_seconds or wall_time");
      spec.metric = *m;
    } else if (key == "skip_steps") {
      spec.skip_steps = positive(0);
    }
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<ThroughputRunSpec> ParseLogRunFile(std::string_view text, const std::string& origin,
                                        const ProfileSet& profiles) {
  const toml::table root = ParseToml(text, origin);
  ThroughputRunSpec defaults;
  std::set<std::string> default_keys;
  for (const auto& [key_node, node] : root) {
    const std::string key(key_node.str());
    if (key == "defaults") {
      const toml::table* t = node.as_table();
      if (t == nullptr) {
        throw LocatedError(LocationOf(node, origin, text),
                           "defaults must be a table ([defaults])");
      }
      ReadKeys(*t, origin, text, defaults, default_keys, false);
    } else if (key != "run") {
      const std::vector<std::string> top = {"defaults", "run"};
      throw LocatedError(LocationOf(node, origin, text),
                         fmt::format("unknown key '{}'{}", key, DidYouMean(key, top)));
    }
  }
  const toml::array* runs = root["run"].as_array();
  if (runs == nullptr || runs->empty()) {
    throw InputError(fmt::format("{}: no [[run]] table: a run file lists its runs as [[run]] "
                                 "tables",
                                 origin));
  }
  std::vector<ThroughputRunSpec> specs;
  std::set<std::string> names;
  for (const toml::node& node : *runs) {
    const SourceLocation where = LocationOf(node, origin, text);
    const toml::table* t = node.as_table();
    if (t == nullptr) throw LocatedError(where, "run must be a table ([[run]])");
    ThroughputRunSpec spec = defaults;
    std::set<std::string> own_keys;
    ReadKeys(*t, origin, text, spec, own_keys, true);
    std::set<std::string> keys = default_keys;
    keys.insert(own_keys.begin(), own_keys.end());
    spec.origin = where.origin.empty() ? origin : fmt::format("{}:{}", origin, where.line);
    for (const char* required :
         {"run", "model", "hardware", "gpus", "layout", "global_batch", "seq_len", "tag"}) {
      if (!keys.contains(required)) {
        throw LocatedError(where, fmt::format("[[run]] '{}' has no {} ({})", spec.run, required,
                                              std::string_view(required) == "run"
                                                  ? "every [[run]] names its run"
                                                  : "give it in the run or in [defaults]"));
      }
    }
    // A capacity factor the run gives itself caps nothing under a dropless or balanced routing
    // (as --capacity-factor with --routing dropless); one in [defaults] serves the runs that cap.
    if (own_keys.contains("capacity_factor") && !CapsTokens(spec.routing)) {
      throw LocatedError(where, fmt::format(
          "[[run]] '{}': capacity_factor = {} with routing = '{}'. Violated constraint: a "
          "capacity factor caps tokens only under routing capacity or fixed-cells",
          spec.run, spec.capacity_factor, ToString(spec.routing)));
    }
    if (!names.insert(spec.run).second) {
      throw LocatedError(where, fmt::format("run '{}' is listed twice", spec.run));
    }
    if (spec.layout.gpus() != spec.gpus) {
      throw LocatedError(where, fmt::format("layout {} uses {} GPUs, not gpus = {} "
                                            "(tp·pp·cp·dp·fsdp = gpus)",
                                            ToString(spec.layout), spec.layout.gpus(),
                                            spec.gpus));
    }
    // A layout that breaks a rule would only be left out of the fit: an error of its run here.
    if (const auto violation =
            CheckLayout(spec.layout, spec.model_config,
                        JobShape{spec.gpus, spec.global_batch, spec.seq_len}, spec.device)) {
      throw LocatedError(where, fmt::format("layout {}: {}", ToString(spec.layout),
                                            violation->rule));
    }
    // The profile to fit is named: left out, the device's shipped profile would be refitted to
    // these runs, and written under its own name, without a word.
    if (spec.profile.empty()) {
      const std::string shipped = profiles.ForHardware(spec.device.name).name;
      throw LocatedError(where, fmt::format("[[run]] '{}' has no profile. Violated constraint: "
                                            "each run names the profile it fits, in the run or "
                                            "in [defaults] (a new name such as \"acme-{}\" "
                                            "starts from {}; profile = \"{}\" refits that one)",
                                            spec.run, spec.device.name, shipped, shipped));
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

LogThroughput MeasuredTokensPerSecondPerGpu(const runs::Run& run, const ThroughputRunSpec& spec) {
  const runs::TimeSeries* series = run.FindSeries(spec.tag);
  if (series == nullptr || series->empty()) {
    const std::vector<std::string> tags = run.Tags();
    throw InputError(fmt::format("{}: run '{}' has no tag '{}'{}", spec.origin, spec.run,
                                 spec.tag, DidYouMean(spec.tag, tags)));
  }
  const int64_t first = series->FirstStep();
  std::vector<runs::ScalarPoint> kept;
  // first + skip_steps past the 64-bit range keeps nothing (it wrapped to keep everything).
  if (spec.skip_steps <= std::numeric_limits<int64_t>::max() - std::max<int64_t>(first, 0)) {
    for (const runs::ScalarPoint& p : series->points) {
      if (p.step >= first + spec.skip_steps) kept.push_back(p);
    }
  }
  const double gpus = static_cast<double>(spec.gpus);
  const double tokens_per_step = static_cast<double>(spec.global_batch * spec.seq_len);
  std::vector<double> values;
  LogThroughput out;
  if (spec.metric == ThroughputMetric::kWallTime) {
    const bool any_wall_time = std::any_of(kept.begin(), kept.end(), [](const auto& p) {
      return std::isfinite(p.wall_time_seconds) && p.wall_time_seconds > 0;
    });
    if (!kept.empty() && !any_wall_time) {
      throw InputError(fmt::format(
          "{}: run '{}', tag '{}': metric = \"wall_time\" but the log has no wall times (a CSV "
          "without a wall-time column). Violated constraint: a logged speed (tokens_per_s_per_gpu, "
          "tokens_per_s or step_seconds), or a log with wall times",
          spec.origin, spec.run, spec.tag));
    }
    for (size_t i = 1; i < kept.size(); ++i) {
      const double dt = kept[i].wall_time_seconds - kept[i - 1].wall_time_seconds;
      const double ds = static_cast<double>(kept[i].step - kept[i - 1].step);
      if (std::isfinite(dt) && dt > 0 && ds > 0) values.push_back(dt / ds);
    }
  } else {
    for (const runs::ScalarPoint& p : kept) {
      if (std::isfinite(p.value) && p.value > 0) {
        values.push_back(p.value);
      } else {
        ++out.left_out;
      }
    }
  }
  if (values.size() < static_cast<size_t>(kMinMeasuredSteps)) {
    throw InputError(fmt::format(
        "{}: run '{}', tag '{}': {} {} after the {} warm-up steps (skip_steps). Violated "
        "constraint: at least {}, so that one slow step (a checkpoint, an evaluation) is not the "
        "measurement",
        spec.origin, spec.run, spec.tag, values.size(),
        spec.metric == ThroughputMetric::kWallTime ? "wall-time gaps between kept points"
                                                    : "finite values > 0",
        spec.skip_steps, kMinMeasuredSteps));
  }
  const double median = Median(values);
  double tokens = 0;
  switch (spec.metric) {
    case ThroughputMetric::kTokensPerSecondPerGpu: tokens = median; break;
    case ThroughputMetric::kTokensPerSecond: tokens = median / gpus; break;
    case ThroughputMetric::kStepSeconds:
    case ThroughputMetric::kWallTime:
      tokens = median > 0 ? tokens_per_step / (median * gpus) : 0;
      break;
  }
  if (!(tokens > 0) || !std::isfinite(tokens)) {
    throw InputError(fmt::format("{}: run '{}', tag '{}': the median {} is {}, which gives no "
                                 "throughput",
                                 spec.origin, spec.run, spec.tag, ToString(spec.metric), median));
  }
  out.tokens_per_s_per_gpu = tokens;
  out.points = static_cast<int64_t>(values.size());
  return out;
}

std::vector<MeasuredRow> MeasurementsFromLogs(const std::vector<std::string>& logdirs,
                                              const std::string& run_file,
                                              const ProfileSet& profiles,
                                              std::vector<std::string>* input_files) {
  // (run directories, run file) pairs: one per log directory, or all under one run file.
  std::vector<std::pair<std::vector<runs::RunDirectory>, std::string>> groups;
  std::vector<std::string> group_dirs;  // the log directory of each group ("" for --runs)
  if (!run_file.empty()) {
    groups.emplace_back(runs::DiscoverRuns(logdirs), run_file);
    group_dirs.emplace_back();
  } else {
    std::map<std::string, std::string> seen;  // canonical path → as given
    for (const std::string& dir : logdirs) {
      const std::string file = (std::filesystem::path(dir) / kRunFileName).string();
      std::error_code ec;
      if (!std::filesystem::is_directory(dir, ec)) {
        throw InputError(fmt::format(
            "{}: not a log directory ({})", dir,
            std::filesystem::exists(dir, ec)
                ? "a file: --logs takes every argument after it as a log directory, so give files "
                  "before it"
                : "no such directory"));
      }
      // One directory spelt two ways ("logs", "./logs/") would count its runs twice.
      const std::string canonical = std::filesystem::weakly_canonical(dir, ec).string();
      if (const auto [it, fresh] = seen.emplace(canonical, dir); !fresh) {
        throw InputError(fmt::format("{}: the log directory {} given again", dir, it->second));
      }
      if (!std::filesystem::is_regular_file(file, ec)) {
        throw InputError(fmt::format("{}: no {} in this log directory: it names each run's "
                                     "model, cluster and layout (or give one file with --runs)",
                                     dir, kRunFileName));
      }
      groups.emplace_back(runs::DiscoverRuns(dir), file);
      group_dirs.push_back(dir);
    }
  }
  if (input_files != nullptr) {
    for (const auto& [directories, file] : groups) {
      for (std::string& log : runs::LogFiles(directories)) input_files->push_back(std::move(log));
      input_files->push_back(file);
    }
  }
  std::vector<MeasuredRow> rows;
  std::vector<size_t> row_group;  // the group of each row
  runs::LoadOptions options;
  options.restarts = runs::RestartPolicy::kFirst;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& [directories, file] = groups[g];
    const std::vector<ThroughputRunSpec> specs =
        ParseLogRunFile(ReadTextFile(file), file, profiles);
    std::vector<std::string> names;
    for (const runs::RunDirectory& d : directories) names.push_back(d.name);
    for (const ThroughputRunSpec& spec : specs) {
      const runs::RunDirectory* found = nullptr;
      for (const runs::RunDirectory& d : directories) {
        if (d.name == spec.run) found = &d;
      }
      if (found == nullptr) {
        throw InputError(fmt::format("{}: run '{}' is not in the logs{}", spec.origin, spec.run,
                                     DidYouMean(spec.run, names)));
      }
      const runs::Run run = runs::LoadRun(*found, options);
      MeasuredRow r;
      r.id = spec.run;
      row_group.push_back(g);
      r.model = spec.model;
      r.hardware = spec.hardware;
      r.device = spec.device.name;
      r.gpus = spec.gpus;
      r.layout = spec.layout;
      r.recompute = spec.layout.recompute;  // the layout states the run's policy
      r.global_batch = spec.global_batch;
      r.seq_len = spec.seq_len;
      r.format = spec.format;
      r.routing = spec.routing;
      r.capacity_factor = spec.capacity_factor;
      const LogThroughput measured = MeasuredTokensPerSecondPerGpu(run, spec);
      r.measured_tokens_per_s_per_gpu = measured.tokens_per_s_per_gpu;
      // A metric read as the wrong kind (step seconds from a tokens/s tag) gives a rate no GPU
      // runs at; every parameter of the fit would go to its bound.
      CheckTokensPerSecondIsPossible(
          r.measured_tokens_per_s_per_gpu,
          MakeModelShape(spec.model_config, spec.seq_len), spec.device, spec.format,
          fmt::format("{}: run '{}': tokens/s per GPU from {} ({})", spec.origin, spec.run,
                      spec.tag, ToString(spec.metric)));
      r.basis = fmt::format("log {} ({}, median of {}{})", spec.tag, ToString(spec.metric),
                            measured.points,
                            measured.left_out > 0
                                ? fmt::format("; {} not finite or not > 0 left out",
                                              measured.left_out)
                                : "");
      r.profile = spec.profile;
      r.source = spec.origin;
      r.where = spec.origin;
      rows.push_back(std::move(r));
    }
  }
  // Every figure names one run and says where it came from: with several log directories each
  // run is qualified by its directory ("logs_a/r1", as `mosaic runs logs_a logs_b` names it).
  for (size_t i = 0; i < rows.size(); ++i) {
    if (groups.size() > 1 && !group_dirs[row_group[i]].empty()) {
      rows[i].id = fmt::format("{}/{}", group_dirs[row_group[i]], rows[i].id);
    }
  }
  std::map<std::string, const MeasuredRow*> named;
  for (const MeasuredRow& r : rows) {
    if (const auto [it, fresh] = named.emplace(r.id, &r); !fresh) {
      throw InputError(fmt::format("{}: run '{}' is listed again ({}); is a log directory given "
                                   "twice?",
                                   r.where, r.id, it->second->where));
    }
  }
  // A profile belongs to one device: runs on another would refit it, a shipped one included,
  // for the wrong silicon. Devices are compared by name, so that a device file named "h100" (a
  // copy of h100.toml with the cluster's own links) runs on h100's profiles.
  auto shown = [](const std::string& hardware, const std::string& device) {
    return hardware == device ? hardware : fmt::format("{} (device '{}')", hardware, device);
  };
  std::map<std::string, const MeasuredRow*> first_run;  // of each profile not in `profiles`
  for (const MeasuredRow& r : rows) {
    std::string device, owner;
    if (const auto it = std::ranges::find(profiles.profiles, r.profile, &PerfProfile::name);
        it != profiles.profiles.end()) {
      device = DeviceNameOf(*it);
      owner = fmt::format("is for {}", shown(it->hardware, device));
    } else if (const auto [first, fresh] = first_run.emplace(r.profile, &r); !fresh) {
      device = first->second->DeviceName();
      owner = fmt::format("has run '{}' on {}", first->second->id,
                          shown(first->second->hardware, device));
    } else {
      continue;
    }
    if (device != r.DeviceName()) {
      throw InputError(fmt::format(
          "{}: run '{}' on {}: profile '{}' {}. Violated constraint: a profile's runs are all on "
          "its device; give the runs on {} a profile of their own (profile = \"...\")",
          r.where, r.id, shown(r.hardware, r.DeviceName()), r.profile, owner, r.hardware));
    }
  }
  return rows;
}

ProfileSet WithProfilesOf(const std::vector<MeasuredRow>& rows, const ProfileSet& profiles) {
  ProfileSet set = profiles;
  for (const MeasuredRow& r : rows) {
    bool known = false;
    for (const PerfProfile& p : set.profiles) known = known || p.name == r.profile;
    if (known) continue;
    PerfProfile p = set.ForHardware(r.DeviceName());
    p.name = r.profile;
    // The new profile is for its runs' device, whichever profile it starts from (a sibling's:
    // h200 runs start from megatron-h100). A device file is named by its absolute path, so that
    // the written profile set reads the same from any directory.
    p.hardware = IsPathArgument(r.hardware)
                     ? std::filesystem::absolute(r.hardware).lexically_normal().string()
                     : r.hardware;
    p.stack = fmt::format("fitted from logs (started from the {} profile)",
                          profiles.ForHardware(r.DeviceName()).name);
    p.calibrated = false;
    set.profiles.push_back(std::move(p));
  }
  return set;
}

CalibrationResult CalibrateFromLogs(const std::vector<MeasuredRow>& rows,
                                    const ProfileSet& profiles) {
  return Calibrate(rows, WithProfilesOf(rows, profiles), {}, CalibrationScope::kTeamProfiles);
}

}  // namespace mosaic
