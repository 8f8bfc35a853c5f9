// Loading model configs: the presets shipped in data/models/*.toml (compiled in), user TOML files,
// and `--set FIELD=VALUE` overrides, followed by family derivation and validation. Every error
// names the file (or preset / flag), line and column where known, the field, the value and the rule.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/model/model_config.h"
#include "mosaic/util/error.h"
#include "mosaic/util/field_override.h"

namespace mosaic {

// A loaded, validated model with how it was obtained.
struct ModelSpec {
  ModelConfig config;
  std::string origin;                   // "preset mixtral-8x7b" or the file path
  std::vector<std::string> derivation;  // family derivation lines (empty for most models)
  std::vector<std::string> overrides;   // the --set overrides applied, as "field=value"
};

// Names of the shipped presets, sorted.
std::vector<std::string> PresetNames();

// Loads `name_or_path`: a path to a TOML file when it names an existing file or ends in ".toml",
// else a preset name. Applies `overrides` in order, derives family fields, validates.
// Throws InputError: unknown preset (with "did you mean" and the list), unreadable file, TOML syntax
// error (file:line:col, the line and a caret), unknown field (did you mean), wrong value type,
// and any Validate violation (located at the field's line or at the --set flag).
ModelSpec LoadModel(std::string_view name_or_path, std::span<const FieldOverride> overrides = {});

// Loads a model from TOML text; `origin` names it in messages (a path or "preset NAME").
ModelSpec LoadModelFromToml(std::string_view toml_text, const std::string& origin,
                            std::span<const FieldOverride> overrides = {});

}  // namespace mosaic
