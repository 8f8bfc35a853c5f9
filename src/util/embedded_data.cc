#include "mosaic/util/embedded_data.h"

namespace mosaic {

std::optional<std::string_view> FindEmbeddedFile(std::string_view path) {
  for (const EmbeddedFile& file : EmbeddedFiles()) {
    if (file.path == path) return file.content;
  }
  return std::nullopt;
}

}  // namespace mosaic
