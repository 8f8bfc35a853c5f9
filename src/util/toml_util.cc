#include "mosaic/util/toml_util.h"

#include <fmt/format.h>

#include <sstream>

namespace mosaic {

std::string LineOf(std::string_view text, int line) {
  if (line < 1) return "";
  size_t start = 0;
  for (int i = 1; i < line; ++i) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return "";
    ++start;
  }
  size_t end = text.find('\n', start);
  std::string_view result = text.substr(start, end == std::string_view::npos ? text.npos : end - start);
  if (!result.empty() && result.back() == '\r') result.remove_suffix(1);
  return std::string(result);
}

toml::table ParseToml(std::string_view text, const std::string& origin) {
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& error) {
    SourceLocation where{origin, static_cast<int>(error.source().begin.line),
                         static_cast<int>(error.source().begin.column),
                         LineOf(text, static_cast<int>(error.source().begin.line))};
    std::string description(error.description());
    // toml++ 3.x garbles a quoted key in its redefinition message ('profiles."memegatron-h100"'
    // for [profiles."megatron-h100"]): name the header as the line writes it.
    constexpr std::string_view kRedefined = "cannot redefine existing table '";
    const size_t at = description.find(kRedefined);
    const size_t open = where.source_line.find('[');
    const size_t close = where.source_line.rfind(']');
    if (at != std::string::npos && open != std::string::npos && close != std::string::npos &&
        close > open) {
      std::string header = where.source_line.substr(open + 1, close - open - 1);
      if (header.size() > 2 && header.front() == '[' && header.back() == ']') {
        header = header.substr(1, header.size() - 2);  // an array-of-tables header [[...]]
      }
      description = description.substr(0, at + kRedefined.size()) + header + "'";
    }
    throw LocatedError(where, "TOML syntax error: " + description);
  }
}

SourceLocation LocationOf(const toml::node& node, const std::string& origin, std::string_view text) {
  const int line = static_cast<int>(node.source().begin.line);
  return SourceLocation{origin, line, static_cast<int>(node.source().begin.column),
                        LineOf(text, line)};
}

SourceLocation KeyLocationOf(const toml::key& key, const toml::node& node, const std::string& origin,
                             std::string_view text) {
  if (key.source().begin.line == 0) return LocationOf(node, origin, text);
  const int line = static_cast<int>(key.source().begin.line);
  return SourceLocation{origin, line, static_cast<int>(key.source().begin.column),
                        LineOf(text, line)};
}

std::string TomlValueText(const toml::node& node) {
  if (node.is_table() || node.is_array()) return fmt::format("<{}>", TomlTypeName(node));
  // The shortest text that reads back as the same double (toml++ prints 17 digits: 0.1 would
  // read 0.10000000000000001 in a message), and still a float: 24.0, not 24, so that "layers is
  // of type integer" shows what was written.
  if (const auto* f = node.as_floating_point()) {
    std::string text = fmt::format("{}", f->get());
    if (text.find_first_not_of("-0123456789") == std::string::npos) text += ".0";
    return text;
  }
  std::ostringstream text;
  node.visit([&](const auto& value) { text << value; });
  return text.str();
}

std::string_view TomlTypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::none: return "nothing";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
  }
  return "?";
}

}  // namespace mosaic
