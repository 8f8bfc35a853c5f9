// Parsing enums from their names: every enum that reaches the CLI or JSON has a ToString, and its
// FromString is the inverse over the listed enumerators.
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>

namespace mosaic {

// The enumerator of `values` whose ToString(value) (found by argument-dependent lookup) equals
// `text`, or nullopt when none does.
template <typename Enum>
std::optional<Enum> EnumFromString(std::string_view text, std::initializer_list<Enum> values) {
  for (Enum value : values) {
    if (ToString(value) == text) return value;
  }
  return std::nullopt;
}

}  // namespace mosaic
