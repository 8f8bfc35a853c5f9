#include "mosaic/study/ladder_report.h"

#include <cstdlib>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"

namespace mosaic {

namespace {

// The seed table's "~0.6 h"; runs under 3 minutes would print "~0.0 h", so they get minutes,
// and under 3 seconds seconds; past 10^6 hours (a century) the hours are written in
// scientific notation rather than in hundreds of digits.
std::string Hours(double hours) {
  if (hours < 0.05 / 60.0) return fmt::format("~{:.2g} s", hours * 3600.0);
  if (hours < 0.05) return fmt::format("~{:.1f} min", hours * 60.0);
  if (hours >= 1e6) return fmt::format("~{:.3g} h", hours);
  return fmt::format("~{:.1f} h", hours);
}

// The fewest significant digits (2 to 6) that write `value` back exactly: 2.5e15 as "2.5e15",
// 9.89e14 as "9.89e14" (2 digits wrote it "9.9e14").
std::string ShortestScientific(double value) {
  for (int digits = 2; digits < 6; ++digits) {
    const std::string text = FormatScientific(value, digits);
    if (std::strtod(text.c_str(), nullptr) == value) return text;
  }
  return FormatScientific(value, 6);
}

std::string ConventionMeaning(ActiveParamsConvention convention) {
  switch (convention) {
    case ActiveParamsConvention::kInclusive:
      return "inclusive: every parameter a token touches, embedding and lm_head included";
    case ActiveParamsConvention::kNoEmbedding:
      return "no_embedding: active parameters without the embedding and lm_head";
    case ActiveParamsConvention::kMatmulNoEmbedding:
      return "matmul_no_embedding: no embedding, lm_head, norms or gates; router included";
  }
  return "?";
}

std::vector<const LadderRow*> RowsOf(const LadderPlan& plan, const std::string& arm) {
  std::vector<const LadderRow*> rows;
  for (const LadderRow& row : plan.rows) {
    if (row.arm == arm) rows.push_back(&row);
  }
  return rows;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : std::string(separator)) + part;
  return out;
}

}  // namespace

std::string RenderLadderText(const LadderPlan& plan) {
  const StudyConfig& s = plan.study;
  const std::string& reference = s.arms.front().name;
  const std::vector<const LadderRow*> ref_rows = RowsOf(plan, reference);
  std::string out;
  out += fmt::format("{}\nstudy: {}; model: {}; reference arm: {}\n\n", s.title, s.origin, s.model,
                     reference);
  out += "| size | layers | active params | token budget | racks | step budget | train FLOPs | est. "
         "time |\n|---|---|---|---|---|---|---|---|\n";
  for (const LadderRow* r : ref_rows) {
    out += fmt::format("| d{} | {} | {} | {} | {} | {} | {} | {} |\n", r->d_model, r->layers,
                       FormatCount(static_cast<double>(r->active_params)),
                       FormatCount(static_cast<double>(r->token_budget)), r->racks,
                       FormatThousands(r->steps), FormatScientific(r->train_flops),
                       Hours(r->est_hours));
  }
  std::vector<std::string> exact;
  for (const LadderRow* r : ref_rows) exact.push_back(FormatThousands(r->active_params));
  out += fmt::format("\nactive params: {} (exact: {})\n", ConventionMeaning(s.active_params_convention),
                     Join(exact, " / "));
  out += fmt::format(
      "token budget = {} × active params; step budget = round(token budget / ({} seqs × racks × {} "
      "tokens))\n",
      s.tokens_per_active_param, s.batch_seqs_per_rack, s.seq_len);
  out += fmt::format("train FLOPs = 3 × forward FLOPs/token ({}) × token budget\n",
                     s.flop_convention == FlopConvention::kLevanterTable
                         ? "levanter-table: attention span = the config's max_seq_len, global "
                           "layers = L // global_every"
                         : "physical: attention span = seq_len, the real global layers");
  out += fmt::format("est. time = train FLOPs / ({} MFU × {} FLOP/s × {} GPUs/rack × racks)\n",
                     s.assumed_mfu, ShortestScientific(s.peak_flops_per_gpu), s.gpus_per_rack);

  out += "\nTrain FLOPs by convention (reference arm)\n";
  out += "| size | levanter-table | physical | physical / levanter-table |\n|---|---|---|---|\n";
  for (const LadderRow* r : ref_rows) {
    out += fmt::format("| d{} | {} | {} | {:.3f} |\n", r->d_model,
                       FormatScientific(r->train_flops_levanter_table),
                       FormatScientific(r->train_flops_physical),
                       r->train_flops_physical / r->train_flops_levanter_table);
  }
  out += fmt::format(
      "levanter-table: attention span = max_seq_len of the model config, global layers = "
      "L // global_every; physical: span {} (seq_len), global layers from the real pattern\n",
      s.seq_len);

  if (!s.cadence.empty()) {
    out += "\nEval and checkpoint cadence\n| size | every | evals per run |\n|---|---|---|\n";
    for (const LadderRow* r : ref_rows) {
      if (r->eval_every_steps == 0) {
        out += fmt::format("| d{} | none (no [[cadence]] rule covers d{}) | 0 |\n", r->d_model,
                           r->d_model);
      } else {
        out += fmt::format("| d{} | {} steps | {} |\n", r->d_model,
                           FormatThousands(r->eval_every_steps), r->evals);
      }
    }
  }

  out += "\nArms\n";
  for (size_t a = 0; a < s.arms.size(); ++a) {
    const Arm& arm = s.arms[a];
    std::string heading = arm.name + (a == 0 ? " (reference)" : "");
    if (!arm.layout.empty()) heading += " [" + arm.layout + "]";
    if (!arm.description.empty()) heading += ": " + arm.description;
    if (a == 0) {
      out += fmt::format("- {} — the table above\n", heading);
      continue;
    }
    if (arm.overrides.empty()) {
      out += fmt::format("- {} — same model as {}, same table\n", heading, reference);
      continue;
    }
    std::vector<std::string> sets;
    for (const ArmOverride& o : arm.overrides) sets.push_back(o.field + "=" + o.value);
    out += fmt::format("- {}\n  model: {} with {}; token budget: {}\n", heading, s.model,
                       Join(sets, ", "),
                       s.budget_basis == BudgetBasis::kReference
                           ? "the reference arm's"
                           : "tokens_per_active_param × its own active params");
    out += "| size | active params | vs " + reference +
           " | total params | token budget | step budget | train FLOPs | est. time |\n"
           "|---|---|---|---|---|---|---|---|\n";
    const std::vector<const LadderRow*> rows = RowsOf(plan, arm.name);
    for (size_t i = 0; i < rows.size(); ++i) {
      const LadderRow* r = rows[i];
      const double change = static_cast<double>(r->active_params) /
                                static_cast<double>(ref_rows[i]->active_params) - 1.0;
      out += fmt::format("| d{} | {} | {} | {} | {} | {} | {} | {} |\n", r->d_model,
                         FormatCount(static_cast<double>(r->active_params)),
                         FormatSignedPercent(change),
                         FormatCount(static_cast<double>(r->total_params)),
                         FormatCount(static_cast<double>(r->token_budget)),
                         FormatThousands(r->steps), FormatScientific(r->train_flops),
                         Hours(r->est_hours));
    }
  }
  return out;
}

namespace {

nlohmann::ordered_json RowJson(const LadderRow& r) {
  nlohmann::ordered_json j;
  j["arm"] = r.arm;
  j["d_model"] = r.d_model;
  j["layers"] = r.layers;
  j["racks"] = r.racks;
  j["active_params"] = r.active_params;
  j["active_params_inclusive"] = r.active_params_inclusive;
  j["total_params"] = r.total_params;
  j["token_budget"] = r.token_budget;
  j["tokens_per_step"] = r.tokens_per_step;
  j["steps"] = r.steps;
  j["forward_flops_per_token"] = r.forward_flops_per_token;
  j["forward_flops_per_token_levanter_table"] = r.forward_flops_per_token_levanter_table;
  j["forward_flops_per_token_physical"] = r.forward_flops_per_token_physical;
  j["train_flops"] = r.train_flops;
  j["train_flops_levanter_table"] = r.train_flops_levanter_table;
  j["train_flops_physical"] = r.train_flops_physical;
  j["est_hours"] = r.est_hours;
  j["eval_every_steps"] = r.eval_every_steps;
  j["evals"] = r.evals;
  j["overrides"] = Join(r.overrides, ";");
  return j;
}

}  // namespace

std::string RenderLadderJson(const LadderPlan& plan) {
  const StudyConfig& s = plan.study;
  nlohmann::ordered_json j;
  j["study"] = {{"name", s.name},
                {"title", s.title},
                {"origin", s.origin},
                {"model", s.model},
                {"reference_arm", s.arms.front().name},
                {"tokens_per_active_param", s.tokens_per_active_param},
                {"active_params_convention", ToString(s.active_params_convention)},
                {"budget_basis", ToString(s.budget_basis)},
                {"batch_seqs_per_rack", s.batch_seqs_per_rack},
                {"seq_len", s.seq_len},
                {"gpus_per_rack", s.gpus_per_rack},
                {"peak_flops_per_gpu", s.peak_flops_per_gpu},
                {"assumed_mfu", s.assumed_mfu},
                {"flop_convention", ToString(s.flop_convention)}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const LadderRow& r : plan.rows) rows.push_back(RowJson(r));
  j["rows"] = rows;
  return DumpJson(j) + "\n";
}

std::string RenderLadderCsv(const LadderPlan& plan) {
  std::string out;
  bool header = true;
  for (const LadderRow& r : plan.rows) {
    nlohmann::ordered_json j = RowJson(r);
    if (header) {
      std::vector<std::string> keys;
      for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
      out += Join(keys, ",") + "\n";
      header = false;
    }
    std::vector<std::string> cells;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it->is_string()) {
        std::string text = it->get<std::string>();
        bool quote = text.find_first_of(",\"\n") != std::string::npos;
        if (quote) {
          std::string escaped;
          for (char c : text) escaped += c == '"' ? std::string("\"\"") : std::string(1, c);
          text = "\"" + escaped + "\"";
        }
        cells.push_back(text);
      } else {
        cells.push_back(it->dump());
      }
    }
    out += Join(cells, ",") + "\n";
  }
  return out;
}

}  // namespace mosaic
