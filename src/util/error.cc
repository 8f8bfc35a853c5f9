#include "mosaic/util/error.h"

#include <fmt/format.h>

namespace mosaic {

std::string SourceLocation::ToString() const {
  if (origin.empty()) return "";
  std::string text = origin;
  if (line > 0) {
    text += fmt::format(":{}", line);
    if (column > 0) text += fmt::format(":{}", column);
  }
  return text;
}

namespace {

std::string WithContext(const SourceLocation& where, std::string message) {
  std::string prefix = where.ToString();
  std::string text = prefix.empty() ? std::move(message) : prefix + ": " + message;
  if (!where.source_line.empty()) {
    text += "\n  " + where.source_line;
    if (where.column > 0) text += "\n  " + std::string(where.column - 1, ' ') + "^";
  }
  return text;
}

}  // namespace

InputError FieldError(const SourceLocation& where, std::string_view field, std::string_view value,
                      std::string_view rule) {
  return LocatedError(where, fmt::format("{} = {}. Violated constraint: {}", field, value, rule));
}

InputError LocatedError(const SourceLocation& where, std::string_view message) {
  return InputError(WithContext(where, std::string(message)), where, std::string(message));
}

UsageError AsUsageError(const InputError& error) { return UsageError(error.what()); }

UsageError FlagError(std::string_view flag, std::string_view value, std::string_view rule) {
  const SourceLocation where{std::string(flag), 0, 0, ""};
  return UsageError(FieldError(where, flag, value, rule).what());
}

}  // namespace mosaic
