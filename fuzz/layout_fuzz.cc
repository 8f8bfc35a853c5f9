// libFuzzer target for the layout string ("tp=2,pp=4,ep=8,mbs=2,recompute=full"): ParseLayout,
// the text it prints read back to the same layout, and CheckLayout against a shipped model and a
// job whose size comes from the selector byte (LayoutRejectKind naming the same kind); for a
// layout that passes, SplitPipeline's MoE layer counts lie within each rank's layers and its
// slowest rank's, the other ranks' load against it is finite, and the ranks that can take longest
// (rank 0, the costliest middle rank, the last) load in [0, 1] of it, the slowest among them.
// Input (fuzz_input.h): section 0 is the layout string.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mosaic;
  const fuzz::FuzzInput input = fuzz::SplitFuzzInput(data, size);
  static const std::vector<ModelConfig> models = [] {
    std::vector<ModelConfig> m;
    for (const char* name : {"mixtral-8x7b", "deepseek-v3", "olmoe-1b-7b", "llama4-maverick"}) {
      m.push_back(LoadModel(name).config);
    }
    return m;
  }();
  Layout layout;
  try {
    layout = ParseLayout(input.Section(0));
  } catch (const InputError&) {
    return 0;
  }
  // The printed form is a layout string too, and names the same layout.
  const std::string printed = ToString(layout);
  if (ToString(ParseLayout(printed, "round trip")) != printed) __builtin_trap();
  const ModelConfig& model = models[input.selector % models.size()];
  const JobShape job{.gpus = int64_t{1} << (input.selector % 12),
                     .global_batch = 1024,
                     .seq_len = 4096};
  // The search's test without the rule's text names the same kind.
  const int64_t domain = input.selector % 2 ? 72 : 8;
  const std::optional<LayoutViolation> violation = CheckLayout(layout, model, job, domain);
  const std::optional<RejectKind> kind = LayoutRejectKind(layout, model, job, domain);
  if (violation.has_value() != kind.has_value()) __builtin_trap();
  if (violation && violation->kind != *kind) __builtin_trap();
  if (!violation) {
    const PipelineSplit split = SplitPipeline(layout, model);
    const auto within = [](int64_t moe, int64_t layers) { return moe >= 0 && moe <= layers; };
    if (!within(split.first_moe, split.first) || !within(split.middle_moe, split.middle) ||
        !within(split.last_moe, split.last) || !within(split.slowest_moe, split.slowest) ||
        !(split.other_load_ratio >= 0) || split.other_load_ratio > 1e12 ||
        split.rank_load_count != std::min<int64_t>(layout.pp, 3)) {
      __builtin_trap();
    }
    // Every rank that can take longest costs at most the slowest rank's, which is among them.
    bool slowest_seen = false;
    for (int i = 0; i < split.rank_load_count; ++i) {
      const PipelineSplit::RankLoad& r = split.rank_loads[i];
      if (!(r.load_ratio >= 0 && r.load_ratio <= 1) || !within(r.moe, r.layers) ||
          r.rank < 0 || r.rank >= layout.pp) {
        __builtin_trap();
      }
      slowest_seen |= r.rank == split.slowest_rank && r.layers == split.slowest &&
                      r.moe == split.slowest_moe && r.load_ratio == 1;
    }
    if (!slowest_seen) __builtin_trap();
  }
  return 0;
}
