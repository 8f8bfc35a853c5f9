#include "mosaic/util/shortest_decimal.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace mosaic {
namespace {

std::string Ours(double v) {
  char buffer[64];
  return std::string(buffer, ShortestToChars(buffer, buffer + sizeof buffer, v).ptr);
}
std::string Ours(float v) {
  char buffer[64];
  return std::string(buffer, ShortestToChars(buffer, buffer + sizeof buffer, v).ptr);
}
std::string OursFixed(double v) {
  char buffer[400];
  return std::string(buffer, ShortestFixedToChars(buffer, buffer + sizeof buffer, v).ptr);
}
template <typename T>
std::string Standard(T v) {
  char buffer[64];
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, v).ptr);
}
std::string StandardFixed(double v) {
  char buffer[400];
  return std::string(buffer,
                     std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed).ptr);
}

TEST(ShortestDecimal, KnownTexts) {
  EXPECT_EQ(Ours(0.1), "0.1");
  EXPECT_EQ(Ours(1e-7), "1e-07");
  EXPECT_EQ(Ours(123456.0), "123456");
  EXPECT_EQ(Ours(1e22), "1e+22");
  EXPECT_EQ(Ours(10000.0), "10000");  // a tie with "1e+04": fixed
  EXPECT_EQ(Ours(100000.0), "1e+05");
  EXPECT_EQ(Ours(-0.0), "-0");
  EXPECT_EQ(Ours(5e-324), "5e-324");
  EXPECT_EQ(Ours(4.9337287f), "4.9337287");
  EXPECT_EQ(Ours(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(OursFixed(1700000000.0), "1700000000");
  EXPECT_EQ(OursFixed(1700000000.25), "1700000000.25");
  EXPECT_EQ(OursFixed(1e-7), "0.0000001");
}

// Every class of value, each compared with std::to_chars (the reference the functions claim to
// reproduce byte for byte): random bit patterns (subnormals, huge and tiny exponents, NaN
// payloads), decimals with few digits (ties between forms), integers around the exact ranges
// (2^24, 2^53), powers of ten and their neighbours, and wall-time-like values.
TEST(ShortestDecimal, AgreesWithStdToChars) {
  std::mt19937_64 random(20261201);
  std::vector<double> doubles;
  std::vector<float> floats;
  for (int i = 0; i < 300000; ++i) {
    doubles.push_back(std::bit_cast<double>(random()));
    floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(random())));
  }
  for (int i = 0; i < 100000; ++i) {
    const double digits = static_cast<double>(random() % 100000);
    const int exponent = static_cast<int>(random() % 60) - 30;
    doubles.push_back(digits * std::pow(10.0, exponent));
    floats.push_back(static_cast<float>(digits * std::pow(10.0, exponent)));
    doubles.push_back(1.7e9 + static_cast<double>(random() % 10000000) * 1e-3);
  }
  for (int e = -330; e <= 310; ++e) {
    const double p = std::pow(10.0, e);
    doubles.insert(doubles.end(), {p, std::nextafter(p, 0.0), std::nextafter(p, 1e308)});
    const float f = static_cast<float>(p);
    floats.insert(floats.end(), {f, std::nextafter(f, 0.0f), std::nextafter(f, 1e38f)});
  }
  for (int shift : {23, 24, 25, 52, 53, 54, 60, 63}) {
    for (int64_t d = -3; d <= 3; ++d) {
      const double v = std::ldexp(1.0, shift) + static_cast<double>(d) * std::ldexp(1.0, shift - 52);
      doubles.insert(doubles.end(), {v, -v, v * 10, v * 1000});
      floats.insert(floats.end(), {static_cast<float>(v), static_cast<float>(v * 10)});
    }
  }
  for (double special : {0.0, -0.0, std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::max(),
                         std::numeric_limits<double>::min(), std::numeric_limits<double>::denorm_min(),
                         123456789012345678.0, 12345678901234567890.0}) {
    doubles.push_back(special);
    floats.push_back(static_cast<float>(special));
  }
  int mismatches = 0;
  for (double v : doubles) {
    if (Ours(v) != Standard(v) || OursFixed(v) != StandardFixed(v)) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << "double bits " << std::bit_cast<uint64_t>(v) << ": " << Ours(v) << " / "
                      << Standard(v) << ", fixed " << OursFixed(v) << " / " << StandardFixed(v);
      }
    }
  }
  for (float v : floats) {
    if (Ours(v) != Standard(v)) {
      if (++mismatches <= 20) {
        ADD_FAILURE() << "float bits " << std::bit_cast<uint32_t>(v) << ": " << Ours(v) << " / "
                      << Standard(v);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(ShortestDecimal, IntegersAgreeWithStdToChars) {
  std::vector<int64_t> values = {0, 1, -1, 9, 10, 99, 100, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()};
  for (int64_t p = 1; p <= std::numeric_limits<int64_t>::max() / 10; p *= 10) {
    values.insert(values.end(), {p - 1, p, p + 1, -p, 10 * p - 1});
  }
  std::mt19937_64 random(7);
  for (int i = 0; i < 100000; ++i) {
    values.push_back(static_cast<int64_t>(random()) >> (random() % 64));
  }
  for (int64_t v : values) {
    char ours[24];
    char standard[24];
    const std::string a(ours, WriteInteger(ours, v));
    const std::string b(standard, std::to_chars(standard, standard + sizeof standard, v).ptr);
    ASSERT_EQ(a, b) << v;
  }
}

TEST(ShortestDecimal, TooSmallARangeIsAnErrorLikeStdToChars) {
  char buffer[4];
  const std::to_chars_result ours = ShortestToChars(buffer, buffer + sizeof buffer, 0.123456);
  EXPECT_EQ(ours.ec, std::errc::value_too_large);
  EXPECT_EQ(ours.ptr, buffer + sizeof buffer);
}

}  // namespace
}  // namespace mosaic
