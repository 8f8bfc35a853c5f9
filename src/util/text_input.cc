#include "mosaic/util/text_input.h"

#include "mosaic/util/atomic_file.h"

namespace mosaic {

std::string ReadTextFile(const std::string& path) {
  std::string text = ReadFile(path);
  if (std::string_view(text).starts_with(kUtf8ByteOrderMark)) {
    text.erase(0, kUtf8ByteOrderMark.size());
  }
  return text;
}

}  // namespace mosaic
