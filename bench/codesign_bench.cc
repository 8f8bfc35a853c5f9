// Speed of the co-design sweep: architectures evaluated per second, each with its full layout
// search, on the shipped GB200 NVL72 example (64 GPUs), against one architecture's layout search
// measured in the same run (the baseline: a sweep can at best cost architectures × that).
// MOSAIC_BENCH_ARCHS (default 240) architectures are swept: the example's 30, repeated.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <thread>

#include "mosaic/codesign/codesign.h"

namespace {

using namespace mosaic;

size_t Architectures() {
  const char* text = std::getenv("MOSAIC_BENCH_ARCHS");
  return text != nullptr ? std::strtoul(text, nullptr, 10) : 240;
}

std::vector<Architecture> Repeated(const SpaceConfig& space, size_t n) {
  const std::vector<Architecture> base = EnumerateArchitectures(space);
  std::vector<Architecture> all;
  while (all.size() < n) all.push_back(base[all.size() % base.size()]);
  return all;
}

void BM_OneArchitectureSearch(benchmark::State& state) {
  const SpaceConfig space = LoadSpace("gb200-nvl72-sparsity");
  const auto context = PrepareSweep(space);
  const std::vector<Architecture> one = Repeated(space, 1);
  std::vector<ArchitectureResult> out(1);
  for (auto _ : state) {
    EvaluateRange(*context, one, 0, 1, out);
    benchmark::DoNotOptimize(out);
  }
  state.counters["layouts"] = double(out[0].layouts_evaluated);
}
BENCHMARK(BM_OneArchitectureSearch)->Unit(benchmark::kMillisecond);

void BM_Sweep(benchmark::State& state) {
  SpaceConfig space = LoadSpace("gb200-nvl72-sparsity");
  const auto context = PrepareSweep(space);
  const std::vector<Architecture> all = Repeated(space, Architectures());
  for (auto _ : state) {
    std::vector<ArchitectureResult> out(all.size());
    std::vector<std::thread> pool;
    const int threads = int(state.range(0));
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (size_t i = size_t(t); i < all.size(); i += size_t(threads)) {
          EvaluateRange(*context, all, i, i + 1, out);
        }
      });
    }
    for (std::thread& th : pool) th.join();
    benchmark::DoNotOptimize(out);
  }
  state.counters["architectures_per_s"] = benchmark::Counter(
      double(all.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Sweep)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
