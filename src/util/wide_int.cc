#include "mosaic/util/wide_int.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "mosaic/util/error.h"

namespace mosaic {

std::string WideToString(WideInt value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  std::string digits;
  while (value != 0) {
    const int digit = static_cast<int>(value % 10);
    digits.push_back(static_cast<char>('0' + (negative ? -digit : digit)));
    value /= 10;
  }
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

int64_t NarrowToInt64(WideInt value, std::string_view what) {
  if (value > std::numeric_limits<int64_t>::max() || value < std::numeric_limits<int64_t>::min()) {
    throw InputError(fmt::format(
        "{} = {} does not fit in 64 bits (the model is too large to count exactly)", what,
        WideToString(value)));
  }
  return static_cast<int64_t>(value);
}

}  // namespace mosaic
