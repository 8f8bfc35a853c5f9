#include "mosaic/runs/crc32c.h"

#include <array>
#include <bit>
#include <cstring>


namespace mosaic::runs {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

// tables[k][b]: CRC of byte b followed by k zero bytes (slicing-by-8).
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolyReflected : 0u);
    tables[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 1; k < 8; ++k) {
      const uint32_t prev = tables[k - 1][b];
      tables[k][b] = (prev >> 8) ^ tables[0][prev & 0xffu];
    }
  }
  return tables;
}

constexpr auto kTables = MakeTables();

uint64_t LoadLittleEndian64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

#ifdef MOSAIC_CRC32C_X86
bool DetectHardware() { return __builtin_cpu_supports("sse4.2"); }
#endif

}  // namespace

uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (size >= 8) {
    const uint64_t word = LoadLittleEndian64(p) ^ c;
    c = kTables[7][word & 0xff] ^ kTables[6][(word >> 8) & 0xff] ^
        kTables[5][(word >> 16) & 0xff] ^ kTables[4][(word >> 24) & 0xff] ^
        kTables[3][(word >> 32) & 0xff] ^ kTables[2][(word >> 40) & 0xff] ^
        kTables[1][(word >> 48) & 0xff] ^ kTables[0][word >> 56];
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
    --size;
  }
  return ~c;
}

#ifdef MOSAIC_CRC32C_X86
namespace {
// Detected once, at start-up, so that the check per call is a plain load.
const bool kHardware = DetectHardware();
}  // namespace
#endif

bool Crc32cIsHardwareAccelerated() {
#ifdef MOSAIC_CRC32C_X86
  return kHardware;
#else
  return false;
#endif
}

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
#ifdef MOSAIC_CRC32C_X86
  if (kHardware) return Crc32cExtendSse42(crc, data, size);
#endif
  return Crc32cExtendPortable(crc, data, size);
}

}  // namespace mosaic::runs
