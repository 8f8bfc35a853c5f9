#include "mosaic/runs/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace mosaic::runs {
namespace {

TEST(Crc32c, KnownValuesFromLogsDoc) {
  EXPECT_EQ(Crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8a9136aau);
  EXPECT_EQ(Crc32cExtendPortable(0, "123456789", 9), 0xe3069283u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(Crc32cExtendPortable(0, zeros.data(), zeros.size()), 0x8a9136aau);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32c, HardwareAndPortableAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(12345);
  std::string data(300, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t length = 0; length + offset <= data.size(); length += 7) {
      ASSERT_EQ(Crc32cExtend(0, data.data() + offset, length),
                Crc32cExtendPortable(0, data.data() + offset, length))
          << "offset " << offset << " length " << length;
    }
  }
}

TEST(Crc32c, ExtendEqualsWholeComputation) {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  const uint32_t head = Crc32cExtend(0, text.data(), 10);
  EXPECT_EQ(Crc32cExtend(head, text.data() + 10, text.size() - 10), Crc32c(text));
  EXPECT_EQ(Crc32cExtendPortable(Crc32cExtendPortable(0, text.data(), 13), text.data() + 13,
                                 text.size() - 13),
            Crc32c(text));
}

TEST(Crc32c, MaskRoundTripsAndMatchesFormula) {
  const uint32_t crc = 0xe3069283u;
  EXPECT_EQ(MaskCrc32c(crc), static_cast<uint32_t>(((crc >> 15) | (crc << 17)) + 0xa282ead8u));
  for (uint32_t v : {0u, 1u, 0xffffffffu, 0x12345678u, crc}) EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(v)), v);
}

}  // namespace
}  // namespace mosaic::runs
