// JSON text for output. Strings that reach JSON come from file names, log tags and CSV headers,
// which need not be UTF-8 (a Latin-1 tag, a folder named in Windows-1252); JSON text must be. Every
// JSON that mosaic writes is dumped here, with each invalid UTF-8 byte replaced by U+FFFD, so the
// output is always valid JSON. Text and CSV outputs keep the original bytes.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace mosaic {

// `value` as JSON text: indented by `indent` spaces per level, or on one line for indent < 0 (as
// nlohmann::json::dump); invalid UTF-8 in strings becomes U+FFFD. No trailing newline.
std::string DumpJson(const nlohmann::ordered_json& value, int indent = 2);

}  // namespace mosaic
