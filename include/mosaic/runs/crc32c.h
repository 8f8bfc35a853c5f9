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
#include <cstring>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define MOSAIC_CRC32C_X86 1
#endif

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

#ifdef MOSAIC_CRC32C_X86
// Crc32cExtend with the SSE4.2 instruction, inlined into callers compiled for SSE4.2 (a hot loop
// over short records then pays no call). Only call it where Crc32cIsHardwareAccelerated().
__attribute__((target("sse4.2"))) inline uint32_t Crc32cExtendSse42(uint32_t crc, const void* data,
                                                                    size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    size -= 8;
  }
  // The tail (TFRecord payloads are short, so it matters) in at most three steps.
  auto c32 = static_cast<uint32_t>(c);
  if (size >= 4) {
    uint32_t word;
    std::memcpy(&word, p, 4);
    c32 = _mm_crc32_u32(c32, word);
    p += 4;
    size -= 4;
  }
  if (size >= 2) {
    uint16_t half;
    std::memcpy(&half, p, 2);
    c32 = _mm_crc32_u16(c32, half);
    p += 2;
    size -= 2;
  }
  if (size > 0) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}
#endif

// The TFRecord mask of a CRC and its inverse.
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace mosaic::runs
