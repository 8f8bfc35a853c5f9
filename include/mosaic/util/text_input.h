// Text input shared by every reader of user files (CSV and JSONL logs, fit tables): the bytes as
// the reader should see them. A UTF-8 byte-order mark (EF BB BF), which spreadsheets and some
// Windows tools write at the start of a file, is not part of the first column name or key: it is
// removed here, once, for every reader.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace mosaic {

inline constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

// `text` without a leading UTF-8 byte-order mark (unchanged when it has none).
inline std::string_view StripByteOrderMark(std::string_view text) {
  if (text.starts_with(kUtf8ByteOrderMark)) text.remove_prefix(kUtf8ByteOrderMark.size());
  return text;
}

// `text` without the spaces at either end, as the KEY=VALUE lists of flags (--layout, --param,
// --predict) read each key and value.
inline std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

// `text` without the ASCII whitespace (space, tab, line breaks, vertical tab, form feed) at
// either end, as a measurement CSV reads every cell (perf/measurements.h).
inline std::string_view TrimAsciiWhitespace(std::string_view text) {
  constexpr std::string_view kWhitespace = " \t\n\v\f\r";
  const size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kWhitespace) - first + 1);
}

// The number `text` writes when the whole of it is one decimal number (std::from_chars' general
// format: an optional '-', digits with an optional point, an optional exponent; "inf" and "nan"
// too, so a caller that needs a finite value checks it), else nullopt. Unlike strtod it reads no
// hexadecimal ("0x510", "0x1p10"), no leading '+' or space, and nothing after the number
// ("12abc"); a value past a double's range (1e400) is none.
inline std::optional<double> ParseDecimal(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Reads the whole file at `path` as text, without a leading byte-order mark. Throws InputError
// naming the path when it cannot be read (atomic_file.h ReadFile).
std::string ReadTextFile(const std::string& path);

}  // namespace mosaic
