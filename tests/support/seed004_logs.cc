#include "seed004_logs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "mosaic/runs/event_writer.h"
#include "mosaic/util/atomic_file.h"

namespace mosaic::testing {
namespace {

constexpr int kLayers = 10;
constexpr double kStartWallSeconds = 1.75e9;
constexpr double kSecondsPerStep = 1.5;

// One pass of a run over [first_step, last_step]: at the steps up to `overlap_end` (those the
// previous pass logged already) what it writes differs by `bias` in loss and `scale` in the
// diagnostics; `nan_grad_steps` log a non-finite gradient norm and `spike_steps` a loss spike.
struct Pass {
  int64_t first_step = 0;
  int64_t last_step = 0;
  double wall_start = kStartWallSeconds;
  int64_t overlap_end = -1;
  double bias = 0;
  double scale = 1;

  double Bias(int64_t step) const { return step <= overlap_end ? bias : 0.0; }
  double Scale(int64_t step) const { return step <= overlap_end ? scale : 1.0; }
  std::vector<int64_t> nan_grad_steps;
  std::vector<int64_t> spike_steps;
};

// A run written in one pass.
Pass WholeRun(const SeedRun& run) {
  return Pass{0, run.steps, kStartWallSeconds, -1, 0, 1, {}, {}};
}

double Ramp(const SeedRun& run, int64_t step) {
  return std::min(1.0, static_cast<double>(step) / (0.5 * static_cast<double>(run.steps)));
}

bool IsAblation(const SeedRun& run) {
  for (const SeedRun& r : SeedAblationRuns()) {
    if (r.name == run.name) return true;
  }
  return false;
}

double EvalLoss(const SeedRun& run, int64_t step) {
  return IsAblation(run) ? AblationEvalLoss(run, step)
                         : BaseEvalLoss(step, run.steps, run.loops);
}

std::string EventFileName(double wall_start, int index) {
  return fmt::format("events.out.tfevents.{}.gpu-node-{}.4242.0",
                     static_cast<int64_t>(wall_start), index);
}

std::string WriteEvents(const SeedRun& run, const Pass& pass) {
  using runs::EncodeScalarEvent;
  using runs::FrameRecord;
  std::string bytes = FrameRecord(runs::EncodeFileVersionEvent(pass.wall_start));
  const bool ablation = IsAblation(run);
  auto wall = [&](int64_t step) {
    return pass.wall_start + kSecondsPerStep * static_cast<double>(step - pass.first_step);
  };
  std::vector<int64_t> steps;
  for (int64_t s = pass.first_step; s <= pass.last_step; s += 10) steps.push_back(s);
  for (int64_t s : pass.nan_grad_steps) {
    if (s % 10 != 0) steps.push_back(s);
  }
  std::sort(steps.begin(), steps.end());
  for (int64_t step : steps) {
    const double t = wall(step);
    const bool nan_grad = std::find(pass.nan_grad_steps.begin(), pass.nan_grad_steps.end(),
                                    step) != pass.nan_grad_steps.end();
    if (step % 10 == 0) {
      const bool spike = std::find(pass.spike_steps.begin(), pass.spike_steps.end(), step) !=
                         pass.spike_steps.end();
      const double train = EvalLoss(run, step) + 0.05 + 0.01 * std::sin(0.37 * step) +
                           pass.Bias(step) + (spike ? 1.5 : 0.0);
      bytes += FrameRecord(EncodeScalarEvent(t, step, "train/loss", train));
      bytes += FrameRecord(EncodeScalarEvent(t, step, "train/lr", LearningRate(step, run.steps)));
    }
    const double grad = nan_grad ? NAN
                                 : 0.25 + 0.5 / std::sqrt(1.0 + step / 100.0) +
                                       0.01 * std::sin(1.3 * step);
    bytes += FrameRecord(EncodeScalarEvent(t, step, "train/grad_norm", grad));
    if (step > 0 && step % kEvalEvery == 0) {
      bytes += FrameRecord(
          EncodeScalarEvent(t, step, "eval/loss", EvalLoss(run, step) + pass.Bias(step)));
    }
    if (ablation && step > 0 && step % kDiagEvery == 0) {
      for (int layer = 0; layer < kLayers; ++layer) {
        for (const bool moe : {false, true}) {
          double norm = 0;
          for (int loop = 1; loop <= run.loops; ++loop) {
            norm += DiagActNorm(run, loop, layer, moe, step) * pass.Scale(step);
          }
          norm /= run.loops;
          const std::string prefix =
              fmt::format("module_diag/L{:02}/{}/", layer, moe ? "moe" : "attn");
          bytes += FrameRecord(EncodeScalarEvent(t, step, prefix + "act_norm_mean", norm));
          bytes += FrameRecord(EncodeScalarEvent(t, step, prefix + "act_var_mean", norm * norm / 512));
          bytes += FrameRecord(EncodeScalarEvent(t, step, prefix + "grad_norm_mean", 0.0));
        }
      }
    }
  }
  return bytes;
}

// module_diag.csv rows of one pass (no header).
std::string DiagRows(const SeedRun& run, const Pass& pass) {
  std::string text;
  const int64_t first = std::max<int64_t>(kDiagEvery, (pass.first_step + kDiagEvery - 1) /
                                                          kDiagEvery * kDiagEvery);
  for (int64_t step = first; step <= pass.last_step; step += kDiagEvery) {
    text += std::to_string(step);
    for (int loop = 1; loop <= run.loops; ++loop) {
      for (int layer = 0; layer < kLayers; ++layer) {
        for (const bool moe : {false, true}) {
          const double norm = DiagActNorm(run, loop, layer, moe, step) * pass.Scale(step);
          const double rank = DiagEffRank(run, loop, layer, moe, step) * pass.Scale(step);
          const bool svd = step >= 500;  // eff_rank and top_sv columns start at step 500
          text += fmt::format(",{:.9g},{:.9g},", norm, norm * norm / 512);
          if (svd) text += fmt::format("{:.9g}", rank);
          text += ",";
          if (svd) text += fmt::format("{:.9g}", 2 * norm * std::sqrt(1 + 0.1 * loop));
          text += fmt::format(",{:.9g}",
                              (0.1 + 0.02 * loop + 0.05 * step / static_cast<double>(run.steps)) *
                                  pass.Scale(step));
        }
      }
    }
    text += "\n";
  }
  return text;
}

std::string DiagHeader(const SeedRun& run) {
  std::string text = "step";
  for (int loop = 1; loop <= run.loops; ++loop) {
    for (int layer = 0; layer < kLayers; ++layer) {
      for (const char* branch : {"attn", "moe"}) {
        for (const char* metric : {"act_norm", "act_var", "eff_rank", "top_sv", "mean_cos"}) {
          text += fmt::format(",H/L{:02}/{}/cH{:02}/{}", layer, branch, loop, metric);
        }
      }
    }
  }
  return text + "\n";
}

// The passes a run was written in.
std::vector<Pass> PassesOf(const SeedRun& run) {
  const double second_start = kStartWallSeconds + 3.6e4;
  if (run.name == "nobpk_H9_mb8") {
    Pass first{0, 1500, kStartWallSeconds, -1, 0, 1, {1500}, {}};
    Pass second{1000, run.steps, second_start, 1500, 0.004, 1.01, {1852}, {}};
    return {first, second};
  }
  if (run.name == "nobpk_H12_mb8") {
    Pass first{0, 8400, kStartWallSeconds, -1, 0, 1, {8400}, {8390}};
    Pass second{8000, run.steps, second_start, 8400, 0.004, 1.01, {}, {}};
    return {first, second};
  }
  return {WholeRun(run)};
}

}  // namespace

const std::vector<SeedRun>& SeedAblationRuns() {
  static const std::vector<SeedRun> runs = {
      {"lam1_H3_5k", 3, 5000, -0.010, "H3", false},
      {"nobpk_H12_mb8", 12, 10000, 0.003, "H12", true},
      {"nobpk_H3", 3, 10000, 0.0, "H3", false},
      {"nobpk_H6", 6, 10000, -0.015, "H6", true},
      {"nobpk_H9_mb8", 9, 10000, -0.025, "H9", true},
      {"nonorm_H3_5k", 3, 5000, 0.020, "H3_5k", true},
      {"noreinject_H3_5k", 3, 5000, 0.008, "H3_5k", true},
  };
  return runs;
}

const std::vector<SeedRun>& SeedBaselineRuns() {
  static const std::vector<SeedRun> runs = {
      {"H12", 12, 10000, 0, "", false}, {"H3", 3, 10000, 0, "", false},
      {"H3_5k", 3, 5000, 0, "", false}, {"H6", 6, 10000, 0, "", false},
      {"H9", 9, 10000, 0, "", false},
  };
  return runs;
}

const SeedRun& FindSeedRun(const std::string& name) {
  for (const auto* list : {&SeedAblationRuns(), &SeedBaselineRuns()}) {
    for (const SeedRun& r : *list) {
      if (r.name == name) return r;
    }
  }
  throw std::invalid_argument("no generated run " + name);
}

double BaseEvalLoss(int64_t step, int64_t schedule_steps, int loops) {
  const double s = static_cast<double>(step);
  const double t = static_cast<double>(schedule_steps);
  const double decay = std::clamp((s - 0.9 * t) / (0.1 * t), 0.0, 1.0);
  return 2.85 - 0.03 * std::log2(loops / 3.0) + 3.2 / std::sqrt(1.0 + s / 200.0) - 0.06 * decay;
}

double EvalNoise(int64_t step) { return (step / kEvalEvery) % 2 == 1 ? kEvalNoise : -kEvalNoise; }

double AblationEvalLoss(const SeedRun& run, int64_t step) {
  return BaseEvalLoss(step, run.steps, run.loops) + run.effect * Ramp(run, step) +
         kPlatformOffset + EvalNoise(step);
}

double LearningRate(int64_t step, int64_t schedule_steps) {
  const double peak = 2e-4;
  const double s = static_cast<double>(step);
  const double t = static_cast<double>(schedule_steps);
  if (s < 0.1 * t) return peak * s / (0.1 * t);
  if (s < 0.9 * t) return peak;
  return peak * (1.0 - 0.9 * (s - 0.9 * t) / (0.1 * t));
}

double DiagNormGrowthRate(const SeedRun& run, int loop) {
  const double depth = static_cast<double>(loop) / run.loops;
  return 0.2 + (run.name.rfind("nobpk", 0) == 0 ? 2.5 : 0.6) * depth * depth * depth;
}

double DiagActNorm(const SeedRun& run, int loop, int layer, bool moe, int64_t step) {
  return (1.0 + 0.05 * layer) * (moe ? 1.2 : 1.0) *
         (1.0 + DiagNormGrowthRate(run, loop) * static_cast<double>(step) / run.steps);
}

double DiagEffRank(const SeedRun& run, int loop, int layer, bool moe, int64_t step) {
  const bool collapses = run.name == "nobpk_H12_mb8" && loop == run.loops && layer == 7 && moe;
  const double rate = collapses ? 0.75 : 0.1;
  return (moe ? 40.0 : 48.0) * (1.0 - rate * static_cast<double>(step) / run.steps);
}

void WriteSeed004Logs(const std::string& root) {
  namespace fs = std::filesystem;
  for (const auto* list : {&SeedAblationRuns(), &SeedBaselineRuns()}) {
    const bool ablation = list == &SeedAblationRuns();
    for (const SeedRun& run : *list) {
      const fs::path dir = fs::path(root) / (ablation ? "ablation" : "baseline") / run.name;
      fs::create_directories(dir);
      const std::vector<Pass> passes = ablation ? PassesOf(run)
                                                : std::vector<Pass>{WholeRun(run)};
      std::string diag = DiagHeader(run);
      for (size_t i = 0; i < passes.size(); ++i) {
        WriteFileAtomically((dir / EventFileName(passes[i].wall_start, static_cast<int>(i))).string(),
                            WriteEvents(run, passes[i]));
        diag += DiagRows(run, passes[i]);
      }
      if (ablation) WriteFileAtomically((dir / "module_diag.csv").string(), diag);
    }
  }
}

}  // namespace mosaic::testing
