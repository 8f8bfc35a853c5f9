// `FIELD=VALUE` overrides of config fields (models, hardware), from `--set` flags or files.
#pragma once

#include <string>
#include <string_view>

#include "mosaic/util/error.h"

namespace mosaic {

// One `--set FIELD=VALUE` override.
struct FieldOverride {
  std::string field;
  std::string value;
  SourceLocation where;  // where it was written; empty origin means "--set FIELD=VALUE"
};

// Parses "FIELD=VALUE". Throws UsageError when there is no '=' or the field name is empty.
FieldOverride ParseFieldOverride(std::string_view text);

}  // namespace mosaic
