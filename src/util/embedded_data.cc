#include "mosaic/util/embedded_data.h"

#include <algorithm>

namespace mosaic {

std::optional<std::string_view> FindEmbeddedFile(std::string_view path) {
  for (const EmbeddedFile& file : EmbeddedFiles()) {
    if (file.path == path) return file.content;
  }
  return std::nullopt;
}

std::vector<std::string> EmbeddedTomlNames(std::string_view folder) {
  constexpr std::string_view kSuffix = ".toml";
  const std::string prefix = std::string(folder) + "/";
  std::vector<std::string> names;
  for (const EmbeddedFile& file : EmbeddedFiles()) {
    if (file.path.starts_with(prefix) && file.path.ends_with(kSuffix)) {
      std::string_view name = file.path.substr(prefix.size());
      names.emplace_back(name.substr(0, name.size() - kSuffix.size()));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace mosaic
