// CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78) and the TFRecord mask.
//
// TFRecord frames carry masked CRC32C checksums (tensorflow/core/lib/hash/crc32c.h):
//   masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8   (mod 2^32).
// Known values (docs/logs.md): CRC32C("123456789") = 0xe3069283; 32 zero bytes -> 0x8a9136aa.
// The SSE4.2 `crc32` instruction computes exactly this polynomial; it is used when the CPU has it
// (checked once at run time) and a portable slicing-by-8 table implementation otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mosaic::runs {

// CRC32C of `size` bytes at `data`, continuing from `crc` (the CRC of the bytes before; 0 to
// start). Uses the hardware instruction when available.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

// CRC32C of `data`.
inline uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data.data(), data.size()); }

// The portable table implementation (same results as Crc32cExtend); exposed for tests and for
// machines without SSE4.2.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size);

// True when Crc32cExtend uses the SSE4.2 instruction on this machine.
bool Crc32cIsHardwareAccelerated();

// The TFRecord mask of a CRC and its inverse.
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace mosaic::runs
