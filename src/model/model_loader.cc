#include "mosaic/model/model_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "mosaic/model/family.h"
#include "mosaic/model/param_count.h"
#include "mosaic/util/embedded_data.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/toml_util.h"

namespace mosaic {

namespace {


const ModelField* FindField(std::string_view name) {
  for (const ModelField& field : ModelFields()) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

// The TOML value of `node` as the text SetModelField parses, or nullopt if its type is wrong.
std::optional<std::string> NodeText(const toml::node& node, FieldType type) {
  switch (type) {
    case FieldType::kInt:
      if (auto v = node.as_integer()) return std::to_string(v->get());
      return std::nullopt;
    case FieldType::kBool:
      if (auto v = node.as_boolean()) return v->get() ? "true" : "false";
      return std::nullopt;
    case FieldType::kDouble:
      if (auto v = node.as_integer()) return std::to_string(v->get());
      if (auto v = node.as_floating_point()) return fmt::format("{}", v->get());
      return std::nullopt;
    case FieldType::kString:
      if (auto v = node.as_string()) return v->get();
      return std::nullopt;
  }
  return std::nullopt;
}

std::vector<std::string> FieldNameList() {
  std::vector<std::string> names;
  for (const ModelField& field : ModelFields()) names.emplace_back(field.name);
  return names;
}

// The overrides applied, each where it was written: "--set FIELD=VALUE" for a flag, else
// "FIELD=VALUE (origin:line:column)" (a study's arm, a space file).
std::string AppliedOverrides(std::span<const FieldOverride> overrides) {
  std::string applied;
  for (const FieldOverride& o : overrides) {
    if (!applied.empty()) applied += ", ";
    applied += o.where.origin.empty()
                   ? fmt::format("--set {}={}", o.field, o.value)
                   : fmt::format("{}={} ({})", o.field, o.value, o.where.ToString());
  }
  return applied;
}

}  // namespace

std::vector<std::string> PresetNames() { return EmbeddedTomlNames("models"); }

ModelSpec LoadModelFromToml(std::string_view text, const std::string& origin,
                            std::span<const FieldOverride> overrides) {
  toml::table table = ParseToml(text, origin);
  ModelSpec spec;
  spec.origin = origin;
  std::set<std::string> explicit_fields;
  std::map<std::string, SourceLocation> locations;

  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    SourceLocation where = LocationOf(node, origin, text);
    const ModelField* field = FindField(name);
    if (field == nullptr) {
      std::vector<std::string> names = FieldNameList();
      throw LocatedError(KeyLocationOf(key, node, origin, text),
                         fmt::format("unknown model field '{}'{}", name,
                                            DidYouMean(name, names)));
    }
    std::optional<std::string> value = NodeText(node, field->type);
    if (!value) {
      throw FieldError(where, name, TomlValueText(node),
                       fmt::format("{} is of type {}", name, ToString(field->type)));
    }
    if (std::optional<std::string> error = SetModelField(spec.config, name, *value)) {
      throw LocatedError(where, *error);
    }
    explicit_fields.insert(name);
    locations[name] = where;
  }

  std::map<std::string, std::string> set_by_override;  // field → its --set value
  for (const FieldOverride& override_value : overrides) {
    SourceLocation where = override_value.where;
    if (where.origin.empty()) {
      where.origin = fmt::format("--set {}={}", override_value.field, override_value.value);
    }
    // A field set twice would keep the last value silently (as a layout key given twice is
    // refused).
    if (const auto [it, fresh] =
            set_by_override.emplace(override_value.field, override_value.value);
        !fresh) {
      // The first value's place, unless it was a flag too (the message then names both).
      const SourceLocation& first = locations.at(override_value.field);
      const std::string first_at =
          first.origin.starts_with("--set") ? "" : " at " + first.ToString();
      throw LocatedError(where, fmt::format("{} is set twice (to {}{} and to {}). Violated "
                                            "constraint: each field at most once",
                                            Printable(override_value.field),
                                            Printable(it->second), first_at,
                                            Printable(override_value.value)));
    }
    if (std::optional<std::string> error =
            SetModelField(spec.config, override_value.field, override_value.value)) {
      throw LocatedError(where, *error);
    }
    explicit_fields.insert(override_value.field);
    locations[override_value.field] = where;
    spec.overrides.push_back(override_value.field + "=" + override_value.value);
  }
  if (spec.config.name.empty()) spec.config.name = origin;

  // A dense model has a dense FFN in every layer unless said otherwise.
  if (spec.config.experts == 0 && !explicit_fields.contains("dense_layers")) {
    spec.config.dense_layers = spec.config.layers;
  }
  if (spec.config.family == "marin-ladder") {
    spec.derivation = DeriveMarinLadder(spec.config, explicit_fields);
  }
  if (std::optional<Violation> violation = Validate(spec.config)) {
    auto it = locations.find(violation->field);
    SourceLocation where;
    where.origin = origin;
    if (it != locations.end()) where = it->second;
    std::string rule = violation->rule;
    // A rule may have been broken by an override of another field: the others are listed, each
    // where it was written (the violating field's own value is located above).
    std::vector<FieldOverride> others;
    for (const FieldOverride& o : overrides) {
      if (o.field != violation->field) others.push_back(o);
    }
    if (!others.empty()) rule += " (after " + AppliedOverrides(others) + ")";
    // A field no one set (neither the file, an override nor a family derivation) is missing, not
    // a 0 the user wrote.
    if (!explicit_fields.contains(violation->field) && spec.derivation.empty() &&
        violation->value == "0") {
      throw LocatedError(where, fmt::format("{} is missing. Violated constraint: {}",
                                            violation->field, rule));
    }
    throw FieldError(where, violation->field, violation->value, rule);
  }
  // Every count must be exact in 64 bits: a shape past them is refused here, naming the file.
  try {
    CountParams(spec.config);
  } catch (const InputError& error) {
    throw LocatedError(SourceLocation{origin, 0, 0, ""},
                       overrides.empty() ? std::string(error.what())
                                         : fmt::format("{} (after {})", error.what(),
                                                       AppliedOverrides(overrides)));
  }
  return spec;
}

ModelSpec LoadModel(std::string_view name_or_path, std::span<const FieldOverride> overrides) {
  const std::string argument(name_or_path);
  // A path is read as a file, so that a missing or unreadable file is reported as such rather
  // than as an unknown preset.
  if (IsPathArgument(argument)) {
    return LoadModelFromToml(ReadTextFile(argument), argument, overrides);
  }
  const std::string path = "models/" + argument + ".toml";
  if (std::optional<std::string_view> text = FindEmbeddedFile(path)) {
    return LoadModelFromToml(*text, "preset " + argument, overrides);
  }
  std::vector<std::string> names = PresetNames();
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  throw InputError(fmt::format("unknown model preset '{}'{}\nPresets: {}", Printable(argument),
                               DidYouMean(argument, names), list));
}

}  // namespace mosaic
