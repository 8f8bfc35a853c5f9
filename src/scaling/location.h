// Where an error points, for the scaling sources: SourceLocation built field by field.
#pragma once

#include <string>
#include <utility>

#include "mosaic/util/error.h"

namespace mosaic::scaling {

inline SourceLocation At(std::string origin, int line = 0, int column = 0,
                         std::string source_line = "") {
  SourceLocation where;
  where.origin = std::move(origin);
  where.line = line;
  where.column = column;
  where.source_line = std::move(source_line);
  return where;
}

}  // namespace mosaic::scaling
