// libFuzzer target for a measurement CSV (perf/measurements.h), as `mosaic perf calibrate` and
// `perf validate` read one: the header, quoted cells, each row's numbers, layout, recompute and
// pipeline split, routing and precision, and the conversion of TFLOP/s or MFU to tokens/s.
// Input (fuzz_input.h): section 0 is the CSV. A model or hardware cell that would name a file
// (a '/' or ".toml") is left out: the target tests the parsing, not the file system.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_input.h"
#include "mosaic/perf/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const mosaic::fuzz::FuzzInput input = mosaic::fuzz::SplitFuzzInput(data, size);
  const std::string_view csv = input.Section(0);
  if (csv.find('/') != std::string_view::npos || csv.find(".toml") != std::string_view::npos) {
    return 0;
  }
  mosaic::fuzz::ExpectOnlyInputErrors([&] { (void)mosaic::ParseMeasurements(csv, "fuzz.csv"); });
  return 0;
}
