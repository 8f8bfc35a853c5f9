// Text input shared by every reader of user files (CSV and JSONL logs, fit tables): the bytes as
// the reader should see them. A UTF-8 byte-order mark (EF BB BF), which spreadsheets and some
// Windows tools write at the start of a file, is not part of the first column name or key: it is
// removed here, once, for every reader.
#pragma once

#include <string>
#include <string_view>

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

// Reads the whole file at `path` as text, without a leading byte-order mark. Throws InputError
// naming the path when it cannot be read (atomic_file.h ReadFile).
std::string ReadTextFile(const std::string& path);

}  // namespace mosaic
