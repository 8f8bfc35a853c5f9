// mosaic model PRESET|CONFIG.toml: exact parameter and FLOP breakdown.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "mosaic/model/flops.h"
#include "mosaic/model/model_json.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/model/param_count.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"

namespace mosaic::cli {
namespace {

struct ModelOptions {
  std::string model;
  std::vector<std::string> sets;
  int64_t seq_len = 4096;
  double tokens = 0;
  bool json = false;
  bool list = false;
  bool fields = false;
  std::string output;
};

std::string RenderText(const ModelSpec& spec, const ParamCount& p, const FlopCount& table,
                       const FlopCount& physical, const FlopCount& causal,
                       const ModelOptions& options) {
  std::string out;
  const ModelConfig& c = spec.config;
  out += fmt::format("{} ({})\n", c.name, spec.origin);
  if (!c.source.empty()) out += fmt::format("source: {}\n", c.source);
  for (const std::string& o : spec.overrides) out += fmt::format("override: {}\n", o);
  for (const std::string& note : UnusedFieldNotes(c)) out += fmt::format("note: {}\n", note);
  if (!spec.derivation.empty()) {
    out += "derived from d_model (marin-ladder family):\n";
    for (const std::string& line : spec.derivation) out += "  " + line + "\n";
  }
  out += "\nParameters by component\n";
  out += fmt::format("  {:<22} {:<9} {:>19} {:>19}  {}\n", "component", "kind", "total", "active",
                     "formula");
  for (const ParamComponent& component : p.components) {
    out += fmt::format("  {:<22} {:<9} {:>19} {:>19}  {}\n", component.name,
                       ToString(component.category), FormatThousands(component.total_params),
                       FormatThousands(component.active_params), component.formula);
  }
  out += "\nTotals\n";
  auto line = [&](std::string_view name, int64_t value, std::string_view meaning) {
    out += fmt::format("  {:<34} {:>19}  {:>7}  {}\n", name, FormatThousands(value),
                       FormatCount(static_cast<double>(value)), meaning);
  };
  line("total_params", p.total_params, "every stored parameter");
  line("active_params", p.active_params, "touched per token, embedding and lm_head included");
  line("active_params_no_embedding", p.active_params_no_embedding,
       "the same without embedding and lm_head");
  line("active_params_matmul_no_embedding", p.active_params_matmul_no_embedding,
       "matmul weights only, router included (seed-000 ladder table)");
  line("total_params_matmul", p.total_params_matmul, "matmul weights with embedding and lm_head");
  out += fmt::format("  {:<34} {:>19.6f}  {:>7}  {}\n", "sparsity", p.sparsity, "",
                     "1 − active_params / total_params (MOSAIC)");

  out += fmt::format("\nForward FLOPs per token (Levanter analytic estimate, training seq_len {})\n",
                     options.seq_len);
  out += fmt::format("  {:<26} {:>22} {:>22} {:>22}\n", "", "full-square", "causal",
                     "levanter-table");
  auto row = [&](std::string_view name, auto field) {
    out += fmt::format("  {:<26} {:>22} {:>22} {:>22}\n", name, FormatThousands(physical.*field),
                       FormatThousands(causal.*field), FormatThousands(table.*field));
  };
  row("attention span (tokens)", &FlopCount::attention_span_tokens);
  row("global layers (per pass)", &FlopCount::global_layers);
  row("mlp", &FlopCount::mlp_flops);
  row("router", &FlopCount::router_flops);
  row("latent projections", &FlopCount::latent_projection_flops);
  row("attention projections", &FlopCount::attention_projection_flops);
  row("attention scores", &FlopCount::attention_score_flops);
  row("lm_head", &FlopCount::lm_head_flops);
  if (c.mtp_layers > 0) row("mtp projections", &FlopCount::mtp_projection_flops);
  row("forward total", &FlopCount::forward_flops_per_token);
  out += fmt::format("  {:<26} {:>22} {:>22} {:>22}\n", "train (3 × forward)",
                     FormatScientific(physical.train_flops_per_token(), 4),
                     FormatScientific(causal.train_flops_per_token(), 4),
                     FormatScientific(table.train_flops_per_token(), 4));
  const int64_t six_n = SixNFlopsPerToken(spec.config, p);
  out += fmt::format("  {:<26} {:>22}   (6 × active_params_no_embedding{})\n", "6·N estimate",
                     FormatThousands(six_n), c.loops > 1 ? " × loops" : "");
  if (options.tokens > 0) {
    out += fmt::format(
        "\nTraining FLOPs for {} tokens: full-square {}, causal {}, levanter-table {}, "
        "6·N·D {}\n",
        FormatCount(options.tokens),
        FormatScientific(physical.train_flops_per_token() * options.tokens),
        FormatScientific(causal.train_flops_per_token() * options.tokens),
        FormatScientific(table.train_flops_per_token() * options.tokens),
        FormatScientific(static_cast<double>(six_n) * options.tokens));
  }
  return out;
}

void Run(const ModelOptions& options) {
  if (options.fields) {
    const ModelConfig defaults;
    nlohmann::ordered_json fields = nlohmann::ordered_json::array();
    std::string out = "Model fields (TOML keys and --set names)\n";
    for (const ModelField& field : ModelFields()) {
      const std::string value = GetModelField(defaults, field.name).value_or("");
      fields.push_back({{"name", field.name},
                        {"type", ToString(field.type)},
                        {"default", value},
                        {"help", field.help}});
      out += fmt::format("  {:<20} {:<8} default {:<8} {}\n", field.name, ToString(field.type),
                         value, field.help);
    }
    if (options.json) {
      EmitOutput(options.output, DumpJson(fields) + "\n");
    } else {
      EmitText(options.output, out);
    }
    return;
  }
  if (options.list) {
    if (!options.model.empty()) {
      throw UsageError("--list lists every preset: give it without a model (" + options.model +
                       ")");
    }
    nlohmann::ordered_json presets = nlohmann::ordered_json::array();
    std::string out;
    for (const std::string& name : PresetNames()) {
      ModelSpec spec = LoadModel(name);
      ParamCount p = CountParams(spec.config);
      presets.push_back({{"name", name},
                         {"total_params", p.total_params},
                         {"active_params", p.active_params},
                         {"source", spec.config.source}});
      out += fmt::format("{:<18} {:>8} total {:>8} active  {}\n", name,
                         FormatCount(static_cast<double>(p.total_params)),
                         FormatCount(static_cast<double>(p.active_params)), spec.config.source);
    }
    if (options.json) {
      EmitOutput(options.output, DumpJson(presets) + "\n");
    } else {
      EmitText(options.output, out);
    }
    return;
  }
  if (options.model.empty()) {
    throw UsageError("model: name a preset or a CONFIG.toml (see mosaic model --list)");
  }
  std::vector<FieldOverride> overrides;
  for (const std::string& text : options.sets) overrides.push_back(ParseFieldOverride(text));
  CheckOutputIsNotInput(options.output, {options.model});
  ModelSpec spec = LoadModel(options.model, overrides);
  ParamCount p = CountParams(spec.config);
  FlopCount physical = CountFlops(spec.config, {FlopConvention::kPhysical, options.seq_len});
  FlopCount causal = CountFlops(spec.config, {FlopConvention::kCausal, options.seq_len});
  FlopCount table = CountFlops(spec.config, {FlopConvention::kLevanterTable, options.seq_len});
  if (options.json) {
    EmitOutput(options.output, DumpJson(ModelJson(spec, options.seq_len, options.tokens)) + "\n");
  } else {
    EmitText(options.output, RenderText(spec, p, table, physical, causal, options));
  }
}

}  // namespace

void AddModelCommand(CLI::App& root) {
  auto options = std::make_shared<ModelOptions>();
  CLI::App* cmd = root.add_subcommand(
      "model",
      "Exact parameter and FLOP breakdown of a model preset or CONFIG.toml.\n\nExamples:\n"
      "  mosaic model mixtral-8x7b\n"
      "  mosaic model marin-ladder --set d_model=2048\n"
      "  mosaic model deepseek-v3 --json\n"
      "  mosaic model my_model.toml --set experts=64 --set top_k=4 --tokens 1e12\n"
      "  mosaic model --list\n"
      "  mosaic model --fields");
  cmd->add_option("model", options->model, "preset name or path to a model TOML file");
  cmd->add_option("--set", options->sets, "override a config field: FIELD=VALUE (repeatable)")
      ->take_all();
  cmd->add_option("--seq", options->seq_len, "training sequence length in tokens (FLOPs)")
      ->check(CLI::Range(int64_t{1}, kMaxSeqLen))
      ->default_val(4096);
  cmd->add_option("--tokens", options->tokens, "also print training FLOPs for this many tokens")
      ->check(InRange(0, 1e30, /*open_low=*/true));
  cmd->add_flag("--json", options->json, "machine-readable output (also with --list, --fields)");
  cmd->add_flag("--list", options->list, "list the presets with their totals and sources");
  cmd->add_flag("--fields", options->fields, "list every model field with its type and meaning");
  AddOutputOption(cmd, &options->output);
  cmd->callback([options] { Run(*options); });
}

}  // namespace mosaic::cli
