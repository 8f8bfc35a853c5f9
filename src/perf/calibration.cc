#include "mosaic/perf/calibration.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <sstream>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/search.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"
#include "mosaic/util/json_output.h"

namespace mosaic {
namespace {

// Splits one CSV line (double quotes protect commas; "" is a quote).
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cells.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      cells.emplace_back();
    } else if (ch != '\r') {
      cells.back() += ch;
    }
  }
  return cells;
}

std::string ProfileFor(const std::string& hardware, const std::string& source) {
  if (source.find("marin") != std::string::npos) return "marin-gb200";
  if (hardware == "gb200-nvl72") return "megatron-gb200";
  return "megatron-" + hardware;
}

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
  std::map<std::string, ModelSpec> models;
  for (const MeasuredRow& r : rows) {
    PreparedRow p;
    p.row = &r;
    auto it = models.find(r.model);
    if (it == models.end()) it = models.emplace(r.model, LoadModel(r.model)).first;
    p.shape = MakeModelShape(it->second.config, r.seq_len);
    p.cluster = MakeCluster(LoadHardware(r.hardware), r.gpus);
    p.job.global_batch = r.global_batch;
    p.job.seq_len = r.seq_len;
    p.job.format = r.format;
    p.job.routing = r.routing;
    p.job.capacity_factor = r.capacity_factor;
    p.profile_index = -1;
    for (size_t i = 0; i < set.profiles.size(); ++i) {
      if (set.profiles[i].name == r.profile) p.profile_index = static_cast<int>(i);
    }
    if (p.profile_index < 0) {
      throw InputError(fmt::format("row {}: no profile '{}' in the profile set", r.id, r.profile));
    }
    if (r.format == NumberFormat::kMxfp8 && p.cluster.device.peak_mxfp8_tflops <= 0) {
      throw InputError(fmt::format("row {}: precision mxfp8 on {}, which has no MXFP8 tensor cores "
                                   "(peak_mxfp8_tflops = 0)",
                                   r.id, r.hardware));
    }
    p.layout = r.layout;
    const auto violation = CheckLayout(r.layout, it->second.config,
                                       {r.gpus, r.global_batch, r.seq_len},
                                       p.cluster.device.domain_gpus());
    p.valid = !violation;
    if (violation) p.invalid_rule = violation->rule;
    const std::string& policy = set.profiles[p.profile_index].recompute;
    if (p.valid && !policy.empty()) {
      // The stack's documented policy.
      p.layout.recompute = *RecomputeFromString(policy);
      MemoryBreakdown m = EstimateMemory(p.shape, p.cluster, p.layout, p.job,
                                         set.profiles[p.profile_index]);
      p.peak_bytes = m.peak_bytes;
      p.fits = m.peak_bytes <= p.cluster.device.hbm_gb * 1e9;
    } else if (p.valid) {
      for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kModules,
                            Recompute::kFull}) {
        p.layout.recompute = rc;
        MemoryBreakdown m = EstimateMemory(p.shape, p.cluster, p.layout, p.job,
                                           set.profiles[p.profile_index]);
        p.peak_bytes = m.peak_bytes;
        if (m.peak_bytes <= p.cluster.device.hbm_gb * 1e9) {
          p.fits = true;
          break;
        }
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

double Predict(const PreparedRow& p, const ProfileSet& set) {
  if (!p.valid) return 0;
  return EvaluateStep(p.shape, p.cluster, p.layout, p.job, set.shared,
                      set.profiles[p.profile_index], nullptr)
      .tokens_per_s_per_gpu;
}

// The fitted parameters as one vector: each profile's gemm_efficiency, then the shared ones.
// Every fitted parameter is bounded to its physical range, with the reason next to the bound: a
// fit that needs a value outside these ranges is missing a term, not a better value. The other
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
    // Overlap fractions: a collective can be hidden entirely, but 95% is the most that
    // schedules achieve (the first and last layer's collectives have nothing to hide under).
    {"overlap_ep", &SharedPerfParams::overlap_ep, 1, 0, 0.95},
    // NCCL's and XLA's collective kernels hold 16-32 of the 132-148 SMs and share HBM with the
    // compute they overlap: compute beside a hidden collective runs up to a third slower.
    {"overlap_contention", &SharedPerfParams::overlap_contention, 1, 0, 0.35},
    // Achieved / nominal NVLink bandwidth: NCCL's bus bandwidth on H100/B200/GB200 reaches
    // 70-90% of the datasheet for large messages; below 50% means a missing term.
    {"scale_up_efficiency", &SharedPerfParams::scale_up_efficiency, 1, 0.5, 0.9},
    // Achieved / nominal NIC bandwidth (NCCL over InfiniBand/RoCE: 70-95%).
    {"scale_out_efficiency", &SharedPerfParams::scale_out_efficiency, 1, 0.5, 1},
    // Host time after each MoE layer's token-count sync (Megatron-Core's dropless dispatchers copy
    // tokens-per-expert to the host before the grouped GEMMs): the rest of the layer's launches
    // (permutation, all-to-all, expert GEMMs, unpermute, auxiliary losses; some 50-150 ops
    // forward and backward at 10-20 µs of Python, autograd and dispatch each) the GPU waits for:
    // up to 3 ms.
    {"moe_sync_us", &SharedPerfParams::moe_sync_seconds, 1e6, 0, 3000},
    // Per expert GEMM: a grouped GEMM's expert ends in a partial wave of 128×256 output tiles;
    // one tile with a contraction of 3-6k takes 12-25 µs on a 132-148 SM part at 70% of peak,
    // and half a tile on average is wasted per expert. A per-expert kernel launch (Transformer
    // Engine's GroupedLinear) costs 5-20 µs. Up to 40 µs.
    {"expert_group_us", &SharedPerfParams::expert_group_seconds, 1e6, 0, 40},
    // Unfused attention (scores written by the QKᵀ GEMM, read and written by the scaled masked
    // softmax, read by the PV GEMM: 4 forward; the gradient of the probabilities written, it
    // and the probabilities read by the softmax backward, its output written and read by the two
    // GEMMs, the probabilities read for dV: 7 backward; the sink column concatenated forward
    // and split backward: up to 4 more): 11 to 15 passes.
    {"unfused_attention_passes", &SharedPerfParams::unfused_attention_passes, 1, 11, 15},
};

// Whether a fitted value sits on its lower or upper bound (relative tolerance 1e-6).
bool AtBound(double x, double lo, double hi) {
  return x <= lo * (1 + 1e-6) + 1e-9 || x >= hi * (1 - 1e-6);
}

struct ParamMap {
  static constexpr int kShared = static_cast<int>(std::size(kSharedFit));
  static int Size(const ProfileSet& s) { return static_cast<int>(s.profiles.size()) + kShared; }
  static std::vector<double> Get(const ProfileSet& s) {
    std::vector<double> x;
    for (const PerfProfile& p : s.profiles) x.push_back(p.gemm_efficiency);
    for (const SharedFit& f : kSharedFit) x.push_back(s.shared.*f.member * f.scale);
    return x;
  }
  static void Set(ProfileSet& s, const double* x) {
    size_t i = 0;
    for (PerfProfile& p : s.profiles) p.gemm_efficiency = x[i++];
    for (const SharedFit& f : kSharedFit) s.shared.*f.member = x[i++] / f.scale;
  }
  static std::pair<double, double> Bounds(const ProfileSet& s, int i) {
    const int n = static_cast<int>(s.profiles.size());
    // Peak share of large bf16 GEMMs: cuBLAS/CUTLASS reach 70-80% of the datasheet on H100 and
    // Blackwell at sustained (power-limited) clocks; 0.8 is the best sustained, 0.4 a badly
    // tuned stack.
    if (i < n) return {0.4, 0.8};
    return {kSharedFit[i - n].lo, kSharedFit[i - n].hi};
  }
};

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

struct FitOutcome {
  ProfileSet profiles;
  double cost = 0;     // half the sum of squared log errors (Ceres' final cost)
  std::string report;  // Ceres' brief report
};

FitOutcome Fit(const std::vector<PreparedRow>& rows, const std::vector<int>& use,
               const ProfileSet& initial) {
  ProfileSet s = initial;
  std::vector<double> x = ParamMap::Get(s);
  auto* functor = new FitResidual{&rows, use, initial};
  auto* cost = new ceres::DynamicNumericDiffCostFunction<FitResidual, ceres::CENTRAL>(functor);
  cost->AddParameterBlock(static_cast<int>(x.size()));
  cost->SetNumResiduals(static_cast<int>(use.size()));
  ceres::Problem problem;
  problem.AddResidualBlock(cost, nullptr, x.data());
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    auto [lo, hi] = ParamMap::Bounds(s, i);
    x[i] = std::clamp(x[i], lo, hi);
    problem.SetParameterLowerBound(x.data(), i, lo);
    problem.SetParameterUpperBound(x.data(), i, hi);
  }
  // A profile without rows in the fit keeps its value.
  for (size_t pi = 0; pi < s.profiles.size(); ++pi) {
    bool used = false;
    for (int r : use) used = used || rows[r].profile_index == static_cast<int>(pi);
    if (!used) {
      problem.SetParameterLowerBound(x.data(), static_cast<int>(pi), x[pi] - 1e-12);
      problem.SetParameterUpperBound(x.data(), static_cast<int>(pi), x[pi] + 1e-12);
    }
  }
  ceres::Solver::Options options;
  options.max_num_iterations = 100;
  options.num_threads = 1;
  options.function_tolerance = 1e-10;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  ParamMap::Set(s, x.data());
  return {std::move(s), summary.final_cost, summary.BriefReport()};
}

CalibrationResult Report(const std::vector<PreparedRow>& prepared, const ProfileSet& fitted,
                         bool leave_one_out, bool search) {
  CalibrationResult result;
  result.profiles = fitted;
  double ss = 0, ss_loo = 0;
  std::vector<int> all;
  for (size_t i = 0; i < prepared.size(); ++i) {
    if (prepared[i].valid) all.push_back(static_cast<int>(i));
  }
  // Leaving a row out needs another row to fit on.
  leave_one_out = leave_one_out && all.size() > 1;
  for (size_t i = 0; i < prepared.size(); ++i) {
    const PreparedRow& p = prepared[i];
    RowResult r;
    r.id = p.row->id;
    r.profile = p.row->profile;
    r.layout = ToString(p.layout);
    r.valid = p.valid;
    r.invalid_rule = p.invalid_rule;
    if (!p.valid) result.left_out.push_back(r.id);
    r.fits = p.fits;
    r.peak_memory_gb = p.peak_bytes / 1e9;
    r.measured = p.row->measured_tokens_per_s_per_gpu;
    r.basis = p.row->basis;
    r.predicted = Predict(p, fitted);
    if (p.valid) ss += std::pow(std::log(r.predicted / r.measured), 2);
    if (leave_one_out && p.valid) {
      std::vector<int> use;
      for (int j : all) {
        if (j != static_cast<int>(i)) use.push_back(j);
      }
      const ProfileSet loo = Fit(prepared, use, fitted).profiles;
      r.loo_predicted = Predict(p, loo);
      ss_loo += std::pow(std::log(r.loo_predicted / r.measured), 2);
    }
    if (search && p.valid) {
      SearchOptions so;
      so.top = 1;
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
  const double n = static_cast<double>(std::max<size_t>(all.size(), 1));
  result.rms_log_error = std::sqrt(ss / n);
  result.loo_rms_log_error = leave_one_out ? std::sqrt(ss_loo / n) : 0;
  result.drop_fit = FitDropParams(MarinCapacitySweep());
  return result;
}

}  // namespace

std::vector<MeasuredRow> ReadMeasurements(const std::string& path) {
  std::istringstream in(ReadFile(path));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = SplitCsv(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* needed : {"id", "model", "hardware", "gpus", "tp", "pp", "vpp", "ep", "cp",
                             "dp_kind", "micro_batch", "global_batch", "seq_len", "precision",
                             "routing", "measured_tokens_per_s_per_gpu",
                             "measured_tflops_per_gpu", "measured_mfu_pct", "source"}) {
    if (!col.contains(needed)) {
      throw InputError(fmt::format("{}:1: missing column '{}'", path, needed));
    }
  }
  std::vector<MeasuredRow> rows;
  std::vector<double> mfu;  // measured MFU % per row (0 when absent)
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> cells = SplitCsv(line);
    cells.resize(header.size());
    auto cell = [&](const char* name) -> const std::string& { return cells[col[name]]; };
    auto integer = [&](const char* name) {
      const std::string& v = cell(name);
      try {
        size_t used = 0;
        int64_t x = std::stoll(v, &used);
        if (used != v.size() || x < 1) throw std::invalid_argument(v);
        return x;
      } catch (const std::exception&) {
        throw InputError(fmt::format("{}:{}: {} = '{}'. Violated constraint: a positive integer",
                                     path, line_no, name, v));
      }
    };
    // A measurement: blank when the source did not give it (0), else a finite number > 0.
    auto number = [&](const char* name) {
      const std::string& v = cell(name);
      if (v.empty()) return 0.0;
      double x = 0;
      try {
        size_t used = 0;
        x = std::stod(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
      } catch (const std::exception&) {
        x = -1;
      }
      if (!std::isfinite(x) || x <= 0) {
        throw InputError(fmt::format(
            "{}:{}: {} = '{}'. Violated constraint: blank or a finite number > 0", path, line_no,
            name, v));
      }
      return x;
    };
    MeasuredRow r;
    r.id = cell("id");
    r.model = cell("model");
    r.hardware = cell("hardware");
    r.source = cell("source");
    r.gpus = integer("gpus");
    Layout& l = r.layout;
    l.tp = integer("tp");
    l.pp = integer("pp");
    l.vpp = integer("vpp");
    l.ep = integer("ep");
    l.cp = integer("cp");
    l.mbs = integer("micro_batch");
    const int64_t data = r.gpus / (l.tp * l.pp * l.cp);
    const std::string& kind = cell("dp_kind");
    if (kind == "zero1") {
      l.dp = data;
    } else if (kind == "fsdp") {
      l.fsdp = data;
    } else if (kind.starts_with("fsdp") && kind.find("dp") != std::string::npos) {
      // "fsdp64 within a rack + dp2 across racks"
      l.fsdp = std::stoll(kind.substr(4));
      l.dp = data / l.fsdp;
    } else {
      throw InputError(fmt::format("{}:{}: dp_kind = '{}'. Violated constraint: zero1, fsdp or "
                                   "'fsdpN ... + dpM ...'",
                                   path, line_no, kind));
    }
    r.global_batch = integer("global_batch");
    r.seq_len = integer("seq_len");
    auto format = NumberFormatFromString(cell("precision"));
    if (!format) {
      throw InputError(fmt::format("{}:{}: precision = '{}'. Violated constraint: bf16, fp8 or "
                                   "mxfp8",
                                   path, line_no, cell("precision")));
    }
    r.format = *format;
    const std::string& routing = cell("routing");
    if (routing == "dropless-forced-balance") {
      r.routing = RoutingPolicy::kBalanced;
    } else if (routing == "dropless" || routing == "dropless-chunk1") {
      r.routing = RoutingPolicy::kDropless;
    } else if (routing == "token-drop") {
      r.routing = RoutingPolicy::kCapacity;
      r.capacity_factor = 1.0;
    } else if (routing.starts_with("capacity-factor-")) {
      r.routing = RoutingPolicy::kFixedCells;
      r.capacity_factor = std::stod(routing.substr(16));
    } else if (routing.starts_with("fsdp-control")) {
      r.routing = RoutingPolicy::kDropless;  // experts gathered in 4 chunks (seed 000)
      l.moe_chunk = 4;
    } else {
      throw InputError(fmt::format("{}:{}: routing = '{}' is not understood", path, line_no,
                                   routing));
    }
    r.profile = ProfileFor(r.hardware, r.source);
    const double tokens = number("measured_tokens_per_s_per_gpu");
    const double tflops = number("measured_tflops_per_gpu");
    mfu.push_back(number("measured_mfu_pct"));
    if (tokens > 0) {
      r.measured_tokens_per_s_per_gpu = tokens;
      r.basis = "tokens/s";
    } else if (tflops > 0) {
      const ModelSpec spec = LoadModel(r.model);
      const ModelShape shape = MakeModelShape(spec.config, r.seq_len);
      r.measured_tokens_per_s_per_gpu = tflops * 1e12 / shape.model_flops_per_token;
      r.basis = "TFLOP/s";
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
      throw InputError(fmt::format("{}: row {} has no usable measurement", path, rows[i].id));
    }
  }
  if (rows.empty()) throw InputError(fmt::format("{}: no measured rows", path));
  return rows;
}

CalibrationResult Calibrate(const std::vector<MeasuredRow>& rows, const ProfileSet& initial) {
  std::vector<PreparedRow> prepared = Prepare(rows, initial);
  std::vector<int> all;
  for (size_t i = 0; i < prepared.size(); ++i) {
    if (prepared[i].valid) all.push_back(static_cast<int>(i));
  }
  std::vector<int> rows_of_profile(initial.profiles.size(), 0);
  for (int r : all) ++rows_of_profile[prepared[r].profile_index];
  const int fitted_params =
      ParamMap::kShared +
      static_cast<int>(std::count_if(rows_of_profile.begin(), rows_of_profile.end(),
                                     [](int n) { return n > 0; }));
  if (static_cast<int>(all.size()) < fitted_params) {
    throw InputError(fmt::format(
        "calibration needs at least one valid measured row per fitted parameter ({}); the "
        "measurements have {}",
        fitted_params, all.size()));
  }
  // Two starts, the fitted parameters' defaults (SharedPerfParams, PerfProfile) and the middle of
  // every bound; the better fit is kept. Neither depends on the fitted values `initial` carries,
  // so calibrating again reproduces the shipped profiles exactly.
  ProfileSet from_defaults = initial;
  {
    ProfileSet defaults = initial;
    defaults.shared = SharedPerfParams{};
    for (PerfProfile& p : defaults.profiles) p.gemm_efficiency = PerfProfile{}.gemm_efficiency;
    ParamMap::Set(from_defaults, ParamMap::Get(defaults).data());
  }
  FitOutcome best = Fit(prepared, all, from_defaults);
  {
    ProfileSet middle = initial;
    std::vector<double> x = ParamMap::Get(middle);
    for (int i = 0; i < static_cast<int>(x.size()); ++i) {
      auto [lo, hi] = ParamMap::Bounds(middle, i);
      x[i] = (lo + hi) / 2;
    }
    ParamMap::Set(middle, x.data());
    FitOutcome f = Fit(prepared, all, middle);
    if (f.cost < best.cost) best = std::move(f);
  }
  ProfileSet& fitted = best.profiles;
  for (size_t pi = 0; pi < fitted.profiles.size(); ++pi) {
    if (rows_of_profile[pi] > 0) {
      fitted.profiles[pi].calibrated = true;
      fitted.profiles[pi].source =
          fmt::format("perf calibrate: {} measured rows", rows_of_profile[pi]);
    } else {
      fitted.profiles[pi] = initial.profiles[pi];  // the middle start moved it
    }
  }
  CalibrationResult result = Report(prepared, fitted, true, false);
  result.solver_report = best.report;
  return result;
}

CalibrationResult ValidateRows(const std::vector<MeasuredRow>& rows, const ProfileSet& profiles,
                               bool leave_one_out, bool search) {
  std::vector<PreparedRow> prepared = Prepare(rows, profiles);
  bool any_valid = false;
  std::string first_invalid;
  for (const PreparedRow& p : prepared) {
    any_valid = any_valid || p.valid;
    if (!p.valid && first_invalid.empty()) {
      first_invalid = fmt::format("row {}: {}", p.row->id, p.invalid_rule);
    }
  }
  if (!any_valid) {
    throw InputError(fmt::format("no measured row has a valid layout, so there is no error to "
                                 "report ({}{})",
                                 first_invalid, prepared.size() > 1 ? ", …" : ""));
  }
  return Report(prepared, profiles, leave_one_out, search);
}

std::string RenderCalibration(const CalibrationResult& r, bool json) {
  if (json) {
    nlohmann::ordered_json j;
    j["rms_log_error"] = r.rms_log_error;
    j["loo_rms_log_error"] = r.loo_rms_log_error;
    j["rows_in_figures"] = r.rows.size() - r.left_out.size();
    j["left_out"] = r.left_out;
    j["solver"] = r.solver_report;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const RowResult& x : r.rows) {
      nlohmann::ordered_json rj = {{"id", x.id},
                                   {"profile", x.profile},
                                   {"layout", x.layout},
                                   {"valid", x.valid},
                                   {"fits", x.fits},
                                   {"peak_memory_gb", x.peak_memory_gb},
                                   {"measured_tokens_per_s_per_gpu", x.measured},
                                   {"basis", x.basis},
                                   {"predicted_tokens_per_s_per_gpu", x.predicted}};
      if (x.valid) {
        rj["error"] = x.predicted / x.measured - 1;
      } else {
        rj["invalid_rule"] = x.invalid_rule;
      }
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
    j["dropping"] = {{"concentration", r.drop_fit.params.concentration},
                     {"popularity_sigma", r.drop_fit.params.popularity_sigma},
                     {"predicted", r.drop_fit.predicted},
                     {"rms_relative_error", r.drop_fit.rms_relative_error}};
    return DumpJson(j) + "\n";
  }
  std::string out;
  out += fmt::format("{:<6} {:<15} {:>10} {:>10} {:>8} {:>10} {:>8} {:>7} {:>8}  {}\n", "row",
                     "profile", "measured", "predicted", "error", "loo pred", "loo err", "fits",
                     "rank", "layout (least recompute that fits)");
  for (const RowResult& x : r.rows) {
    std::string rank = x.search_rank > 0 ? fmt::format("{}/{}", x.search_rank, x.search_feasible)
                                         : "-";
    out += fmt::format("{:<6} {:<15} {:>10.1f} {:>10.1f} {:>+7.1f}% {:>10.1f} {:>+7.1f}% {:>7} "
                       "{:>8}  {}{}\n",
                       x.id, x.profile, x.measured, x.predicted,
                       100 * (x.predicted / x.measured - 1), x.loo_predicted,
                       x.loo_predicted > 0 ? 100 * (x.loo_predicted / x.measured - 1) : 0.0,
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
  out += fmt::format("\nRMS log error over {} rows: in-sample {:.4f}, leave-one-out {:.4f}\n",
                     r.rows.size() - r.left_out.size(), r.rms_log_error, r.loo_rms_log_error);
  if (!r.solver_report.empty()) out += "Ceres: " + r.solver_report + "\n";
  out += fmt::format("\nProfiles\n");
  for (const PerfProfile& p : r.profiles.profiles) {
    const auto [lo, hi] = ParamMap::Bounds(r.profiles, 0);
    out += fmt::format("  {:<16} gemm_efficiency {:.4f}{}\n", p.name, p.gemm_efficiency,
                       p.calibrated && AtBound(p.gemm_efficiency, lo, hi) ? " (at bound)" : "");
  }
  const SharedPerfParams& s = r.profiles.shared;
  out += "  shared:";
  for (const SharedFit& f : kSharedFit) {
    out += fmt::format(" {} {:.4g}{}", f.name, s.*f.member * f.scale,
                       AtBound(s.*f.member * f.scale, f.lo, f.hi) ? " (at bound)" : "");
  }
  out += "\n";
  const DropFit& d = r.drop_fit;
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
