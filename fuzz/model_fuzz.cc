// libFuzzer target for model configs: model TOML through the field table (model/model_config.h)
// and `--set FIELD=VALUE` overrides (util/field_override.h), then the accounting a loaded model
// goes through (parameters, FLOPs under every convention, the JSON report).
// Input (fuzz_input.h): section 0 is the TOML, each line of section 1 one --set override.
// Selector bit 0: 0 loads section 0 as a file, 1 loads a shipped preset (chosen by the other bits)
// with the overrides only.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "mosaic/model/flops.h"
#include "mosaic/model/model_json.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/model/param_count.h"
#include "mosaic/util/field_override.h"
#include "mosaic/util/json_output.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mosaic;
  const fuzz::FuzzInput input = fuzz::SplitFuzzInput(data, size);
  std::vector<FieldOverride> overrides;
  for (std::string_view line : input.Lines(1)) {
    fuzz::ExpectOnlyInputErrors([&] { overrides.push_back(ParseFieldOverride(line)); });
  }
  fuzz::ExpectOnlyInputErrors([&] {
    ModelSpec spec;
    if (input.selector % 2 == 0) {
      spec = LoadModelFromToml(input.Section(0), "fuzz.toml", overrides);
    } else {
      static const std::vector<std::string> presets = PresetNames();
      spec = LoadModel(presets[(input.selector / 2) % presets.size()], overrides);
    }
    const ParamCount params = CountParams(spec.config);
    (void)params;
    for (FlopConvention convention : {FlopConvention::kLevanterTable, FlopConvention::kFullSquare,
                                      FlopConvention::kCausal}) {
      (void)CountFlops(spec.config, {.convention = convention, .seq_len = 4096});
    }
    (void)DumpJson(ModelJson(spec, 4096, 1e12));
  });
  return 0;
}
