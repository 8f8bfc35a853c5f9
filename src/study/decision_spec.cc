#include "mosaic/study/decision_spec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <map>
#include <optional>

#include "mosaic/scaling/bootstrap.h"
#include "mosaic/scaling/law.h"
#include "mosaic/study/study_config.h"
#include "mosaic/util/enum_names.h"
#include "mosaic/util/input_path.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/toml_reader.h"

namespace mosaic {

std::string_view ToString(DecisionLoss loss) {
  switch (loss) {
    case DecisionLoss::kDropless: return "dropless";
    case DecisionLoss::kWithDrop: return "with_drop";
  }
  return "?";
}

std::optional<DecisionLoss> DecisionLossFromString(std::string_view text) {
  return EnumFromString<DecisionLoss>(text, {DecisionLoss::kDropless, DecisionLoss::kWithDrop});
}

std::string_view ToString(ExtensionOutcome outcome) {
  switch (outcome) {
    case ExtensionOutcome::kSmooth: return "smooth";
    case ExtensionOutcome::kNotSmooth: return "not_smooth";
    case ExtensionOutcome::kCompleted: return "completed";
    case ExtensionOutcome::kInterrupted: return "interrupted";
  }
  return "?";
}

std::optional<ExtensionOutcome> ExtensionOutcomeFromString(std::string_view text) {
  return EnumFromString<ExtensionOutcome>(
      text, {ExtensionOutcome::kSmooth, ExtensionOutcome::kNotSmooth, ExtensionOutcome::kCompleted,
             ExtensionOutcome::kInterrupted});
}

namespace {

std::string OneOf(const toml::node& node, const SourceLocation& where, std::string_view key,
                  std::initializer_list<std::string_view> allowed) {
  const std::string value = GetString(node, where, key);
  for (std::string_view a : allowed) {
    if (value == a) return value;
  }
  throw FieldError(where, key, "\"" + value + "\"",
                   fmt::format("{} is one of {}", key, fmt::join(allowed, ", ")));
}

double GetFraction(const toml::node& node, const SourceLocation& where, std::string_view key,
                   bool open_low, bool open_high) {
  const double value = GetNumber(node, where, key);
  const bool ok = (open_low ? value > 0 : value >= 0) && (open_high ? value < 1 : value <= 1);
  if (!ok) {
    // A percentage written for the fraction is named with the fraction it stands for (from 2:
    // 1.5 is no percentage anyone means for a fraction such as a confidence).
    const std::string percent =
        value >= 2 && value <= 100
            ? fmt::format(" (a fraction: {:g}, not {:g})", value / 100, value)
            : "";
    throw FieldError(where, key, TomlValueText(node),
                     fmt::format("0 {} {} {} 1{}", open_low ? "<" : "<=", key,
                                 open_high ? "<" : "<=", percent));
  }
  return value;
}

double GetPositiveNumber(const toml::node& node, const SourceLocation& where,
                         std::string_view key) {
  const double value = GetNumber(node, where, key);
  if (!(value > 0) || !std::isfinite(value)) {
    throw FieldError(where, key, TomlValueText(node), fmt::format("{} > 0 and finite", key));
  }
  return value;
}

void ReadResults(const toml::node& node, const SourceLocation& where, const TableReader& parent,
                 DecisionSpec& spec) {
  ResultsSpec results;
  results.where = where;
  const std::string& origin = parent.origin();
  TableReader r(parent.text(), origin);
  r.On("csv", [&](auto& n, auto& w) {
    results.csv_written = GetString(n, w, "csv");
    results.csv = ResolveBeside(results.csv_written, origin);
    results.csv_where = w;
  });
  r.On("arm_column", [&](auto& n, auto& w) { results.arm_column = GetString(n, w, "arm_column"); });
  r.On("d_model_column",
       [&](auto& n, auto& w) { results.d_model_column = GetString(n, w, "d_model_column"); });
  r.On("dropless_column",
       [&](auto& n, auto& w) { results.dropless_column = GetString(n, w, "dropless_column"); });
  r.On("with_drop_column",
       [&](auto& n, auto& w) { results.with_drop_column = GetString(n, w, "with_drop_column"); });
  r.On("dropped_column",
       [&](auto& n, auto& w) { results.dropped_column = GetString(n, w, "dropped_column"); });
  r.On("run_column", [&](auto& n, auto& w) { results.run_column = GetString(n, w, "run_column"); });
  r.On("logs", [&](auto& n, auto& w) {
    for (const std::string& dir : GetStringArray(n, w, "logs")) {
      results.logs.push_back(ResolveBeside(dir, origin));
      results.logs_written.push_back(dir);
    }
    results.logs_where = w;
    if (results.logs.empty()) {
      throw FieldError(w, "logs", "[]", "logs names at least one log directory");
    }
  });
  r.On("tag", [&](auto& n, auto& w) { results.tag = GetString(n, w, "tag"); });
  r.On("dropped_tag", [&](auto& n, auto& w) { results.dropped_tag = GetString(n, w, "dropped_tag"); });
  r.On("last_k", [&](auto& n, auto& w) { results.last_k = GetPositiveInt(n, w, "last_k"); });
  r.On("run_pattern", [&](auto& n, auto& w) {
    results.run_pattern = GetString(n, w, "run_pattern");
    std::string rest = results.run_pattern;
    for (const std::string_view key : {"{arm}", "{d_model}"}) {
      for (size_t at = rest.find(key); at != std::string::npos; at = rest.find(key)) {
        rest.erase(at, key.size());
      }
    }
    if (results.run_pattern.find("{arm}") == std::string::npos ||
        results.run_pattern.find("{d_model}") == std::string::npos ||
        rest.find_first_of("{}") != std::string::npos) {
      throw FieldError(w, "run_pattern", "\"" + results.run_pattern + "\"",
                       "run_pattern contains {arm} and {d_model} and no other placeholder, e.g. "
                       "\"{arm}-d{d_model}\"");
    }
  });
  r.On("runs", [&](auto& n, auto& w) {
    for (const toml::node& element : GetTableArray(n, w, "runs")) {
      LogRunSpec run;
      run.where = r.Locate(element);
      TableReader rr(parent.text(), origin);
      rr.On("arm", [&](auto& n2, auto& w2) { run.arm = GetString(n2, w2, "arm"); });
      rr.On("d_model", [&](auto& n2, auto& w2) { run.d_model = GetPositiveInt(n2, w2, "d_model"); });
      rr.On("run", [&](auto& n2, auto& w2) { run.run = GetString(n2, w2, "run"); });
      rr.Read(*element.as_table(), "[[results.runs]]");
      if (run.arm.empty() || run.d_model == 0 || run.run.empty()) {
        throw LocatedError(run.where, "[[results.runs]] entry needs arm, d_model and run");
      }
      results.runs.push_back(std::move(run));
    }
  });
  r.On("loss", [&](auto& n, auto& w) {
    results.loss = *DecisionLossFromString(OneOf(n, w, "loss", {"dropless", "with_drop"}));
  });
  r.Read(GetTable(node, where, "results"), "[results]");
  const bool csv = !results.csv.empty(), logs = !results.logs.empty();
  if (csv == logs) {
    throw LocatedError(where, csv ? "[results] names both csv and logs; give one source"
                                  : "[results] needs csv = \"FILE\" or logs = [\"DIR\", ...]");
  }
  if (logs) {
    if (results.tag.empty()) {
      throw LocatedError(where, "[results] logs needs tag (the loss tag, e.g. \"eval/loss\")");
    }
    if (results.run_pattern.empty() == results.runs.empty()) {
      throw LocatedError(where, "[results] logs needs either run_pattern = \"{arm}-d{d_model}\" "
                                "or [[results.runs]] entries (one of the two)");
    }
  }
  spec.results = std::move(results);
}

void ReadThroughput(const toml::node& node, const SourceLocation& where, const TableReader& parent,
                    DecisionSpec& spec) {
  ThroughputSpec& t = spec.throughput;
  TableReader r(parent.text(), parent.origin());
  r.On("model", [&](auto& n, auto& w) { t.model = GetBool(n, w, "model"); });
  r.On("layout", [&](auto& n, auto& w) { t.layout = OneOf(n, w, "layout", {"search", "arm"}); });
  r.On("measured", [&](auto& n, auto& w) {
    for (const toml::node& element : GetTableArray(n, w, "measured")) {
      MeasuredThroughput m;
      m.where = r.Locate(element);
      TableReader mr(parent.text(), parent.origin());
      mr.On("arm", [&](auto& n2, auto& w2) { m.arm = GetString(n2, w2, "arm"); });
      mr.On("tokens_per_s",
            [&](auto& n2, auto& w2) { m.tokens_per_s = GetPositiveNumber(n2, w2, "tokens_per_s"); });
      mr.On("gpus", [&](auto& n2, auto& w2) { m.gpus = GetPositiveInt(n2, w2, "gpus"); });
      mr.On("mfu", [&](auto& n2, auto& w2) { m.mfu = GetFraction(n2, w2, "mfu", true, false); });
      mr.On("dropped_share", [&](auto& n2, auto& w2) {
        m.dropped_share = GetFraction(n2, w2, "dropped_share", false, false);
      });
      mr.On("source", [&](auto& n2, auto& w2) { m.source = GetString(n2, w2, "source"); });
      mr.Read(*element.as_table(), "[[throughput.measured]]");
      std::vector<std::string> missing;
      if (m.arm.empty()) missing.emplace_back("arm");
      if (m.tokens_per_s == 0) missing.emplace_back("tokens_per_s");
      if (m.gpus == 0) missing.emplace_back("gpus");
      if (m.source.empty()) missing.emplace_back("source");
      if (!missing.empty()) {
        throw LocatedError(m.where, fmt::format("[[throughput.measured]] entry lacks {} (each entry "
                                                "needs arm, tokens_per_s, gpus and source)",
                                                fmt::join(missing, ", ")));
      }
      for (const MeasuredThroughput& other : t.measured) {
        if (other.arm == m.arm) {
          throw LocatedError(m.where, fmt::format("arm '{}' has two [[throughput.measured]] "
                                                  "entries; give one per arm",
                                                  m.arm));
        }
      }
      t.measured.push_back(std::move(m));
    }
  });
  r.Read(GetTable(node, where, "throughput"), "[throughput]");
}

void ReadTarget(const toml::node& node, const SourceLocation& where, const TableReader& parent,
                DecisionSpec& spec) {
  TargetSpec t;
  t.where = where;
  TableReader r(parent.text(), parent.origin());
  r.On("description", [&](auto& n, auto& w) { t.description = GetString(n, w, "description"); });
  // Bounds against a slipped exponent, far past any pretraining run: the largest published
  // ones train on about 36e12 tokens (Qwen3) with about 5e25 FLOPs (Llama 3 405B: 3.8e25).
  r.On("tokens", [&](auto& n, auto& w) {
    t.tokens = GetPositiveNumber(n, w, "tokens");
    if (t.tokens > 1e18) {
      throw FieldError(w, "tokens", TomlValueText(n),
                       "tokens <= 1e18 (training tokens of the target run, e.g. 20e12)");
    }
  });
  r.On("compute_flops", [&](auto& n, auto& w) {
    t.compute_flops = GetPositiveNumber(n, w, "compute_flops");
    if (t.compute_flops > 1e32) {
      throw FieldError(w, "compute_flops", TomlValueText(n),
                       "compute_flops <= 1e32 (training FLOPs of the target run, e.g. 3.8e25)");
    }
  });
  r.On("hardware", [&](auto& n, auto& w) { t.hardware = GetString(n, w, "hardware"); });
  r.On("gpus", [&](auto& n, auto& w) { t.gpus = GetPositiveInt(n, w, "gpus"); });
  r.On("batch_seqs", [&](auto& n, auto& w) { t.batch_seqs = GetPositiveInt(n, w, "batch_seqs"); });
  r.On("seq_len", [&](auto& n, auto& w) { t.seq_len = GetPositiveInt(n, w, "seq_len"); });
  r.On("profile", [&](auto& n, auto& w) { t.profile = GetString(n, w, "profile"); });
  r.On("format", [&](auto& n, auto& w) { t.format = OneOf(n, w, "format", {"bf16", "fp8", "mxfp8"}); });
  r.On("arms", [&](auto& n, auto& w) {
    for (const toml::node& element : GetTableArray(n, w, "arms")) {
      TargetArm a;
      a.where = r.Locate(element);
      TableReader ar(parent.text(), parent.origin());
      ar.On("arm", [&](auto& n2, auto& w2) { a.arm = GetString(n2, w2, "arm"); });
      a.model_where = a.layout_where = a.where;
      ar.On("model", [&](auto& n2, auto& w2) {
        a.model = GetString(n2, w2, "model");
        a.model_where = w2;
      });
      ar.On("layout", [&](auto& n2, auto& w2) {
        a.layout = GetString(n2, w2, "layout");
        a.layout_where = w2;
      });
      ar.On("routing", [&](auto& n2, auto& w2) {
        a.routing = OneOf(n2, w2, "routing",
                          {"auto", "dropless", "balanced", "capacity", "fixed-cells"});
      });
      ar.On("capacity_factor", [&](auto& n2, auto& w2) {
        a.capacity_factor = GetPositiveNumber(n2, w2, "capacity_factor");
      });
      ar.Read(*element.as_table(), "[[target.arms]]");
      if (a.arm.empty() || a.model.empty()) {
        throw LocatedError(a.where, "[[target.arms]] entry needs arm and model");
      }
      t.arms.push_back(std::move(a));
    }
  });
  r.Read(GetTable(node, where, "target"), "[target]");
  // A device or model file named by a relative path is found beside the study file first, as the
  // study's own model and results are.
  auto beside_study = [&](std::string& path) {
    if (IsWrittenAsPath(path)) path = ResolveBeside(path, parent.origin());
  };
  beside_study(t.hardware);
  for (TargetArm& a : t.arms) beside_study(a.model);
  if (t.tokens == 0 && t.compute_flops == 0) {
    throw LocatedError(where,
                       "[target] needs tokens (training tokens, e.g. 20e12) or compute_flops (the "
                       "target budget C, e.g. 1e24)");
  }
  spec.target = std::move(t);
}

void ReadFit(const toml::node& node, const SourceLocation& where, const TableReader& parent,
             DecisionSpec& spec) {
  FitSpec& f = spec.fit;
  TableReader r(parent.text(), parent.origin());
  r.On("law", [&](auto& n, auto& w) { f.law = OneOf(n, w, "law", {"compute", "chinchilla"}); });
  r.On("rungs", [&](auto& n, auto& w) { f.rungs = OneOf(n, w, "rungs", {"common", "all"}); });
  std::vector<SourceLocation> pin_at;        // where each pin's name is written
  std::vector<SourceLocation> pin_value_at;  // and its value
  r.On("pin", [&](auto& n, auto& w) {
    for (const auto& [key, value] : GetTable(n, w, "pin")) {
      const std::string name(key.str());
      pin_at.push_back(KeyLocationOf(key, value, r.origin(), r.text()));
      pin_value_at.push_back(r.Locate(value));
      const double pinned = GetNumber(value, r.Locate(value), name);
      if (!std::isfinite(pinned)) {
        throw FieldError(r.Locate(value), name, TomlValueText(value), name + " is finite");
      }
      f.pins.emplace_back(name, pinned);
    }
  });
  std::optional<SourceLocation> bootstrap_at;
  r.On("bootstrap", [&](auto& n, auto& w) {
    f.bootstrap = GetPositiveInt(n, w, "bootstrap", 0);
    if (f.bootstrap > 100000) {
      throw FieldError(w, "bootstrap", std::to_string(f.bootstrap), "bootstrap <= 100000");
    }
    bootstrap_at = w;
  });
  r.On("seed", [&](auto& n, auto& w) {
    f.seed = static_cast<uint64_t>(GetPositiveInt(n, w, "seed", 0));
  });
  r.On("confidence",
       [&](auto& n, auto& w) { f.confidence = GetFraction(n, w, "confidence", true, true); });
  r.Read(GetTable(node, where, "fit"), "[fit]");
  // Each pin names a parameter of the law (checked once the law is read, wherever it stands).
  const scaling::Law& law = scaling::FindLaw(f.law);
  for (size_t i = 0; i < f.pins.size(); ++i) {
    const std::string& name = f.pins[i].first;
    if (law.ParamIndex(name) >= 0) continue;
    std::vector<std::string> names;
    for (const auto& param : law.params) names.push_back(param.name);
    throw FieldError(pin_at[i], "pin", name,
                     fmt::format("a parameter of law {}: {}{}", law.name, fmt::join(names, ", "),
                                 DidYouMean(name, names)));
  }
  // Each pin's value against the law's form, located at the value.
  (void)scaling::PinnedTheta(law, f.pins, pin_value_at);
  // Checked once the confidence is read, wherever it stands in the table.
  if (bootstrap_at && f.bootstrap > 0 &&
      f.bootstrap < scaling::MinBootstrapResamples(f.confidence)) {
    throw FieldError(*bootstrap_at, "bootstrap", std::to_string(f.bootstrap),
                     scaling::BootstrapMinimumRule(f.confidence) + ", or 0 for none");
  }
}

void ReadRule(const toml::node& node, const SourceLocation& where, const TableReader& parent,
              DecisionSpec& spec) {
  RuleSpec rule;
  rule.where = where;
  rule.criteria.assign(kCriterionNames.begin(), kCriterionNames.end());
  TableReader r(parent.text(), parent.origin());
  rule.default_where = rule.challenger_where = where;
  r.On("default", [&](auto& n, auto& w) {
    rule.default_arm = GetString(n, w, "default");
    rule.default_where = w;
  });
  r.On("challenger", [&](auto& n, auto& w) {
    rule.challenger = GetString(n, w, "challenger");
    rule.challenger_where = w;
  });
  r.On("threshold",
       [&](auto& n, auto& w) { rule.threshold = GetFraction(n, w, "threshold", true, true); });
  r.On("measure", [&](auto& n, auto& w) {
    rule.measure = OneOf(n, w, "measure", {"effective_compute", "loss"});
  });
  r.On("criteria", [&](auto& n, auto& w) {
    rule.criteria = GetStringArray(n, w, "criteria");
    if (rule.criteria.empty()) {
      throw FieldError(w, "criteria", "[]",
                       "criteria lists at least one criterion (a rule without one would always "
                       "pick the challenger)");
    }
    const std::vector<std::string> known(kCriterionNames.begin(), kCriterionNames.end());
    for (size_t i = 0; i < rule.criteria.size(); ++i) {
      const std::string& c = rule.criteria[i];
      if (std::find(known.begin(), known.end(), c) == known.end()) {
        throw FieldError(w, "criteria", "\"" + c + "\"",
                         fmt::format("each criterion is one of {}{}", fmt::join(known, ", "),
                                     DidYouMean(c, known)));
      }
      if (std::find(rule.criteria.begin(), rule.criteria.begin() + i, c) !=
          rule.criteria.begin() + i) {
        throw FieldError(w, "criteria", "\"" + c + "\"", "each criterion is listed once");
      }
    }
  });
  r.Read(GetTable(node, where, "rule"), "[rule]");
  if (rule.default_arm.empty() || rule.challenger.empty()) {
    throw LocatedError(where, "[rule] needs default = \"ARM\" and challenger = \"ARM\"");
  }
  spec.rule = std::move(rule);
}

void ReadNoise(const toml::node& node, const SourceLocation& where, const TableReader& parent,
               DecisionSpec& spec) {
  NoiseSpec noise;
  TableReader r(parent.text(), parent.origin());
  r.On("loss_spread",
       [&](auto& n, auto& w) {
         noise.loss_spread = GetPositiveNumber(n, w, "loss_spread");
         noise.loss_spread_where = w;
       });
  r.On("d_model", [&](auto& n, auto& w) {
    noise.d_model = GetPositiveInt(n, w, "d_model");
    noise.d_model_where = w;
  });
  r.On("runs", [&](auto& n, auto& w) { noise.runs = GetPositiveInt(n, w, "runs", 2); });
  r.On("effective_compute_spread", [&](auto& n, auto& w) {
    noise.effective_compute_spread = GetPositiveNumber(n, w, "effective_compute_spread");
  });
  r.On("source", [&](auto& n, auto& w) { noise.source = GetString(n, w, "source"); });
  r.Read(GetTable(node, where, "noise"), "[noise]");
  if (noise.loss_spread == 0 || noise.d_model == 0) {
    throw LocatedError(where, "[noise] needs loss_spread (nats) and d_model (the rung it was "
                              "measured at)");
  }
  spec.noise = std::move(noise);
}

void ReadContextExtension(const toml::node& node, const SourceLocation& where,
                          const TableReader& parent, DecisionSpec& spec) {
  for (const toml::node& element : GetTableArray(node, where, "context_extension")) {
    ContextExtension e;
    e.where = parent.Locate(element);
    bool has_outcome = false;
    TableReader r(parent.text(), parent.origin());
    r.On("arm", [&](auto& n, auto& w) { e.arm = GetString(n, w, "arm"); });
    r.On("variant", [&](auto& n, auto& w) { e.variant = GetString(n, w, "variant"); });
    e.d_model_where = e.where;
    r.On("d_model", [&](auto& n, auto& w) {
      e.d_model = GetPositiveInt(n, w, "d_model");
      e.d_model_where = w;
    });
    r.On("seq_len", [&](auto& n, auto& w) { e.seq_len = GetPositiveInt(n, w, "seq_len"); });
    r.On("outcome", [&](auto& n, auto& w) {
      e.outcome = *ExtensionOutcomeFromString(
          OneOf(n, w, "outcome", {"smooth", "not_smooth", "completed", "interrupted"}));
      has_outcome = true;
    });
    r.On("source", [&](auto& n, auto& w) { e.source = GetString(n, w, "source"); });
    r.On("note", [&](auto& n, auto& w) { e.note = GetString(n, w, "note"); });
    r.Read(*element.as_table(), "[[context_extension]]");
    if (e.arm.empty() || !has_outcome) {
      throw LocatedError(e.where, "[[context_extension]] entry needs arm and outcome");
    }
    spec.context_extension.push_back(std::move(e));
  }
}

}  // namespace

void AddDecisionHandlers(TableReader& reader, DecisionSpec& spec) {
  const TableReader* parent = &reader;
  reader.On("results", [parent, &spec](auto& n, auto& w) { ReadResults(n, w, *parent, spec); });
  reader.On("throughput",
            [parent, &spec](auto& n, auto& w) { ReadThroughput(n, w, *parent, spec); });
  reader.On("target", [parent, &spec](auto& n, auto& w) { ReadTarget(n, w, *parent, spec); });
  reader.On("fit", [parent, &spec](auto& n, auto& w) { ReadFit(n, w, *parent, spec); });
  reader.On("rule", [parent, &spec](auto& n, auto& w) { ReadRule(n, w, *parent, spec); });
  reader.On("noise", [parent, &spec](auto& n, auto& w) { ReadNoise(n, w, *parent, spec); });
  reader.On("context_extension",
            [parent, &spec](auto& n, auto& w) { ReadContextExtension(n, w, *parent, spec); });
}

void CheckResultsExist(const ResultsSpec& results) {
  if (!results.csv.empty() && !InputFileExists(results.csv)) {
    throw FieldError(results.csv_where, "csv", "\"" + results.csv_written + "\"",
                     MissingInputFileRule(results.csv, results.where.origin));
  }
  for (size_t i = 0; i < results.logs.size(); ++i) {
    std::error_code ignored;
    if (!std::filesystem::exists(results.logs[i], ignored)) {
      throw FieldError(results.logs_where, "logs", "\"" + results.logs_written[i] + "\"",
                       "a log directory or file; none at " + results.logs[i] +
                           " (a relative path is taken beside " + results.where.origin + ")");
    }
  }
}

void ValidateDecisionSpec(const StudyConfig& study) {
  const DecisionSpec& spec = study.decision;
  std::vector<std::string> arms;
  for (const Arm& a : study.arms) arms.push_back(a.name);
  const auto check_arm = [&](const std::string& arm, const SourceLocation& where,
                             std::string_view field) {
    if (std::find(arms.begin(), arms.end(), arm) == arms.end()) {
      throw FieldError(where, field, "\"" + arm + "\"",
                       fmt::format("{} names an arm of the study ({}){}", field,
                                   fmt::join(arms, ", "), DidYouMean(arm, arms)));
    }
  };
  const auto check_rung = [&](int64_t d_model, const SourceLocation& where) {
    for (const Rung& r : study.rungs) {
      if (r.d_model == d_model) return;
    }
    std::vector<std::string> rungs;
    for (const Rung& r : study.rungs) rungs.push_back(std::to_string(r.d_model));
    throw FieldError(where, "d_model", std::to_string(d_model),
                     fmt::format("d_model names a rung of the study ({})", fmt::join(rungs, ", ")));
  };
  if (spec.rule) {
    check_arm(spec.rule->default_arm, spec.rule->default_where, "default");
    check_arm(spec.rule->challenger, spec.rule->challenger_where, "challenger");
    if (spec.rule->default_arm == spec.rule->challenger) {
      throw FieldError(spec.rule->challenger_where, "challenger",
                       "\"" + spec.rule->challenger + "\"",
                       "the challenger differs from the default arm");
    }
  }
  if (spec.results) {
    // One run per (arm, rung), and one (arm, rung) per run: a second entry would be silently
    // shadowed, and one run read for two arms compares a run with itself.
    std::map<std::pair<std::string, int64_t>, const LogRunSpec*> by_cell;
    std::map<std::string, const LogRunSpec*> by_run;
    for (const LogRunSpec& r : spec.results->runs) {
      check_arm(r.arm, r.where, "arm");
      check_rung(r.d_model, r.where);
      if (const auto [it, added] = by_cell.emplace(std::pair(r.arm, r.d_model), &r); !added) {
        throw LocatedError(r.where,
                           fmt::format("[[results.runs]]: a second entry for arm {} at d_model {} "
                                       "(first at {}); each arm has one run per rung",
                                       r.arm, r.d_model, it->second->where.ToString()));
      }
      if (const auto [it, added] = by_run.emplace(r.run, &r); !added) {
        throw FieldError(r.where, "run", "\"" + r.run + "\"",
                         fmt::format("each run is read for one arm and rung (it is already read "
                                     "for {} at d_model {}, {})",
                                     it->second->arm, it->second->d_model,
                                     it->second->where.ToString()));
      }
    }
  }
  for (const MeasuredThroughput& m : spec.throughput.measured) check_arm(m.arm, m.where, "arm");
  if (spec.target) {
    // One entry per arm: a second would silently replace the first's model and layout.
    std::map<std::string, const TargetArm*> by_arm;
    for (const TargetArm& a : spec.target->arms) {
      check_arm(a.arm, a.where, "arm");
      if (const auto [it, added] = by_arm.emplace(a.arm, &a); !added) {
        throw FieldError(a.where, "arm", "\"" + a.arm + "\"",
                         fmt::format("each arm has one [[target.arms]] entry (the first is at {})",
                                     it->second->where.ToString()));
      }
    }
  }
  for (const ContextExtension& e : spec.context_extension) {
    check_arm(e.arm, e.where, "arm");
    if (e.d_model != 0) check_rung(e.d_model, e.d_model_where);
  }
  if (spec.noise) check_rung(spec.noise->d_model, spec.noise->d_model_where);
  if (spec.throughput.model) {
    const SourceLocation file = FileLocation(study.origin);
    if (!spec.target) {
      throw LocatedError(file, "[throughput] model = true needs a [target] (hardware, gpus, "
                               "batch_seqs and [[target.arms]])");
    }
    const TargetSpec& t = *spec.target;
    if (t.hardware.empty() || t.gpus == 0 || t.batch_seqs == 0) {
      throw LocatedError(t.where, "[throughput] model = true needs [target] hardware, gpus and "
                                  "batch_seqs");
    }
    if (spec.throughput.layout == "arm") {
      for (const TargetArm& a : t.arms) {
        if (a.layout.empty()) {
          throw LocatedError(a.where, fmt::format("[throughput] layout = \"arm\" needs a layout "
                                                  "for arm '{}' in [[target.arms]]",
                                                  a.arm));
        }
      }
    }
  }
}

}  // namespace mosaic
