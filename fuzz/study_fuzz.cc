// libFuzzer target for study and co-design space files: study TOML (ladder, arms, rungs, and the
// decision sections [results], [throughput], [target], [fit], [rule], [noise], ...) through
// LoadStudyFromToml and the ladder plan it feeds; the arm override expressions ("3*d/2") through
// ResolveOverride; and co-design space TOML through LoadSpaceFromToml.
// Input (fuzz_input.h): selector % 3 = 0: section 0 is a study; 1: section 0 is a space;
// 2: section 0's first line is a field, its second the override value, its third d_model.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "mosaic/codesign/space.h"
#include "mosaic/study/ladder.h"
#include "mosaic/study/study_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mosaic;
  const fuzz::FuzzInput input = fuzz::SplitFuzzInput(data, size);
  switch (input.selector % 3) {
    case 0:
      fuzz::ExpectOnlyInputErrors([&] {
        const StudyConfig study = LoadStudyFromToml(input.Section(0), "fuzz-study.toml");
        (void)PlanLadder(study);
      });
      break;
    case 1:
      fuzz::ExpectOnlyInputErrors(
          [&] { (void)LoadSpaceFromToml(input.Section(0), "fuzz-space.toml"); });
      break;
    default: {
      const std::vector<std::string_view> lines = input.Lines(0);
      ArmOverride override_value;
      override_value.field = lines.size() > 0 ? std::string(lines[0]) : "d_ff";
      override_value.value = lines.size() > 1 ? std::string(lines[1]) : "";
      int64_t d_model = 1024;
      if (lines.size() > 2) {
        std::from_chars(lines[2].data(), lines[2].data() + lines[2].size(), d_model);
      }
      fuzz::ExpectOnlyInputErrors([&] { (void)ResolveOverride(override_value, d_model); });
      break;
    }
  }
  return 0;
}
