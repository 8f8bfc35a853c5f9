#include "mosaic/codesign/space.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "mosaic/hardware/hardware.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/perf_request.h"
#include "mosaic/perf/profile.h"
#include "mosaic/scaling/fit.h"
#include "mosaic/scaling/law.h"
#include "mosaic/study/study_config.h"
#include "mosaic/util/embedded_data.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/number_format.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"
#include "mosaic/util/toml_reader.h"

namespace mosaic {
namespace {

constexpr int64_t kMaxAxisValues = 4096;
// The most architectures a space may hold (each is searched for its best layout and kept).
constexpr int64_t kMaxArchitectures = 1000000;

// Throws when the value just added to an axis is already on it: each architecture would be
// ranked twice, and the repeats would weigh in the median MFU of a FLOPs-only budget.
template <typename T>
void RefuseRepeat(const std::vector<T>& values, const SourceLocation& at, std::string_view key) {
  if (std::find(values.begin(), values.end() - 1, values.back()) != values.end() - 1) {
    throw FieldError(at, key, fmt::format("{}", values.back()),
                     fmt::format("each value of {} is listed once", key));
  }
}

// An integer axis: [1, 2, 4] or { from = 8, to = 512, factor = 2 } / { from = 1, to = 8, step = 1 }.
std::vector<int64_t> ReadIntAxis(const toml::node& node, const SourceLocation& where,
                                 const TableReader& parent, std::string_view key, int64_t minimum) {
  std::vector<int64_t> values;
  // A model field's axis is bounded as the model's field is (MaxFieldValue): a value past it makes
  // no valid architecture, so it is the file's error, not an architecture's rejection.
  const int64_t maximum = key == "granularity" ? kMaxModelDimension : MaxFieldValue(key);
  const auto bounded = [&](int64_t v, const SourceLocation& at, std::string_view what) {
    if (v > maximum) {
      throw FieldError(at, what, fmt::format("{}", v), fmt::format("{} <= {}", key, maximum));
    }
    return v;
  };
  if (auto array = node.as_array()) {
    for (const toml::node& element : *array) {
      const SourceLocation at = parent.Locate(element);
      values.push_back(bounded(GetPositiveInt(element, at, key, minimum), at, key));
      RefuseRepeat(values, at, key);
    }
  } else if (auto table = node.as_table()) {
    int64_t from = 0, to = 0, step = 0, factor = 0;
    bool has_from = false, has_to = false;
    TableReader r(parent.text(), parent.origin());
    r.On("from", [&](auto& n, auto& w) {
      from = bounded(GetPositiveInt(n, w, "from", minimum), w, "from");
      has_from = true;
    });
    r.On("to", [&](auto& n, auto& w) {
      to = bounded(GetPositiveInt(n, w, "to", minimum), w, "to");
      has_to = true;
    });
    r.On("step", [&](auto& n, auto& w) { step = GetPositiveInt(n, w, "step", 1); });
    r.On("factor", [&](auto& n, auto& w) { factor = GetPositiveInt(n, w, "factor", 2); });
    r.Read(*table, fmt::format("the range of {}", key));
    if (!has_from || !has_to || (step == 0) == (factor == 0)) {
      throw LocatedError(where, fmt::format("{}: a range needs from, to and one of step or factor, "
                                            "e.g. {{ from = 8, to = 256, factor = 2 }}",
                                            key));
    }
    if (to < from) {
      throw FieldError(where, key, fmt::format("from = {}, to = {}", from, to), "from <= to");
    }
    for (int64_t v = from; v <= to; v = factor > 0 ? v * factor : v + step) {
      values.push_back(v);
      if (values.size() > static_cast<size_t>(kMaxAxisValues)) break;
      if (factor > 0 && v > to / factor) break;
    }
  } else {
    throw FieldError(where, key, TomlValueText(node),
                     fmt::format("{} is a list of integers or a range {{ from, to, step | factor }}",
                                 key));
  }
  if (values.empty()) throw FieldError(where, key, "[]", fmt::format("{} has at least one value", key));
  if (values.size() > static_cast<size_t>(kMaxAxisValues)) {
    throw FieldError(where, key, TomlValueText(node),
                     fmt::format("{} has at most {} values", key, kMaxAxisValues));
  }
  return values;
}

// An axis of integers or expressions in d ("d/2").
std::vector<AxisValue> ReadExpressionAxis(const toml::node& node, const SourceLocation& where,
                                          const TableReader& parent, std::string_view key) {
  std::vector<AxisValue> values;
  auto array = node.as_array();
  if (array == nullptr) {
    for (int64_t v : ReadIntAxis(node, where, parent, key, 0)) values.push_back(std::to_string(v));
    return values;
  }
  for (const toml::node& element : *array) {
    const SourceLocation at = parent.Locate(element);
    if (auto s = element.as_string()) {
      values.push_back(s->get());
    } else {
      values.push_back(std::to_string(GetPositiveInt(element, at, key, 0)));
    }
    RefuseRepeat(values, at, key);
  }
  if (values.empty()) throw FieldError(where, key, "[]", fmt::format("{} has at least one value", key));
  return values;
}

// "params" of a `mosaic fit --json` output for law `law`.
std::vector<std::pair<std::string, double>> ReadFitJson(const std::string& path,
                                                        const std::string& law,
                                                        const SourceLocation& where) {
  std::string text;
  try {
    text = ReadTextFile(path);
  } catch (const InputError& error) {
    throw LocatedError(where, fmt::format("fit_json: {}", error.what()));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw LocatedError(where, fmt::format("fit_json {}: not JSON ({})", path, error.what()));
  }
  if (!j.is_object() || !j.contains("law") || !j.contains("params") || !j["params"].is_object()) {
    throw LocatedError(where, fmt::format("fit_json {}: not a `mosaic fit --json` output (no law "
                                          "and params)",
                                          path));
  }
  if (j["law"] != law) {
    throw LocatedError(where, fmt::format("fit_json {} is a fit of law {}, not {}", path,
                                          j["law"].dump(), law));
  }
  std::vector<std::pair<std::string, double>> params;
  for (const auto& [name, value] : j["params"].items()) {
    if (!value.is_number()) {
      throw LocatedError(where, fmt::format("fit_json {}: parameter {} is {}, not a number", path,
                                            name, value.dump()));
    }
    params.emplace_back(name, value.get<double>());
  }
  return params;
}

}  // namespace

std::vector<std::string> SpaceNames() { return EmbeddedTomlNames("spaces"); }

SpaceConfig LoadSpaceFromToml(std::string_view text, const std::string& origin) {
  const toml::table root = ParseToml(text, origin);
  // A study given where a space goes: name the kind of file, not its first unknown key.
  if (root.contains("rungs") && !root.contains("axes")) {
    throw InputError(fmt::format("{}: [[rungs]] and no [axes]: this is a study (mosaic plan or "
                                 "decide {}), not a co-design space (mosaic codesign SPACE.toml)",
                                 origin, origin));
  }
  SpaceConfig space;
  space.origin = origin;
  TableReader reader(text, origin);
  SourceLocation base_where, law_where, budget_where, axes_where, cluster_where;
  std::map<std::string, SourceLocation> expression_where;  // expert_width, latent_dim
  std::map<std::string, SourceLocation> param_where;  // [law] params, each value's place
  std::string fit_json;
  reader.On("name", [&](auto& n, auto& w) { space.name = GetString(n, w, "name"); });
  reader.On("title", [&](auto& n, auto& w) { space.title = GetString(n, w, "title"); });
  reader.On("source", [&](auto& n, auto& w) { space.source = GetString(n, w, "source"); });
  reader.On("base", [&](auto& n, auto& w) {
    space.base = GetString(n, w, "base");
    base_where = w;
  });
  reader.On("cluster", [&](auto& n, auto& w) {
    cluster_where = w;
    TableReader r(text, origin);
    r.On("hardware", [&](auto& n2, auto& w2) { space.hardware = GetString(n2, w2, "hardware"); });
    r.On("gpus", [&](auto& n2, auto& w2) {
      space.gpus = GetPositiveInt(n2, w2, "gpus");
      if (space.gpus > kMaxPerfGpus) {
        throw FieldError(w2, "gpus", TomlValueText(n2), fmt::format("1 <= gpus <= {}", kMaxPerfGpus));
      }
    });
    r.Read(GetTable(n, w, "cluster"), "[cluster]");
    if (space.hardware.empty() || space.gpus == 0) {
      throw LocatedError(w, "[cluster] needs hardware and gpus");
    }
  });
  reader.On("budget", [&](auto& n, auto& w) {
    budget_where = w;
    BudgetSpec& b = space.budget;
    TableReader r(text, origin);
    // Upper bounds far past any training run (a century of wall-clock, 10^12 GPU-hours, 10^40
    // FLOPs) keep every product of the budget finite.
    auto positive = [](const toml::node& n2, const SourceLocation& w2, std::string_view key,
                       double most) {
      const double v = GetNumber(n2, w2, key);
      if (!(v > 0 && v <= most)) {
        throw FieldError(w2, key, TomlValueText(n2), fmt::format("0 < {} <= {:g}", key, most));
      }
      return v;
    };
    r.On("gpu_hours", [&](auto& n2, auto& w2) {
      b.gpu_hours = positive(n2, w2, "gpu_hours", 1e12);
      b.where = w2;
    });
    r.On("days", [&](auto& n2, auto& w2) {
      b.days = positive(n2, w2, "days", 36525);
      b.where = w2;
    });
    r.On("model_flops", [&](auto& n2, auto& w2) {
      b.model_flops = positive(n2, w2, "model_flops", 1e40);
      b.where = w2;
    });
    r.On("reference_mfu", [&](auto& n2, auto& w2) {
      b.reference_mfu = GetNumber(n2, w2, "reference_mfu");
      if (!(b.reference_mfu > 0 && b.reference_mfu <= 1)) {
        throw FieldError(w2, "reference_mfu", TomlValueText(n2),
                         "0 < reference_mfu <= 1 (a fraction: 0.4, not 40)");
      }
    });
    r.Read(GetTable(n, w, "budget"), "[budget]");
    const int given = (b.gpu_hours > 0) + (b.days > 0) + (b.model_flops > 0);
    if (given != 1) {
      throw LocatedError(w, "[budget] gives exactly one of gpu_hours, days (wall-clock on the "
                            "cluster) and model_flops");
    }
  });
  reader.On("axes", [&](auto& n, auto& w) {
    axes_where = w;
    AxesSpec& a = space.axes;
    TableReader r(text, origin);
    r.On("d_model", [&](auto& n2, auto& w2) { a.d_model = ReadIntAxis(n2, w2, r, "d_model", 1); });
    r.On("layers", [&](auto& n2, auto& w2) { a.layers = ReadIntAxis(n2, w2, r, "layers", 1); });
    SourceLocation aspect_where;
    r.On("aspect_ratio", [&](auto& n2, auto& w2) {
      a.aspect_ratio = GetPositiveInt(n2, w2, "aspect_ratio");
      aspect_where = w2;
    });
    r.On("experts", [&](auto& n2, auto& w2) { a.experts = ReadIntAxis(n2, w2, r, "experts", 0); });
    r.On("top_k", [&](auto& n2, auto& w2) { a.top_k = ReadIntAxis(n2, w2, r, "top_k", 1); });
    r.On("expert_width", [&](auto& n2, auto& w2) {
      a.expert_width = ReadExpressionAxis(n2, w2, r, "expert_width");
      expression_where["expert_width"] = w2;
    });
    r.On("granularity",
         [&](auto& n2, auto& w2) { a.granularity = ReadIntAxis(n2, w2, r, "granularity", 1); });
    r.On("shared_experts", [&](auto& n2, auto& w2) {
      a.shared_experts = ReadIntAxis(n2, w2, r, "shared_experts", 0);
    });
    r.On("latent_dim", [&](auto& n2, auto& w2) {
      a.latent_dim = ReadExpressionAxis(n2, w2, r, "latent_dim");
      expression_where["latent_dim"] = w2;
    });
    r.Read(GetTable(n, w, "axes"), "[axes]");
    if (!a.expert_width.empty() && !a.granularity.empty()) {
      throw LocatedError(w, "[axes] gives expert_width or granularity, not both");
    }
    if (!a.layers.empty() && a.aspect_ratio > 0) {
      throw LocatedError(w, "[axes] gives layers (free depth) or aspect_ratio (depth rule), not "
                            "both");
    }
    // The depth rule rounds d_model / aspect_ratio: below one half it would make no layer (it was
    // forced up to 1, a one-layer model ranked with the rest).
    for (const int64_t d : a.d_model) {
      if (a.aspect_ratio > 0 && LayersForAspectRatio(d, a.aspect_ratio) < 1) {
        throw FieldError(aspect_where, "aspect_ratio", fmt::format("{}", a.aspect_ratio),
                         fmt::format("layers = round(d_model / aspect_ratio) >= 1 for every "
                                     "d_model (d_model {} gives 0)",
                                     d));
      }
    }
  });
  reader.On("law", [&](auto& n, auto& w) {
    law_where = w;
    TableReader r(text, origin);
    r.On("name", [&](auto& n2, auto& w2) { space.law.name = GetString(n2, w2, "name"); });
    r.On("params", [&](auto& n2, auto& w2) {
      for (const auto& [key, value] : GetTable(n2, w2, "params")) {
        const std::string name(key.str());
        const double v = GetNumber(value, r.Locate(value), name);
        if (!std::isfinite(v)) {
          throw FieldError(r.Locate(value), name, TomlValueText(value), name + " is finite");
        }
        space.law.params.emplace_back(name, v);
        param_where[name] = r.Locate(value);
      }
    });
    r.On("fit_json", [&](auto& n2, auto& w2) { fit_json = GetString(n2, w2, "fit_json"); });
    r.Read(GetTable(n, w, "law"), "[law]");
  });
  reader.On("search", [&](auto& n, auto& w) {
    SearchSpec& s = space.search;
    TableReader r(text, origin);
    r.On("profile", [&](auto& n2, auto& w2) {
      s.profile = GetString(n2, w2, "profile");
      try {
        LoadProfiles().Get(s.profile);  // the shipped profiles, as the sweep reads them
      } catch (const InputError& error) {
        throw LocatedError(w2, error.what());
      }
    });
    r.On("format", [&](auto& n2, auto& w2) {
      s.format = GetString(n2, w2, "format");
      if (s.format != "bf16" && s.format != "fp8" && s.format != "mxfp8") {
        throw FieldError(w2, "format", "\"" + s.format + "\"", "format is bf16, fp8 or mxfp8");
      }
    });
    r.On("routing", [&](auto& n2, auto& w2) {
      s.routing = GetString(n2, w2, "routing");
      const std::vector<std::string> known = {"auto", "dropless", "balanced", "capacity",
                                              "fixed-cells"};
      if (std::find(known.begin(), known.end(), s.routing) == known.end()) {
        throw FieldError(w2, "routing", "\"" + s.routing + "\"",
                         fmt::format("routing is one of {}{}", fmt::join(known, ", "),
                                     DidYouMean(s.routing, known)));
      }
    });
    r.On("capacity_factor", [&](auto& n2, auto& w2) {
      s.capacity_factor = GetNumber(n2, w2, "capacity_factor");
      if (!(s.capacity_factor > 0 && s.capacity_factor <= 1000)) {
        throw FieldError(w2, "capacity_factor", TomlValueText(n2), "0 < capacity_factor <= 1000");
      }
    });
    r.On("batch_seqs", [&](auto& n2, auto& w2) {
      s.batch_seqs = GetPositiveInt(n2, w2, "batch_seqs");
      if (s.batch_seqs > kMaxPerfBatch) {
        throw FieldError(w2, "batch_seqs", TomlValueText(n2),
                         fmt::format("1 <= batch_seqs <= {}", kMaxPerfBatch));
      }
    });
    r.On("seq_len", [&](auto& n2, auto& w2) {
      s.seq_len = GetPositiveInt(n2, w2, "seq_len");
      if (s.seq_len > kMaxSeqLen) {
        throw FieldError(w2, "seq_len", TomlValueText(n2),
                         fmt::format("1 <= seq_len <= {}", kMaxSeqLen));
      }
    });
    r.On("max_cp", [&](auto& n2, auto& w2) { s.max_cp = GetPositiveInt(n2, w2, "max_cp"); });
    r.On("max_vpp", [&](auto& n2, auto& w2) { s.max_vpp = GetPositiveInt(n2, w2, "max_vpp"); });
    r.Read(GetTable(n, w, "search"), "[search]");
  });
  reader.Read(root, "the space");

  const SourceLocation file = FileLocation(origin);
  if (space.name.empty()) space.name = origin;
  if (space.title.empty()) space.title = space.name;
  if (space.base.empty()) throw LocatedError(file, "the space names no base model (base = \"PRESET\")");
  if (space.hardware.empty()) throw LocatedError(file, "the space has no [cluster] (hardware, gpus)");
  if (budget_where.origin.empty()) {
    throw LocatedError(file, "the space has no [budget] (gpu_hours, days or model_flops)");
  }
  if (axes_where.origin.empty()) throw LocatedError(file, "the space has no [axes]");
  if (space.search.batch_seqs == 0) {
    throw LocatedError(file, "the space has no [search] batch_seqs (sequences per step)");
  }
  if (law_where.origin.empty()) {
    throw LocatedError(file, "the space has no [law] (name and params, or fit_json)");
  }
  // The base model and the device must load; their errors keep their own locations.
  if (space.base.ends_with(".toml")) space.base = ResolveBeside(space.base, origin);
  if (IsPathArgument(space.hardware)) space.hardware = ResolveBeside(space.hardware, origin);
  int64_t base_d_model = 0;
  try {
    base_d_model = LoadModel(space.base).config.d_model;
  } catch (const InputError& error) {
    throw LocatedError(base_where, fmt::format("base = \"{}\": {}", space.base, error.what()));
  }
  // Every architecture's result is kept: the product of the axes is bounded before any is made.
  double architectures = static_cast<double>(std::max<size_t>(space.axes.d_model.size(), 1));
  for (size_t n : {space.axes.layers.size(), space.axes.experts.size(), space.axes.top_k.size(),
                   space.axes.expert_width.size() + space.axes.granularity.size(),
                   space.axes.shared_experts.size(), space.axes.latent_dim.size()}) {
    architectures *= static_cast<double>(std::max<size_t>(n, 1));
  }
  if (architectures > kMaxArchitectures) {
    throw LocatedError(axes_where,
                       fmt::format("[axes] give {:.4g} architectures (the product of the axes' "
                                   "lengths). Violated constraint: at most {} (split the space, or "
                                   "sweep it with coarser steps)",
                                   architectures, FormatThousands(kMaxArchitectures)));
  }
  try {
    LoadHardware(space.hardware);
  } catch (const InputError& error) {
    throw LocatedError(cluster_where,
                       fmt::format("[cluster] hardware = \"{}\": {}", space.hardware, error.what()));
  }
  // Expressions in d must evaluate for every width swept.
  const std::vector<int64_t> widths =
      space.axes.d_model.empty() ? std::vector<int64_t>{base_d_model} : space.axes.d_model;
  for (const auto& [field, values] : {std::pair<std::string, const std::vector<AxisValue>*>{
                                          "expert_width", &space.axes.expert_width},
                                      {"latent_dim", &space.axes.latent_dim}}) {
    // Values of one axis that resolve alike at some width ("d/2" and 768 at d = 1536) would rank
    // one architecture twice, as a value listed twice would.
    for (int64_t d : widths) {
      std::map<std::string, const AxisValue*> seen;
      for (const AxisValue& value : *values) {
        ArmOverride o;
        o.field = field;
        o.value = value;
        std::string resolved;
        const SourceLocation& at = expression_where[field];
        try {
          resolved = ResolveOverride(o, d);
        } catch (const InputError& error) {
          throw LocatedError(at, fmt::format("[axes] {}: {}", field, error.what()));
        }
        if (const auto [it, fresh] = seen.emplace(resolved, &value); !fresh) {
          throw LocatedError(
              at,
              fmt::format("[axes] {}: \"{}\" and \"{}\" both give {} at d_model = {}. Violated "
                          "constraint: each value of an axis gives an architecture of its own",
                          field, Printable(*it->second), Printable(value), resolved, d));
        }
      }
    }
  }
  // The law: known, its parameters complete and known.
  const std::vector<std::string> names = scaling::LawNames();
  if (space.law.name.empty()) {
    throw LocatedError(law_where, fmt::format("[law] has no name (name = \"LAW\", a law of "
                                              "`mosaic fit`: {})",
                                              fmt::join(names, ", ")));
  }
  if (std::find(names.begin(), names.end(), space.law.name) == names.end()) {
    throw FieldError(law_where, "name", "\"" + space.law.name + "\"",
                     fmt::format("name is a law of `mosaic fit` ({}){}", fmt::join(names, ", "),
                                 DidYouMean(space.law.name, names)));
  }
  const scaling::Law& law = scaling::FindLaw(space.law.name);
  // A law of the budget alone gives every architecture one loss under the FLOPs-only budget:
  // it cannot rank them.
  if (law.inputs.size() == 1 && law.inputs[0].name == "C") {
    throw FieldError(law_where, "name", "\"" + space.law.name + "\"",
                     fmt::format("a law with an input of the architecture (N, D, S, G or "
                                 "E_count); {} depends on the FLOPs budget C alone, the same for "
                                 "every architecture",
                                 space.law.name));
  }
  if (!fit_json.empty()) {
    if (!space.law.params.empty()) {
      throw LocatedError(law_where, "[law] gives params or fit_json, not both");
    }
    const std::string path = ResolveBeside(fit_json, origin);
    space.law.params = ReadFitJson(path, space.law.name, law_where);
    space.law.origin = path;
  } else {
    space.law.origin = "inline in " + origin;
  }
  std::vector<std::string> param_names;
  for (const scaling::LawParam& p : law.params) param_names.push_back(p.name);
  for (const auto& [name, value] : space.law.params) {
    if (std::find(param_names.begin(), param_names.end(), name) == param_names.end()) {
      throw FieldError(law_where, "params", name,
                       fmt::format("law {} has parameters {}{}", law.name,
                                   fmt::join(param_names, ", "), DidYouMean(name, param_names)));
    }
  }
  // Values the law's form allows: a scale > 0, an exponent in [0, 10] (a negative one ranks
  // architectures by a loss that grows with scale; gamma = 1e9 made (1 − S)^gamma 0 at every
  // sparse architecture).
  constexpr double kMaxLawExponent = 10;
  constexpr double kMaxLawScale = 1e30;
  for (const auto& [name, value] : space.law.params) {
    const int j = law.ParamIndex(name);
    const auto at = param_where.find(name);
    const SourceLocation& where = at != param_where.end() ? at->second : law_where;
    // A scale may be 0 where `mosaic fit --pin` allows it (E = 0: no irreducible loss; checked
    // with the others below), never negative.
    if (law.params[j].kind == scaling::ParamKind::kLogScale &&
        !(value >= 0 && value <= kMaxLawScale)) {
      throw FieldError(where, name, fmt::format("{}", value),
                       fmt::format("0 <= {} <= {:g} (a scale of law {}; published fits lie below "
                                   "1e5, and past {:g} a loss is no longer a number to rank by)",
                                   name, kMaxLawScale, law.name, kMaxLawScale));
    }
    if (law.params[j].kind == scaling::ParamKind::kLogScale && value == 0) {
      try {
        scaling::PinnedTheta(law, {{name, value}});
      } catch (const InputError& error) {
        throw LocatedError(where, error.what());
      }
    }
    if (law.ExpectsNonNegative(j) && !(value >= 0 && value <= kMaxLawExponent)) {
      throw FieldError(where, name, fmt::format("{}", value),
                       fmt::format("0 <= {} <= {:g} (an exponent of law {}: {}; published fits "
                                   "lie below 1, and past {:g} its term vanishes or explodes "
                                   "across the space)",
                                   name, kMaxLawExponent, law.name, law.formula, kMaxLawExponent));
    }
  }
  std::vector<std::string> missing;
  for (const std::string& name : param_names) {
    const bool given = std::any_of(space.law.params.begin(), space.law.params.end(),
                                   [&](const auto& p) { return p.first == name; });
    if (!given) missing.push_back(name);
  }
  if (!missing.empty()) {
    throw LocatedError(law_where, fmt::format("[law] {} is missing parameters {} (the law: {})",
                                              law.name, fmt::join(missing, ", "), law.formula));
  }
  return space;
}

SpaceConfig LoadSpace(std::string_view name_or_path) {
  const std::string argument(name_or_path);
  if (IsPathArgument(argument)) {
    return LoadSpaceFromToml(ReadTextFile(argument), argument);
  }
  const std::string path = "spaces/" + argument + ".toml";
  if (std::optional<std::string_view> text = FindEmbeddedFile(path)) {
    return LoadSpaceFromToml(*text, "data/" + path);
  }
  const std::vector<std::string> names = SpaceNames();
  throw InputError(fmt::format("unknown space '{}'{} (no such file either)\nEmbedded spaces: {}",
                               argument, DidYouMean(argument, names), fmt::join(names, ", ")));
}

}  // namespace mosaic
