// Calibration from a team's own logs: event files written with the project's test writer
// (runs/event_writer.h) hold throughputs generated from a known profile, and the fit recovers it.
#include "mosaic/perf/log_calibration.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <span>
#include <fstream>

#include <nlohmann/json.hpp>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/runs/event_writer.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"

namespace mosaic {
namespace {

// The event files store float32 values (6-7 significant digits), and Ceres stops at a relative
// cost change of 1e-10: a parameter recovered from exact throughputs is within 1e-3 of the truth.
constexpr double kRecoveryTol = 1e-3;

struct TeamRun {
  std::string name;
  std::string layout;
  int64_t global_batch;
  std::string metric;  // how the run logs its speed
};

class LogCalibration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mosaic_log_calibration_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The true profile of the team's stack: the shipped H100 profile with another GEMM efficiency
  // and per-step overhead.
  PerfProfile Truth() const {
    PerfProfile p = shipped_.Get("megatron-h100");
    p.name = "team-h100";
    p.gemm_efficiency = 0.62;
    p.step_overhead_seconds = 1.3;
    return p;
  }

  double Predicted(const TeamRun& run, const PerfProfile& profile) const {
    const ModelShape shape = MakeModelShape(LoadModel("qwen3-30b-a3b").config, 4096);
    const Cluster cluster = MakeCluster(LoadHardware("h100"), 16);
    PerfJob job{run.global_batch, 4096, NumberFormat::kBf16, RoutingPolicy::kBalanced, 1.0, 0};
    return EvaluateStep(shape, cluster, ParseLayout(run.layout), job, shared(), profile, nullptr)
        .tokens_per_s_per_gpu;
  }

  const SharedPerfParams& shared() const { return shipped_.shared; }

  // One run directory with an event file: 10 warm-up steps at half speed, then 40 steps at the
  // true speed, logged as `run.metric` says (wall times one step time apart).
  void WriteRun(const TeamRun& run, double tokens_per_s_per_gpu) const {
    const std::filesystem::path run_dir = dir_ / run.name;
    std::filesystem::create_directories(run_dir);
    const double step_seconds =
        static_cast<double>(run.global_batch * 4096) / (tokens_per_s_per_gpu * 16);
    std::string events = runs::FrameRecord(runs::EncodeFileVersionEvent(1.7e9));
    double wall = 1.7e9;
    for (int64_t step = 0; step < 50; ++step) {
      const bool warm = step < 10;
      const double tokens = warm ? tokens_per_s_per_gpu / 2 : tokens_per_s_per_gpu;
      const double seconds = warm ? 2 * step_seconds : step_seconds;
      wall += seconds;
      double value = tokens;
      std::string tag = "throughput/tokens_per_sec_per_gpu";
      if (run.metric == "tokens_per_s") {
        value = tokens * 16;
        tag = "throughput/tokens_per_sec";
      } else if (run.metric == "step_seconds") {
        value = seconds;
        tag = "timers/step_time";
      } else if (run.metric == "wall_time") {
        value = 2.0;  // a loss; only its wall times matter
        tag = "train/loss";
      }
      events += runs::FrameRecord(runs::EncodeScalarEvent(wall, step, tag, value));
    }
    WriteFileAtomically((run_dir / "events.out.tfevents.1700000000.node0").string(), events);
  }

  std::filesystem::path dir_;
  ProfileSet shipped_ = LoadProfiles();
};

const TeamRun kRuns[] = {
    {"ep8-dp16", "ep=8,dp=16,mbs=1,recompute=modules", 512, "tokens_per_s_per_gpu"},
    {"pp2-ep8", "pp=2,vpp=12,ep=8,dp=8,mbs=1,recompute=modules", 512, "tokens_per_s"},
    {"ep16-small", "ep=16,dp=16,mbs=1,recompute=modules", 64, "step_seconds"},
    {"tp2-ep8", "tp=2,ep=8,dp=8,mbs=2,recompute=modules", 256, "wall_time"},
};

// A run file over `runs` (16 GPUs each, their tag and metric as WriteRun logs them) after
// `skip_steps` warm-up steps.
std::string RunFileFor(std::span<const TeamRun> runs, int64_t skip_steps = 10) {
  std::string text =
      "[defaults]\nmodel = \"qwen3-30b-a3b\"\nhardware = \"h100\"\nprofile = \"team-h100\"\n"
      "seq_len = 4096\nformat = \"bf16\"\nrouting = \"balanced\"\nskip_steps = " +
      std::to_string(skip_steps) + "\n";
  for (const TeamRun& r : runs) {
    std::string tag = "throughput/tokens_per_sec_per_gpu";
    if (r.metric == "tokens_per_s") tag = "throughput/tokens_per_sec";
    if (r.metric == "step_seconds") tag = "timers/step_time";
    if (r.metric == "wall_time") tag = "train/loss";
    text += "\n[[run]]\nrun = \"" + r.name + "\"\ngpus = 16\nlayout = \"" + r.layout +
            "\"\nglobal_batch = " + std::to_string(r.global_batch) + "\ntag = \"" + tag +
            "\"\nmetric = \"" + r.metric + "\"\n";
  }
  return text;
}

std::string RunFile() { return RunFileFor(kRuns); }

TEST_F(LogCalibration, RecoversTheProfileThatGeneratedTheLogs) {
  const PerfProfile truth = Truth();
  for (const TeamRun& r : kRuns) WriteRun(r, Predicted(r, truth));
  WriteFileAtomically((dir_ / kRunFileName).string(), RunFile());

  const std::vector<MeasuredRow> rows = MeasurementsFromLogs({dir_.string()}, "", shipped_);
  ASSERT_EQ(rows.size(), std::size(kRuns));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, kRuns[i].name);
    EXPECT_EQ(rows[i].profile, "team-h100");
    // The warm-up steps are left out: the median is the true speed, to float32 precision.
    EXPECT_NEAR(rows[i].measured_tokens_per_s_per_gpu / Predicted(kRuns[i], truth), 1.0, 1e-6)
        << rows[i].id;
  }
  const CalibrationResult result = CalibrateFromLogs(rows, shipped_);
  const PerfProfile& fitted = result.profiles.Get("team-h100");
  EXPECT_TRUE(fitted.calibrated);
  EXPECT_NEAR(fitted.gemm_efficiency / truth.gemm_efficiency, 1.0, kRecoveryTol);
  EXPECT_NEAR(fitted.step_overhead_seconds / truth.step_overhead_seconds, 1.0, kRecoveryTol);
  EXPECT_LT(result.in_sample.rms_log_error, kRecoveryTol);
  // The shared physics and the shipped profiles are not moved by a team's runs.
  EXPECT_EQ(result.profiles.shared.overlap_contention, shipped_.shared.overlap_contention);
  EXPECT_EQ(result.profiles.Get("megatron-h100").gemm_efficiency,
            shipped_.Get("megatron-h100").gemm_efficiency);
  EXPECT_EQ(result.leave_one_out.rows, static_cast<int64_t>(std::size(kRuns)));
  EXPECT_TRUE(result.cautions.empty());
}

// Runs the model cannot reconcile (one 3× faster than its neighbours of the same shape): the fit
// runs to its bounds and misses its own rows; the result says so rather than offering the
// profile as the stack's.
TEST_F(LogCalibration, AFitThatMissesItsRowsIsCautioned) {
  const TeamRun runs[] = {
      {"pp2-ep8", "pp=2,vpp=12,ep=8,dp=8,mbs=1,recompute=modules", 512, "tokens_per_s_per_gpu"},
      {"ep8-dp16", "ep=8,dp=16,mbs=1,recompute=modules", 512, "tokens_per_s_per_gpu"},
      {"ep16-mbs2", "ep=16,dp=16,mbs=2,recompute=modules", 256, "tokens_per_s_per_gpu"}};
  const double measured[] = {2500, 16000, 2600};
  for (size_t i = 0; i < std::size(runs); ++i) WriteRun(runs[i], measured[i]);
  WriteFileAtomically((dir_ / kRunFileName).string(), RunFileFor(runs));
  const CalibrationResult result =
      CalibrateFromLogs(MeasurementsFromLogs({dir_.string()}, "", shipped_), shipped_);
  EXPECT_GT(result.in_sample.rms_log_error, kMaxFittedRmsLogError);
  ASSERT_GE(result.cautions.size(), 2u);
  EXPECT_EQ(result.cautions[0].rfind("the fitted profiles miss their own rows by an RMS log "
                                     "error of ", 0),
            0u);
  EXPECT_NE(RenderCalibration(result, false).find("caution: the fitted profiles miss"),
            std::string::npos);
  // Each fitted parameter on a bound is named, with the bound; a parameter this fit does not move
  // (a team's per-expert cost, kept from the profile it started from) is not marked.
  const std::string text = RenderCalibration(result, false);
  EXPECT_NE(text.find("caution: team-h100 fitted "), std::string::npos) << text;
  EXPECT_NE(text.find(" bound of its physical range ["), std::string::npos) << text;
  const size_t line = text.find("  team-h100 ");
  ASSERT_NE(line, std::string::npos) << text;
  const std::string profile_line = text.substr(line, text.find('\n', line) - line);
  EXPECT_EQ(profile_line.find("expert_group_us 40 (at bound)"), std::string::npos) << profile_line;
}

// A fit with a small error may still sit on a bound: runs a quarter slower than the model's
// slowest GEMMs with no fixed cost left to absorb it. That is said, not hidden behind the RMS.
TEST_F(LogCalibration, AFittedParameterOnABoundIsCautionedEvenWhenTheFitIsClose) {
  const TeamRun runs[] = {
      {"pp2-ep8", "pp=2,vpp=12,ep=8,dp=8,mbs=1,recompute=modules", 512, "tokens_per_s_per_gpu"},
      {"ep8-dp16", "ep=8,dp=16,mbs=1,recompute=modules", 512, "tokens_per_s_per_gpu"},
      {"ep16-mbs2", "ep=16,dp=16,mbs=2,recompute=modules", 256, "tokens_per_s_per_gpu"}};
  // 0.3 of the shipped profile's predictions: below what a 0.4 GEMM efficiency and any overhead
  // up to 5 s explain together for these steps.
  for (const TeamRun& r : runs) WriteRun(r, 0.3 * Predicted(r, shipped_.Get("megatron-h100")));
  WriteFileAtomically((dir_ / kRunFileName).string(), RunFileFor(runs));
  const CalibrationResult result =
      CalibrateFromLogs(MeasurementsFromLogs({dir_.string()}, "", shipped_), shipped_);
  bool named = false;
  for (const std::string& c : result.cautions) {
    named = named || c.starts_with("team-h100 fitted gemm_efficiency = 0.4, on the lower bound");
  }
  EXPECT_TRUE(named) << fmt::format("{}", fmt::join(result.cautions, "\n"));
}

// Three runs a team measured at about 0.8 of what the shipped H100 profile predicts: the fit is at
// least as good as every point of a grid over the bounds (the projected trust-region step used
// to stop in the corner of both lower bounds, every run still predicted too fast, RMS 0.080
// where an overhead of 0.5 s gives 0.064).
TEST_F(LogCalibration, AFitAtABoundIsNoWorseThanAnyPointInside) {
  const TeamRun runs[] = {
      {"pp2-ep8", "pp=2,vpp=12,ep=8,dp=8,mbs=1,recompute=modules", 512, "tokens_per_s_per_gpu"},
      {"ep8-dp16", "ep=8,dp=16,mbs=1,recompute=modules", 512, "tokens_per_s_per_gpu"},
      {"ep16-mbs2", "ep=16,dp=16,mbs=2,recompute=modules", 256, "tokens_per_s_per_gpu"}};
  const double measured[] = {5302.9, 5403.1, 8104.5};
  for (size_t i = 0; i < std::size(runs); ++i) WriteRun(runs[i], measured[i]);
  WriteFileAtomically((dir_ / kRunFileName).string(), RunFileFor(runs));
  const std::vector<MeasuredRow> rows = MeasurementsFromLogs({dir_.string()}, "", shipped_);
  const CalibrationResult result = CalibrateFromLogs(rows, shipped_);
  const PerfProfile& fitted = result.profiles.Get("team-h100");
  EXPECT_GT(fitted.step_overhead_seconds, 0.05);
  auto rms = [&](double gemm, double overhead) {
    PerfProfile p = Truth();
    p.gemm_efficiency = gemm;
    p.step_overhead_seconds = overhead;
    double sum = 0;
    for (size_t i = 0; i < std::size(runs); ++i) {
      const double e = std::log(Predicted(runs[i], p) / measured[i]);
      sum += e * e;
    }
    return std::sqrt(sum / static_cast<double>(std::size(runs)));
  };
  for (int i = 0; i <= 8; ++i) {
    for (int j = 0; j <= 8; ++j) {
      const double gemm = 0.4 + 0.05 * i, overhead = 0.05 + (5 - 0.05) * j / 8;
      EXPECT_LE(result.in_sample.rms_log_error, rms(gemm, overhead) + 1e-6)
          << "gemm " << gemm << " overhead " << overhead;
    }
  }
}

// Logging glitches (NaN, infinity, a negative or zero speed) are left out of the median and
// counted in the row's basis; they used to enter it silently (a negative one as a value).
TEST_F(LogCalibration, GlitchedValuesAreLeftOutAndCounted) {
  const std::filesystem::path run_dir = dir_ / "ep8-dp16";
  std::filesystem::create_directories(run_dir);
  std::string events = runs::FrameRecord(runs::EncodeFileVersionEvent(1.7e9));
  const double glitches[] = {NAN, INFINITY, -5, 0};
  for (int64_t step = 0; step < 14; ++step) {
    const double value = step >= 10 ? glitches[step - 10] : 5000 + step;
    events += runs::FrameRecord(runs::EncodeScalarEvent(1.7e9 + step, step,
                                                        "throughput/tokens_per_sec_per_gpu", value));
  }
  WriteFileAtomically((run_dir / "events.out.tfevents.1700000000.node0").string(), events);
  WriteFileAtomically((dir_ / kRunFileName).string(), RunFileFor({&kRuns[0], 1}, 0));
  const std::vector<MeasuredRow> rows = MeasurementsFromLogs({dir_.string()}, "", shipped_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].measured_tokens_per_s_per_gpu, 5004.5);  // the median of 5000..5009
  EXPECT_EQ(rows[0].basis, "log throughput/tokens_per_sec_per_gpu (tokens_per_s_per_gpu, median "
                           "of 10; 4 not finite or not > 0 left out)");
}

// metric = "wall_time" on a CSV log without a wall-time column says so (it reported "0 wall-time
// gaps between kept points").
TEST_F(LogCalibration, WallTimeOnALogWithoutWallTimesIsNamed) {
  std::filesystem::create_directories(dir_ / "ep8-dp16");
  std::string csv = "step,train/loss\n";
  for (int step = 0; step < 20; ++step) csv += std::to_string(step) + ",3.0\n";
  WriteFileAtomically((dir_ / "ep8-dp16" / "metrics.csv").string(), csv);
  const TeamRun run = {"ep8-dp16", "ep=8,dp=16", 512, "wall_time"};
  WriteFileAtomically((dir_ / kRunFileName).string(), RunFileFor({&run, 1}, 0));
  try {
    MeasurementsFromLogs({dir_.string()}, "", shipped_);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("metric = \"wall_time\" but the log has no wall times"),
              std::string::npos)
        << e.what();
  }
}

// Two runs for two fitted parameters: without either, one run would be left to fit two, and the
// refit could not move off the full fit (its prediction of the left-out run would be that fit's,
// exact by construction). Neither is left out, and no leave-one-out figure is given.
TEST_F(LogCalibration, NoLeaveOneOutWhereTheRestCannotDetermineTheProfile) {
  const PerfProfile truth = Truth();
  std::string text = RunFile();
  text = text.substr(0, text.find("\n[[run]]\nrun = \"" + std::string(kRuns[2].name)));
  for (size_t i = 0; i < 2; ++i) WriteRun(kRuns[i], Predicted(kRuns[i], truth) * (1 + 0.05 * i));
  WriteFileAtomically((dir_ / kRunFileName).string(), text + "\n");
  const std::vector<MeasuredRow> rows = MeasurementsFromLogs({dir_.string()}, "", shipped_);
  ASSERT_EQ(rows.size(), 2u);
  const CalibrationResult result = CalibrateFromLogs(rows, shipped_);
  EXPECT_EQ(result.leave_one_out.rows, 0);
  EXPECT_EQ(result.loo_not_run, (std::vector<std::string>{kRuns[0].name, kRuns[1].name}));
  for (const RowResult& r : result.rows) EXPECT_EQ(r.loo_predicted, 0.0) << r.id;
  const std::string table = RenderCalibration(result, false);
  EXPECT_NE(table.find("not left out (ep8-dp16, pp2-ep8)"), std::string::npos) << table;
  const nlohmann::json j = nlohmann::json::parse(RenderCalibration(result, true));
  EXPECT_TRUE(j["loo_rms_log_error"].is_null());
  EXPECT_TRUE(j["leave_one_out"]["rms_log_error"].is_null());
  EXPECT_TRUE(j["heldout"]["median_abs_error"].is_null());
  EXPECT_FALSE(j["rms_log_error"].is_null());
}

// Two runs of one configuration are one point: leaving out the run of the other configuration
// leaves too little to refit, so it is not left out (its refit kept the full fit, which holds its
// own measurement: its leave-one-out prediction followed what it measured).
TEST_F(LogCalibration, RunsOfOneConfigurationAreOnePointWhenOneIsLeftOut) {
  const PerfProfile truth = Truth();
  TeamRun again = kRuns[0];
  again.name = "ep8-dp16-again";
  const TeamRun runs[] = {kRuns[0], again, kRuns[1]};
  for (const TeamRun& r : runs) WriteRun(r, Predicted(r, truth) * (r.name == "pp2-ep8" ? 1.3 : 1));
  WriteFileAtomically((dir_ / kRunFileName).string(), RunFileFor(runs));
  const std::vector<MeasuredRow> rows = MeasurementsFromLogs({dir_.string()}, "", shipped_);
  ASSERT_EQ(rows.size(), 3u);
  const CalibrationResult result = CalibrateFromLogs(rows, shipped_);
  EXPECT_EQ(result.loo_not_run, (std::vector<std::string>{"pp2-ep8"}));
  EXPECT_EQ(result.leave_one_out.rows, 2);
}

TEST_F(LogCalibration, OneRunFileForManyLogDirectories) {
  const PerfProfile truth = Truth();
  for (const TeamRun& r : kRuns) WriteRun(r, Predicted(r, truth));
  const std::filesystem::path file = dir_ / "all_runs.toml";
  WriteFileAtomically(file.string(), RunFile());
  const std::vector<MeasuredRow> rows =
      MeasurementsFromLogs({dir_.string()}, file.string(), shipped_);
  EXPECT_EQ(rows.size(), std::size(kRuns));
}

TEST_F(LogCalibration, NamesWhatIsMissing) {
  const PerfProfile truth = Truth();
  WriteRun(kRuns[0], Predicted(kRuns[0], truth));
  auto message = [&](const std::string& text) {
    WriteFileAtomically((dir_ / kRunFileName).string(), text);
    try {
      MeasurementsFromLogs({dir_.string()}, "", shipped_);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string base =
      "[defaults]\nmodel = \"qwen3-30b-a3b\"\nhardware = \"h100\"\nseq_len = 4096\n"
      "routing = \"balanced\"\ntag = \"throughput/tokens_per_sec_per_gpu\"\n"
      "profile = \"team-h100\"\n";
  const std::string run = "[[run]]\ngpus = 16\nlayout = \"ep=8,dp=16\"\nglobal_batch = 512\n";
  EXPECT_NE(message(base + run + "run = \"ep8-dp1\"\n").find("run 'ep8-dp1' is not in the logs "
                                                            "(did you mean 'ep8-dp16'?)"),
            std::string::npos);
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\ntag = \"throughput/tokens\"\n")
                .find("run 'ep8-dp16' has no tag 'throughput/tokens'"),
            std::string::npos);
  // "generic-<device>" names the uncalibrated defaults of held-out rows; a fitted profile may not
  // take it.
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\nprofile = \" \"\n")
                .find("profile = ' '. Violated constraint: a name that is not blank"),
            std::string::npos)
      << message(base + run + "run = \"ep8-dp16\"\nprofile = \" \"\n");
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\nprofile = \"generic-h100\"\n")
                .find("profile = 'generic-h100'. Violated constraint: a name other than 'generic' "
                      "and 'generic-…'"),
            std::string::npos)
      << message(base + run + "run = \"ep8-dp16\"\nprofile = \"generic-h100\"\n");
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\nmetric = \"speed\"\n")
                .find("metric = 'speed'. Violated constraint: tokens_per_s_per_gpu, "
                      "tokens_per_s, step_seconds or wall_time"),
            std::string::npos);
  // capacity_factor is checked as --capacity-factor is: its range, and a routing that caps.
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\nrouting = \"capacity\"\n"
                                 "capacity_factor = 0.001\n")
                .find("capacity_factor = 0.001. Violated constraint: a number in [0.01, 1000]"),
            std::string::npos);
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\ncapacity_factor = 1.25\n")
                .find("[[run]] 'ep8-dp16': capacity_factor = 1.25 with routing = 'balanced'. "
                      "Violated constraint: a capacity factor caps tokens only under routing "
                      "capacity or fixed-cells"),
            std::string::npos)
      << message(base + run + "run = \"ep8-dp16\"\ncapacity_factor = 1.25\n");
  EXPECT_EQ(message(base + run + "run = \"ep8-dp16\"\nrouting = \"capacity\"\n"
                                 "capacity_factor = 1.25\n")
                .find("capacity_factor"),
            std::string::npos);
  EXPECT_NE(message(base + "[[run]]\nrun = \"ep8-dp16\"\ngpus = 16\nglobal_batch = 512\n")
                .find("[[run]] 'ep8-dp16' has no layout"),
            std::string::npos);
  EXPECT_NE(message(base + "[[run]]\nrun = \"ep8-dp16\"\ngpus = 8\nlayout = \"ep=8,dp=16\"\n"
                           "global_batch = 512\n")
                .find("layout tp=1,pp=1,vpp=1,cp=1,dp=16,fsdp=1,ep=8,etp=1,mbs=1,recompute=none,"
                      "moe_chunk=1 uses 16 GPUs, not gpus = 8"),
            std::string::npos);
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\nskip_steps = 500\n")
                .find("tag 'throughput/tokens_per_sec_per_gpu': 0 finite values > 0 after the 500 "
                      "warm-up steps (skip_steps). Violated constraint: at least 5"),
            std::string::npos);
  // A skip past the 64-bit range wrapped to keep every step; four values left (steps 46-49 of
  // 0-49) are too few for one slow step not to be the measurement.
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\nskip_steps = 9223372036854775807\n")
                .find(": 0 finite values > 0 after the 9223372036854775807 warm-up steps"),
            std::string::npos);
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\nskip_steps = 46\n")
                .find(": 4 finite values > 0 after the 46 warm-up steps"),
            std::string::npos);
  // A batch beyond 2^30 made a step of no time (an infinite error, exit 0).
  EXPECT_NE(message(base + "[[run]]\nrun = \"ep8-dp16\"\ngpus = 16\nlayout = \"ep=8,dp=16\"\n"
                           "global_batch = 4611686018427387904\n")
                .find("global_batch = 4611686018427387904. Violated constraint: an integer in "
                      "[1, 1073741824]"),
            std::string::npos);
  // A layout that breaks a rule is an error of its run, not a run left out.
  const std::string broken = message(base + "[[run]]\nrun = \"ep8-dp16\"\ngpus = 8\n"
                                            "layout = \"ep=16,dp=8\"\nglobal_batch = 512\n");
  EXPECT_NE(broken.find("perf_runs.toml:8:1: layout tp=1,pp=1,vpp=1,cp=1,dp=8,fsdp=1,ep=16,etp=1,"
                        "mbs=1,recompute=none,moe_chunk=1: ep·etp divides tp·cp·dp·fsdp"),
            std::string::npos)
      << broken;
  // A profile's runs are on its device: B200 runs would refit the shipped H100 profile.
  const std::string other = message(base + run + "run = \"ep8-dp16\"\nhardware = \"b200\"\n"
                                                 "profile = \"megatron-h100\"\n");
  EXPECT_NE(other.find("run 'ep8-dp16' on b200: profile 'megatron-h100' is for h100. Violated "
                       "constraint: a profile's runs are all on its device"),
            std::string::npos)
      << other;
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\ngpu = 16\n").find("unknown key 'gpu'"),
            std::string::npos);
  EXPECT_NE(message(base).find("no [[run]] table"), std::string::npos);
  EXPECT_NE(message(base + "[[run]]\ngpus = 16\nlayout = \"ep=8,dp=16\"\nglobal_batch = 512\n")
                .find("has no run (every [[run]] names its run)"),
            std::string::npos);
  // An unknown device is an error of its line (it named no file or line).
  std::string h999 = base;
  h999.replace(h999.find("\"h100\""), 6, "\"h999\"");
  EXPECT_NE(message(h999 + run + "run = \"ep8-dp16\"\n")
                .find("perf_runs.toml:3:12: hardware: unknown hardware 'h999'"),
            std::string::npos)
      << message(h999 + run + "run = \"ep8-dp16\"\n");
  // A rate no GPU runs at (a tag of the whole cluster's tokens/s read per GPU, a unit slip):
  // refused, not fitted. 1e9 tokens/s of Qwen3-30B-A3B is some 20,000 TFLOP/s per H100, whose
  // bf16 peak (the runs' format) is 989.
  WriteRun(kRuns[0], 1e9);
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\n")
                .find("run 'ep8-dp16': tokens/s per GPU from throughput/tokens_per_sec_per_gpu "
                      "(tokens_per_s_per_gpu) = 1000000000. Violated constraint: at most "),
            std::string::npos)
      << message(base + run + "run = \"ep8-dp16\"\n");
  EXPECT_NE(message(base + run + "run = \"ep8-dp16\"\n").find("the h100's bf16 peak of 989"),
            std::string::npos)
      << message(base + run + "run = \"ep8-dp16\"\n");
  WriteRun(kRuns[0], Predicted(kRuns[0], truth));
  try {
    MeasurementsFromLogs({(dir_ / "nowhere").string()}, "", shipped_);
    ADD_FAILURE() << "no error for a missing log directory";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere: not a log directory (no such directory)"),
              std::string::npos)
        << e.what();
  }
  // A file after --logs (the measurements CSV put last) is named as a file.
  try {
    MeasurementsFromLogs({dir_.string(), (dir_ / kRunFileName).string()}, "", shipped_);
    ADD_FAILURE() << "no error for a file given as a log directory";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(": not a log directory (a file: --logs takes every "
                                         "argument after it as a log directory"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(dir_ / kRunFileName);
  try {
    MeasurementsFromLogs({dir_.string()}, "", shipped_);
    ADD_FAILURE() << "no error without a run file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no perf_runs.toml in this log directory"),
              std::string::npos);
  }
}

// Two runs per fitted profile, each within a factor of 10 of the starting profile: one run
// fitted two parameters, and a metric of the wrong kind sent the fit to its bounds (exit 0).
TEST_F(LogCalibration, TeamRowsAreEnoughAndPlausible) {
  const PerfProfile truth = Truth();
  for (const TeamRun& r : kRuns) WriteRun(r, Predicted(r, truth));
  std::string text = RunFile();
  WriteFileAtomically((dir_ / kRunFileName).string(), text);
  std::vector<MeasuredRow> rows = MeasurementsFromLogs({dir_.string()}, "", shipped_);
  auto error_of = [&](const std::vector<MeasuredRow>& r) {
    try {
      CalibrateFromLogs(r, shipped_);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<MeasuredRow> solo = rows;
  solo[0].profile = "solo-h100";
  const std::string runs = (dir_ / "perf_runs.toml").string();
  EXPECT_EQ(error_of(solo),
            "profile 'solo-h100' has one run: " + runs + ":10 (ep8-dp16). Violated constraint: "
            "at least two runs per fitted profile, at different batch or layout (its GEMM "
            "efficiency and per-step overhead are two parameters)");
  // Two runs of one configuration are one point for two parameters.
  std::vector<MeasuredRow> twins = {rows[0], rows[0]};
  twins[1].id = "ep8-dp16-again";
  EXPECT_EQ(error_of(twins),
            "profile 'team-h100' has 2 runs, all of one configuration: " + runs +
                ":10 (ep8-dp16), " + runs +
                ":10 (ep8-dp16-again). Violated constraint: at least two runs per fitted "
                "profile, at different batch or layout (its GEMM efficiency and per-step "
                "overhead are two parameters)");
  // With too few rows in all, the profile short of runs is named (not only the count).
  std::vector<MeasuredRow> short_of_runs = {rows[0], rows[1], rows[2]};
  short_of_runs[2].profile = "other-h100";
  EXPECT_EQ(error_of(short_of_runs).rfind("profile 'other-h100' has one run: " + runs + ":26", 0),
            0u)
      << error_of(short_of_runs);
  std::vector<MeasuredRow> slip = rows;
  slip[2].measured_tokens_per_s_per_gpu /= 20;  // e.g. tokens/s of one node read per GPU ×16
  const std::string err = error_of(slip);
  EXPECT_NE(err.find(": ep16-small: measured "), std::string::npos) << err;
  EXPECT_NE(err.find("× the "), std::string::npos) << err;
  EXPECT_NE(err.find("the starting profile 'team-h100' predicts. Violated constraint: within a "
                     "factor of 10"),
            std::string::npos)
      << err;
  EXPECT_EQ(error_of(rows), "no error");
}

// Two log directories may both hold a run of one name (each its own perf_runs.toml): the rows are
// named by directory, as `mosaic runs` names them; the same directory twice is an error.
TEST_F(LogCalibration, RunsOfOneNameInTwoDirectoriesAreNamedByDirectory) {
  const std::filesystem::path base = dir_;
  std::string text = RunFile();
  text = text.substr(0, text.find("\n[[run]]\nrun = \"" + std::string(kRuns[1].name)));
  for (const char* sub : {"a", "b"}) {
    dir_ = base / sub;
    std::filesystem::create_directories(dir_);
    WriteRun(kRuns[0], Predicted(kRuns[0], Truth()));
    WriteFileAtomically((dir_ / kRunFileName).string(), text + "\n");
  }
  dir_ = base;
  const std::string a = (base / "a").string(), b = (base / "b").string();
  const std::vector<MeasuredRow> rows = MeasurementsFromLogs({a, b}, "", shipped_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, a + "/ep8-dp16");
  EXPECT_EQ(rows[1].id, b + "/ep8-dp16");
  // A run whose name no other directory holds is named by its directory too.
  const std::filesystem::path c = base / "c";
  std::filesystem::create_directories(c);
  std::filesystem::copy(base / "b" / "ep8-dp16", c / "other",
                        std::filesystem::copy_options::recursive);
  std::string renamed = text;
  renamed.replace(renamed.find("run = \"ep8-dp16\""), 16, "run = \"other\"");
  WriteFileAtomically((c / kRunFileName).string(), renamed + "\n");
  const std::vector<MeasuredRow> named = MeasurementsFromLogs({a, c.string()}, "", shipped_);
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[1].id, c.string() + "/other");
  for (const std::string& again : {a, a + "/", a + "/."}) {
    try {
      MeasurementsFromLogs({a, again}, "", shipped_);
      ADD_FAILURE() << again << ": no error for a directory given twice";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("the log directory " + a + " given again"),
                std::string::npos)
          << e.what();
    }
  }
}

// A team profile on a device file names it by its absolute path: the written profile set read
// from another directory found no file.
TEST_F(LogCalibration, ADeviceFileIsNamedByItsAbsolutePath) {
  std::filesystem::create_directories(dir_ / "hw");
  std::filesystem::copy_file(std::string(MOSAIC_SOURCE_DIR) + "/data/hardware/h100.toml",
                             dir_ / "hw" / "mine.toml");
  MeasuredRow row;
  row.id = "r1";
  row.profile = "acme-mine";
  row.hardware = std::filesystem::relative(dir_ / "hw" / "mine.toml").string();
  ASSERT_FALSE(std::filesystem::path(row.hardware).is_absolute());
  const ProfileSet set = WithProfilesOf({row}, shipped_);
  EXPECT_EQ(set.Get("acme-mine").hardware, (dir_ / "hw" / "mine.toml").lexically_normal().string());
}

// Runs on h200 start a new profile from megatron-h100 (its closest calibrated sibling's), but
// the profile is for h200: it is said to be calibrated there, and used on h200 without a note.
TEST_F(LogCalibration, ANewProfileIsForItsRunsDeviceNotTheSiblingItStartsFrom) {
  MeasuredRow row;
  row.id = "r1";
  row.profile = "team-h200";
  row.hardware = "h200";
  const PerfProfile started = WithProfilesOf({row}, shipped_).Get("team-h200");
  EXPECT_EQ(started.hardware, "h200");
  EXPECT_EQ(started.gemm_efficiency, shipped_.Get("megatron-h100").gemm_efficiency);
  EXPECT_EQ(started.stack, "fitted from logs (started from the megatron-h100 profile)");
  // A profile fitted on a device file is for the device that file names.
  const std::filesystem::path file = dir_ / "mine.toml";
  std::filesystem::copy_file(std::string(MOSAIC_SOURCE_DIR) + "/data/hardware/h200.toml", file);
  PerfProfile on_file = started;
  on_file.hardware = file.string();
  EXPECT_EQ(DeviceNameOf(on_file), "h200");
}

// A device file named "h100" (a copy of h100.toml, the cluster's own file) runs on h100's
// profiles, as `mosaic perf --hardware FILE` does: its runs start from megatron-h100, not from the
// generic profile, and may name megatron-h100.
TEST_F(LogCalibration, ADeviceFileRunsOnItsDevicesProfiles) {
  const PerfProfile truth = Truth();
  for (const TeamRun& r : kRuns) WriteRun(r, Predicted(r, truth));
  const std::filesystem::path device = dir_ / "cluster.toml";
  std::filesystem::copy_file(std::string(MOSAIC_SOURCE_DIR) + "/data/hardware/h100.toml", device);
  ASSERT_EQ(LoadHardware(device.string()).name, "h100");
  std::string text = RunFile();
  text.replace(text.find("hardware = \"h100\""), 17, "hardware = \"" + device.string() + "\"");
  const std::string team = "profile = \"team-h100\"\n";
  text.replace(text.find(team), team.size(), "");
  WriteFileAtomically((dir_ / kRunFileName).string(), text);
  // No profile named: refused, not the shipped one refitted in silence.
  try {
    MeasurementsFromLogs({dir_.string()}, "", shipped_);
    ADD_FAILURE() << "runs without a profile refit megatron-h100";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has no profile. Violated constraint: each run names "
                                         "the profile it fits, in the run or in [defaults] (a "
                                         "new name such as \"acme-h100\" starts from "
                                         "megatron-h100; profile = \"megatron-h100\" refits "
                                         "that one)"),
              std::string::npos)
        << e.what();
  }
  // Naming megatron-h100 outright is accepted; a device file of another device is not.
  const std::string explicit_profile = "profile = \"megatron-h100\"\n";
  std::string named_text = text;
  named_text.insert(named_text.find("seq_len"), explicit_profile);
  WriteFileAtomically((dir_ / kRunFileName).string(), named_text);
  const std::vector<MeasuredRow> rows = MeasurementsFromLogs({dir_.string()}, "", shipped_);
  ASSERT_EQ(rows.size(), std::size(kRuns));
  for (const MeasuredRow& r : rows) {
    EXPECT_EQ(r.hardware, device.string());
    EXPECT_EQ(r.device, "h100");
    EXPECT_EQ(r.profile, "megatron-h100") << r.id;
  }
  // A team profile of such runs starts from megatron-h100.
  std::vector<MeasuredRow> named = rows;
  for (MeasuredRow& r : named) r.profile = "acme-h100";
  const PerfProfile started = WithProfilesOf(named, shipped_).Get("acme-h100");
  EXPECT_EQ(started.gemm_efficiency, shipped_.Get("megatron-h100").gemm_efficiency);
  EXPECT_EQ(started.stack, "fitted from logs (started from the megatron-h100 profile)");
  const std::filesystem::path b200 = dir_ / "b200.toml";
  std::filesystem::copy_file(std::string(MOSAIC_SOURCE_DIR) + "/data/hardware/b200.toml", b200);
  std::string other = named_text;
  other.replace(other.find(device.string()), device.string().size(), b200.string());
  WriteFileAtomically((dir_ / kRunFileName).string(), other);
  try {
    MeasurementsFromLogs({dir_.string()}, "", shipped_);
    ADD_FAILURE() << "a b200 file's runs refit megatron-h100";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(b200.string() + " (device 'b200'): profile "
                                         "'megatron-h100' is for h100. Violated constraint"),
              std::string::npos)
        << e.what();
  }
}

TEST(LogCalibrationSummary, MedianAndWorstRow) {
  const ErrorSummary e =
      SummarizeErrors({"a", "b", "c", "d"}, {110, 80, 100, 103}, {100, 100, 100, 100});
  EXPECT_EQ(e.rows, 4);
  EXPECT_EQ(e.worst_id, "b");
  EXPECT_NEAR(e.worst_error, -0.2, 1e-12);
  EXPECT_NEAR(e.median_abs_error, (0.03 + 0.1) / 2, 1e-12);
  const double rms = std::sqrt((std::pow(std::log(1.1), 2) + std::pow(std::log(0.8), 2) +
                                std::pow(std::log(1.03), 2)) /
                               4);
  EXPECT_NEAR(e.rms_log_error, rms, 1e-12);
  EXPECT_EQ(SummarizeErrors({}, {}, {}).rows, 0);
}

}  // namespace
}  // namespace mosaic
