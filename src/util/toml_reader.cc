#include "mosaic/util/toml_reader.h"

#include <fmt/format.h>

#include <cmath>

#include "mosaic/util/spellcheck.h"

namespace mosaic {

void TableReader::Read(const toml::table& table, std::string_view context) const {
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    const SourceLocation where = LocationOf(node, origin_, text_);
    auto it = handlers_.find(name);
    if (it == handlers_.end()) {
      std::vector<std::string> names;
      for (const auto& [known, unused] : handlers_) names.push_back(known);
      throw LocatedError(KeyLocationOf(key, node, origin_, text_),
                         fmt::format("unknown key '{}' in {}{}", name, context,
                                            DidYouMean(name, names)));
    }
    it->second(node, where);
  }
}

std::string GetString(const toml::node& node, const SourceLocation& where, std::string_view key) {
  if (auto v = node.as_string()) return v->get();
  throw FieldError(where, key, TomlValueText(node), fmt::format("{} is a string", key));
}

int64_t GetPositiveInt(const toml::node& node, const SourceLocation& where, std::string_view key,
                       int64_t minimum) {
  auto v = node.as_integer();
  if (!v && node.is_floating_point()) {
    // 8.0 or 1e9 is a float in TOML, whatever its value.
    throw FieldError(where, key, TomlValueText(node) + " (a float)",
                     fmt::format("{} is an integer, written without a decimal point or exponent",
                                 key));
  }
  if (!v) throw FieldError(where, key, TomlValueText(node), fmt::format("{} is an integer", key));
  if (v->get() < minimum) {
    throw FieldError(where, key, std::to_string(v->get()), fmt::format("{} >= {}", key, minimum));
  }
  return v->get();
}

double GetNumber(const toml::node& node, const SourceLocation& where, std::string_view key) {
  double value = NAN;
  if (auto v = node.as_floating_point()) {
    value = v->get();
  } else if (auto i = node.as_integer()) {
    value = static_cast<double>(i->get());
  } else {
    throw FieldError(where, key, TomlValueText(node), fmt::format("{} is a number", key));
  }
  return value;
}

bool GetBool(const toml::node& node, const SourceLocation& where, std::string_view key) {
  if (auto v = node.as_boolean()) return v->get();
  throw FieldError(where, key, TomlValueText(node),
                   fmt::format("{} is a boolean (true or false)", key));
}

const toml::table& GetTable(const toml::node& node, const SourceLocation& where,
                            std::string_view key) {
  if (auto t = node.as_table()) return *t;
  throw FieldError(where, key, TomlValueText(node), fmt::format("{} is a table", key));
}

const toml::array& GetTableArray(const toml::node& node, const SourceLocation& where,
                                 std::string_view key) {
  auto array = node.as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    throw FieldError(where, key, TomlValueText(node),
                     fmt::format("{} is an array of tables ([[{}]])", key, key));
  }
  return *array;
}

std::vector<std::string> GetStringArray(const toml::node& node, const SourceLocation& where,
                                        std::string_view key) {
  auto array = node.as_array();
  std::vector<std::string> values;
  if (array != nullptr) {
    for (const toml::node& element : *array) {
      auto s = element.as_string();
      if (s == nullptr) {
        values.clear();
        array = nullptr;
        break;
      }
      values.push_back(s->get());
    }
  }
  if (array == nullptr) {
    throw FieldError(where, key, TomlValueText(node),
                     fmt::format("{} is an array of strings, e.g. [\"a\", \"b\"]", key));
  }
  return values;
}

SourceLocation FileLocation(const std::string& origin) {
  SourceLocation where;
  where.origin = origin;
  return where;
}

}  // namespace mosaic
