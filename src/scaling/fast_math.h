// exp and log written as straight-line arithmetic (no calls, no branches) so that loops over
// points that use them vectorise. Cody–Waite range reduction (Muller, "Elementary Functions",
// 2016, ch. 11) and a Taylor polynomial for exp; the atanh series 2·atanh((m−1)/(m+1)) for log.
// Both are within a few units in the last place of the libm results over the range the fit uses.
#pragma once

#include <bit>
#include <cstdint>

namespace mosaic::scaling {

// e^x; 0 for x < −708 (no subnormal results), +inf above 709.78; NaN stays NaN.
inline double FastExp(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShifter = 0x1.8p52;  // adding it rounds to an integer held in the low bits
  const double clamped = x > 709.0 ? 709.0 : x;
  const double shifted = clamped * kLog2e + kShifter;
  const double k = shifted - kShifter;
  const double r = (clamped - k * kLn2Hi) - k * kLn2Lo;  // |r| <= ln2/2
  // Taylor series to r^13/13! (truncation below 2e-17 relative for |r| <= 0.347).
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const uint64_t bits = std::bit_cast<uint64_t>(shifted);
  const double scale = std::bit_cast<double>((bits + 1023) << 52);  // 2^k
  const double result = p * scale;
  const double high = x > 709.78 ? __builtin_inf() : result;
  return x < -708.0 ? 0.0 : high;
}

// log(x) for normal x > 0.
inline double FastLog(double x) {
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kSqrt2 = 1.4142135623730951;
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  const double mantissa =
      std::bit_cast<double>((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);  // [1, 2)
  const double biased = std::bit_cast<double>((bits >> 52) | 0x4330000000000000ull) - 0x1p52;
  const bool high = mantissa > kSqrt2;
  const double m = high ? 0.5 * mantissa : mantissa;  // [√2/2, √2]
  const double e = (high ? biased + 1.0 : biased) - 1023.0;
  const double f = m - 1.0;
  const double s = f / (2.0 + f);  // |s| <= 0.1716
  const double s2 = s * s;
  // 2·atanh(s) = 2s·Σ s^(2j)/(2j+1), to j = 10 (truncation below 3e-17 relative).
  double p = 1.0 / 21;
  p = p * s2 + 1.0 / 19;
  p = p * s2 + 1.0 / 17;
  p = p * s2 + 1.0 / 15;
  p = p * s2 + 1.0 / 13;
  p = p * s2 + 1.0 / 11;
  p = p * s2 + 1.0 / 9;
  p = p * s2 + 1.0 / 7;
  p = p * s2 + 1.0 / 5;
  p = p * s2 + 1.0 / 3;
  // log m = f − 2s·(f/2 − s2·p'), written as f − (s·f − 2s·s2·p) to keep the leading term exact.
  const double log_m = f - (s * f - 2.0 * s * s2 * p);
  return e * kLn2Hi + (log_m + e * kLn2Lo);
}

}  // namespace mosaic::scaling
