// Layouts public 2026 benchmarks used that the step model must express: Megatron-Core's uneven
// pipeline stages, context parallelism across nodes, segmented backprop's recompute, and the fast
// refusal of a search space that cannot divide the batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "mosaic/model/model_loader.h"
#include "mosaic/perf/search.h"
#include "mosaic/perf/step_model.h"

namespace mosaic {
namespace {

constexpr double kRelTol = 1e-12;

struct Megatron {
  ProfileSet profiles = LoadProfiles();
  ModelShape shape;
  Cluster cluster;
  PerfJob job;
  PerfProfile profile;

  Megatron(const std::string& model, const std::string& device, int64_t gpus, int64_t batch,
           int64_t seq)
      : shape(MakeModelShape(LoadModel(model).config, seq)),
        cluster(MakeCluster(LoadHardware(device), gpus)),
        job{batch, seq, NumberFormat::kBf16, RoutingPolicy::kBalanced, 1.0, 0},
        profile(profiles.ForHardware(device)) {}

  StepEstimate Run(const std::string& layout) const {
    const Layout l = ParseLayout(layout);
    EXPECT_FALSE(CheckLayout(l, shape.config, {cluster.gpus, job.global_batch, job.seq_len},
                             cluster.device.domain_gpus()))
        << layout;
    return EvaluateStep(shape, cluster, l, job, profiles.shared, profile, nullptr);
  }
};

// The benchmark rows below are public 2026 Megatron-Core measurements (forced-balance routing,
// DeepEP, bf16) that the calibration never saw; the tolerance is the model's stated bound on every
// held-out row.
constexpr double kHeldOutTol = 0.30;

TEST(StepModelLayouts, Qwen3UnevenPipelineIsPredicted) {
  // qwen3-235b-a22b on 256 H100, tp=2,pp=32,vpp=3,ep=8,dp=4, 2048 × 4096: 1354 tokens/s/GPU
  // measured. 94 layers on 96 slots with Megatron-Bridge's Qwen3 recipe split (the embedding and
  // the loss count as a layer each): the first and last stages hold 2 layers, the others 3.
  Megatron m("qwen3-235b-a22b", "h100", 256, 2048, 4096);
  const StepEstimate e = m.Run("tp=2,pp=32,vpp=3,ep=8,dp=4,pp_embed=1,pp_loss=1");
  EXPECT_TRUE(e.fits);
  EXPECT_NEAR(e.tokens_per_s_per_gpu, 1354, kHeldOutTol * 1354) << e.tokens_per_s_per_gpu;
}

TEST(StepModelLayouts, TimeFollowsTheSlowestStageAndMemoryThePeakStage) {
  // 94 layers on pp=8: a first stage of 16 (others 12, the last 6) is slower and needs more
  // memory than one of 12 (the last 10): both the step and the peak follow the heaviest stage.
  Megatron m("qwen3-235b-a22b", "h100", 256, 2048, 4096);
  const StepEstimate heavy_first = m.Run("tp=2,pp=8,ep=8,dp=16,pp_first=16,pp_last=6");
  const StepEstimate balanced = m.Run("tp=2,pp=8,ep=8,dp=16,pp_first=12,pp_last=10");
  EXPECT_GT(heavy_first.time.compute_seconds, balanced.time.compute_seconds * 1.3);
  EXPECT_GT(heavy_first.memory.activation_bytes, balanced.memory.activation_bytes * 1.3);
  EXPECT_GT(heavy_first.step_seconds, balanced.step_seconds);
}

TEST(StepModelLayouts, ALossOnlyStageHoldsNoLayersWorkingSet) {
  // OLMoE with a 2^20-token vocabulary, its 16 layers on rank 0 and the loss alone on rank 1
  // (pp_layout "Et*16|L"): the logits of 4096 tokens (25 GB) make rank 1 the peak. It holds the
  // output layer's weights and the logits, but no layer: no all-to-all buffers, no gathered
  // weights, and under full recompute no layer's activations.
  ModelConfig c = LoadModel("olmoe-1b-7b").config;
  c.vocab = int64_t{1} << 20;
  const int64_t seq = 4096;
  const ModelShape shape = MakeModelShape(c, seq);
  const PerfJob job{64, seq, NumberFormat::kBf16, RoutingPolicy::kBalanced, 1.0, 0};
  const PerfProfile profile = LoadProfiles().ForHardware("h100");
  const Cluster cluster = MakeCluster(LoadHardware("h100"), 128);
  const auto memory_of = [&](const char* pp_layout) {
    return EstimateMemory(
        shape, cluster,
        ParseLayout(std::string("pp=2,ep=8,dp=64,recompute=full,pp_layout=") + pp_layout), job,
        profile);
  };
  const MemoryBreakdown loss_only = memory_of("Et*16|L");
  EXPECT_GT(loss_only.logits_bytes, 25e9);
  EXPECT_EQ(loss_only.activation_bytes, 0.0);
  EXPECT_EQ(loss_only.dispatch_bytes, 0.0);
  EXPECT_EQ(loss_only.gather_buffer_bytes, 0.0);
  EXPECT_EQ(loss_only.peak_bytes, loss_only.weights_bytes + loss_only.gradients_bytes +
                                      loss_only.optimizer_bytes + loss_only.logits_bytes +
                                      loss_only.reserve_bytes);
  // With one layer beside the loss, that layer's buffers and working set are back.
  const MemoryBreakdown one_layer = memory_of("Et*15|tL");
  EXPECT_GT(one_layer.logits_bytes, 25e9);
  EXPECT_GT(one_layer.activation_bytes, 0.0);
  EXPECT_GT(one_layer.dispatch_bytes, 0.0);
}

TEST(StepModelLayouts, ExpertTensorParallelismKeepsTheGatheredTokens) {
  // Mixtral 8x7B on 8 H100, tp=2: with etp=2 each rank all-gathers its pair's dispatched tokens
  // and computes half of every expert's width for all of them (Megatron-Core's expert tensor
  // parallelism), so it keeps twice the fc1 inputs and the same share of the rest. Per layer and
  // micro-batch: tokens_mb_rank (1·4096/2) × top_k (2) × d_model (4096) × 2 bytes more, over 32
  // layers, no recompute, one micro-batch in flight.
  Megatron m("mixtral-8x7b", "h100", 8, 64, 4096);
  const StepEstimate etp1 = m.Run("tp=2,dp=4,ep=4,etp=1,mbs=1");
  const StepEstimate etp2 = m.Run("tp=2,dp=4,ep=4,etp=2,mbs=1");
  const double gathered = 2048.0 * 2 * 4096 * 2 * 32 * m.profile.activation_factor;
  EXPECT_NEAR(etp2.memory.activation_bytes - etp1.memory.activation_bytes, gathered,
              kRelTol * etp2.memory.activation_bytes);
  // The expert GEMMs' rows are the group's gathered tokens: twice as many, at a width of
  // expert_width / 2 (7168 of 14336), the FLOPs the same and their efficiency no lower.
  EXPECT_LE(etp2.time.expert_gemm_seconds, etp1.time.expert_gemm_seconds * (1 + kRelTol));
  // MoE-layer recompute frees every routed activation, the gathered inputs included.
  const StepEstimate moe1 = m.Run("tp=2,dp=4,ep=4,etp=1,mbs=1,recompute=moe");
  const StepEstimate moe2 = m.Run("tp=2,dp=4,ep=4,etp=2,mbs=1,recompute=moe");
  EXPECT_NEAR(moe2.memory.activation_bytes, moe1.memory.activation_bytes,
              kRelTol * moe1.memory.activation_bytes);
}

TEST(StepModelLayouts, BubbleIsTheOtherStagesTime) {
  // Fill and drain run the other ranks' chunks: (pp − 1)·t̄/vpp with t̄ the mean of the other
  // ranks, each in proportion to its layers: 91 layers on the 31 ranks beside a middle one of 3,
  // and the last rank's output layer (its 2 layers and the output layer take less time than 3).
  Megatron m("qwen3-235b-a22b", "h100", 256, 2048, 4096);
  const StepEstimate e = m.Run("tp=2,pp=32,vpp=3,ep=8,dp=4,pp_embed=1,pp_loss=1");
  ASSERT_FALSE(e.slowest_stage_holds_output_layer);
  ASSERT_EQ(e.slowest_stage_layers, 3);
  ASSERT_GT(e.time.output_layer_seconds, 0);
  const double slowest = 3;
  const double others = (94 - slowest) / 31;
  const double pipelined = e.time.compute_seconds + e.time.exposed_comm_seconds +
                           e.time.host_seconds;
  const int64_t micro = 2048 / 4;
  const double expected = PipelineBubbleSeconds(
      32, 3, micro, (pipelined * others / slowest + e.time.output_layer_seconds / 31) / micro);
  EXPECT_NEAR(e.time.bubble_seconds, expected, kRelTol * expected);
  // Less than the slowest rank's (pp − 1)·t/vpp, which would count its third layer 31 times.
  EXPECT_LT(e.time.bubble_seconds, PipelineBubbleSeconds(32, 3, micro, pipelined / micro));
}

TEST(StepModelLayouts, ContextParallelAcrossNodesIsChargedAtScaleOutBandwidth) {
  // qwen3-235b-a22b on 256 H100, tp=4,pp=8,vpp=4,cp=8,ep=8,mbs=1, 256 × 131072 (389 TFLOP/s per
  // GPU measured in Megatron-LM's causal count; the step model predicts far less, see
  // docs/guide.md). The cp ring (tp·cp = 32 ranks) spans four 8-GPU nodes: its KV blocks cross
  // the network, forward one pass around the ring, backward the keys and values again and their
  // gradients. 131k-token sequences need recompute to fit in 80 GB.
  Megatron m("qwen3-235b-a22b", "h100", 256, 256, 131072);
  const StepEstimate e = m.Run("tp=4,pp=8,vpp=4,cp=8,ep=8,pp_embed=1,pp_loss=1,recompute=full");
  EXPECT_TRUE(e.fits);
  EXPECT_FALSE(m.Run("tp=4,pp=8,vpp=4,cp=8,ep=8,pp_embed=1,pp_loss=1").fits);
  const double scale_out = m.cluster.BandwidthForSpan(32) * m.profiles.shared.scale_out_efficiency;
  EXPECT_LT(m.cluster.BandwidthForSpan(32), m.cluster.BandwidthForSpan(8));
  const double tokens = 131072.0 / 8;
  const double bytes = tokens * 2 * m.shape.kv_dim * 2 * 7 / 4;
  // 96 slots / 8 ranks: the middle ranks hold 12 layers, the first and last 11.
  const double layers = 12;
  const double expected =  // 3 KV volumes, +1 for the recomputed forward
      256 * layers * 4 * (bytes / scale_out + m.profiles.shared.collective_latency_seconds);
  EXPECT_NEAR(e.time.cp_seconds, expected, 1e-9 * expected);
}

TEST(StepModelLayouts, SegmentedBackpropRepeatsTheForward) {
  // A looped model of 12 loops with 3 per backprop segment holds one segment and repeats the
  // forward of the other 9 loops in the backward: compute rises by 9/12 of a forward.
  ModelConfig c = LoadModel("looped-moe-329m").config;
  c.loops = 12;
  const ModelShape shape = MakeModelShape(c, 1024);
  const Cluster cluster = MakeCluster(LoadHardware("h100"), 8);
  const ProfileSet profiles = LoadProfiles();
  const PerfProfile& profile = profiles.Get("torch-eager-h100");
  const Layout l = ParseLayout("fsdp=8,mbs=8");
  auto run = [&](int64_t segment) {
    const PerfJob job{1024, 1024, NumberFormat::kBf16, RoutingPolicy::kDropless, 1.0, segment};
    return EvaluateStep(shape, cluster, l, job, profiles.shared, profile, nullptr);
  };
  const StepEstimate whole = run(0);
  const StepEstimate segmented = run(3);
  EXPECT_EQ(whole.time.recompute_seconds, 0);
  EXPECT_GT(segmented.step_seconds, whole.step_seconds);
  EXPECT_LT(segmented.memory.activation_bytes, whole.memory.activation_bytes);
  // The layers run 3 + 9/12 passes instead of 3; the repeated share is 0.75 / 3.75.
  EXPECT_NEAR(segmented.time.recompute_seconds,
              segmented.time.compute_seconds * 0.75 / 3.75, kRelTol * segmented.step_seconds);
  // One segment of all the loops repeats nothing.
  EXPECT_EQ(run(12).step_seconds, whole.step_seconds);
  // Segments of 5 of 12 loops: 5, 5, 2; the last (2 loops) is not repeated, 10 of 12 are.
  const StepEstimate uneven = run(5);
  EXPECT_NEAR(uneven.time.recompute_seconds,
              uneven.time.compute_seconds * (10.0 / 12) / (3 + 10.0 / 12),
              kRelTol * uneven.step_seconds);
}

TEST(StepModelLayouts, SegmentedBackpropOffloadsEachSegmentOnce) {
  // 12 loops of 10 layers in segments of 3 loops (30 layers each), 20 layers offloaded: the host
  // holds one segment's 20 layers, and each micro-batch copies 20 out in the forward (the last
  // segment, kept) and 20 more for each of the 3 segments the backward runs again, copied out
  // during the backward beside the copies back: 80 layers each way, 60 of them out in the
  // backward. Segments of 5 loops (5, 5, 2): the last holds 20 layers, the two repeated 50 each.
  ModelConfig c = LoadModel("looped-moe-329m").config;
  c.loops = 12;
  const ModelShape shape = MakeModelShape(c, 1024);
  // A host link of 4 GB/s, so that copies are exposed in both phases.
  HardwareSpec device = LoadHardware("h100");
  device.host_link_gb_per_s = 4;
  const Cluster cluster = MakeCluster(device, 8);
  const ProfileSet profiles = LoadProfiles();
  const PerfProfile& profile = profiles.Get("torch-eager-h100");
  auto run = [&](int64_t segment, const std::string& layout) {
    const PerfJob job{1024, 1024, NumberFormat::kBf16, RoutingPolicy::kDropless, 1.0, segment};
    return EvaluateStep(shape, cluster, ParseLayout(layout), job, profiles.shared, profile,
                        nullptr);
  };
  const StepEstimate kept = run(3, "fsdp=8,mbs=8");
  // One layer, one micro-batch: the 30 layers held beside the inputs of the 3 earlier segments
  // (8 × 1024 tokens × d_model, bf16).
  const double checkpoints = 3 * 8.0 * 1024 * static_cast<double>(c.d_model) * 2;
  const double per_layer = (kept.memory.activation_bytes - checkpoints) / 30;
  const StepEstimate offloaded = run(3, "fsdp=8,mbs=8,offload_layers=20");
  EXPECT_NEAR(offloaded.memory.host_activation_bytes, 20 * per_layer, kRelTol * per_layer * 20);
  EXPECT_NEAR(offloaded.memory.offload_bytes_per_micro_batch, 80 * per_layer,
              kRelTol * per_layer * 80);
  EXPECT_NEAR(offloaded.memory.offload_recomputed_bytes_per_micro_batch, 60 * per_layer,
              kRelTol * per_layer * 60);
  // 16 micro-batches, each way at 0.85 × 4 GB/s; the forward phase copies 20 of the 80.
  const double each_way = 16 * 80 * per_layer / (0.85 * 4e9);
  EXPECT_NEAR(offloaded.time.offload_seconds, 2 * each_way, kRelTol * each_way);
  const double compute = offloaded.time.compute_seconds;
  const double forward = compute / (3 + 0.75);  // 3 passes and the repeated 9 of 12 loops
  const double exposed_forward = each_way * 20 / 80 - forward;
  EXPECT_GT(exposed_forward, 0);
  const double exposed = exposed_forward + std::max(0.0, each_way - (compute - forward));
  EXPECT_NEAR(offloaded.time.exposed_offload_seconds, exposed, kRelTol * each_way);
  const StepEstimate uneven = run(5, "fsdp=8,mbs=8,offload_layers=25");
  EXPECT_NEAR(uneven.memory.offload_bytes_per_micro_batch, (20 + 2 * 25) * per_layer,
              kRelTol * per_layer * 70);
  EXPECT_NEAR(uneven.memory.offload_recomputed_bytes_per_micro_batch, 50 * per_layer,
              kRelTol * per_layer * 50);
  // Without segments the forward copies all it offloads, and nothing is copied out again.
  const StepEstimate whole = run(0, "fsdp=8,mbs=8,offload_layers=20");
  EXPECT_NEAR(whole.memory.offload_bytes_per_micro_batch, 20 * per_layer,
              kRelTol * per_layer * 20);
  EXPECT_EQ(whole.memory.offload_recomputed_bytes_per_micro_batch, 0);
}

TEST(StepModelLayouts, OffloadedModulesMoveTheirInputsToTheHost) {
  // Row G1 (Megatron-MoE-ModelZoo, Qwen3-235B on 256 GB200, mxfp8): module recompute with the
  // inputs of the experts' fc1 and activation offloaded (--offload-modules expert_fc1 moe_act).
  // Per layer and micro-batch of 3 × 4096 tokens, 8 assignments each: the dispatched token in
  // fp8 (4096 bytes) and the fc1 output in bf16 (2 × 1536 × 2 bytes), 10240 bytes an assignment.
  Megatron g("qwen3-235b-a22b", "gb200-nvl72", 256, 3072, 4096);
  g.job.format = NumberFormat::kMxfp8;
  const std::string base = "tp=1,pp=4,vpp=6,ep=64,dp=64,mbs=3,recompute=modules";
  const StepEstimate plain = g.Run(base);
  const StepEstimate offloaded = g.Run(base + ",offload_modules=expert_fc1+moe_act");
  const double module = 3.0 * 4096 * 8 * 10240 * g.profile.activation_factor;
  // The host holds every held layer's module inputs; the HBM the rest and one layer's in transit.
  EXPECT_NEAR(offloaded.memory.host_activation_bytes,
              plain.memory.activation_bytes - offloaded.memory.activation_bytes + module,
              kRelTol * plain.memory.activation_bytes);
  // Each micro-batch copies them for the heaviest rank's 24 layers (94 on 4 × 6 chunks of 4,
  // two chunks of 3 on ranks 0 and 1).
  EXPECT_NEAR(offloaded.memory.offload_bytes_per_micro_batch, 24 * module, kRelTol * module);
  EXPECT_GT(plain.memory.peak_bytes, plain.capacity_bytes);  // 219 GB of 186: G1 did not fit
  EXPECT_TRUE(offloaded.fits);
  EXPECT_GT(offloaded.time.offload_seconds, 0);
  EXPECT_EQ(offloaded.time.compute_seconds, plain.time.compute_seconds);
  // MoE-layer recompute keeps neither input: nothing to offload.
  const std::string moe = "tp=1,pp=4,vpp=6,ep=64,dp=64,mbs=3,recompute=moe";
  const StepEstimate moe_plain = g.Run(moe);
  const StepEstimate moe_offloaded = g.Run(moe + ",offload_modules=expert_fc1+moe_act");
  EXPECT_EQ(moe_offloaded.memory.activation_bytes, moe_plain.memory.activation_bytes);
  EXPECT_EQ(moe_offloaded.memory.host_activation_bytes, 0);
  EXPECT_EQ(moe_offloaded.step_seconds, moe_plain.step_seconds);
}

// --offload: a layout no recompute policy fits gets offload tried. Llama 3 70B on 64 H100 cut
// to 30 GB: at best full recompute without it; with every layer of a rank offloaded a layout
// under module recompute runs 36% faster. Each offloaded candidate fits neither HBM nor host
// memory less, and needs its offload: without it no policy fits.
TEST(StepModelLayouts, SearchTriesOffloadWhereNoRecomputePolicyFits) {
  const ProfileSet profiles = LoadProfiles();
  HardwareSpec h100 = LoadHardware("h100");
  h100.hbm_gb = 30;
  const Cluster cluster = MakeCluster(h100, 64);
  const ModelShape llama = MakeModelShape(LoadModel("llama3-70b").config, 8192);
  const PerfJob job{64, 8192, NumberFormat::kBf16, RoutingPolicy::kDropless, 1.0, 0};
  const PerfProfile& profile = profiles.Get("megatron-h100");
  SearchOptions options;
  options.top = 20;
  const SearchResult plain =
      SearchLayouts(llama, cluster, job, profiles.shared, profile, DefaultDropParams(), options);
  options.offload = OffloadSearch::kLayers;
  const SearchResult layers =
      SearchLayouts(llama, cluster, job, profiles.shared, profile, DefaultDropParams(), options);
  ASSERT_FALSE(plain.best.empty());
  ASSERT_FALSE(layers.best.empty());
  EXPECT_EQ(plain.best.front().layout.offload_layers, 0);
  EXPECT_EQ(layers.best.front().layout.offload_layers, 80);
  EXPECT_GT(layers.best.front().estimate.tokens_per_s_per_gpu,
            1.3 * plain.best.front().estimate.tokens_per_s_per_gpu);
  EXPECT_GT(layers.evaluated, plain.evaluated);
  for (const SearchCandidate& c : layers.best) {
    EXPECT_TRUE(c.estimate.fits) << ToString(c.layout);
    if (c.layout.offload_layers == 0) continue;
    Layout without = c.layout;
    without.offload_layers = 0;
    for (Recompute r : kRecomputeByCost) {
      without.recompute = r;
      EXPECT_GT(EstimateMemory(llama, cluster, without, job, profile).peak_bytes, 30e9)
          << ToString(without);
    }
  }
  // Module offload for an MoE model: Qwen3-30B-A3B on 16 H100 cut to 60 GB.
  HardwareSpec smaller = LoadHardware("h100");
  smaller.hbm_gb = 60;
  const Cluster sixteen = MakeCluster(smaller, 16);
  const ModelShape qwen = MakeModelShape(LoadModel("qwen3-30b-a3b").config, 4096);
  const PerfJob qwen_job{256, 4096, NumberFormat::kBf16, RoutingPolicy::kDropless, 1.0, 0};
  options.offload = OffloadSearch::kModules;
  options.top = 1;
  const SearchResult modules = SearchLayouts(qwen, sixteen, qwen_job, profiles.shared, profile,
                                             DefaultDropParams(), options);
  ASSERT_EQ(modules.best.size(), 1u);
  const Layout& best = modules.best.front().layout;
  EXPECT_NE(best.offload_modules, 0u);
  EXPECT_TRUE(modules.best.front().estimate.fits);
  // It names only the modules its policy lets move something.
  EXPECT_EQ(best.offload_modules & ~ModulesWithStoredInput(best.recompute, false), 0u)
      << ToString(best);
  // Offload needs the host link.
  HardwareSpec bare = h100;
  bare.host_link_gb_per_s = 0;
  EXPECT_THROW(SearchLayouts(llama, MakeCluster(bare, 64), job, profiles.shared, profile,
                             DefaultDropParams(), options),
               InputError);
  EXPECT_EQ(OffloadSearchFromString("layers"), OffloadSearch::kLayers);
  EXPECT_EQ(OffloadSearchFromString("layer"), std::nullopt);
}

TEST(StepModelLayouts, SearchRefusesABatchNoLayoutDividesBeforeEnumerating) {
  // 720,720 = 2⁴·3²·5·7·11·13 GPUs and a batch of 1024 = 2¹⁰: dp·fsdp = GPUs/(tp·pp·cp) must
  // divide 1024, which would need pp >= 45045 stages of a 94-layer model.
  const ProfileSet profiles = LoadProfiles();
  const ModelShape shape = MakeModelShape(LoadModel("qwen3-235b-a22b").config, 4096);
  const Cluster cluster = MakeCluster(LoadHardware("h100"), 720720);
  const PerfJob job{1024, 4096, NumberFormat::kBf16, RoutingPolicy::kDropless, 1.0, 0};
  const auto reason = UnsearchableReason(shape.config, {720720, 1024, 4096}, 8);
  ASSERT_TRUE(reason);
  EXPECT_NE(reason->find("no layout divides the batch"), std::string::npos) << *reason;
  int calls = 0;
  SearchOptions options;
  options.progress = [&](double, int64_t) { ++calls; };
  const SearchResult r = SearchLayouts(shape, cluster, job, profiles.shared,
                                       profiles.ForHardware("h100"), DefaultDropParams(), options);
  EXPECT_EQ(r.unsearchable, *reason);
  EXPECT_EQ(r.evaluated, 0);
  EXPECT_EQ(calls, 0);
  // A batch the GPUs can divide is searchable.
  EXPECT_FALSE(UnsearchableReason(shape.config, {720720, 720720, 4096}, 8));
  EXPECT_FALSE(UnsearchableReason(shape.config, {256, 2048, 4096}, 8));
}

TEST(StepModelLayouts, SearchReportsProgressUpToOne) {
  const ProfileSet profiles = LoadProfiles();
  const ModelShape shape = MakeModelShape(LoadModel("qwen3-30b-a3b").config, 4096);
  const Cluster cluster = MakeCluster(LoadHardware("h100"), 64);
  const PerfJob job{512, 4096, NumberFormat::kBf16, RoutingPolicy::kDropless, 1.0, 0};
  std::vector<double> fractions;
  std::vector<int64_t> counts;
  int64_t last_evaluated = -1;
  SearchOptions options;
  options.progress = [&](double f, int64_t evaluated) {
    fractions.push_back(f);
    counts.push_back(evaluated);
    EXPECT_GE(evaluated, last_evaluated);
    last_evaluated = evaluated;
  };
  const SearchResult r = SearchLayouts(shape, cluster, job, profiles.shared,
                                       profiles.ForHardware("h100"), DefaultDropParams(), options);
  ASSERT_GT(fractions.size(), 2u);
  // The fraction follows the layouts looked at (it ended at 37% when it counted (tp, pp) pairs,
  // most of which hold no layout): within a quarter of the share evaluated, all along.
  constexpr double kProgressTol = 0.25;
  for (size_t i = 0; i < fractions.size(); ++i) {
    EXPECT_NEAR(fractions[i], static_cast<double>(counts[i]) / static_cast<double>(r.evaluated),
                kProgressTol)
        << "call " << i;
  }
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  EXPECT_GT(fractions.front(), 0);
  EXPECT_EQ(fractions.back(), 1.0);
  EXPECT_EQ(last_evaluated, r.evaluated);
  EXPECT_TRUE(r.unsearchable.empty());
}

// The search tries Megatron-Core's EP all-to-all overlap where it can run, as Megatron's 2026
// Qwen3-235B benchmark on 256 H100 used it (pp=8, vpp=4, ep=32, dp=16, a2a overlap: 2132
// tokens/s per GPU); every layout it ranks passes CheckLayout, overlap included.
TEST(StepModelLayouts, SearchTriesTheAllToAllOverlapWhereItCanRun) {
  Megatron q("qwen3-235b-a22b", "h100", 256, 2048, 4096);
  q.job.routing = RoutingPolicy::kDropless;
  ASSERT_TRUE(q.profile.paired_a2a_overlap);
  SearchOptions options;
  options.top = 50;
  const SearchResult r = SearchLayouts(q.shape, q.cluster, q.job, q.profiles.shared, q.profile,
                                       DefaultDropParams(), options);
  ASSERT_EQ(r.best.size(), 50u);
  EXPECT_EQ(r.best.front().layout.a2a_overlap, 1) << ToString(r.best.front().layout);
  for (const SearchCandidate& c : r.best) {
    EXPECT_FALSE(CheckLayout(c.layout, q.shape.config, {256, 2048, 4096}, 8)) << ToString(c.layout);
    // The same layout without overlap is no faster (the overlap hides all-to-all time).
    if (c.layout.a2a_overlap == 1) {
      Layout plain = c.layout;
      plain.a2a_overlap = 0;
      const StepEstimate without =
          EvaluateStep(q.shape, q.cluster, plain, q.job, q.profiles.shared, q.profile, nullptr);
      EXPECT_LE(without.tokens_per_s_per_gpu, c.estimate.tokens_per_s_per_gpu * (1 + kRelTol))
          << ToString(c.layout);
    }
  }
  // A dense model has no all-to-all to overlap.
  Megatron llama("llama3-70b", "h100", 64, 64, 4096);
  const SearchResult dense = SearchLayouts(llama.shape, llama.cluster, llama.job,
                                           llama.profiles.shared, llama.profile,
                                           DefaultDropParams(), {});
  ASSERT_FALSE(dense.best.empty());
  for (const SearchCandidate& c : dense.best) EXPECT_EQ(c.layout.a2a_overlap, 0);
  // Where the schedule pairs no pass (one micro-batch: a small model on 8 GPUs), the overlap
  // hides nothing more and holds more: the search does not list it beside the same layout.
  Megatron looped("looped-moe-329m", "h100", 8, 64, 4096);
  looped.job.routing = RoutingPolicy::kDropless;
  options.top = 2;
  const SearchResult tie = SearchLayouts(looped.shape, looped.cluster, looped.job,
                                         looped.profiles.shared, looped.profile,
                                         DefaultDropParams(), options);
  ASSERT_EQ(tie.best.size(), 2u);
  EXPECT_EQ(tie.best[0].estimate.micro_batches, 1);
  EXPECT_EQ(A2aOverlapPairedShare(tie.best[0].layout.pp, tie.best[0].layout.vpp, 1), 0.0);
  for (const SearchCandidate& c : tie.best) EXPECT_EQ(c.layout.a2a_overlap, 0);
}

TEST(StepModelLayouts, SearchRanksEqualSpeedsByTheMemoryTheyLeave) {
  // Mixtral 8x7B on 97 H100s, one sequence per GPU: FSDP over 97 ranks, whose exposed traffic
  // sets the step under no, selective and module recompute alike (547.3 tokens/s each, apart in
  // the fifth digit): the one leaving the most memory, module recompute, ranks first.
  Megatron m("mixtral-8x7b", "h100", 97, 97, 4096);
  SearchOptions options;
  options.top = 3;
  const SearchResult r = SearchLayouts(m.shape, m.cluster, m.job, m.profiles.shared, m.profile,
                                       DefaultDropParams(), options);
  ASSERT_EQ(r.best.size(), 3u);
  for (const SearchCandidate& c : r.best) {
    EXPECT_NEAR(c.estimate.tokens_per_s_per_gpu, r.best[0].estimate.tokens_per_s_per_gpu,
                1e-4 * r.best[0].estimate.tokens_per_s_per_gpu);
  }
  EXPECT_EQ(r.best[0].layout.recompute, Recompute::kModules) << ToString(r.best[0].layout);
  EXPECT_LT(r.best[0].estimate.memory.peak_bytes, r.best[1].estimate.memory.peak_bytes);
  EXPECT_LT(r.best[1].estimate.memory.peak_bytes, r.best[2].estimate.memory.peak_bytes);
}

}  // namespace
}  // namespace mosaic
