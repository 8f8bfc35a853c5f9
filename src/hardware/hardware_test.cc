// The shipped device files load with their published values and a source for each; device text
// is checked key by key.
#include "mosaic/hardware/hardware.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "mosaic/perf/profile.h"
#include "mosaic/util/error.h"

namespace mosaic {
namespace {

void ExpectEverySourced(const HardwareSpec& hw) {
  for (std::string_view field : HardwareFieldNames()) {
    if (field == "name" || field == "description" || field == "scale_up_domain_gpus_used" ||
        field == "peak_mxfp8_tflops") {
      continue;
    }
    EXPECT_TRUE(hw.sources.contains(std::string(field))) << hw.name << " " << field;
  }
}

TEST(Hardware, Gb300Nvl72HasBlackwellUltraValues) {
  // NVIDIA GB300 NVL72: 180 PFLOP/s bf16 and 360 PFLOP/s fp8 dense per 72 GPUs, 288 GB HBM3e at
  // 8 TB/s per GPU, NVLink5 1.8 TB/s bidirectional, one 800 Gb/s ConnectX-8 per GPU.
  const HardwareSpec hw = LoadHardware("gb300-nvl72");
  EXPECT_EQ(hw.peak_bf16_tflops, 2500);
  EXPECT_EQ(hw.peak_fp8_tflops, 5000);
  EXPECT_EQ(hw.hbm_gb, 288);
  EXPECT_EQ(hw.hbm_tb_per_s, 8);
  EXPECT_EQ(hw.scale_up_gb_per_s, 900);
  EXPECT_EQ(hw.scale_up_domain_gpus, 72);
  EXPECT_EQ(hw.domain_gpus(), 64);
  EXPECT_EQ(hw.scale_out_gbit_per_s, 800);
  // NVLink-C2C's 900 GB/s bidirectional between one Grace and its two GPUs; 480 GB LPDDR5X per
  // Grace.
  EXPECT_EQ(hw.host_link_gb_per_s, 225);
  EXPECT_EQ(hw.host_memory_gb, 240);
  ExpectEverySourced(hw);
  // A 128-GPU cluster: two racks linked by the 800 Gb/s NICs.
  const Cluster c = MakeCluster(hw, 128);
  ASSERT_EQ(c.domains.size(), 2u);
  EXPECT_EQ(c.domains[0].name, "nvlink-rack");
  EXPECT_EQ(c.BandwidthForSpan(64), 900e9);
  EXPECT_EQ(c.BandwidthForSpan(128), 100e9);
  // Uncalibrated: it borrows its Blackwell sibling's profile.
  EXPECT_EQ(CalibratedSibling("gb300-nvl72"), "gb200-nvl72");
}

TEST(Hardware, TpuV6eHasTrilliumValues) {
  // Google Cloud TPU v6e: 918 TFLOP/s bf16, 32 GB HBM at 1,638 GB/s, ICI 800 GB/s bidirectional,
  // 256-chip pods (2D torus), no fp8 peak.
  const HardwareSpec hw = LoadHardware("tpu-v6e");
  EXPECT_EQ(hw.peak_bf16_tflops, 918);
  EXPECT_EQ(hw.peak_fp8_tflops, 0);
  EXPECT_EQ(hw.hbm_gb, 32);
  EXPECT_EQ(hw.hbm_tb_per_s, 1.638);
  EXPECT_EQ(hw.scale_up_gb_per_s, 400);
  EXPECT_EQ(hw.domain_gpus(), 256);
  EXPECT_EQ(hw.scale_out_gbit_per_s, 100);
  // PCIe at 3.2e10 bytes/s per chip (jax-ml scaling book); 1536 GiB per host of 8 chips.
  EXPECT_EQ(hw.host_link_gb_per_s, 32);
  EXPECT_EQ(hw.host_memory_gb, 206.2);
  ExpectEverySourced(hw);
  const Cluster c = MakeCluster(hw, 512);
  EXPECT_EQ(c.domains[0].name, "ici");
  EXPECT_EQ(c.BandwidthForSpan(256), 400e9);
  EXPECT_EQ(c.BandwidthForSpan(512), 12.5e9);
  EXPECT_EQ(CalibratedSibling("tpu-v6e"), "");
}

TEST(Hardware, ShippedNamesIncludeTheNewDevices) {
  const std::vector<std::string> names = HardwareNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "gb300-nvl72"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "tpu-v6e"), names.end());
}

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
  EXPECT_EQ(h.host_link_gb_per_s, 0);  // optional: no activation offload
  EXPECT_EQ(h.host_memory_gb, 0);
}

// Each required key left out is named as missing, with the file and what it means, rather than
// reported as a zero that breaks a bound.
TEST(Hardware, MissingRequiredKeyIsNamed) {
  const std::string text = kDevice;
  for (const std::string key : {"name", "peak_bf16_tflops", "hbm_gb", "hbm_tb_per_s",
                                "scale_up_gb_per_s", "scale_up_domain_gpus",
                                "scale_out_gbit_per_s"}) {
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

// A device file's values have their types: a quoted number (hbm_gb = "80") and a numeric name are
// refused, not read as the other type.
TEST(Hardware, FieldsHaveTheirTypes) {
  std::string quoted = kDevice;
  quoted.replace(quoted.find("hbm_gb = 80"), 11, "hbm_gb = \"80\"");
  EXPECT_NE(ErrorOf([&] { LoadHardwareFromToml(quoted, "gpu.toml"); })
                .find("hbm_gb has type string. Violated constraint: hbm_gb is a number"),
            std::string::npos);
  std::string numeric = kDevice;
  numeric.replace(numeric.find("name = \"test-gpu\""), 17, "name = 5");
  EXPECT_NE(ErrorOf([&] { LoadHardwareFromToml(numeric, "gpu.toml"); })
                .find("name has type integer. Violated constraint: name is a string"),
            std::string::npos);
}

// An 8-bit peak lies between the bf16 peak and 4 times it (Hopper and Blackwell: 2×): below it,
// fp8 ran slower than bf16; far above, MFU (against the bf16 peak) passed 1. The rule holds once
// every --set is applied, so both peaks can be raised together.
TEST(Hardware, EightBitPeaksFollowTheBf16Peak) {
  const FieldOverride low{"peak_fp8_tflops", "10", {}};
  EXPECT_EQ(ErrorOf([&] { LoadHardware("h100", {&low, 1}); }),
            "--set hardware.peak_fp8_tflops=10: peak_fp8_tflops = 10. Violated constraint: 0 "
            "(none) or between peak_bf16_tflops and 4 times it (989 to 3956)");
  const FieldOverride slow_bf16{"peak_bf16_tflops", "0.1", {}};
  EXPECT_NE(ErrorOf([&] { LoadHardware("h100", {&slow_bf16, 1}); })
                .find("peak_fp8_tflops = 1979. Violated constraint"),
            std::string::npos);
  // In a file, the rule between fields points at the field's line.
  EXPECT_EQ(ErrorOf([&] {
              LoadHardwareFromToml(std::string(kDevice) + "peak_fp8_tflops = 500\n", "gpu.toml");
            }),
            "gpu.toml:8:19: peak_fp8_tflops = 500. Violated constraint: 0 (none) or between "
            "peak_bf16_tflops and 4 times it (989 to 3956)");
  EXPECT_NE(ErrorOf([&] {
              LoadHardwareFromToml(std::string(kDevice) + "scale_up_domain_gpus_used = 16\n",
                                   "gpu.toml");
            }).find("gpu.toml:8:29: scale_up_domain_gpus_used = 16. Violated constraint"),
            std::string::npos);
  const FieldOverride both[] = {{"peak_bf16_tflops", "2000", {}},
                                {"peak_fp8_tflops", "4000", {}}};
  const HardwareSpec raised = LoadHardware("h100", both);
  EXPECT_EQ(raised.peak_fp8_tflops, 4000);
  const FieldOverride twice[] = {{"hbm_gb", "96", {}}, {"hbm_gb", "40", {}}};
  EXPECT_EQ(ErrorOf([&] { LoadHardware("h100", twice); }),
            "--set hardware.hbm_gb=40: hardware.hbm_gb is set twice (to 96 and to 40). Violated "
            "constraint: each field at most once");
  const FieldOverride none{"peak_fp8_tflops", "0", {}};
  EXPECT_EQ(LoadHardware("h100", {&none, 1}).peak_fp8_tflops, 0);
}

// GPU counts are whole numbers that fit the count type: 1e30 or 8.5 GPUs are refused, in the
// file and in a --set override.
TEST(Hardware, DomainSizeIsAWholeNumber) {
  std::string text = kDevice;
  text.replace(text.find("scale_up_domain_gpus = 8"), 24, "scale_up_domain_gpus = 1e30");
  EXPECT_NE(ErrorOf([&] { LoadHardwareFromToml(text, "gpu.toml"); })
                .find("scale_up_domain_gpus = 1e+30. Violated constraint: scale_up_domain_gpus is "
                      "a whole number in [1, 1048576] (GPUs)"),
            std::string::npos);
  // 2.5 and 0 break the same rule, and the message states it (0 said "in [0, 1048576]" for 2.5,
  // then "scale_up_domain_gpus >= 1" for 0).
  for (const char* value : {"2.5", "0", "-8"}) {
    const FieldOverride o{"scale_up_domain_gpus", value, {}};
    EXPECT_EQ(ErrorOf([&] { LoadHardwareFromToml(kDevice, "gpu.toml", {&o, 1}); }),
              std::string("--set hardware.scale_up_domain_gpus=") + value +
                  ": scale_up_domain_gpus = " + value +
                  ". Violated constraint: scale_up_domain_gpus is a whole number in [1, 1048576] "
                  "(GPUs)")
        << value;
  }
  const FieldOverride half{"scale_up_domain_gpus_used", "8.5", {}};
  EXPECT_NE(ErrorOf([&] { LoadHardwareFromToml(kDevice, "gpu.toml", {&half, 1}); })
                .find("--set hardware.scale_up_domain_gpus_used=8.5: scale_up_domain_gpus_used = "
                      "8.5. Violated constraint"),
            std::string::npos);
}

// Every numeric field has a physical range, checked once as the field is set: in a device file
// (with its location) and in a --set override alike, the message naming field, value and range.
TEST(Hardware, ValuesStayInAPhysicalRange) {
  for (const auto& [field, value, rule] :
       {std::tuple<std::string, std::string, std::string>{
            "peak_bf16_tflops", "1e308", "peak_bf16_tflops is in [0.1, 100000] (TFLOP/s)"},
        {"peak_bf16_tflops", "1e-300", "peak_bf16_tflops is in [0.1, 100000] (TFLOP/s)"},
        {"peak_bf16_tflops", "0", "peak_bf16_tflops is in [0.1, 100000] (TFLOP/s)"},
        {"peak_bf16_tflops", "nan", "peak_bf16_tflops is in [0.1, 100000] (TFLOP/s)"},
        {"peak_fp8_tflops", "-1", "peak_fp8_tflops is 0 or in [0.1, 100000] (TFLOP/s; 0 = no fp8)"},
        {"hbm_gb", "1e6", "hbm_gb is in [0.1, 100000] (GB)"},
        {"hbm_tb_per_s", "1e-9", "hbm_tb_per_s is in [0.01, 1000] (TB/s)"},
        {"scale_up_gb_per_s", "inf", "scale_up_gb_per_s is in [0.1, 100000] (GB/s)"},
        {"scale_out_gbit_per_s", "1e7", "scale_out_gbit_per_s is in [0.1, 1000000] (Gbit/s)"},
        {"host_link_gb_per_s", "-64",
         "host_link_gb_per_s is 0 or in [0.1, 100000] (GB/s per direction; 0 = not given)"},
        {"host_memory_gb", "nan", "host_memory_gb is 0 or in [0.1, 1000000] (GB per GPU; 0 = not given)"},
        {"scale_up_domain_gpus_used", "-1",
         "scale_up_domain_gpus_used is 0 or a whole number in [1, 1048576] (GPUs; 0 = the whole "
         "domain)"}}) {
    const FieldOverride o{field, value, {}};
    EXPECT_EQ(ErrorOf([&] { LoadHardwareFromToml(kDevice, "gpu.toml", {&o, 1}); }),
              "--set hardware." + field + "=" + value + ": " + field + " = " + value +
                  ". Violated constraint: " + rule);
  }
  std::string text = kDevice;
  text.replace(text.find("hbm_gb = 80"), 11, "hbm_gb = 2e5");
  EXPECT_EQ(ErrorOf([&] { LoadHardwareFromToml(text, "gpu.toml"); }),
            "gpu.toml:3:10: hbm_gb = 200000. Violated constraint: hbm_gb is in [0.1, 100000] (GB)");
  // The bounds themselves are inside.
  const FieldOverride low{"peak_bf16_tflops", "0.1", {}};
  EXPECT_EQ(LoadHardwareFromToml(kDevice, "gpu.toml", {&low, 1}).peak_bf16_tflops, 0.1);
  const FieldOverride high{"hbm_gb", "100000", {}};
  EXPECT_EQ(LoadHardwareFromToml(kDevice, "gpu.toml", {&high, 1}).hbm_gb, 100000);
}

TEST(Hardware, ShippedDevicesLoad) {
  for (const std::string& name : HardwareNames()) {
    EXPECT_NO_THROW(LoadHardware(name)) << name;
  }
}

}  // namespace
}  // namespace mosaic
