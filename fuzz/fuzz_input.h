// The input layout shared by the parser fuzz targets: the first byte selects a variant (which
// parser, which options), the rest is text cut into sections at lines that read exactly "%%".
// Seeds in fuzz/corpus/<target>/ are written in this layout (fuzz/corpus/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic::fuzz {

struct FuzzInput {
  uint8_t selector = 0;
  std::vector<std::string_view> sections;  // at least one (possibly empty)

  // Section `i`, or "" when the input has fewer.
  std::string_view Section(size_t i) const { return i < sections.size() ? sections[i] : ""; }
  // The lines of section `i` (without their '\n'), empty lines left out.
  std::vector<std::string_view> Lines(size_t i) const {
    std::vector<std::string_view> lines;
    std::string_view text = Section(i);
    while (!text.empty()) {
      const size_t end = text.find('\n');
      std::string_view line = text.substr(0, end);
      if (!line.empty()) lines.push_back(line);
      if (end == std::string_view::npos) break;
      text.remove_prefix(end + 1);
    }
    return lines;
  }
};

inline FuzzInput SplitFuzzInput(const uint8_t* data, size_t size) {
  FuzzInput input;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!text.empty()) {
    input.selector = static_cast<uint8_t>(text[0]);
    text.remove_prefix(1);
  }
  constexpr std::string_view kSeparator = "\n%%\n";
  while (true) {
    const size_t at = text.find(kSeparator);
    if (at == std::string_view::npos) break;
    input.sections.push_back(text.substr(0, at));
    text.remove_prefix(at + kSeparator.size());
  }
  input.sections.push_back(text);
  return input;
}

// Runs `body`, letting only the documented input errors (InputError, UsageError) end it quietly:
// any other exception escapes and libFuzzer reports it as a crash.
template <typename Body>
void ExpectOnlyInputErrors(Body&& body) {
  try {
    body();
  } catch (const InputError&) {
  } catch (const UsageError&) {
  }
}

}  // namespace mosaic::fuzz
