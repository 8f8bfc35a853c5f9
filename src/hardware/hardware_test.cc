#include "mosaic/hardware/hardware.h"

#include <gtest/gtest.h>

#include <string>

#include "mosaic/util/error.h"

namespace mosaic {
namespace {

constexpr const char* kDevice =
    "name = \"test-gpu\"\n"
    "peak_bf16_tflops = 989\n"
    "hbm_gb = 80\n"
    "hbm_tb_per_s = 3.35\n"
    "scale_up_gb_per_s = 450\n"
    "scale_up_domain_gpus = 8\n"
    "scale_out_gbit_per_s = 400\n";

// The message of the InputError `load` throws ("" when it throws none).
template <typename Load>
std::string ErrorOf(Load&& load) {
  try {
    load();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Hardware, DeviceTextLoadsWithItsFields) {
  const HardwareSpec h = LoadHardwareFromToml(kDevice, "gpu.toml");
  EXPECT_EQ(h.name, "test-gpu");
  EXPECT_EQ(h.origin, "gpu.toml");
  EXPECT_EQ(h.hbm_gb, 80);
  EXPECT_EQ(h.scale_up_domain_gpus, 8);
  EXPECT_EQ(h.peak_fp8_tflops, 0);  // optional
}

// Each required key left out is named as missing, with the file and what it means, rather than
// reported as a zero that breaks a bound.
TEST(Hardware, MissingRequiredKeyIsNamed) {
  const std::string text = kDevice;
  for (const std::string key : {"peak_bf16_tflops", "hbm_gb", "hbm_tb_per_s", "scale_up_gb_per_s",
                                "scale_up_domain_gpus", "scale_out_gbit_per_s"}) {
    std::string without;
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = text.find('\n', start) + 1;
      if (!text.substr(start).starts_with(key + " =")) without += text.substr(start, end - start);
      start = end;
    }
    const std::string error = ErrorOf([&] { LoadHardwareFromToml(without, "gpu.toml"); });
    EXPECT_TRUE(error.starts_with("gpu.toml: " + key + " is missing. Violated constraint: a "
                                  "device file sets " + key + " ("))
        << error;
  }
  EXPECT_EQ(ErrorOf([] { LoadHardwareFromToml("name = \"x\"\n", "x.toml"); }),
            "x.toml: peak_bf16_tflops is missing. Violated constraint: a device file sets "
            "peak_bf16_tflops (dense bf16 peak per GPU, TFLOP/s)");
}

// GPU counts are whole numbers that fit the count type: 1e30 or 8.5 GPUs are refused, in the
// file and in a --set override.
TEST(Hardware, DomainSizeIsAWholeNumber) {
  std::string text = kDevice;
  text.replace(text.find("scale_up_domain_gpus = 8"), 24, "scale_up_domain_gpus = 1e30");
  EXPECT_NE(ErrorOf([&] { LoadHardwareFromToml(text, "gpu.toml"); })
                .find("scale_up_domain_gpus = 1e+30. Violated constraint: scale_up_domain_gpus is "
                      "a whole number of GPUs in [0, 1048576]"),
            std::string::npos);
  const FieldOverride half{"scale_up_domain_gpus_used", "8.5", {}};
  EXPECT_NE(ErrorOf([&] { LoadHardwareFromToml(kDevice, "gpu.toml", {&half, 1}); })
                .find("--set hardware.scale_up_domain_gpus_used=8.5: scale_up_domain_gpus_used = "
                      "8.5. Violated constraint"),
            std::string::npos);
}

TEST(Hardware, ShippedDevicesLoad) {
  for (const std::string& name : HardwareNames()) {
    EXPECT_NO_THROW(LoadHardware(name)) << name;
  }
}

}  // namespace
}  // namespace mosaic
