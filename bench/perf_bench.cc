// Speed of the performance model: layouts evaluated per second (one EvaluateStep) and the wall time
// of a full layout search for DeepSeek-V3 on 1024 H100s (counters: layouts/s over the search).
#include <benchmark/benchmark.h>

#include "mosaic/model/model_loader.h"
#include "mosaic/perf/search.h"
#include "mosaic/perf/step_model.h"

namespace {

using namespace mosaic;

struct Setup {
  ModelShape shape = MakeModelShape(LoadModel("deepseek-v3").config, 4096);
  Cluster cluster = MakeCluster(LoadHardware("h100"), 1024);
  ProfileSet profiles = LoadProfiles();
  PerfProfile profile = profiles.Get("megatron-h100");
  PerfJob job{8192, 4096, NumberFormat::kFp8, RoutingPolicy::kBalanced, 1.0, 0};
};

void BM_EvaluateStep(benchmark::State& state) {
  Setup s;
  const Layout l = ParseLayout("tp=2,pp=8,vpp=4,ep=64,dp=64,mbs=1,recompute=full");
  for (auto _ : state) {
    StepEstimate e = EvaluateStep(s.shape, s.cluster, l, s.job, s.profiles.shared, s.profile,
                                  nullptr);
    benchmark::DoNotOptimize(e);
  }
  state.counters["layouts_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EvaluateStep);

void BM_SearchDeepSeekV3On1024H100(benchmark::State& state) {
  Setup s;
  int64_t layouts = 0;
  for (auto _ : state) {
    SearchResult r = SearchLayouts(s.shape, s.cluster, s.job, s.profiles.shared, s.profile,
                                   DefaultDropParams());
    layouts += r.evaluated;
    benchmark::DoNotOptimize(r);
  }
  state.counters["layouts_per_s"] =
      benchmark::Counter(static_cast<double>(layouts), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SearchDeepSeekV3On1024H100)->Unit(benchmark::kMillisecond);

}  // namespace
