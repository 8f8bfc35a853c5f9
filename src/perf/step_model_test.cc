// The checks of the performance model's issue, section 5: the MFU identity, the Marin hero's EP64
// vs FSDP ordering and drop fractions, the seed-004 looped model's memory limits, and token
// dropping.
#include "mosaic/perf/step_model.h"

#include <gtest/gtest.h>

#include "mosaic/model/flops.h"
#include "mosaic/model/model_loader.h"

namespace mosaic {
namespace {

constexpr double kRelTol = 1e-12;

struct Hero {
  ModelShape shape = MakeModelShape(LoadModel("marin-hero-fsdp").config, 4096);
  Cluster rack = MakeCluster(LoadHardware("gb200-nvl72"), 64);
  ProfileSet profiles = LoadProfiles();
  DropParams drop = DefaultDropParams();

  StepEstimate Run(const std::string& layout, RoutingPolicy routing, double cf) const {
    PerfJob job{1024, 4096, NumberFormat::kBf16, routing, cf, 0};
    return EvaluateStep(shape, rack, ParseLayout(layout), job, profiles.shared,
                        profiles.Get("marin-gb200"), &drop);
  }
};

constexpr const char* kEp64 = "ep=64,fsdp=64,mbs=16,recompute=full";
constexpr const char* kFsdp = "fsdp=64,mbs=16,recompute=full,moe_chunk=4";

TEST(StepModel, MfuIsAccountingFlopsOverTimePeakAndGpus) {
  Hero h;
  StepEstimate e = h.Run(kEp64, RoutingPolicy::kFixedCells, 1.0);
  const FlopCount f = CountFlops(h.shape.config, {FlopConvention::kPhysical, 4096});
  const double tokens = 1024.0 * 4096.0;
  const double expected = f.train_flops_per_token() * tokens / (e.step_seconds * 2.5e15 * 64);
  EXPECT_NEAR(e.mfu, expected, kRelTol * expected);
  EXPECT_NEAR(e.tokens_per_s_per_gpu, tokens / e.step_seconds / 64, kRelTol * 1e4);
}

TEST(StepModel, MarinHeroEp64BeatsFsdpAsMeasured) {
  Hero h;
  const StepEstimate ep10 = h.Run(kEp64, RoutingPolicy::kFixedCells, 1.0);
  const StepEstimate ep15 = h.Run(kEp64, RoutingPolicy::kFixedCells, 1.5);
  const StepEstimate fsdp = h.Run(kFsdp, RoutingPolicy::kDropless, 1.0);
  // Measured (PR 7981): 316,473 vs 235,125 tokens/s per 64-GPU rack at cf 1.0; EP still ahead at
  // cf 1.5 (22.90% vs 19.40% MFU in Marin's convention).
  EXPECT_GT(ep10.tokens_per_s_per_gpu, fsdp.tokens_per_s_per_gpu);
  EXPECT_GT(ep15.tokens_per_s_per_gpu, fsdp.tokens_per_s_per_gpu);
  EXPECT_GT(ep10.tokens_per_s_per_gpu, ep15.tokens_per_s_per_gpu);
  constexpr double kFitTol = 0.10;  // calibrated in-sample rows
  EXPECT_NEAR(ep10.tokens_per_s_per_gpu * 64, 316473, kFitTol * 316473);
  EXPECT_NEAR(fsdp.tokens_per_s_per_gpu * 64, 235125, kFitTol * 235125);
  EXPECT_TRUE(ep10.fits);
  EXPECT_TRUE(ep15.fits);
  EXPECT_TRUE(fsdp.fits);
}

TEST(StepModel, MarinHeroDropsFallWithCapacityFactorAsMeasured) {
  Hero h;
  const double measured[][2] = {{1.0, 0.0997}, {1.125, 0.053984}, {1.25, 0.032571},
                                {1.5, 0.015719}};
  constexpr double kDropTol = 0.35;  // relative; the fit's RMS relative error is 0.21
  double previous = 1;
  for (const auto& [cf, dropped] : measured) {
    const double d = h.Run(kEp64, RoutingPolicy::kFixedCells, cf).dropped_fraction;
    EXPECT_NEAR(d, dropped, kDropTol * dropped) << "cf " << cf;
    EXPECT_LT(d, previous);
    previous = d;
  }
  // FSDP: moe_chunk = 1 is dropless; chunks of E/C experts at their fair share drop a little.
  EXPECT_EQ(h.Run("fsdp=64,mbs=16,recompute=full", RoutingPolicy::kDropless, 1).dropped_fraction,
            0);
  const double chunk4 = h.Run(kFsdp, RoutingPolicy::kDropless, 1).dropped_fraction;
  EXPECT_GT(chunk4, 0);
  EXPECT_LT(chunk4, 0.0997);
}

TEST(StepModel, IndependentRoutingUnderpredictsDrops) {
  // perf_model.md: independent routing predicts 0.9% at cf 1.0 where 10% was measured.
  DropGroup g{2048, 1.0, 4096, 1};
  EXPECT_NEAR(DroppedFraction(g, DropParams{}), 0.009, 0.001);
}

struct Looped {
  static StepEstimate Run(int64_t loops, int64_t mbs, int64_t bp_segment) {
    ModelConfig c = LoadModel("looped-moe-329m").config;
    c.loops = loops;
    const std::vector<FieldOverride> card = {{"hbm_gb", "96"}};
    Cluster cluster = MakeCluster(LoadHardware("h100", card), 8);
    ProfileSet profiles = LoadProfiles();
    PerfJob job{1024, 1024, NumberFormat::kBf16, RoutingPolicy::kDropless, 1.0, bp_segment};
    Layout l = ParseLayout("fsdp=8,mbs=" + std::to_string(mbs));
    return EvaluateStep(MakeModelShape(c, 1024), cluster, l, job, profiles.shared,
                        profiles.Get("torch-eager-h100"), nullptr);
  }
};

TEST(StepModel, LoopedModelMemoryOn96GbCardsAsSeed004) {
  EXPECT_TRUE(Looped::Run(3, 16, 0).fits);    // base recipe
  EXPECT_FALSE(Looped::Run(9, 16, 0).fits);   // out of memory without segmentation
  EXPECT_FALSE(Looped::Run(12, 16, 0).fits);
  EXPECT_TRUE(Looped::Run(9, 8, 0).fits);     // what the runs used instead
  EXPECT_TRUE(Looped::Run(12, 8, 0).fits);
  // Segmented backprop (3 loops per segment) holds one segment's activations.
  EXPECT_TRUE(Looped::Run(12, 16, 3).fits);
  EXPECT_LT(Looped::Run(12, 16, 3).memory.activation_bytes,
            Looped::Run(12, 16, 0).memory.activation_bytes / 3.9);
}

TEST(StepModel, RecomputeTradesTimeForMemory) {
  Hero h;
  const StepEstimate none = h.Run("ep=64,fsdp=64,mbs=16", RoutingPolicy::kFixedCells, 1.0);
  const StepEstimate full = h.Run(kEp64, RoutingPolicy::kFixedCells, 1.0);
  EXPECT_LT(full.memory.activation_bytes, none.memory.activation_bytes);
  EXPECT_GT(full.step_seconds, none.step_seconds);
  EXPECT_FALSE(none.fits);
}

}  // namespace
}  // namespace mosaic
