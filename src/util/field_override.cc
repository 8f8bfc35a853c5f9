#include "mosaic/util/field_override.h"

#include <fmt/format.h>

namespace mosaic {

FieldOverride ParseFieldOverride(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw UsageError(fmt::format(
        "--set {}: expected FIELD=VALUE (for example --set d_model=1024)", text));
  }
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)), {}};
}

}  // namespace mosaic
