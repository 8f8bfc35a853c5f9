// libFuzzer target for device and perf-profile files: hardware TOML with `--set hardware.FIELD=V`
// overrides (LoadHardwareFromToml) and the cluster built from it; profile TOML (ParseProfiles),
// each profile looked up, the device fallback, a name resolved for a device (ProfileSet::Resolve),
// and the written form read back.
// Input (fuzz_input.h): selector bit 0 = 0: section 0 is a device file, each line of section 1 an
// override; bit 0 = 1: section 0 is a profile file, section 1's lines a device name, a profile
// name to look up and one to resolve for the device.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "mosaic/hardware/hardware.h"
#include "mosaic/perf/profile.h"
#include "mosaic/util/field_override.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mosaic;
  const fuzz::FuzzInput input = fuzz::SplitFuzzInput(data, size);
  if (input.selector % 2 == 0) {
    std::vector<FieldOverride> overrides;
    for (std::string_view line : input.Lines(1)) {
      fuzz::ExpectOnlyInputErrors([&] { overrides.push_back(ParseFieldOverride(line)); });
    }
    fuzz::ExpectOnlyInputErrors([&] {
      const HardwareSpec device = LoadHardwareFromToml(input.Section(0), "fuzz-device.toml",
                                                       overrides);
      (void)MakeCluster(device, 1 + input.selector / 2);
    });
    return 0;
  }
  ProfileSet set;
  try {
    set = ParseProfiles(input.Section(0), "fuzz-profiles.toml");
  } catch (const InputError&) {
    return 0;
  }
  for (const PerfProfile& profile : set.profiles) (void)set.Get(profile.name);
  const std::vector<std::string_view> lines = input.Lines(1);
  fuzz::ExpectOnlyInputErrors([&] {
    (void)set.ForHardware(lines.empty() ? std::string_view("h100") : lines[0]);
    (void)set.Get(lines.size() > 1 ? lines[1] : "megatron-h100");
  });
  fuzz::ExpectOnlyInputErrors([&] {
    (void)set.Resolve(lines.size() > 2 ? lines[2] : "", lines.empty() ? "h100" : lines[0],
                      "--profile");
  });
  // What ProfilesToToml writes, ParseProfiles reads back: a failure here is a bug, not bad input.
  (void)ParseProfiles(ProfilesToToml(set, "# round trip"), "fuzz-profiles-round-trip.toml");
  return 0;
}
