#include "mosaic/perf/calibration.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <map>
#include <set>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/measurements.h"
#include "mosaic/perf/search.h"
#include "mosaic/util/error.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"

namespace mosaic {
namespace {

// The fixed part of one row: its model shape, cluster and job, and the layout with the least
// recompute that fits.
struct PreparedRow {
  const MeasuredRow* row = nullptr;
  ModelShape shape;
  Cluster cluster;
  PerfJob job;
  Layout layout;
  bool valid = false;
  std::string invalid_rule;  // the broken layout rule when !valid
  bool fits = false;
  double peak_bytes = 0;
  int profile_index = 0;
};

std::vector<PreparedRow> Prepare(const std::vector<MeasuredRow>& rows, const ProfileSet& set) {
  std::vector<PreparedRow> out;
  // Each model and device is loaded once (a device may be a file), however many rows name it.
  std::map<std::string, ModelSpec> models;
  std::map<std::string, HardwareSpec> devices;
  for (const MeasuredRow& r : rows) {
    PreparedRow p;
    p.row = &r;
    auto it = models.find(r.model);
    if (it == models.end()) it = models.emplace(r.model, LoadModel(r.model)).first;
    p.shape = MakeModelShape(it->second.config, r.seq_len);
    auto device = devices.find(r.hardware);
    if (device == devices.end()) {
      device = devices.emplace(r.hardware, LoadHardware(r.hardware)).first;
    }
    p.cluster = MakeCluster(device->second, r.gpus);
    p.job.global_batch = r.global_batch;
    p.job.seq_len = r.seq_len;
    p.job.format = r.format;
    p.job.routing = r.routing;
    p.job.capacity_factor = r.capacity_factor;
    p.profile_index = -1;
    auto find = [&](const std::string& name) {
      for (size_t i = 0; i < set.profiles.size(); ++i) {
        if (set.profiles[i].name == name) p.profile_index = static_cast<int>(i);
      }
    };
    find(r.profile);
    // A device without the default profile runs on the one `mosaic perf` picks for it
    // (ProfileSet::ForHardware: its closest calibrated sibling's, h200 on megatron-h100).
    if (p.profile_index < 0 && r.profile == ProfileFor(r.DeviceName(), r.source)) {
      find(set.ForHardware(r.DeviceName()).name);
    }
    // "file:line: " when the row was read from a file, and the row's id.
    const std::string at = r.where.empty() ? "" : r.where + ": ";
    if (p.profile_index < 0) {
      // A profile the row names (its `profile` cell), or the publisher's default for its device.
      if (r.profile != ProfileFor(r.DeviceName(), r.source)) {
        std::vector<std::string> names;
        for (const PerfProfile& profile : set.profiles) names.push_back(profile.name);
        throw InputError(fmt::format("{}profile = '{}'. Violated constraint: a profile of the "
                                     "profile set{} (row {}); it has {}",
                                     at, Printable(r.profile), DidYouMean(r.profile, names),
                                     Printable(r.id), fmt::join(names, ", ")));
      }
      throw InputError(fmt::format(
          "{}hardware = '{}': the profile set has no profile for this device ({} by default) "
          "(row {}). Violated constraint: a calibration row names an existing profile (the "
          "`profile` column); a held-out row (--heldout) is predicted with the device's "
          "uncalibrated defaults, and `perf calibrate --logs` fits a new profile",
          at, Printable(r.hardware), Printable(r.profile), Printable(r.id)));
    }
    if (r.format == NumberFormat::kMxfp8 && p.cluster.device.peak_mxfp8_tflops <= 0) {
      throw InputError(fmt::format("{}precision = 'mxfp8'. Violated constraint: a device with "
                                   "MXFP8 tensor cores; {} has none (peak_mxfp8_tflops = 0) "
                                   "(row {})",
                                   at, Printable(r.hardware), Printable(r.id)));
    }
    p.layout = r.layout;
    const ModelConfig& config = it->second.config;
    const JobShape shape{r.gpus, r.global_batch, r.seq_len};
    const PerfProfile& profile = set.profiles[p.profile_index];
    // The row's layout is checked with its recompute policy in place (some rules depend on it:
    // a2a_overlap excludes full and MoE-layer recompute); the first broken rule is kept.
    auto valid_with = [&](Recompute rc) {
      p.layout.recompute = rc;
      const auto violation = CheckLayout(p.layout, config, shape, p.cluster.device);
      if (violation && p.invalid_rule.empty()) p.invalid_rule = violation->rule;
      return !violation;
    };
    auto measure = [&](Recompute rc) {
      p.layout.recompute = rc;
      const MemoryBreakdown memory = EstimateMemory(p.shape, p.cluster, p.layout, p.job, profile);
      p.peak_bytes = memory.peak_bytes;
      p.fits = FitsDevice(memory, p.cluster.device);
    };
    if (!r.layout_rule.empty()) {
      p.valid = false;  // its cells form no layout (measurements.h)
      p.invalid_rule = r.layout_rule;
      out.push_back(std::move(p));
      continue;
    }
    if (r.recompute || !profile.recompute.empty()) {
      // The policy the source states, else the stack's documented one.
      const Recompute rc = r.recompute ? *r.recompute : *RecomputeFromString(profile.recompute);
      p.valid = valid_with(rc);
      if (p.valid) measure(rc);
    } else {
      // The least recompute that fits among those the layout's other options allow.
      std::vector<Recompute> allowed;
      for (Recompute rc : kRecomputeByCost) {
        if (valid_with(rc)) allowed.push_back(rc);
      }
      p.valid = !allowed.empty();
      for (Recompute rc : allowed) {
        measure(rc);
        if (p.fits) break;
      }
    }
    if (p.valid) p.invalid_rule.clear();
    out.push_back(std::move(p));
  }
  return out;
}

// Held-out rows whose default profile the set lacks and for whose device ProfileSet::ForHardware
// finds no other (a device file's own device), and rows whose `profile` cell names
// GenericProfileName(device), are pointed at the device's uncalibrated defaults, added to `set`
// as GenericProfileName(device) after the others (so the others keep their indices). Prepare
// finds every other row's profile itself.
std::vector<MeasuredRow> WithUncalibratedProfiles(const std::vector<MeasuredRow>& heldout,
                                                  ProfileSet& set) {
  std::vector<MeasuredRow> rows = heldout;
  auto has = [&](const std::string& name) {
    return std::ranges::any_of(set.profiles,
                               [&](const PerfProfile& p) { return p.name == name; });
  };
  for (MeasuredRow& r : rows) {
    if (has(r.profile)) continue;
    // A row that names its device's uncalibrated defaults (the name validate prints for them);
    // another device's are refused as `mosaic perf --profile` refuses them.
    if (IsGenericProfile(r.profile)) {
      const std::string field =
          fmt::format("{}profile (row {})", r.where.empty() ? "" : r.where + ": ", Printable(r.id));
      set.profiles.push_back(set.Resolve(r.profile, r.DeviceName(), field));
      continue;
    }
    if (r.profile != ProfileFor(r.DeviceName(), r.source)) continue;
    PerfProfile defaults = set.ForHardware(r.DeviceName());
    if (!IsGenericProfile(defaults.name)) continue;
    if (!has(defaults.name)) set.profiles.push_back(defaults);
    r.profile = defaults.name;
  }
  return rows;
}

double Predict(const PreparedRow& p, const ProfileSet& set) {
  if (!p.valid) return 0;
  return EvaluateStep(p.shape, p.cluster, p.layout, p.job, set.shared,
                      set.profiles[p.profile_index], nullptr)
      .tokens_per_s_per_gpu;
}

// The fitted parameters (ParamMap below): each profile's own, then the shared ones. Every fitted
// parameter is bounded to its physical range, with the reason next to the bound: a fit that
// needs a value outside these ranges is missing a term, not a better value. The other
// shared parameters keep the physical values of the starting profiles (SharedPerfParams' defaults
// give the reasons): the published rows cannot separate them from the fitted ones.
struct SharedFit {
  const char* name;
  double SharedPerfParams::*member;
  double scale;  // fitted value = member × scale (µs for latencies)
  double lo, hi;
};
constexpr SharedFit kSharedFit[] = {
    // Share of the fp8 peak's extra speed that GEMMs realise: between none and all of it.
    {"fp8_gain", &SharedPerfParams::fp8_gain, 1, 0, 1},
    // The EP dispatcher's kernels hold 20-32 of the 132-148 SMs, NCCL's up to 32 (one per
    // channel), and both share HBM with the compute they overlap: compute beside hidden
    // communication runs up to a third slower.
    {"overlap_contention", &SharedPerfParams::overlap_contention, 1, 0, 0.35},
    // Achieved / nominal NVLink bandwidth: NCCL's bus bandwidth on H100/B200/GB200 reaches
    // 70-90% of the datasheet for large messages; below 50% means a missing term.
    {"scale_up_efficiency", &SharedPerfParams::scale_up_efficiency, 1, 0.5, 0.9},
    // Achieved / nominal NIC bandwidth: NCCL's ring and tree collectives and DeepEP's RDMA
    // all-to-all reach 80-95% of the line rate of 400 Gb/s InfiniBand or RoCE for the
    // megabyte-sized messages of training; below 80% means a missing term.
    {"scale_out_efficiency", &SharedPerfParams::scale_out_efficiency, 1, 0.8, 1},
    // Host time after each MoE layer's token-count sync (Megatron-Core's dropless dispatchers copy
    // tokens-per-expert to the host before the grouped GEMMs): the rest of the layer's launches
    // (permutation, all-to-all, expert GEMMs, unpermute, auxiliary losses; some 50-150 ops
    // forward and backward at 10-20 µs of Python, autograd and dispatch each) the GPU waits for:
    // up to 3 ms.
    {"moe_sync_us", &SharedPerfParams::moe_sync_seconds, 1e6, 0, 3000},
    // A model with attention sinks on a stack that pays its untraced per-token cost
    // (SharedPerfParams::untraced_sink_model_seconds), in µs per token and layer pass: at most
    // 1.5, the whole time per token and layer of gpt-oss-120b's fastest measured step (64 GB300,
    // 19,412 tokens/s per GPU over 36 layers: 1.43 µs).
    {"untraced_sink_model_us", &SharedPerfParams::untraced_sink_model_seconds, 1e6, 0, 1.5},
    // Per expert fp8 or MXFP8 GEMM input quantized on its own (SharedPerfParams::
    // fp8_quantize_seconds), in µs: 2-4 small kernels (amax, cast-transpose; or rowwise and
    // columnwise MXFP8 quantize and the scale swizzle) of 3-10 µs of host launch each: up to 40.
    {"fp8_quantize_us", &SharedPerfParams::fp8_quantize_seconds, 1e6, 0, 40},
};

// Whether a fitted value sits on its lower or upper bound (relative tolerance 1e-6).
bool AtBound(double x, double lo, double hi) {
  return x <= lo * (1 + 1e-6) + 1e-9 || x >= hi * (1 - 1e-6);
}

// Which profiles the fit moves: those with rows; of them, those with rows of a MoE model for the
// per-expert cost, which acts on nothing in a dense model's step, and those with rows of a MoE
// model under expert parallelism (ep > 1) for the EP overlap, which acts on nothing without an
// all-to-all (a profile fitted on dense rows keeps its file's values for both; one fitted on MoE
// rows without EP, its EP overlap).
struct ProfileUse {
  std::vector<bool> rows;  // per profile: has rows
  std::vector<bool> moe;   // per profile: has rows of a MoE model
  std::vector<bool> ep;    // per profile: has rows of a MoE model with ep > 1
  std::vector<bool> sink;  // per profile: has rows of a model with attention sinks
};

// The fitted parameters as one vector: each profile's GEMM efficiency, its fixed per-step
// overhead, its per-expert GEMM cost (µs) and its EP overlap, then the shared ones. Which of them
// move is the fit's scope.
struct ParamMap {
  static constexpr int kShared = static_cast<int>(std::size(kSharedFit));
  static constexpr int kPerProfile = 4;
  // The first per-profile block that only MoE rows move (the per-expert cost, then the EP overlap).
  static constexpr int kFirstMoeBlock = 2;
  // The EP overlap's block, which only MoE rows with ep > 1 move.
  static constexpr int kEpOverlapBlock = 3;
  static int Profiles(const ProfileSet& s) { return static_cast<int>(s.profiles.size()); }
  static int Size(const ProfileSet& s) { return kPerProfile * Profiles(s) + kShared; }
  static std::vector<double> Get(const ProfileSet& s) {
    std::vector<double> x;
    for (const PerfProfile& p : s.profiles) x.push_back(p.gemm_efficiency);
    for (const PerfProfile& p : s.profiles) x.push_back(p.step_overhead_seconds);
    for (const PerfProfile& p : s.profiles) x.push_back(p.expert_group_seconds * 1e6);
    for (const PerfProfile& p : s.profiles) x.push_back(p.overlap_ep);
    for (const SharedFit& f : kSharedFit) x.push_back(s.shared.*f.member * f.scale);
    return x;
  }
  static void Set(ProfileSet& s, const double* x) {
    size_t i = 0;
    for (PerfProfile& p : s.profiles) p.gemm_efficiency = x[i++];
    for (PerfProfile& p : s.profiles) p.step_overhead_seconds = x[i++];
    for (PerfProfile& p : s.profiles) p.expert_group_seconds = x[i++] / 1e6;
    for (PerfProfile& p : s.profiles) p.overlap_ep = x[i++];
    for (const SharedFit& f : kSharedFit) s.shared.*f.member = x[i++] / f.scale;
  }
  static std::pair<double, double> Bounds(const ProfileSet& s, int i) {
    const int n = Profiles(s);
    // Peak share of large bf16 GEMMs: cuBLAS/CUTLASS reach 70-80% of the datasheet on H100 and
    // Blackwell at sustained (power-limited) clocks; 0.8 is the best sustained, 0.4 a badly
    // tuned stack. A TPU's systolic arrays run at the clock its peak is quoted at: MaxText's
    // own table (src/maxtext/configs/tpu/v5p/README.md) has a 32B model at 71.5% MFU on 64 v5p,
    // every non-matmul cycle included, so its matmuls ran faster; 0.95 leaves the arrays' fill
    // and drain and the vector unit's work between matmuls.
    if (i < n) return {0.4, DeviceNameOf(s.profiles[i]).starts_with("tpu-") ? 0.95 : 0.8};
    // Fixed time per step outside the pipelined layers: the optimizer step over the rank's
    // shard, gradient clipping and norms, logging and the data loader's hand-off: 0.05 s for a
    // lean step to 5 s for a stack that syncs and logs much on the host.
    if (i < 2 * n) return {0.05, 5.0};
    // Per expert GEMM, in µs: one cuBLAS GEMM issued per expert costs 5-20 µs of host launch
    // (Python, autograd and Transformer Engine's dispatch), which the GPU waits for after the MoE
    // layer's token-count sync, and its unfilled tail wave (one tile with a contraction of 3-6k
    // takes 12-25 µs on a 132-148 SM part; half of one on average): up to 40 µs. A grouped
    // kernel or a CUDA graph: near 0.
    if (i < 3 * n) return {0, 40};
    // Share of the EP all-to-all hidden without the paired-pass overlap (PerfProfile::
    // overlap_ep): an eager stack that syncs the host on the token counts hides at most
    // kMaxEagerEpOverlapShare (the reason is beside it); a compiled graph all of it but the
    // first and last layer's (kMaxOverlapShare).
    if (i < 4 * n) {
      return {0, s.profiles[i - 3 * n].moe_host_sync ? kMaxEagerEpOverlapShare : kMaxOverlapShare};
    }
    return {kSharedFit[i - 4 * n].lo, kSharedFit[i - 4 * n].hi};
  }
  // Parameter i's name as the output prints it, and the profile it belongs to ("shared").
  static std::string Name(const ProfileSet& s, int i) {
    static constexpr const char* kNames[kPerProfile] = {"gemm_efficiency", "step_overhead_seconds",
                                                        "expert_group_us", "overlap_ep"};
    const int n = Profiles(s);
    return i < kPerProfile * n ? kNames[i / n] : std::string(kSharedFit[i - kPerProfile * n].name);
  }
  static std::string Owner(const ProfileSet& s, int i) {
    const int n = Profiles(s);
    return i < kPerProfile * n ? s.profiles[i % n].name : "shared";
  }
  // Whether parameter i moves in a fit of `scope` over rows whose profiles are `used`: the GEMM
  // efficiency always; on published rows (kProfiles, kSharedAndProfiles) the per-expert cost
  // when the profile has MoE rows and the EP overlap when it has MoE rows with ep > 1
  // (ProfileUse); the per-step overhead on a team's own runs (kTeamProfiles); the shared physics
  // only with kSharedAndProfiles, the untraced sink-model cost only where a row of a sink model
  // has a profile that charges it.
  static bool Free(const ProfileSet& s, int i, CalibrationScope scope,
                   const ProfileUse& used) {
    const int n = Profiles(s);
    if (i < n) return used.rows[i];
    if (i < 2 * n) return scope == CalibrationScope::kTeamProfiles && used.rows[i - n];
    if (i < kEpOverlapBlock * n) {
      return scope != CalibrationScope::kTeamProfiles && used.moe[i - kFirstMoeBlock * n];
    }
    if (i < kPerProfile * n) {
      return scope != CalibrationScope::kTeamProfiles && used.ep[i - kEpOverlapBlock * n];
    }
    if (scope != CalibrationScope::kSharedAndProfiles) return false;
    // The untraced per-token cost acts only on rows of a sink model under a profile charging it.
    if (kSharedFit[i - kPerProfile * n].member == &SharedPerfParams::untraced_sink_model_seconds) {
      for (int p = 0; p < n; ++p) {
        if (used.sink[p] && s.profiles[p].untraced_sink_model_cost) return true;
      }
      return false;
    }
    return true;
  }
};

// Which of ParamMap's parameters sit on a bound of their physical range, in ParamMap's order: a
// profile's only when it was calibrated (a profile set by hand is where it was put), and only
// those `fitted` marks (CalibrationResult::fitted_params: what the fit moved, or what a fit of a
// validation's rows would; empty: every one).
std::vector<bool> ParamsAtBound(const ProfileSet& s, const std::vector<bool>& fitted) {
  const std::vector<double> x = ParamMap::Get(s);
  const int n = ParamMap::Profiles(s);
  std::vector<bool> at(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int profile = static_cast<int>(i) < ParamMap::kPerProfile * n ? static_cast<int>(i) % n
                                                                          : -1;
    const auto [lo, hi] = ParamMap::Bounds(s, static_cast<int>(i));
    at[i] = (profile < 0 || s.profiles[profile].calibrated) && AtBound(x[i], lo, hi) &&
            (fitted.empty() || fitted[i]);
  }
  return at;
}

// Whether parameter i, of value x[i] (ParamMap::Get), lies past its fit range: a profile file may
// set any value in its physical range, a fit keeps inside the narrower one. ParamsAtBound marks
// such a value too; reports name it apart.
bool PastFitRange(const ProfileSet& s, const std::vector<double>& x, int i) {
  const auto [lo, hi] = ParamMap::Bounds(s, i);
  const double tol = 1e-6 * std::max(std::abs(lo), std::abs(hi)) + 1e-9;
  return x[i] < lo - tol || x[i] > hi + tol;
}

struct FitResidual {
  const std::vector<PreparedRow>* rows;
  std::vector<int> use;  // indices of rows in the fit
  ProfileSet base;
  bool operator()(double const* const* x, double* residuals) const {
    ProfileSet s = base;
    ParamMap::Set(s, x[0]);
    for (size_t i = 0; i < use.size(); ++i) {
      const PreparedRow& p = (*rows)[use[i]];
      const double pred = Predict(p, s);
      residuals[i] = std::log(std::max(pred, 1e-9) / p.row->measured_tokens_per_s_per_gpu);
    }
    return true;
  }
};

// Throws InputError when no row of `prepared` has a valid layout ("no measured row has a valid
// layout, so CONSEQUENCE"), naming the first invalid row and its rule.
void RequireAValidRow(const std::vector<PreparedRow>& prepared, std::string_view consequence) {
  std::string first_invalid;
  for (const PreparedRow& p : prepared) {
    if (p.valid) return;
    if (first_invalid.empty()) {
      first_invalid = fmt::format("{}row {}: {}", p.row->where.empty() ? "" : p.row->where + ": ",
                                  p.row->id, p.invalid_rule);
    }
  }
  throw InputError(fmt::format("no measured row has a valid layout, so {} ({}{})", consequence,
                               first_invalid, prepared.size() > 1 ? ", …" : ""));
}

// Every valid row runs on its profile's device: a row on another (h200 rows on megatron-h100,
// its closest calibrated sibling's, which prediction uses) would refit that device's profile for
// other silicon. Devices are compared by name, as `perf calibrate --logs` compares them.
void RequireRowsOnTheirProfilesDevice(const std::vector<PreparedRow>& prepared,
                                      const ProfileSet& set) {
  std::map<int, std::string> device_of;  // profile index → its device's name
  for (const PreparedRow& p : prepared) {
    if (!p.valid) continue;
    const PerfProfile& profile = set.profiles[static_cast<size_t>(p.profile_index)];
    auto it = device_of.find(p.profile_index);
    if (it == device_of.end()) it = device_of.emplace(p.profile_index, DeviceNameOf(profile)).first;
    const MeasuredRow& r = *p.row;
    if (it->second == r.DeviceName()) continue;
    throw InputError(fmt::format(
        "{}hardware = '{}' (row {}): fitting profile '{}' (for {}) to it would refit that "
        "device's profile for other silicon. Violated constraint: a calibration row runs on its "
        "profile's device; name a profile for {} in the row's `profile` column (from a "
        "--profiles file), fit one from your runs (perf calibrate --logs), or give the row to "
        "--heldout, which predicts it with {}",
        r.where.empty() ? "" : r.where + ": ", Printable(r.hardware), Printable(r.id),
        profile.name, profile.hardware, Printable(r.DeviceName()), profile.name));
  }
}

struct FitOutcome {
  ProfileSet profiles;
  double cost = 0;     // half the sum of squared log errors (Ceres' final cost)
  std::string report;  // Ceres' brief report
};

// How many of the rows `use` (indices into `rows`) each of the `profiles` profiles has.
std::vector<int> RowsOfProfile(const std::vector<PreparedRow>& rows, const std::vector<int>& use,
                               size_t profiles) {
  std::vector<int> count(profiles, 0);
  for (int r : use) ++count[rows[r].profile_index];
  return count;
}

// Which profiles have rows (the fit moves only theirs), and rows of a MoE model (ProfileUse).
ProfileUse UsedProfiles(const std::vector<PreparedRow>& rows, const std::vector<int>& use,
                        size_t profiles) {
  ProfileUse used{std::vector<bool>(profiles, false), std::vector<bool>(profiles, false),
                  std::vector<bool>(profiles, false), std::vector<bool>(profiles, false)};
  for (int r : use) {
    const int pi = rows[r].profile_index;
    used.rows[pi] = true;
    if (rows[r].shape.config.attention_sinks) used.sink[pi] = true;
    if (rows[r].shape.config.is_moe()) {
      used.moe[pi] = true;
      if (rows[r].layout.ep > 1) used.ep[pi] = true;
    }
  }
  return used;
}

// One bounded Ceres solve from `x` over the parameters `free` marks (the others held on a subset
// manifold, so that the solver's steps live in the free parameters only: pinning them between
// bounds 1e-12 apart projected each trust-region step onto that box, and the fit stopped after
// a few iterations on "parameter tolerance reached", near its start). Returns the final cost.
double SolveFree(FitResidual* functor, const ProfileSet& s, const std::vector<bool>& free,
                 std::vector<double>& x, std::string* report) {
  auto* cost = new ceres::DynamicNumericDiffCostFunction<FitResidual, ceres::CENTRAL>(
      functor, ceres::DO_NOT_TAKE_OWNERSHIP);
  cost->AddParameterBlock(static_cast<int>(x.size()));
  cost->SetNumResiduals(static_cast<int>(functor->use.size()));
  ceres::Problem problem;
  problem.AddResidualBlock(cost, nullptr, x.data());
  std::vector<int> constant;
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    if (free[i]) {
      auto [lo, hi] = ParamMap::Bounds(s, i);
      x[i] = std::clamp(x[i], lo, hi);
      problem.SetParameterLowerBound(x.data(), i, lo);
      problem.SetParameterUpperBound(x.data(), i, hi);
    } else {
      constant.push_back(i);
    }
  }
  if (constant.size() == x.size()) {
    problem.SetParameterBlockConstant(x.data());
  } else if (!constant.empty()) {
    problem.SetManifold(x.data(),
                        new ceres::SubsetManifold(static_cast<int>(x.size()), constant));
  }
  ceres::Solver::Options options;
  options.max_num_iterations = 100;
  options.num_threads = 1;
  options.function_tolerance = 1e-10;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  if (report != nullptr) *report = summary.BriefReport();
  return summary.final_cost;
}

// Half the sum of squared residuals at x.
double CostAt(const FitResidual& functor, const std::vector<double>& x) {
  std::vector<double> r(functor.use.size());
  const double* block = x.data();
  functor(&block, r.data());
  double cost = 0;
  for (double v : r) cost += v * v / 2;
  return cost;
}

FitOutcome Fit(const std::vector<PreparedRow>& rows, const std::vector<int>& use,
               const ProfileSet& initial, CalibrationScope scope) {
  ProfileSet s = initial;
  std::vector<double> x = ParamMap::Get(s);
  FitResidual functor{&rows, use, initial};
  const ProfileUse used = UsedProfiles(rows, use, s.profiles.size());
  std::vector<bool> free(x.size());
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    free[i] = ParamMap::Free(s, i, scope, used);
    // A start a profile file put past its fit range (a validation's leave-one-out refits start
    // from the given profiles) starts at the bound, inside the box the solver keeps to.
    const auto [lo, hi] = ParamMap::Bounds(s, i);
    if (free[i]) x[i] = std::clamp(x[i], lo, hi);
  }
  std::string report;
  double cost = SolveFree(&functor, s, free, x, &report);
  // Active-set refinement: a bounded Levenberg-Marquardt step is the unconstrained step projected
  // onto the box, so a parameter the unconstrained step pushes out through one bound can drag
  // another onto a bound it should leave (a team's logs, all predicted too fast: efficiency
  // wants below its bound, the projected step took the overhead to its lower bound with it, and
  // the fit stopped in that corner). Each round holds the parameters at a bound whose cost falls
  // outward and frees those whose cost falls inward, and solves again; kept only if better.
  for (int round = 0; round < 8; ++round) {
    std::vector<bool> active = free;
    bool released = false;
    for (int i = 0; i < static_cast<int>(x.size()); ++i) {
      if (!free[i]) continue;
      auto [lo, hi] = ParamMap::Bounds(s, i);
      const double width = hi - lo, tolerance = 1e-9 * std::max(width, 1e-300);
      const bool at_lo = x[i] <= lo + tolerance, at_hi = x[i] >= hi - tolerance;
      if (!at_lo && !at_hi) continue;
      std::vector<double> inward = x;
      inward[i] += (at_lo ? 1 : -1) * 1e-3 * width;
      if (CostAt(functor, inward) < cost) {
        released = true;  // free to move inward
      } else {
        active[i] = false;  // held at its bound this round
      }
    }
    if (!released) break;
    std::vector<double> trial = x;
    std::string trial_report;
    const double trial_cost = SolveFree(&functor, s, active, trial, &trial_report);
    if (!(trial_cost < cost - 1e-12)) break;
    x = std::move(trial);
    cost = trial_cost;
    report = trial_report + " (after an active-set round)";
  }
  // The pinned parameters come back exactly as they went in, not within the pin's width.
  const std::vector<double> pinned = ParamMap::Get(initial);
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    if (!free[i]) x[i] = pinned[i];
  }
  ParamMap::Set(s, x.data());
  return {std::move(s), cost, report};
}

RowResult Describe(const PreparedRow& p, const ProfileSet& fitted) {
  RowResult r;
  r.id = p.row->id;
  r.profile = fitted.profiles[p.profile_index].name;  // the profile used (a sibling's, maybe)
  r.profile_device = DeviceNameOf(fitted.profiles[p.profile_index]);
  r.other_device = r.profile_device != p.row->DeviceName();
  r.layout = ToString(p.layout);
  if (!p.row->layout_rule.empty()) {
    // The GPUs leave no data-parallel size (measurements.h: layout_rule): dp and fsdp, derived
    // from it, are shown as unknown ("?") rather than as a truncated quotient.
    Layout unknown = p.layout;
    unknown.dp = unknown.fsdp = 0;
    r.layout = ToString(unknown);
  }
  r.valid = p.valid;
  r.invalid_rule = p.invalid_rule;
  r.fits = p.fits;
  r.peak_memory_gb = p.peak_bytes / 1e9;
  r.measured = p.row->measured_tokens_per_s_per_gpu;
  r.basis = p.row->basis;
  r.tflops_over_tokens = p.row->tflops_over_tokens;
  r.predicted = Predict(p, fitted);
  return r;
}

// The jobs of the valid rows measured more than once (RepeatedMeasurement), widest spread first,
// from the prepared rows and their reported results (row i of `prepared` is `described[i]`), so
// that no prediction is made twice.
std::vector<RepeatedMeasurement> RepeatedMeasurements(
    std::initializer_list<std::pair<const std::vector<PreparedRow>*,
                                    const std::vector<RowResult>*>> sets) {
  using Row = std::pair<const PreparedRow*, const RowResult*>;
  std::map<std::string, std::vector<Row>> jobs;
  for (const auto& [prepared, described] : sets) {
    for (size_t i = 0; i < prepared->size(); ++i) {
      const PreparedRow& p = (*prepared)[i];
      if (!p.valid) continue;
      Layout layout = p.layout;
      layout.recompute = Recompute::kNone;  // a policy the source states or the model chose
      std::string layout_text = ToString(layout);
      const std::string_view policy = ",recompute=none";  // each row has its own
      if (const size_t at = layout_text.find(policy); at != std::string::npos) {
        layout_text.erase(at, policy.size());
      }
      const MeasuredRow& r = *p.row;
      // The model and device by name: a file named by another path is the same job.
      jobs[fmt::format("{} on {} × {}, {}, {} × {}", p.shape.config.name, r.gpus,
                       p.cluster.device.name, layout_text, r.global_batch, r.seq_len)]
          .emplace_back(&p, &(*described)[i]);
    }
  }
  std::vector<RepeatedMeasurement> repeated;
  for (auto& [job, rows] : jobs) {
    if (rows.size() < 2) continue;
    std::ranges::sort(rows, {}, [](const Row& row) { return row.second->measured; });
    RepeatedMeasurement m;
    m.job = job;
    for (const auto& [p, described] : rows) {
      const MeasuredRow* r = p->row;
      m.ids.push_back(r->id);
      m.measured.push_back(described->measured);
      m.predicted.push_back(described->predicted);
      const bool moe = p->shape.config.is_moe();
      std::string routing(moe ? ToString(r->routing) : "dense");
      if (moe && CapsTokens(r->routing)) {
        routing += fmt::format(" {:g}", r->capacity_factor);
      }
      m.setting.push_back(fmt::format("{}, {}", ToString(r->format), routing));
    }
    m.spread = m.measured.back() / m.measured.front();
    m.predicted_spread = m.predicted.back() / m.predicted.front();
    repeated.push_back(std::move(m));
  }
  std::ranges::stable_sort(repeated, std::greater<>{}, &RepeatedMeasurement::spread);
  return repeated;
}

// What makes two measurements different points of a fit: the model, device, GPUs, layout, batch,
// sequence, format, routing and recompute (not the measured figure, the source or the id).
std::string ConfigurationKey(const MeasuredRow& r) {
  return fmt::format("{} {} {} {} {} {} {} {} {} {}", r.model, r.hardware, r.gpus,
                     ToString(r.layout), r.global_batch, r.seq_len, ToString(r.format),
                     ToString(r.routing), r.capacity_factor,
                     r.recompute ? ToString(*r.recompute) : "profile");
}

CalibrationResult Report(const std::vector<PreparedRow>& prepared,
                         const std::vector<PreparedRow>& heldout, const ProfileSet& fitted,
                         bool leave_one_out, bool search, CalibrationScope scope) {
  CalibrationResult result;
  result.profiles = fitted;
  std::vector<int> all;
  for (size_t i = 0; i < prepared.size(); ++i) {
    if (prepared[i].valid) all.push_back(static_cast<int>(i));
  }
  // Leaving a row out needs another row to fit on, and the rows of its profile that remain
  // must determine that profile's fitted parameters.
  leave_one_out = leave_one_out && all.size() > 1;
  const int n = ParamMap::Profiles(fitted);
  const ProfileUse used = UsedProfiles(prepared, all, fitted.profiles.size());
  // What a calibration of these rows would move, the shared physics included (Calibrate sets
  // what it did move).
  result.fitted_params.resize(ParamMap::Size(fitted));
  for (int i = 0; i < ParamMap::Size(fitted); ++i) {
    result.fitted_params[i] = ParamMap::Free(fitted, i, CalibrationScope::kSharedAndProfiles, used);
  }
  // Rows of one configuration are one point: those left must hold as many configurations as the
  // profile has free parameters, as many MoE configurations as it has free MoE parameters (the
  // per-expert cost and the EP overlap, which dense rows leave where they are), and a MoE
  // configuration with EP when the EP overlap is free; else the refit keeps what the full fit,
  // this row included, set.
  auto identifiable_without = [&](size_t row) {
    const int pi = prepared[row].profile_index;
    int free = 0, free_moe = 0;
    for (int block = 0; block < ParamMap::kPerProfile; ++block) {
      const bool moves = ParamMap::Free(fitted, block * n + pi, scope, used);
      free += moves ? 1 : 0;
      free_moe += moves && block >= ParamMap::kFirstMoeBlock ? 1 : 0;
    }
    const bool free_ep = ParamMap::Free(fitted, ParamMap::kEpOverlapBlock * n + pi, scope, used);
    std::set<std::string> configurations, moe_configurations, ep_configurations;
    for (int j : all) {
      if (j != static_cast<int>(row) && prepared[j].profile_index == pi) {
        const std::string key = ConfigurationKey(*prepared[j].row);
        configurations.insert(key);
        if (prepared[j].shape.config.is_moe()) {
          moe_configurations.insert(key);
          if (prepared[j].layout.ep > 1) ep_configurations.insert(key);
        }
      }
    }
    return static_cast<int>(configurations.size()) >= free &&
           static_cast<int>(moe_configurations.size()) >= free_moe &&
           (!free_ep || !ep_configurations.empty());
  };
  std::vector<std::string> ids, loo_ids;
  std::vector<double> predicted, measured, loo_predicted, loo_measured;
  for (size_t i = 0; i < prepared.size(); ++i) {
    const PreparedRow& p = prepared[i];
    RowResult r = Describe(p, fitted);
    if (!p.valid) result.left_out.push_back(r.id);
    if (p.valid) {
      ids.push_back(r.id);
      predicted.push_back(r.predicted);
      measured.push_back(r.measured);
    }
    if (leave_one_out && p.valid && !identifiable_without(i)) {
      result.loo_not_run.push_back(r.id);
    } else if (leave_one_out && p.valid) {
      // Without the shared physics in the fit, each profile's parameters answer to its own rows
      // alone: the refit takes those (the other profiles then stay as fitted, exactly, and no
      // other profile's start or convergence moves this row's prediction).
      std::vector<int> use;
      for (int j : all) {
        const bool coupled = scope == CalibrationScope::kSharedAndProfiles ||
                             prepared[j].profile_index == p.profile_index;
        if (j != static_cast<int>(i) && coupled) use.push_back(j);
      }
      const ProfileSet loo = Fit(prepared, use, fitted, scope).profiles;
      r.loo_predicted = Predict(p, loo);
      loo_ids.push_back(r.id);
      loo_predicted.push_back(r.loo_predicted);
      loo_measured.push_back(r.measured);
    }
    if (search && p.valid) {
      SearchOptions so;
      so.top = 1;
      so.dispatch = p.layout.dispatch;  // the row's stack: its layouts cross nodes as it does
      SearchResult sr = SearchLayouts(p.shape, p.cluster, p.job, fitted.shared,
                                      fitted.profiles[p.profile_index], DropParams{}, so);
      r.search_feasible = sr.feasible();
      r.search_rank = sr.RankOf(r.predicted);
      if (!sr.best.empty()) {
        r.best_over_published = sr.best[0].estimate.tokens_per_s_per_gpu / r.predicted;
        r.best_layout = ToString(sr.best[0].layout);
      }
    }
    result.rows.push_back(std::move(r));
  }
  result.in_sample = SummarizeErrors(ids, predicted, measured);
  result.leave_one_out = SummarizeErrors(loo_ids, loo_predicted, loo_measured);
  result.rms_log_error = result.in_sample.rms_log_error;
  result.loo_rms_log_error = result.leave_one_out.rms_log_error;
  std::vector<std::string> held_ids;
  std::vector<double> held_predicted, held_measured;
  for (const PreparedRow& p : heldout) {
    RowResult r = Describe(p, fitted);
    if (p.valid) {
      held_ids.push_back(r.id);
      held_predicted.push_back(r.predicted);
      held_measured.push_back(r.measured);
    } else {
      result.left_out.push_back(r.id);
    }
    result.heldout_rows.push_back(std::move(r));
  }
  result.heldout = SummarizeErrors(held_ids, held_predicted, held_measured);
  result.repeated =
      RepeatedMeasurements({{&prepared, &result.rows}, {&heldout, &result.heldout_rows}});
  // The dropping model's fit to Marin's sweep goes with the published rows, not a team's runs.
  if (scope != CalibrationScope::kTeamProfiles) {
    result.drop_fit = FitDropParams(MarinCapacitySweep());
  }
  return result;
}

// Ids must be unique across the calibration and held-out rows, so that every figure names one row.
void CheckDisjoint(const std::vector<MeasuredRow>& rows, const std::vector<MeasuredRow>& heldout) {
  std::map<std::string, const MeasuredRow*> seen;
  for (const MeasuredRow& r : rows) seen.emplace(r.id, &r);
  for (const MeasuredRow& r : heldout) {
    if (auto it = seen.find(r.id); it != seen.end()) {
      const std::string& fitted = it->second->where;
      throw InputError(fmt::format("{}held-out row {}: the calibration rows have a row of the same "
                                   "id{} (a held-out row is never one that is fitted)",
                                   r.where.empty() ? "" : r.where + ": ", r.id,
                                   fitted.empty() ? "" : " (" + fitted + ")"));
    }
  }
}

}  // namespace

ErrorSummary SummarizeErrors(const std::vector<std::string>& ids,
                             const std::vector<double>& predicted,
                             const std::vector<double>& measured) {
  ErrorSummary e;
  e.rows = static_cast<int64_t>(ids.size());
  if (ids.empty()) return e;
  double ss = 0, worst = -1;
  std::vector<double> abs_errors;
  for (size_t i = 0; i < ids.size(); ++i) {
    const double log_error = std::log(predicted[i] / measured[i]);
    ss += log_error * log_error;
    abs_errors.push_back(std::abs(predicted[i] / measured[i] - 1));
    if (std::abs(log_error) > worst) {
      worst = std::abs(log_error);
      e.worst_id = ids[i];
      e.worst_error = predicted[i] / measured[i] - 1;
    }
  }
  e.rms_log_error = std::sqrt(ss / static_cast<double>(ids.size()));
  std::sort(abs_errors.begin(), abs_errors.end());
  const size_t n = abs_errors.size();
  e.median_abs_error =
      n % 2 == 1 ? abs_errors[n / 2] : (abs_errors[n / 2 - 1] + abs_errors[n / 2]) / 2;
  return e;
}

// A team's runs (CalibrationScope::kTeamProfiles): each fitted profile has at least two (its GEMM
// efficiency and per-step overhead are two parameters), and each measurement is within a factor
// of kMaxTeamRowFactor of what the starting profiles predict: beyond it the metric is of the
// wrong kind (step seconds read as tokens/s) or the figure is off by a unit, and the fit would
// only go to its bounds.
void CheckTeamRows(const std::vector<PreparedRow>& prepared, const std::vector<int>& valid,
                   const std::vector<int>& rows_of_profile, const ProfileSet& initial) {
  // The distinct configurations of each profile's runs: runs of one configuration are one point,
  // whatever their number.
  std::vector<std::set<std::string>> configurations(rows_of_profile.size());
  // Each profile's runs as "file:line (id)", for the error that names them.
  std::vector<std::vector<std::string>> runs(rows_of_profile.size());
  for (int i : valid) {
    const MeasuredRow& r = *prepared[i].row;
    configurations[prepared[i].profile_index].insert(ConfigurationKey(r));
    runs[prepared[i].profile_index].push_back(
        r.where.empty() ? Printable(r.id) : fmt::format("{} ({})", r.where, Printable(r.id)));
  }
  for (size_t pi = 0; pi < rows_of_profile.size(); ++pi) {
    if (rows_of_profile[pi] == 0) continue;
    if (configurations[pi].size() < 2) {
      throw InputError(fmt::format(
          "profile '{}' has {}: {}. Violated constraint: at least two runs per fitted profile, "
          "at different batch or layout (its GEMM efficiency and per-step overhead are two "
          "parameters)",
          initial.profiles[pi].name,
          rows_of_profile[pi] == 1
              ? std::string("one run")
              : fmt::format("{} runs, all of one configuration", rows_of_profile[pi]),
          fmt::join(runs[pi], ", ")));
    }
  }
  for (int i : valid) {
    const MeasuredRow& r = *prepared[i].row;
    const double predicted = Predict(prepared[i], initial);
    const double factor = r.measured_tokens_per_s_per_gpu / predicted;
    if (!(factor >= 1 / kMaxTeamRowFactor && factor <= kMaxTeamRowFactor)) {
      throw InputError(fmt::format(
          "{}{}: measured {:.4g} tokens/s per GPU ({}), {:.3g}× the {:.4g} the starting profile "
          "'{}' predicts. Violated constraint: within a factor of {} (a metric of the wrong kind, "
          "such as step seconds read as tokens/s, or a unit slip)",
          r.where.empty() ? "" : r.where + ": ", Printable(r.id), r.measured_tokens_per_s_per_gpu,
          r.basis, factor, predicted, initial.profiles[prepared[i].profile_index].name,
          kMaxTeamRowFactor));
    }
  }
}

CalibrationResult Calibrate(const std::vector<MeasuredRow>& rows, const ProfileSet& initial,
                            const std::vector<MeasuredRow>& heldout, CalibrationScope scope) {
  CheckDisjoint(rows, heldout);
  std::vector<PreparedRow> prepared = Prepare(rows, initial);
  RequireAValidRow(prepared, "there is nothing to fit");
  RequireRowsOnTheirProfilesDevice(prepared, initial);
  std::vector<int> all;
  for (size_t i = 0; i < prepared.size(); ++i) {
    if (prepared[i].valid) all.push_back(static_cast<int>(i));
  }
  const std::vector<int> rows_of_profile = RowsOfProfile(prepared, all, initial.profiles.size());
  const ProfileUse used = UsedProfiles(prepared, all, initial.profiles.size());
  int fitted_params = 0;
  std::vector<std::string> fitted_names;  // "owner's name", for the error below
  for (int i = 0; i < ParamMap::Size(initial); ++i) {
    if (!ParamMap::Free(initial, i, scope, used)) continue;
    ++fitted_params;
    fitted_names.push_back(ParamMap::Owner(initial, i) + "'s " + ParamMap::Name(initial, i));
  }
  // A team's rows are checked per profile first, so that the error names the profile.
  if (scope == CalibrationScope::kTeamProfiles) {
    CheckTeamRows(prepared, all, rows_of_profile, initial);
  }
  if (static_cast<int>(all.size()) < fitted_params) {
    // The rows' file, from the first valid row's "file:line" (empty for rows built in code).
    const std::string& where = prepared[static_cast<size_t>(all.front())].row->where;
    const std::string file = where.substr(0, where.rfind(':'));
    throw InputError(fmt::format(
        "calibration needs at least one valid measured row per fitted parameter ({}: {}); the "
        "measurements{} have {}",
        fitted_params, fmt::join(fitted_names, ", "), file.empty() ? "" : " in " + file,
        all.size()));
  }
  // Two starts, the fitted parameters' defaults (SharedPerfParams, PerfProfile) and the middle of
  // every bound; the better fit is kept. Neither depends on the fitted values `initial` carries,
  // so calibrating again reproduces the shipped profiles exactly. Parameters outside the scope
  // keep `initial`'s values.
  ProfileSet from_defaults = initial;
  {
    ProfileSet defaults = initial;
    defaults.shared = SharedPerfParams{};
    for (PerfProfile& p : defaults.profiles) {
      p.gemm_efficiency = PerfProfile{}.gemm_efficiency;
      p.step_overhead_seconds = PerfProfile{}.step_overhead_seconds;
      p.expert_group_seconds = PerfProfile{}.expert_group_seconds;
      p.overlap_ep = PerfProfile{}.overlap_ep;
    }
    std::vector<double> x = ParamMap::Get(initial);
    const std::vector<double> d = ParamMap::Get(defaults);
    for (int i = 0; i < ParamMap::Size(initial); ++i) {
      if (ParamMap::Free(initial, i, scope, used)) x[i] = d[i];
    }
    ParamMap::Set(from_defaults, x.data());
  }
  // Each start's Ceres report opens with where it started (neither is the current profiles, so
  // its initial cost is not the final one when calibrating again).
  auto started = [](std::string_view from, FitOutcome f) {
    f.report = fmt::format("solver, from {} (the better of two starts; neither is the profiles' "
                           "current values): {}",
                           from, f.report);
    return f;
  };
  FitOutcome best =
      started("the parameters' defaults", Fit(prepared, all, from_defaults, scope));
  {
    ProfileSet middle = initial;
    std::vector<double> x = ParamMap::Get(middle);
    for (int i = 0; i < static_cast<int>(x.size()); ++i) {
      if (!ParamMap::Free(initial, i, scope, used)) continue;
      auto [lo, hi] = ParamMap::Bounds(middle, i);
      x[i] = (lo + hi) / 2;
    }
    ParamMap::Set(middle, x.data());
    FitOutcome f = started("the middle of every bound", Fit(prepared, all, middle, scope));
    if (f.cost < best.cost) best = std::move(f);
  }
  ProfileSet& fitted = best.profiles;
  for (size_t pi = 0; pi < fitted.profiles.size(); ++pi) {
    if (rows_of_profile[pi] > 0) {
      fitted.profiles[pi].calibrated = true;
      // A published fit moves the per-expert cost and EP overlap only on MoE rows; a team's
      // never moves them, and they stay as calibrated as its starting profile's were.
      if (scope != CalibrationScope::kTeamProfiles) {
        fitted.profiles[pi].moe_calibrated = used.moe[pi];
        fitted.profiles[pi].ep_calibrated = used.ep[pi];
      }
      fitted.profiles[pi].source =
          fmt::format("perf calibrate: {} measured row{}", rows_of_profile[pi],
                      rows_of_profile[pi] == 1 ? "" : "s");
    } else {
      fitted.profiles[pi] = initial.profiles[pi];
    }
  }
  const size_t fitted_profiles = fitted.profiles.size();
  const std::vector<MeasuredRow> predicted_heldout = WithUncalibratedProfiles(heldout, fitted);
  CalibrationResult result =
      Report(prepared, Prepare(predicted_heldout, fitted), fitted, true, false, scope);
  // The held-out rows' uncalibrated stand-ins are not part of the fitted set.
  result.profiles.profiles.resize(fitted_profiles);
  result.solver_report = best.report;
  result.fitted_params.resize(ParamMap::Size(initial));
  for (int i = 0; i < ParamMap::Size(initial); ++i) {
    result.fitted_params[i] = ParamMap::Free(initial, i, scope, used);
  }
  if (result.in_sample.rows > 0 && result.in_sample.rms_log_error > kMaxFittedRmsLogError) {
    result.cautions.push_back(fmt::format(
        "the fitted profiles miss their own rows by an RMS log error of {:.2f} (median {:.0f}%, "
        "above {}): the model does not explain these measurements, and what it fitted (look for "
        "parameters at their bounds) is no description of the stack; check each row's model, "
        "layout, hardware and measured figure before using it",
        result.in_sample.rms_log_error, 100 * result.in_sample.median_abs_error,
        kMaxFittedRmsLogError));
  }
  // A team's profile fitted onto a bound of its physical range did not find the stack in the
  // model however small its error: a cost the model lacks, or a run described wrongly.
  if (scope == CalibrationScope::kTeamProfiles) {
    const std::vector<bool> at = ParamsAtBound(result.profiles, result.fitted_params);
    const std::vector<double> x = ParamMap::Get(result.profiles);
    for (int i = 0; i < static_cast<int>(at.size()); ++i) {
      if (!at[i]) continue;
      const auto [lo, hi] = ParamMap::Bounds(result.profiles, i);
      result.cautions.push_back(fmt::format(
          "{} fitted {} = {:.4g}, on the {} bound of its physical range [{:g}, {:g}]: the runs "
          "ask for more than the model can give it, so check each run's layout, batch and "
          "measured figure, or the stack has a cost the model lacks",
          ParamMap::Owner(result.profiles, i), ParamMap::Name(result.profiles, i), x[i],
          x[i] <= lo * (1 + 1e-6) + 1e-9 ? "lower" : "upper", lo, hi));
    }
  }
  return result;
}

CalibrationResult ValidateRows(const std::vector<MeasuredRow>& rows, const ProfileSet& profiles,
                               bool leave_one_out, bool search,
                               const std::vector<MeasuredRow>& heldout) {
  CheckDisjoint(rows, heldout);
  std::vector<PreparedRow> prepared = Prepare(rows, profiles);
  RequireAValidRow(prepared, "there is no error to report");
  // Calibration rows are scored in-sample and refitted for leave-one-out: the rule calibrate
  // holds them to, so that the same file passes both or neither.
  RequireRowsOnTheirProfilesDevice(prepared, profiles);
  ProfileSet with_heldout = profiles;
  const std::vector<MeasuredRow> predicted_heldout =
      WithUncalibratedProfiles(heldout, with_heldout);
  return Report(prepared, Prepare(predicted_heldout, with_heldout), with_heldout, leave_one_out,
                search, CalibrationScope::kProfiles);
}

namespace {

// One row's prediction and error (or the rule that made it invalid), as in --json.
nlohmann::ordered_json RowJson(const RowResult& x) {
  // An invalid row has no prediction: its predicted figures are null, not 0.
  const auto predicted = [&](auto value) {
    return x.valid ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json j = {{"id", x.id},
                              {"profile", x.profile},
                              {"profile_device", x.profile_device},
                              {"layout", x.layout},
                              {"valid", x.valid},
                              {"fits", predicted(x.fits)},
                              {"peak_memory_gb", predicted(x.peak_memory_gb)},
                              {"measured_tokens_per_s_per_gpu", x.measured},
                              {"basis", x.basis},
                              {"predicted_tokens_per_s_per_gpu", predicted(x.predicted)}};
  if (x.tflops_over_tokens > 0) j["tflops_over_tokens"] = x.tflops_over_tokens;
  if (x.valid) {
    j["error"] = x.predicted / x.measured - 1;
  } else {
    j["invalid_rule"] = x.invalid_rule;
  }
  return j;
}

// A predicted tokens/s for the table, "-" when there is none (an invalid row, or a leave-one-out
// fit that was not run).
std::string Tokens(bool present, double tokens_per_s) {
  return present ? fmt::format("{:.1f}", tokens_per_s) : "-";
}

// predicted / measured − 1 as "+12.3%", "-" when there is no prediction.
std::string Error(bool present, double predicted, double measured) {
  return present ? FormatSignedPercent(predicted / measured - 1) : "-";
}

}  // namespace

std::string RenderCalibration(const CalibrationResult& r, bool json) {
  if (json) {
    nlohmann::ordered_json j;
    // A figure that was not run (no row in it) is null, not an error of 0.
    auto figure = [](const ErrorSummary& e, double value) {
      return e.rows == 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(value);
    };
    j["rms_log_error"] = figure(r.in_sample, r.rms_log_error);
    j["loo_rms_log_error"] = figure(r.leave_one_out, r.loo_rms_log_error);
    j["loo_not_run"] = r.loo_not_run;
    // The calibration rows in the figures (left_out also lists invalid held-out rows).
    j["rows_in_figures"] = r.in_sample.rows;
    j["left_out"] = r.left_out;
    j["cautions"] = r.cautions;
    j["solver"] = r.solver_report;
    // The fitted parameters, for a script (the profile file itself is written by --output).
    // "at_bound" names the fitted parameters that sit on a bound of their fit range, as the
    // text marks them "(at bound)"; "outside_fit_range" those a profile file put past one.
    nlohmann::ordered_json profiles = nlohmann::ordered_json::array();
    const std::vector<bool> at = ParamsAtBound(r.profiles, r.fitted_params);
    const std::vector<double> params = ParamMap::Get(r.profiles);
    const int n = ParamMap::Profiles(r.profiles);
    for (int pi = 0; pi < n; ++pi) {
      const PerfProfile& p = r.profiles.profiles[pi];
      nlohmann::ordered_json at_bound = nlohmann::ordered_json::array();
      nlohmann::ordered_json past = nlohmann::ordered_json::array();
      const char* names[ParamMap::kPerProfile] = {"gemm_efficiency", "step_overhead_seconds",
                                                  "expert_group_seconds", "overlap_ep"};
      for (int block = 0; block < ParamMap::kPerProfile; ++block) {
        const int i = block * n + pi;
        if (at[i]) (PastFitRange(r.profiles, params, i) ? past : at_bound).push_back(names[block]);
      }
      profiles.push_back({{"name", p.name},
                          {"hardware", p.hardware},
                          {"calibrated", p.calibrated},
                          {"moe_calibrated", p.moe_calibrated},
                          {"ep_calibrated", p.ep_calibrated},
                          {"gemm_efficiency", p.gemm_efficiency},
                          {"step_overhead_seconds", p.step_overhead_seconds},
                          {"expert_group_seconds", p.expert_group_seconds},
                          {"overlap_ep", p.overlap_ep},
                          {"at_bound", at_bound},
                          {"outside_fit_range", past}});
    }
    j["profiles"] = profiles;
    nlohmann::ordered_json shared = nlohmann::ordered_json::object();
    nlohmann::ordered_json shared_at_bound = nlohmann::ordered_json::array();
    nlohmann::ordered_json shared_past = nlohmann::ordered_json::array();
    for (int i = 0; i < ParamMap::kShared; ++i) {
      const SharedFit& f = kSharedFit[i];
      shared[f.name] = r.profiles.shared.*f.member * f.scale;
      const int k = ParamMap::kPerProfile * n + i;
      if (at[k]) {
        (PastFitRange(r.profiles, params, k) ? shared_past : shared_at_bound).push_back(f.name);
      }
    }
    j["shared"] = shared;
    j["shared_at_bound"] = shared_at_bound;
    j["shared_outside_fit_range"] = shared_past;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const RowResult& x : r.rows) {
      nlohmann::ordered_json rj = RowJson(x);
      if (x.loo_predicted > 0) {
        rj["loo_predicted_tokens_per_s_per_gpu"] = x.loo_predicted;
        rj["loo_error"] = x.loo_predicted / x.measured - 1;
      }
      if (x.search_rank > 0) {
        rj["search_rank"] = x.search_rank;
        rj["search_feasible"] = x.search_feasible;
        rj["best_over_published"] = x.best_over_published;
        rj["best_layout"] = x.best_layout;
      }
      rows.push_back(rj);
    }
    j["rows"] = rows;
    auto summary = [&](const ErrorSummary& e) {
      nlohmann::ordered_json o = {{"rows", e.rows},
                                  {"rms_log_error", figure(e, e.rms_log_error)},
                                  {"median_abs_error", figure(e, e.median_abs_error)},
                                  {"worst_row", e.rows == 0 ? nlohmann::ordered_json(nullptr)
                                                            : nlohmann::ordered_json(e.worst_id)},
                                  {"worst_error", figure(e, e.worst_error)}};
      return o;
    };
    j["in_sample"] = summary(r.in_sample);
    j["leave_one_out"] = summary(r.leave_one_out);
    j["heldout"] = summary(r.heldout);
    nlohmann::ordered_json held = nlohmann::ordered_json::array();
    for (const RowResult& x : r.heldout_rows) held.push_back(RowJson(x));
    j["heldout_rows"] = held;
    nlohmann::ordered_json repeated = nlohmann::ordered_json::array();
    for (const RepeatedMeasurement& m : r.repeated) {
      repeated.push_back({{"job", m.job},
                          {"ids", m.ids},
                          {"measured_tokens_per_s_per_gpu", m.measured},
                          {"predicted_tokens_per_s_per_gpu", m.predicted},
                          {"settings", m.setting},
                          {"spread", m.spread},
                          {"predicted_spread", m.predicted_spread}});
    }
    j["repeated_measurements"] = repeated;
    if (!r.drop_fit.predicted.empty()) {
      j["dropping"] = {{"concentration", r.drop_fit.params.concentration},
                       {"popularity_sigma", r.drop_fit.params.popularity_sigma},
                       {"predicted", r.drop_fit.predicted},
                       {"rms_relative_error", r.drop_fit.rms_relative_error}};
    }
    return DumpJson(j) + "\n";
  }
  std::string out;
  // The row and profile columns as wide as their widest cell (a team's run names are long), in
  // terminal columns, with the names escaped (they come from the user's files).
  size_t id_width = 6;
  size_t profile_width = 15;
  for (const auto* rows : {&r.rows, &r.heldout_rows}) {
    for (const RowResult& x : *rows) {
      id_width = std::max(id_width, DisplayWidth(Printable(x.id)));
      profile_width = std::max(profile_width, DisplayWidth(Printable(x.profile)));
    }
  }
  auto id = [&](const std::string& text) { return PadRight(Printable(text), id_width); };
  auto profile = [&](const std::string& text) {
    return PadRight(Printable(text), profile_width);
  };
  out += fmt::format("{} {} {:>10} {:>10} {:>8} {:>10} {:>8} {:>7} {:>8}  {}\n", id("row"),
                     profile("profile"), "measured", "predicted", "error", "loo pred", "loo err",
                     "fits", "rank", "layout (least recompute that fits)");
  for (const RowResult& x : r.rows) {
    std::string rank = x.search_rank > 0 ? fmt::format("{}/{}", x.search_rank, x.search_feasible)
                                         : "-";
    out += fmt::format("{} {} {:>10.1f} {:>10} {:>8} {:>10} {:>8} {:>7} {:>8}  {}{}\n",
                       id(x.id), profile(x.profile), x.measured, Tokens(x.valid, x.predicted),
                       Error(x.valid, x.predicted, x.measured), Tokens(x.loo_predicted > 0,
                                                                       x.loo_predicted),
                       Error(x.loo_predicted > 0, x.loo_predicted, x.measured),
                       !x.valid ? "invalid" : x.fits ? "yes" : "NO", rank, x.layout,
                       x.basis == "tokens/s" ? "" : "  [" + x.basis + "]");
    if (x.search_rank > 0) {
      out += fmt::format("       best layout is {:.3f}x the publisher's: {}\n",
                         x.best_over_published, x.best_layout);
    }
  }
  for (const RowResult& x : r.rows) {
    if (!x.valid) {
      out += fmt::format("       row {} left out of every figure: its layout breaks {}\n", x.id,
                         x.invalid_rule);
    }
  }
  if (!r.heldout_rows.empty()) {
    out += "\nHeld-out rows (never fitted)\n";
    out += fmt::format("{} {} {:>10} {:>10} {:>8} {:>7}  {}\n", id("row"), profile("profile"),
                       "measured", "predicted", "error", "fits", "layout");
    for (const RowResult& x : r.heldout_rows) {
      out += fmt::format("{} {} {:>10.1f} {:>10} {:>8} {:>7}  {}{}\n", id(x.id), profile(x.profile),
                         x.measured, Tokens(x.valid, x.predicted),
                         Error(x.valid, x.predicted, x.measured),
                         !x.valid ? "invalid" : x.fits ? "yes" : "NO", x.layout,
                         x.basis == "tokens/s" ? "" : "  [" + x.basis + "]");
    }
    for (const RowResult& x : r.heldout_rows) {
      if (!x.valid) {
        out += fmt::format("       row {} left out of every figure: its layout breaks {}\n", x.id,
                           x.invalid_rule);
      }
    }
  }
  // Rows that ran although the memory model puts them over the HBM: its limits (docs/guide.md)
  // or memory savings it does not model; they are fitted and scored all the same.
  std::vector<std::string> over;
  for (const auto* rows : {&r.rows, &r.heldout_rows}) {
    for (const RowResult& x : *rows) {
      if (x.valid && !x.fits) over.push_back(fmt::format("{} ({:.0f} GB)", Printable(x.id),
                                                         x.peak_memory_gb));
    }
  }
  if (!over.empty()) {
    out += fmt::format("\nMeasured, though predicted over the device's memory with every recompute "
                       "policy (the memory model is pessimistic for them, or they saved memory in "
                       "ways it does not model; fitted and scored all the same): {}\n",
                       fmt::join(over, ", "));
  }
  std::vector<std::string> elsewhere;
  for (const RowResult& x : r.heldout_rows) {
    if (x.valid && x.other_device) {
      elsewhere.push_back(fmt::format("{} ({}, for {})", Printable(x.id), x.profile,
                                      Printable(x.profile_device)));
    }
  }
  // A row's TFLOP/s and tokens/s agree within 0.6% where the source counts FLOPs as mosaic does
  // in the row's convention (tests/fixtures/throughput/README.md); past 5% the source counts
  // another way (a module mosaic's model has not, a window counted whole), the convention cell
  // is the other one, or a figure is off. Tokens/s is what is scored: the rows are named.
  constexpr double kFlopCountTolerance = 0.05;
  std::vector<std::string> recounted;
  for (const std::vector<RowResult>* rows : {&r.rows, &r.heldout_rows}) {
    for (const RowResult& x : *rows) {
      if (x.tflops_over_tokens > 0 && std::abs(x.tflops_over_tokens - 1) > kFlopCountTolerance) {
        recounted.push_back(fmt::format("{} ({:.2f}×)", Printable(x.id), x.tflops_over_tokens));
      }
    }
  }
  if (!recounted.empty()) {
    out += fmt::format("\nRows whose TFLOP/s are not what their tokens/s imply at mosaic's FLOPs "
                       "per token in their flop_convention, by more than {:.0f}% (tokens/s is "
                       "scored; the source counts FLOPs another way, the convention is the other "
                       "one, or a figure is off): {}\n",
                       100 * kFlopCountTolerance, fmt::join(recounted, ", "));
  }
  if (!elsewhere.empty()) {
    out += fmt::format("\nHeld-out rows predicted with a profile for another device (their "
                       "device's closest calibrated sibling's, or the one the row names): {}\n",
                       fmt::join(elsewhere, ", "));
  }
  out += fmt::format("\n{:<14} {:>5} {:>8} {:>13}  {}\n", "error", "rows", "RMS log",
                     "median |err|", "worst row");
  auto line = [&](std::string_view name, const ErrorSummary& e, std::string_view none) {
    if (e.rows == 0) {
      out += fmt::format("{:<14} {:>5}  {}\n", name, 0, none);
      return;
    }
    out += fmt::format("{:<14} {:>5} {:>8.4f} {:>12.1f}%  {} {}\n", name, e.rows,
                       e.rms_log_error, 100 * e.median_abs_error, e.worst_id,
                       FormatSignedPercent(e.worst_error));
  };
  line("in-sample", r.in_sample, "");
  line("leave-one-out", r.leave_one_out,
       r.loo_not_run.empty() ? "(not run: it needs two valid rows)"
                             : "(not run: no profile has more configurations than fitted "
                               "parameters)");
  if (!r.loo_not_run.empty()) {
    out += fmt::format("{:<14} {:>5}  not left out ({}){}\n", "", r.loo_not_run.size(),
                       fmt::join(r.loo_not_run, ", "),
                       r.leave_one_out.rows > 0
                           ? ": the rest of their profile would hold fewer distinct "
                             "configurations than fitted parameters"
                           : "");
  }
  line("held-out", r.heldout, r.heldout_rows.empty() ? "(no held-out rows given: --heldout CSV)"
                                                     : "(no valid held-out row)");
  if (!r.solver_report.empty()) out += r.solver_report + "\n";
  for (const std::string& caution : r.cautions) out += "caution: " + caution + "\n";
  if (!r.repeated.empty()) {
    // Whether the model follows what changed between two measurements of one job; rows of one
    // setting get one prediction, so past 1.3 / 0.7 no prediction is within 30% of both.
    out += "\nJobs measured more than once: highest / lowest measured, and the model's ratio for "
           "the same rows (one setting, one prediction: past 1.86x, none is within 30% of both)\n";
    for (const RepeatedMeasurement& m : r.repeated) {
      std::vector<std::string> parts;
      for (size_t i = 0; i < m.ids.size(); ++i) {
        parts.push_back(fmt::format("{} {:.0f} ({}; predicted {:.0f})", Printable(m.ids[i]),
                                    m.measured[i], m.setting[i], m.predicted[i]));
      }
      out += fmt::format("  measured {:.2f}x, model {:.2f}x  {}\n      {}\n", m.spread,
                         m.predicted_spread, Printable(m.job), fmt::join(parts, "; "));
    }
  }
  out += fmt::format("\nProfiles\n");
  const std::vector<bool> at = ParamsAtBound(r.profiles, r.fitted_params);
  const std::vector<double> params = ParamMap::Get(r.profiles);
  const int n = ParamMap::Profiles(r.profiles);
  auto mark = [&](int i) -> std::string {
    if (!at[i]) return "";
    if (!PastFitRange(r.profiles, params, i)) return " (at bound)";
    const auto [lo, hi] = ParamMap::Bounds(r.profiles, i);
    return fmt::format(" (outside its fit range {:.4g}-{:.4g})", lo, hi);
  };
  for (int pi = 0; pi < n; ++pi) {
    const PerfProfile& p = r.profiles.profiles[pi];
    auto value = [&](double x, int block) {
      return fmt::format("{:.4g}{}", x, mark(block * n + pi));
    };
    out += fmt::format(
        "  {:<16} gemm_efficiency {}, step_overhead_seconds {}, expert_group_us {}, overlap_ep "
        "{}\n",
        p.name, value(p.gemm_efficiency, 0), value(p.step_overhead_seconds, 1),
        value(p.expert_group_seconds * 1e6, 2), value(p.overlap_ep, 3));
  }
  const SharedPerfParams& s = r.profiles.shared;
  out += "  shared:";
  for (int i = 0; i < ParamMap::kShared; ++i) {
    const SharedFit& f = kSharedFit[i];
    out += fmt::format(" {} {:.4g}{}", f.name, s.*f.member * f.scale,
                       mark(ParamMap::kPerProfile * n + i));
  }
  out += "\n";
  const DropFit& d = r.drop_fit;
  if (d.predicted.empty()) return out;
  out += fmt::format("\nDropping (Marin hero capacity sweep): concentration A = {:.4g}, popularity "
                     "sigma = {:.4f}, RMS relative error {:.3f}\n",
                     d.params.concentration, d.params.popularity_sigma, d.rms_relative_error);
  const std::vector<DropMeasurement> sweep = MarinCapacitySweep();
  for (size_t i = 0; i < sweep.size() && i < d.predicted.size(); ++i) {
    out += fmt::format("  cf {:<6} measured {:>7.4f}  predicted {:>7.4f}\n",
                       sweep[i].group.capacity_factor, sweep[i].dropped_fraction, d.predicted[i]);
  }
  return out;
}

}  // namespace mosaic
