// Number formatting shared by tables and reports.
#pragma once

#include <cstdint>
#include <string>

namespace mosaic {

// Integer with thousands separators: 9703 -> "9,703", -1234567 -> "-1,234,567".
std::string FormatThousands(int64_t value);

// Count with a K/M/B/T suffix in the style of the seed ladder table: the largest unit that keeps
// the scaled value >= 1, two decimals below 10 and one decimal from 10 on
// (54263808 -> "54.3M", 1060634624 -> "1.06B", 359643629568 -> "359.6B"). Below 1000: the number
// as is ("512", "1.5"); from 1e15 on, below 1e-3 (but 0) and non-finite: FormatScientific.
std::string FormatCount(double value);

// `decimals` fixed decimals where that reads well, 1e-3 <= |value| < 1e6 (and 0): 6.25 -> "6.2" (round half to even)
// at 1; FormatScientific otherwise (4.9211e42 -> "4.92e42", 2e-5 -> "2.00e-5"), so that no figure
// of a table runs to dozens of digits or rounds to 0. A negative zero prints as "0" (no "-0.0").
std::string FormatFixed(double value, int decimals);

// A fraction as a signed percentage with `decimals` decimals: 0.0123 -> "+1.2%", -0.5 -> "-50.0%";
// a value that rounds to zero is "0.0%", never "-0.0%" or "+0.0%".
std::string FormatSignedPercent(double fraction, int decimals = 1);

// Scientific notation with `significant` digits and a bare exponent: 4.8123e19 -> "4.81e19".
std::string FormatScientific(double value, int significant = 3);

// Round-trip decimal representation of a double (shortest string that parses back exactly).
std::string FormatExact(double value);

}  // namespace mosaic
