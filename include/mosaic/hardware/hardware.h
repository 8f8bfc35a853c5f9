// Accelerators and clusters. A device (HardwareSpec) is read from a TOML file — the shipped ones in
// data/hardware/*.toml (h100, h200, h800, b200, gb200-nvl72, gb300-nvl72, tpu-v5p, tpu-v6e), each
// value with its source — or from a user's file, and any field can be overridden
// (`--set hardware.hbm_gb=96` for seed 004's 96 GB cards). A cluster is a device, a GPU count and its communication domains, smallest first:
// the scale-up domain (NVLink node or rack, TPU ICI) and the scale-out network (NICs).
// Datasheet values are the dense peaks; "bidirectional" link figures are halved per direction
// (docs/perf_model.md).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/util/field_override.h"

namespace mosaic {

struct HardwareSpec {
  std::string name;
  std::string description;
  std::string origin;                         // "hardware h100" or the file path
  double peak_bf16_tflops = 0;                // dense bf16 TFLOP/s per GPU
  double peak_fp8_tflops = 0;                 // dense fp8 TFLOP/s per GPU; 0 = not supported
  double peak_mxfp8_tflops = 0;               // dense MXFP8 (block-scaled microscaling fp8)
                                              // TFLOP/s per GPU; 0 = no tensor-core support
                                              // (before Blackwell)
  double hbm_gb = 0;                          // memory per GPU, GB = 1e9 bytes
  double hbm_tb_per_s = 0;                    // memory bandwidth, TB/s
  double scale_up_gb_per_s = 0;               // scale-up bandwidth per GPU per direction, GB/s
  int64_t scale_up_domain_gpus = 0;           // GPUs in one scale-up domain
  int64_t scale_up_domain_gpus_used = 0;      // GPUs used per domain (0 = all of them)
  double scale_out_gbit_per_s = 0;            // NIC bandwidth per GPU per direction, Gbit/s
  double host_link_gb_per_s = 0;  // GPU ↔ host memory link per GPU per direction, GB/s (PCIe,
                                  // NVLink-C2C); 0 = not given: no activation offload
  double host_memory_gb = 0;      // host memory (DRAM) per GPU, GB; 0 = not given
  std::map<std::string, std::string> sources;  // field → where its value comes from

  // GPUs per scale-up domain as jobs place them (scale_up_domain_gpus_used when set).
  int64_t domain_gpus() const {
    return scale_up_domain_gpus_used > 0 ? scale_up_domain_gpus_used : scale_up_domain_gpus;
  }
};

// The shipped device names, sorted.
std::vector<std::string> HardwareNames();

// The settable fields of HardwareSpec, in file order.
std::span<const std::string_view> HardwareFieldNames();

// Loads a device: a TOML file when `name_or_path` is a path (input_path.h IsPathArgument: it
// exists, a directory included, ends in ".toml" or has a directory part), else a shipped name.
// Applies `overrides` (field=value) in order. Throws InputError for an unknown name (did you
// mean), a file that cannot be read, a syntax error, an unknown field, a wrong type, or a value
// outside its physical range, checked as the field is set from the file or an override alike:
// peaks in [0.1, 1e5] TFLOP/s (fp8 and MXFP8 peaks also 0: not supported), HBM in [0.1, 1e5] GB
// at [0.01, 1e3] TB/s, scale-up links in [0.1, 1e5] GB/s, NICs in [0.1, 1e6] Gbit/s, the host link
// 0 or in [0.1, 1e5] GB/s and host memory 0 or in [0.1, 1e6] GB (both optional), domain sizes
// whole numbers in [1, 2^20] GPUs (the used one also 0: all), the used domain size at most the
// domain size.
HardwareSpec LoadHardware(std::string_view name_or_path,
                          std::span<const FieldOverride> overrides = {});

// The name of the device `name_or_path` names: a preset name as given, or the `name` inside the
// device file a path names (read for it; IsPathArgument decides which). Throws InputError as
// LoadHardware for a file that cannot be read.
std::string DeviceName(std::string_view name_or_path);

// Parses device TOML text; `origin` names it in messages. Throws InputError as LoadHardware, and
// for a missing required key (peaks in bf16, HBM size and bandwidth, scale-up bandwidth and domain
// size, scale-out bandwidth), naming the file and the key; the domain sizes must be whole numbers.
HardwareSpec LoadHardwareFromToml(std::string_view toml_text, const std::string& origin,
                                  std::span<const FieldOverride> overrides = {});

// One communication domain: groups of `gpus` consecutive ranks linked at `bytes_per_s` per GPU per
// direction.
struct Domain {
  std::string name;     // "nvlink-node", "nvlink-rack", "ici", "network"
  int64_t gpus = 0;     // ranks per domain (the last domain holds the whole cluster)
  double bytes_per_s = 0;
};

struct Cluster {
  HardwareSpec device;
  int64_t gpus = 0;
  std::vector<Domain> domains;  // smallest first; the last one spans the cluster

  // The bandwidth (bytes/s per GPU per direction) of the smallest domain that holds a block of
  // `span_gpus` consecutive ranks; a block larger than the scale-up domain crosses the network.
  double BandwidthForSpan(int64_t span_gpus) const {
    for (const Domain& d : domains) {
      if (span_gpus <= d.gpus) return d.bytes_per_s;
    }
    return domains.back().bytes_per_s;
  }
  // The name of that domain.
  const std::string& DomainForSpan(int64_t span_gpus) const {
    for (const Domain& d : domains) {
      if (span_gpus <= d.gpus) return d.name;
    }
    return domains.back().name;
  }
};

// A cluster of `gpus` devices: the scale-up domain (when the cluster spans more than one, or as the
// whole cluster otherwise) and the network. Throws InputError when gpus < 1.
Cluster MakeCluster(const HardwareSpec& device, int64_t gpus);

}  // namespace mosaic
