// TOML parsing with mosaic's error style (toml++ underneath).
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "mosaic/util/error.h"

namespace mosaic {

// Parses `text`. On a syntax error throws InputError "origin:line:col: <description>" with the
// offending line and a caret.
toml::table ParseToml(std::string_view text, const std::string& origin);

// Where `node` sits in `text` (line, column, the line's text), labelled with `origin`.
SourceLocation LocationOf(const toml::node& node, const std::string& origin, std::string_view text);

// Where `key` (of `node`) was written, for messages about the key itself (an unknown key): the
// caret under the key, not its value. The value's location when the key has none (a table built
// in code).
SourceLocation KeyLocationOf(const toml::key& key, const toml::node& node, const std::string& origin,
                             std::string_view text);

// The 1-based line `line` of `text` without its newline; "" when out of range.
std::string LineOf(std::string_view text, int line);

// `node` as it would be written in TOML for scalars ("big" quoted, 12, 1.5, true), or its type in
// angle brackets for tables and arrays ("<table>"); for error messages.
std::string TomlValueText(const toml::node& node);

// The TOML type of `node` in words ("integer", "string", ...).
std::string_view TomlTypeName(const toml::node& node);

}  // namespace mosaic
