// libFuzzer target for the layout string ("tp=2,pp=4,ep=8,mbs=2,recompute=full"): ParseLayout,
// the text it prints read back to the same layout, and CheckLayout against a shipped model and a
// job whose size comes from the selector byte.
// Input (fuzz_input.h): section 0 is the layout string.
#include <cstddef>
#include <cstdint>
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
    for (const char* name : {"mixtral-8x7b", "deepseek-v3", "olmoe-1b-7b"}) {
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
  (void)CheckLayout(layout, model, job, input.selector % 2 ? 72 : 8);
  return 0;
}
