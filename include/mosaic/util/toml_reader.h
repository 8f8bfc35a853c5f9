// Reading TOML tables key by key with mosaic's error style: each known key has a handler, an
// unknown key is an error with "did you mean", and typed getters name the file, line, column,
// key, value and rule of a wrong value. Used by the study loader and its decision sections.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/util/toml_util.h"

namespace mosaic {

class TableReader {
 public:
  using Handler = std::function<void(const toml::node&, const SourceLocation&)>;

  // `text` is the whole document (for carets) and `origin` its name in messages; both must
  // outlive the reader.
  TableReader(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  void On(std::string key, Handler handler) { handlers_.emplace(std::move(key), std::move(handler)); }

  // Calls the handler of every key of `table`, in document order. Throws InputError located at
  // an unknown key, naming `context` (e.g. "[results]") and the closest known key.
  void Read(const toml::table& table, std::string_view context) const;

  SourceLocation Locate(const toml::node& node) const { return LocationOf(node, origin_, text_); }
  const std::string& origin() const { return origin_; }
  std::string_view text() const { return text_; }

 private:
  std::string_view text_;
  std::string origin_;
  std::map<std::string, Handler> handlers_;
};

// Typed getters: each throws FieldError(where, key, value as written, rule) on a wrong type or
// range.
std::string GetString(const toml::node& node, const SourceLocation& where, std::string_view key);
// An integer >= minimum.
int64_t GetPositiveInt(const toml::node& node, const SourceLocation& where, std::string_view key,
                       int64_t minimum = 1);
// A number (integer or float; TOML also allows inf and nan: callers check their range).
double GetNumber(const toml::node& node, const SourceLocation& where, std::string_view key);
bool GetBool(const toml::node& node, const SourceLocation& where, std::string_view key);
const toml::table& GetTable(const toml::node& node, const SourceLocation& where,
                            std::string_view key);
// [[key]] arrays of tables.
const toml::array& GetTableArray(const toml::node& node, const SourceLocation& where,
                                 std::string_view key);
// An array of strings (["a", "b"]).
std::vector<std::string> GetStringArray(const toml::node& node, const SourceLocation& where,
                                        std::string_view key);

// The location of a whole file, for errors about a missing key.
SourceLocation FileLocation(const std::string& origin);

}  // namespace mosaic
