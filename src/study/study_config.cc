#include "mosaic/study/study_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "mosaic/perf/layout.h"
#include "mosaic/util/enum_names.h"
#include "mosaic/util/embedded_data.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/toml_reader.h"

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
  return EnumFromString<ActiveParamsConvention>(
      text, {ActiveParamsConvention::kInclusive, ActiveParamsConvention::kNoEmbedding,
             ActiveParamsConvention::kMatmulNoEmbedding});
}

std::string_view ToString(BudgetBasis basis) {
  switch (basis) {
    case BudgetBasis::kReference: return "reference";
    case BudgetBasis::kOwnArm: return "arm";
  }
  return "?";
}

std::optional<BudgetBasis> BudgetBasisFromString(std::string_view text) {
  return EnumFromString<BudgetBasis>(text, {BudgetBasis::kReference, BudgetBasis::kOwnArm});
}

namespace {

// A `set = { field = value, ... }` table: model field overrides, checked against the field table.
std::vector<ArmOverride> ReadOverrides(const toml::table& table, const TableReader& reader) {
  std::vector<ArmOverride> overrides;
  std::vector<std::string> names;
  for (const ModelField& field : ModelFields()) names.emplace_back(field.name);
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    SourceLocation where = reader.Locate(node);
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw LocatedError(KeyLocationOf(key, node, reader.origin(), reader.text()),
                         fmt::format("unknown model field '{}' in set{}", name,
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
    overrides.push_back({name, value, where});
  }
  return overrides;
}

}  // namespace

std::string ResolveOverride(const ArmOverride& o, int64_t d_model) {
  const auto fields = ModelFields();
  const auto field = std::find_if(fields.begin(), fields.end(),
                                  [&](const ModelField& f) { return f.name == o.field; });
  if (field == fields.end() || field->type != FieldType::kInt) return o.value;
  auto fail = [&](std::string_view rule) {
    return InputError(fmt::format("{} = \"{}\" at d = {}. Violated constraint: {}", o.field,
                                  o.value, d_model, rule));
  };
  constexpr std::string_view kGrammar =
      "an integer, or integers and d joined by * and / (e.g. \"d\", \"d/2\", \"3*d/2\")";
  // Operands and operators alternate: operand (op operand)*.
  const std::string_view text = o.value;
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < text.size() && text[i] == ' ') ++i;
  };
  auto operand = [&]() -> int64_t {
    skip_spaces();
    if (i < text.size() && text[i] == 'd') {
      ++i;
      return d_model;
    }
    int64_t value = 0;
    auto [end, error] = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range) throw fail("the value fits in 64 bits");
    if (error != std::errc() || end == text.data() + i) throw fail(kGrammar);
    i = static_cast<size_t>(end - text.data());
    return value;
  };
  int64_t value = operand();
  for (skip_spaces(); i < text.size(); skip_spaces()) {
    const char op = text[i++];
    if (op != '*' && op != '/') throw fail(kGrammar);
    const int64_t rhs = operand();
    if (op == '*') {
      if (__builtin_mul_overflow(value, rhs, &value)) throw fail("the value fits in 64 bits");
    } else {
      if (rhs == 0) throw fail("no division by zero");
      if (rhs == -1 && value == std::numeric_limits<int64_t>::min()) {
        throw fail("the value fits in 64 bits");
      }
      if (value % rhs != 0) throw fail("the quotient is an exact integer");
      value /= rhs;
    }
  }
  return std::to_string(value);
}

std::vector<std::string> StudyNames() { return EmbeddedTomlNames("studies"); }

StudyConfig LoadStudyFromToml(std::string_view text, const std::string& origin) {
  toml::table root = ParseToml(text, origin);
  // A space file given where a study goes would be told "unknown key 'axes' (did you mean
  // 'arms'?)": name the kind of file instead.
  if (root.contains("axes") && !root.contains("rungs")) {
    throw InputError(fmt::format("{}: [axes] and no [[rungs]]: this is a co-design space (mosaic "
                                 "codesign {}), not a study (mosaic plan or decide STUDY.toml)",
                                 origin, origin));
  }
  StudyConfig study;
  study.origin = origin;
  TableReader reader(text, origin);
  std::map<std::string, SourceLocation> layout_where;  // each arm's layout value, by arm name
  reader.On("name", [&](auto& n, auto& w) { study.name = GetString(n, w, "name"); });
  reader.On("title", [&](auto& n, auto& w) { study.title = GetString(n, w, "title"); });
  SourceLocation model_where;
  reader.On("model", [&](auto& n, auto& w) {
    study.model = GetString(n, w, "model");
    model_where = w;
  });
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
    // In FLOP/s, not TFLOP/s: the range of a device file's peaks (0.1 to 100,000 TFLOP/s), so
    // that 2.5 (meant as 2.5 PFLOP/s) or 2500 (as TFLOP/s) is caught.
    if (!(study.peak_flops_per_gpu >= 1e11 && study.peak_flops_per_gpu <= 1e17)) {
      throw FieldError(w, "peak_flops_per_gpu", fmt::format("{}", study.peak_flops_per_gpu),
                       "1e11 <= peak_flops_per_gpu <= 1e17 (FLOP/s per GPU, e.g. 2.5e15; not "
                       "TFLOP/s)");
    }
  });
  reader.On("assumed_mfu", [&](auto& n, auto& w) {
    study.assumed_mfu = GetNumber(n, w, "assumed_mfu");
    if (!(study.assumed_mfu >= 1e-3 && study.assumed_mfu <= 1)) {
      throw FieldError(w, "assumed_mfu", fmt::format("{}", study.assumed_mfu),
                       "0.001 <= assumed_mfu <= 1 (a fraction: 0.15, not 15; below 0.1% no "
                       "training run is)");
    }
  });
  reader.On("flop_convention", [&](auto& n, auto& w) {
    std::string value = GetString(n, w, "flop_convention");
    auto c = FlopConventionFromString(value);
    if (!c) {
      throw FieldError(w, "flop_convention", "\"" + value + "\"",
                       "flop_convention is levanter-table, full-square (or physical) or causal");
    }
    study.flop_convention = *c;
  });
  reader.On("rungs", [&](auto& n, auto& w) {
    for (const toml::node& element : GetTableArray(n, w, "rungs")) {
      Rung rung;
      bool has_d = false;
      SourceLocation d_where;
      TableReader rung_reader(text, origin);
      rung_reader.On("d_model", [&](auto& n2, auto& w2) {
        rung.d_model = GetPositiveInt(n2, w2, "d_model");
        has_d = true;
        d_where = w2;
        rung.d_model_where = w2;
      });
      rung_reader.On("racks", [&](auto& n2, auto& w2) { rung.racks = GetPositiveInt(n2, w2, "racks"); });
      rung_reader.On("set", [&](auto& n2, auto& w2) {
        rung.overrides = ReadOverrides(GetTable(n2, w2, "set"), rung_reader);
      });
      rung_reader.Read(*element.as_table(), "[[rungs]]");
      if (!has_d) throw LocatedError(reader.Locate(element), "[[rungs]] entry without d_model");
      for (const Rung& other : study.rungs) {
        if (other.d_model == rung.d_model) {
          throw FieldError(d_where, "d_model", std::to_string(rung.d_model),
                           "each [[rungs]] entry has its own d_model (this one is given twice)");
        }
      }
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
      arm_reader.On("layout", [&](auto& n2, auto& w2) {
        arm.layout = GetString(n2, w2, "layout");
        try {
          ParseLayout(arm.layout, "layout");
        } catch (const InputError& e) {
          throw LocatedError(w2, e.what());
        }
        layout_where[arm.name.empty() ? std::to_string(study.arms.size()) : arm.name] = w2;
      });
      arm_reader.On("set", [&](auto& n2, auto& w2) {
        arm.overrides = ReadOverrides(GetTable(n2, w2, "set"), arm_reader);
      });
      arm_reader.Read(*element.as_table(), "[[arms]]");
      if (arm.name.empty()) throw LocatedError(reader.Locate(element), "[[arms]] entry without name");
      for (const Arm& other : study.arms) {
        if (other.name == arm.name) {
          throw LocatedError(reader.Locate(element),
                             fmt::format("two [[arms]] are named '{}'; arm names are unique", arm.name));
        }
      }
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
      // A rung takes the rule with the largest min_d_model it reaches: two with one min_d_model
      // would leave one of them unused.
      for (const CadenceRule& other : study.cadence) {
        if (other.min_d_model == rule.min_d_model) {
          throw LocatedError(reader.Locate(element),
                             fmt::format("two [[cadence]] rules have min_d_model = {}; each "
                                         "min_d_model starts one rule",
                                         rule.min_d_model));
        }
      }
      study.cadence.push_back(rule);
    }
  });
  AddDecisionHandlers(reader, study.decision);
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
    throw FieldError(file, "assumed_mfu", "<missing>", "0.001 <= assumed_mfu <= 1");
  }
  if (study.name.empty()) study.name = origin;
  // A model file named by a relative path is found beside the study file first.
  if (IsWrittenAsPath(study.model)) {
    const std::string written = study.model;
    study.model = ResolveBeside(study.model, origin);
    if (!InputFileExists(study.model)) {
      throw FieldError(model_where, "model", "\"" + written + "\"",
                       "a model preset, or " + MissingInputFileRule(study.model, origin));
    }
  } else if (const std::vector<std::string> presets = PresetNames();
             std::ranges::find(presets, study.model) == presets.end()) {
    throw FieldError(model_where, "model", "\"" + study.model + "\"",
                     fmt::format("a model preset ({}){} or a model TOML file",
                                 fmt::join(presets, ", "), DidYouMean(study.model, presets)));
  }
  if (study.title.empty()) study.title = study.name;
  // An arm's layout names the degrees it was trained with (a label: unnamed degrees are filled by
  // the trainer), so what it names must fit every rung: its model-parallel product
  // tp·pp·cp·dp·fsdp, and its expert-parallel group ep·etp, divide the rung's GPU count.
  for (size_t i = 0; i < study.arms.size(); ++i) {
    const Arm& arm = study.arms[i];
    if (arm.layout.empty()) continue;
    const Layout l = ParseLayout(arm.layout, "layout");
    auto at = layout_where.find(arm.name);
    if (at == layout_where.end()) at = layout_where.find(std::to_string(i));
    const SourceLocation where = at != layout_where.end() ? at->second : file;
    for (const Rung& rung : study.rungs) {
      int64_t gpus = 0;
      // A GPU count past 64 bits is the ladder's to refuse (ladder.cc, CheckedProduct).
      if (__builtin_mul_overflow(rung.racks, study.gpus_per_rack, &gpus)) continue;
      const int64_t product = l.tp * l.pp * l.cp * l.dp * l.fsdp;
      const int64_t group = l.ep * l.etp;
      for (const auto& [what, value] : {std::pair<std::string, int64_t>{
                                            fmt::format("tp·pp·cp·dp·fsdp = {}", product), product},
                                        {fmt::format("ep·etp = {}", group), group}}) {
        if (gpus % value != 0) {
          throw FieldError(where, "layout", "\"" + arm.layout + "\"",
                           fmt::format("the layout fits every rung: {} divides the {} GPUs of "
                                       "d{} ({} × {} per rack)",
                                       what, gpus, rung.d_model, rung.racks,
                                       study.gpus_per_rack));
        }
      }
    }
  }
  ValidateDecisionSpec(study);
  return study;
}

StudyConfig LoadStudy(std::string_view name_or_path) {
  const std::string argument(name_or_path);
  if (IsPathArgument(argument)) {
    return LoadStudyFromToml(ReadTextFile(argument), argument);
  }
  const std::string path = "studies/" + argument + ".toml";
  if (std::optional<std::string_view> text = FindEmbeddedFile(path)) {
    StudyConfig study = LoadStudyFromToml(*text, "data/" + path);
    study.embedded = true;
    return study;
  }
  std::vector<std::string> names = StudyNames();
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  throw InputError(fmt::format("unknown study '{}'{} (no such file either)\nEmbedded studies: {}",
                               argument, DidYouMean(argument, names), list));
}

}  // namespace mosaic
