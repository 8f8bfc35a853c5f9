#include "mosaic/util/shortest_decimal.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace mosaic {
namespace {

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

constexpr uint64_t kPowersOf10[] = {1,
                                    10,
                                    100,
                                    1000,
                                    10000,
                                    100000,
                                    1000000,
                                    10000000,
                                    100000000,
                                    1000000000,
                                    10000000000,
                                    100000000000,
                                    1000000000000,
                                    10000000000000,
                                    100000000000000,
                                    1000000000000000,
                                    10000000000000000,
                                    100000000000000000,
                                    1000000000000000000,
                                    10000000000000000000u};

// The number of decimal digits of `v`: log10 from the bit length (1233 / 4096 ≈ log10(2)),
// corrected by one comparison.
int DecimalDigits(uint64_t v) {
  v |= 1;  // 0 has one digit; no other count changes (10^k is even, 10^k - 1 odd)
  const int bits = 64 - std::countl_zero(v);
  const int guess = (bits * 1233) >> 12;
  return guess + (v >= kPowersOf10[guess] ? 1 : 0);
}

void WritePair(char* out, uint32_t two_digits) {
  std::memcpy(out, kDigitPairs + 2 * two_digits, 2);
}

// The 8 digits of `v` < 10^8, with leading zeros, at `out` (32-bit arithmetic only).
void WriteEightDigits(char* out, uint32_t v) {
  const uint32_t high = v / 10000;
  const uint32_t low = v % 10000;
  WritePair(out, high / 100);
  WritePair(out + 2, high % 100);
  WritePair(out + 4, low / 100);
  WritePair(out + 6, low % 100);
}

// Writes the `n` decimal digits of `v` (n = DecimalDigits(v)) at `out`.
void WriteDigits(char* out, uint64_t v, int n) {
  char* p = out + n;
  while (v >= 100000000) {
    p -= 8;
    WriteEightDigits(p, static_cast<uint32_t>(v % 100000000));
    v /= 100000000;
  }
  auto w = static_cast<uint32_t>(v);
  while (w >= 100) {
    p -= 2;
    WritePair(p, w % 100);
    w /= 100;
  }
  if (w >= 10) {
    WritePair(p - 2, w);
  } else {
    p[-1] = static_cast<char>('0' + w);
  }
}

// The longest text the fast path writes: a sign and the fixed form of a value whose fixed form is
// at most as long as its scientific one (at most 17 digits, a point and an exponent of 3 digits),
// or a forced fixed form kept within this many characters.
constexpr ptrdiff_t kRoom = 40;

template <typename T>
std::to_chars_result Shortest(char* first, char* last, T value, bool fixed_only) {
  const auto fallback = [&] {
    return fixed_only ? std::to_chars(first, last, value, std::chars_format::fixed)
                      : std::to_chars(first, last, value);
  };
  if (!std::isfinite(value) || last - first < kRoom) return fallback();
  char* out = first;
  T magnitude = value;
  if (std::signbit(value)) {
    *out++ = '-';
    magnitude = -value;
  }
  if (magnitude == 0) {
    *out++ = '0';
    return {out, std::errc()};
  }
  const auto decimal = fmt::detail::dragonbox::to_decimal(magnitude);
  uint64_t significand = decimal.significand;
  int exponent = decimal.exponent;  // magnitude = significand × 10^exponent, shortest digits
  while (significand % 10 == 0) {
    significand /= 10;
    ++exponent;
  }
  const int n = DecimalDigits(significand);
  const int exponent10 = exponent + n - 1;  // of the scientific form d.ddd × 10^exponent10
  const int fixed_length = exponent >= 0 ? n + exponent : (-exponent < n ? n + 1 : 2 - exponent);
  const int scientific_length =
      n + (n > 1 ? 1 : 0) + 2 + (exponent10 >= 100 || exponent10 <= -100 ? 3 : 2);
  if (fixed_only || fixed_length <= scientific_length) {
    // An integer beyond the type's exact range has more exact digits than shortest ones.
    constexpr T kExactIntegers = static_cast<T>(uint64_t{1} << std::numeric_limits<T>::digits);
    if (fixed_length > kRoom - 1 || (exponent > 0 && magnitude >= kExactIntegers)) {
      return fallback();
    }
    if (exponent >= 0) {
      WriteDigits(out, significand, n);
      std::memset(out + n, '0', static_cast<size_t>(exponent));
      return {out + n + exponent, std::errc()};
    }
    const int fraction = -exponent;
    if (fraction < n) {
      // ddd.dd: the integer digits, then the point and the fraction's digits moved after it.
      WriteDigits(out + 1, significand, n);
      std::memmove(out, out + 1, static_cast<size_t>(n - fraction));
      out[n - fraction] = '.';
      return {out + n + 1, std::errc()};
    }
    // 0.000ddd
    out[0] = '0';
    out[1] = '.';
    std::memset(out + 2, '0', static_cast<size_t>(fraction - n));
    WriteDigits(out + 2 + fraction - n, significand, n);
    return {out + 2 + fraction, std::errc()};
  }
  // d.ddde±XX
  WriteDigits(out + 1, significand, n);
  out[0] = out[1];
  if (n > 1) {
    out[1] = '.';
    out += n + 1;
  } else {
    out += 1;
  }
  *out++ = 'e';
  *out++ = exponent10 < 0 ? '-' : '+';
  int e = exponent10 < 0 ? -exponent10 : exponent10;
  if (e >= 100) {
    *out++ = static_cast<char>('0' + e / 100);
    e %= 100;
  }
  std::memcpy(out, kDigitPairs + 2 * e, 2);
  return {out + 2, std::errc()};
}

}  // namespace

std::to_chars_result ShortestToChars(char* first, char* last, double value) {
  return Shortest(first, last, value, false);
}

std::to_chars_result ShortestToChars(char* first, char* last, float value) {
  return Shortest(first, last, value, false);
}

char* WriteInteger(char* out, int64_t value) {
  uint64_t magnitude = static_cast<uint64_t>(value);
  if (value < 0) {
    *out++ = '-';
    magnitude = ~magnitude + 1;
  }
  const int n = DecimalDigits(magnitude);
  WriteDigits(out, magnitude, n);
  return out + n;
}

std::to_chars_result ShortestFixedToChars(char* first, char* last, double value) {
  return Shortest(first, last, value, true);
}

}  // namespace mosaic
