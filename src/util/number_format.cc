#include "mosaic/util/number_format.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace mosaic {

std::string FormatThousands(int64_t value) {
  // The magnitude as unsigned, valid for INT64_MIN too.
  const uint64_t magnitude = value < 0 ? uint64_t(-(value + 1)) + 1 : uint64_t(value);
  const std::string digits = std::to_string(magnitude);
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count > 0 && count % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return value < 0 ? "-" + out : out;
}

std::string FormatCount(double value) {
  static constexpr struct {
    double scale;
    const char* suffix;
  } kUnits[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  const double magnitude = std::fabs(value);
  if (!std::isfinite(value) || magnitude >= 1e15 || (magnitude < 1e-3 && value != 0)) {
    return FormatScientific(value);
  }
  for (const auto& unit : kUnits) {
    if (magnitude >= unit.scale) {
      double scaled = value / unit.scale;
      return fmt::format("{:.{}f}{}", scaled, std::fabs(scaled) < 10 ? 2 : 1, unit.suffix);
    }
  }
  return fmt::format("{:g}", value);
}

std::string FormatFixed(double value, int decimals) {
  const double magnitude = std::fabs(value);
  if (value != 0 && !(magnitude >= 1e-3 && magnitude < 1e6)) return FormatScientific(value);
  std::string text = fmt::format("{:.{}f}", value, decimals);
  // A value that rounds to zero from below prints as 0, not -0.0.
  if (text.starts_with('-') && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

std::string FormatSignedPercent(double fraction, int decimals) {
  std::string text = fmt::format("{:+.{}f}", 100 * fraction, decimals);
  if (text.find_first_not_of("+-0.") == std::string::npos) text.erase(0, 1);
  return text + "%";
}

std::string FormatScientific(double value, int significant) {
  if (value == 0 || !std::isfinite(value)) return fmt::format("{}", value);
  std::string text = fmt::format("{:.{}e}", value, significant - 1);
  // fmt writes "4.81e+19"; the seed tables write "4.81e19".
  size_t e = text.find('e');
  std::string mantissa = text.substr(0, e);
  int exponent = std::atoi(text.c_str() + e + 1);
  return fmt::format("{}e{}", mantissa, exponent);
}

std::string FormatExact(double value) { return fmt::format("{}", value); }

}  // namespace mosaic
