#include "mosaic/study/study_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>

#include "mosaic/util/atomic_file.h"
#include "mosaic/util/embedded_data.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/toml_util.h"

namespace mosaic {

std::string_view ToString(ActiveParamsConvention convention) {
  switch (convention) {
    case ActiveParamsConvention::kInclusive: return "inclusive";
    case ActiveParamsConvention::kNoEmbedding: return "no_embedding";
    case ActiveParamsConvention::kMatmulNoEmbedding: return "matmul_no_embedding";
  }
  return "?";
}

std::optional<ActiveParamsConvention> ActiveParamsConventionFromString(std::string_view text) {
  for (auto c : {ActiveParamsConvention::kInclusive, ActiveParamsConvention::kNoEmbedding,
                 ActiveParamsConvention::kMatmulNoEmbedding}) {
    if (ToString(c) == text) return c;
  }
  return std::nullopt;
}

std::string_view ToString(BudgetBasis basis) {
  switch (basis) {
    case BudgetBasis::kReference: return "reference";
    case BudgetBasis::kOwnArm: return "arm";
  }
  return "?";
}

std::optional<BudgetBasis> BudgetBasisFromString(std::string_view text) {
  for (auto b : {BudgetBasis::kReference, BudgetBasis::kOwnArm}) {
    if (ToString(b) == text) return b;
  }
  return std::nullopt;
}

namespace {


// Reads the keys of one TOML table, each with its own handler; unknown keys are errors with
// "did you mean". Handlers receive the node and its location.
class TableReader {
 public:
  using Handler = std::function<void(const toml::node&, const SourceLocation&)>;

  TableReader(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  void On(std::string key, Handler handler) { handlers_.emplace(std::move(key), std::move(handler)); }

  void Read(const toml::table& table, std::string_view context) {
    for (const auto& [key, node] : table) {
      const std::string name(key.str());
      SourceLocation where = LocationOf(node, origin_, text_);
      auto it = handlers_.find(name);
      if (it == handlers_.end()) {
        std::vector<std::string> names;
        for (const auto& [known, unused] : handlers_) names.push_back(known);
        throw LocatedError(where, fmt::format("unknown key '{}' in {}{}", name, context,
                                              DidYouMean(name, names)));
      }
      it->second(node, where);
    }
  }

  SourceLocation Locate(const toml::node& node) const { return LocationOf(node, origin_, text_); }

 private:
  std::string_view text_;
  std::string origin_;
  std::map<std::string, Handler> handlers_;
};

std::string GetString(const toml::node& node, const SourceLocation& where, std::string_view key) {
  if (auto v = node.as_string()) return v->get();
  throw FieldError(where, key, TomlValueText(node), fmt::format("{} is a string", key));
}

int64_t GetPositiveInt(const toml::node& node, const SourceLocation& where, std::string_view key,
                       int64_t minimum = 1) {
  auto v = node.as_integer();
  if (!v) {
    throw FieldError(where, key, TomlValueText(node),
                     fmt::format("{} is an integer", key));
  }
  if (v->get() < minimum) {
    throw FieldError(where, key, std::to_string(v->get()), fmt::format("{} >= {}", key, minimum));
  }
  return v->get();
}

double GetNumber(const toml::node& node, const SourceLocation& where, std::string_view key) {
  if (auto v = node.as_floating_point()) return v->get();
  if (auto v = node.as_integer()) return static_cast<double>(v->get());
  throw FieldError(where, key, TomlValueText(node),
                   fmt::format("{} is a number", key));
}

const toml::table& GetTable(const toml::node& node, const SourceLocation& where,
                            std::string_view key) {
  if (auto t = node.as_table()) return *t;
  throw FieldError(where, key, TomlValueText(node),
                   fmt::format("{} is a table", key));
}

// [[key]] arrays of tables.
const toml::array& GetTableArray(const toml::node& node, const SourceLocation& where,
                                 std::string_view key) {
  auto array = node.as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    throw FieldError(where, key, TomlValueText(node),
                     fmt::format("{} is an array of tables ([[{}]])", key, key));
  }
  return *array;
}

// A `set = { field = value, ... }` table: model field overrides, checked against the field table.
std::vector<ArmOverride> ReadOverrides(const toml::table& table, const TableReader& reader) {
  std::vector<ArmOverride> overrides;
  std::vector<std::string> names;
  for (const ModelField& field : ModelFields()) names.emplace_back(field.name);
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    SourceLocation where = reader.Locate(node);
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw LocatedError(where, fmt::format("unknown model field '{}' in set{}", name,
                                            DidYouMean(name, names)));
    }
    std::string value;
    if (auto v = node.as_integer()) {
      value = std::to_string(v->get());
    } else if (auto v = node.as_floating_point()) {
      value = fmt::format("{}", v->get());
    } else if (auto v = node.as_boolean()) {
      value = v->get() ? "true" : "false";
    } else if (auto v = node.as_string()) {
      value = v->get();
    } else {
      throw FieldError(where, name, TomlValueText(node),
                       fmt::format("{} is a number, boolean or string", name));
    }
    overrides.push_back({name, value});
  }
  return overrides;
}

// Parses "a*d/b"-style expressions; nullopt if `text` is not such an expression.
std::optional<std::vector<std::string>> Tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ') {
      ++i;
    } else if (c == '*' || c == '/' || c == 'd') {
      tokens.emplace_back(1, c);
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      tokens.emplace_back(text.substr(i, j - i));
      i = j;
    } else {
      return std::nullopt;
    }
  }
  if (std::find(tokens.begin(), tokens.end(), "d") == tokens.end()) return std::nullopt;
  return tokens;
}

}  // namespace

std::string ResolveOverride(const ArmOverride& o, int64_t d_model) {
  std::optional<std::vector<std::string>> tokens = Tokenize(o.value);
  if (!tokens) return o.value;
  auto fail = [&](std::string_view rule) {
    return InputError(fmt::format("{} = \"{}\" at d = {}. Violated constraint: {}", o.field,
                                  o.value, d_model, rule));
  };
  auto operand = [&](const std::string& token) -> int64_t {
    if (token == "d") return d_model;
    if (token == "*" || token == "/") throw fail("operands and * or / alternate (e.g. \"3*d/2\")");
    return std::stoll(token);
  };
  const std::vector<std::string>& t = *tokens;
  if (t.size() % 2 == 0) throw fail("operands and * or / alternate (e.g. \"3*d/2\")");
  int64_t value = operand(t[0]);
  for (size_t i = 1; i + 1 < t.size(); i += 2) {
    int64_t rhs = operand(t[i + 1]);
    if (t[i] == "*") {
      value *= rhs;
    } else if (t[i] == "/") {
      if (rhs == 0 || value % rhs != 0) throw fail("the quotient is an exact integer");
      value /= rhs;
    } else {
      throw fail("operands and * or / alternate (e.g. \"3*d/2\")");
    }
  }
  return std::to_string(value);
}

std::vector<std::string> StudyNames() { return EmbeddedTomlNames("studies"); }

StudyConfig LoadStudyFromToml(std::string_view text, const std::string& origin) {
  toml::table root = ParseToml(text, origin);
  StudyConfig study;
  study.origin = origin;
  TableReader reader(text, origin);
  reader.On("name", [&](auto& n, auto& w) { study.name = GetString(n, w, "name"); });
  reader.On("title", [&](auto& n, auto& w) { study.title = GetString(n, w, "title"); });
  reader.On("model", [&](auto& n, auto& w) { study.model = GetString(n, w, "model"); });
  reader.On("tokens_per_active_param", [&](auto& n, auto& w) {
    study.tokens_per_active_param = GetPositiveInt(n, w, "tokens_per_active_param");
  });
  reader.On("active_params_convention", [&](auto& n, auto& w) {
    std::string value = GetString(n, w, "active_params_convention");
    auto c = ActiveParamsConventionFromString(value);
    if (!c) {
      throw FieldError(w, "active_params_convention", "\"" + value + "\"",
                       "active_params_convention is inclusive, no_embedding or matmul_no_embedding");
    }
    study.active_params_convention = *c;
  });
  reader.On("budget_basis", [&](auto& n, auto& w) {
    std::string value = GetString(n, w, "budget_basis");
    auto b = BudgetBasisFromString(value);
    if (!b) throw FieldError(w, "budget_basis", "\"" + value + "\"", "budget_basis is reference or arm");
    study.budget_basis = *b;
  });
  reader.On("batch_seqs_per_rack", [&](auto& n, auto& w) {
    study.batch_seqs_per_rack = GetPositiveInt(n, w, "batch_seqs_per_rack");
  });
  reader.On("seq_len", [&](auto& n, auto& w) { study.seq_len = GetPositiveInt(n, w, "seq_len"); });
  reader.On("gpus_per_rack",
            [&](auto& n, auto& w) { study.gpus_per_rack = GetPositiveInt(n, w, "gpus_per_rack"); });
  reader.On("peak_flops_per_gpu", [&](auto& n, auto& w) {
    study.peak_flops_per_gpu = GetNumber(n, w, "peak_flops_per_gpu");
    if (!(study.peak_flops_per_gpu > 0)) {
      throw FieldError(w, "peak_flops_per_gpu", fmt::format("{}", study.peak_flops_per_gpu),
                       "peak_flops_per_gpu > 0");
    }
  });
  reader.On("assumed_mfu", [&](auto& n, auto& w) {
    study.assumed_mfu = GetNumber(n, w, "assumed_mfu");
    if (!(study.assumed_mfu > 0 && study.assumed_mfu <= 1)) {
      throw FieldError(w, "assumed_mfu", fmt::format("{}", study.assumed_mfu),
                       "0 < assumed_mfu <= 1 (a fraction: 0.15, not 15)");
    }
  });
  reader.On("flop_convention", [&](auto& n, auto& w) {
    std::string value = GetString(n, w, "flop_convention");
    auto c = FlopConventionFromString(value);
    if (!c) {
      throw FieldError(w, "flop_convention", "\"" + value + "\"",
                       "flop_convention is levanter-table or physical");
    }
    study.flop_convention = *c;
  });
  reader.On("rungs", [&](auto& n, auto& w) {
    for (const toml::node& element : GetTableArray(n, w, "rungs")) {
      Rung rung;
      bool has_d = false;
      TableReader rung_reader(text, origin);
      rung_reader.On("d_model", [&](auto& n2, auto& w2) {
        rung.d_model = GetPositiveInt(n2, w2, "d_model");
        has_d = true;
      });
      rung_reader.On("racks", [&](auto& n2, auto& w2) { rung.racks = GetPositiveInt(n2, w2, "racks"); });
      rung_reader.On("set", [&](auto& n2, auto& w2) {
        rung.overrides = ReadOverrides(GetTable(n2, w2, "set"), rung_reader);
      });
      rung_reader.Read(*element.as_table(), "[[rungs]]");
      if (!has_d) throw LocatedError(reader.Locate(element), "[[rungs]] entry without d_model");
      study.rungs.push_back(std::move(rung));
    }
  });
  reader.On("arms", [&](auto& n, auto& w) {
    for (const toml::node& element : GetTableArray(n, w, "arms")) {
      Arm arm;
      TableReader arm_reader(text, origin);
      arm_reader.On("name", [&](auto& n2, auto& w2) { arm.name = GetString(n2, w2, "name"); });
      arm_reader.On("description",
                    [&](auto& n2, auto& w2) { arm.description = GetString(n2, w2, "description"); });
      arm_reader.On("layout", [&](auto& n2, auto& w2) { arm.layout = GetString(n2, w2, "layout"); });
      arm_reader.On("set", [&](auto& n2, auto& w2) {
        arm.overrides = ReadOverrides(GetTable(n2, w2, "set"), arm_reader);
      });
      arm_reader.Read(*element.as_table(), "[[arms]]");
      if (arm.name.empty()) throw LocatedError(reader.Locate(element), "[[arms]] entry without name");
      study.arms.push_back(std::move(arm));
    }
  });
  reader.On("cadence", [&](auto& n, auto& w) {
    for (const toml::node& element : GetTableArray(n, w, "cadence")) {
      CadenceRule rule;
      TableReader rule_reader(text, origin);
      rule_reader.On("min_d_model", [&](auto& n2, auto& w2) {
        rule.min_d_model = GetPositiveInt(n2, w2, "min_d_model", 0);
      });
      rule_reader.On("every_steps", [&](auto& n2, auto& w2) {
        rule.every_steps = GetPositiveInt(n2, w2, "every_steps");
      });
      rule_reader.Read(*element.as_table(), "[[cadence]]");
      study.cadence.push_back(rule);
    }
  });
  reader.Read(root, "the study");

  SourceLocation file;
  file.origin = origin;
  if (study.model.empty()) throw LocatedError(file, "the study names no model (model = \"PRESET\")");
  if (study.rungs.empty()) throw LocatedError(file, "the study has no [[rungs]]");
  if (study.arms.empty()) study.arms.push_back({"base", "the base model", "", {}});
  if (!(study.peak_flops_per_gpu > 0)) {
    throw FieldError(file, "peak_flops_per_gpu", "<missing>", "peak_flops_per_gpu > 0");
  }
  if (!(study.assumed_mfu > 0)) {
    throw FieldError(file, "assumed_mfu", "<missing>", "0 < assumed_mfu <= 1");
  }
  if (study.name.empty()) study.name = origin;
  if (study.title.empty()) study.title = study.name;
  return study;
}

StudyConfig LoadStudy(std::string_view name_or_path) {
  const std::string argument(name_or_path);
  std::error_code ignored;
  if (argument.ends_with(".toml") || std::filesystem::is_regular_file(argument, ignored)) {
    return LoadStudyFromToml(ReadFile(argument), argument);
  }
  const std::string path = "studies/" + argument + ".toml";
  if (std::optional<std::string_view> text = FindEmbeddedFile(path)) {
    return LoadStudyFromToml(*text, "data/" + path);
  }
  std::vector<std::string> names = StudyNames();
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  throw InputError(fmt::format("unknown study '{}'{} (no such file either)\nEmbedded studies: {}",
                               argument, DidYouMean(argument, names), list));
}

}  // namespace mosaic
