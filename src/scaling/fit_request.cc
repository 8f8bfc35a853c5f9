#include "mosaic/scaling/fit_request.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "mosaic/runs/run.h"
#include "mosaic/scaling/log_losses.h"
#include "mosaic/util/error.h"
#include "mosaic/util/parallel_for.h"

namespace mosaic::scaling {

void CheckFitRequest(const FitRequest& r, RequestNames names) {
  const bool flags = names == RequestNames::kFlags;
  // A field's name, or its flag's: "--" and the field with '-' for '_'.
  const auto named = [flags](std::string field) {
    if (!flags) return field;
    std::replace(field.begin(), field.end(), '_', '-');
    return "--" + field;
  };
  const std::string drop = named("drop_highest_loss"), last_k = named("last_k"),
                    delta = named("delta"), bootstrap = named("bootstrap"),
                    confidence = named("confidence");
  const auto check = [](std::string_view name, double value, bool ok, std::string_view rule) {
    if (!ok) {
      throw InputError(fmt::format("{} = {}. Violated constraint: {}", name, value, rule));
    }
  };
  check(drop, r.drop_highest_loss, r.drop_highest_loss >= 0 && r.drop_highest_loss <= 1000000,
        fmt::format("0 <= {} <= 1e6", drop));
  check(last_k, r.last_k, r.last_k >= 1 && r.last_k <= 1000000,
        fmt::format("1 <= {} <= 1e6", last_k));
  check(delta, r.delta, r.delta > 0 && r.delta <= 1e6, fmt::format("0 < {} <= 1e6", delta));
  CheckThreadCount(r.threads);
  check(bootstrap, r.bootstrap, r.bootstrap >= 0 && r.bootstrap <= 1000000,
        fmt::format("0 <= {} <= 1e6 (resamples; 0 for none)", bootstrap));
  check(confidence, r.confidence, r.confidence > 0 && r.confidence < 1,
        fmt::format("0 < {} < 1", confidence));
  check(bootstrap, r.bootstrap,
        r.bootstrap == 0 || r.bootstrap >= MinBootstrapResamples(r.confidence),
        BootstrapMinimumRule(r.confidence, bootstrap) + ", or 0 for none");
  LossKindFromString(r.objective);     // huber | squared
  ResidualSpaceFromString(r.space);    // log | linear
  for (size_t i = 0; i < r.pins.size(); ++i) {
    const auto& [name, value] = r.pins[i];
    check(name, value, std::isfinite(value), "a pinned value is finite");
    for (size_t j = 0; j < i; ++j) {
      if (r.pins[j].first == name) {
        throw InputError(fmt::format("{} {} = {}. Violated constraint: each parameter is "
                                     "pinned once (it is already pinned to {})",
                                     flags ? "--pin" : "pin", name, value, r.pins[j].second));
      }
    }
  }
}

FitOptions MakeFitOptions(const FitRequest& r) {
  CheckFitRequest(r);
  FitOptions options;
  options.objective.loss = LossKindFromString(r.objective);
  options.objective.space = ResidualSpaceFromString(r.space);
  options.objective.delta = r.delta;
  options.pins = r.pins;
  options.multistart.threads = r.threads;
  options.multistart.cut_short = r.cut_short;
  options.subset_rule = SubsetRule(r);
  return options;
}

std::string SubsetRule(const FitRequest& r) {
  std::vector<std::string> parts;
  if (!r.logs.empty()) {
    parts.push_back(fmt::format("{} = {} of tag '{}' per run from {}", r.loss_column,
                                r.last_k == 1 ? "the final value"
                                              : fmt::format("mean of the last {}", r.last_k),
                                r.tag, fmt::join(r.logs, ", ")));
  }
  for (const std::string& c : r.columns) parts.push_back("--column " + c);
  if (r.drop_highest_loss > 0) {
    parts.push_back(fmt::format("drop the {} rows with the highest {}", r.drop_highest_loss,
                                r.loss_column));
  }
  if (!r.where.empty()) parts.push_back("keep rows where " + r.where);
  return parts.empty() ? "all rows" : fmt::format("{}", fmt::join(parts, "; "));
}

void PrepareTable(DataTable& table, const FitRequest& r) {
  if (!r.logs.empty()) {
    if (r.tag.empty()) throw UsageError("fit: --logs needs --tag (the loss tag, e.g. eval/loss)");
    runs::LoadOptions load;
    load.threads = 0;  // files read on every core; the same result
    const std::vector<runs::Run> logged = runs::LoadRuns(runs::DiscoverRuns(r.logs), load);
    AttachLossesFromLogs(table, logged,
                         {.tag = r.tag,
                          .last_k = r.last_k,
                          .run_column = r.run_column,
                          .loss_column = r.loss_column});
  }
  std::vector<ColumnMapping> mappings;
  for (const std::string& c : r.columns) mappings.push_back(ParseColumnMapping(c));
  ApplyMappings(table, mappings);
  if (r.drop_highest_loss > 0) DropHighest(table, r.loss_column, r.drop_highest_loss);
  if (!r.where.empty()) FilterRows(table, r.where);
}

FittedArm FitTable(const Law& law, const DataTable& table, const FitRequest& r, uint64_t stream) {
  FittedArm arm;
  arm.data = SelectFitData(table, law,
                           {.loss_column = r.loss_column,
                            .run_column = r.run_column,
                            .weight_column = r.weight_column});
  const FitOptions options = MakeFitOptions(r);
  arm.fit = Fit(law, arm.data, options);
  if (r.bootstrap > 0 && arm.fit.ok()) {
    BootstrapOptions b;
    b.resamples = r.bootstrap;
    b.seed = StreamSeed(r.seed, stream);
    b.confidence = r.confidence;
    b.threads = r.threads;
    arm.bootstrap = Bootstrap(law, arm.data, options, arm.fit, b);
  }
  return arm;
}

FittedArm FitFile(const Law& law, const std::string& path, const FitRequest& r, uint64_t stream) {
  DataTable table = ReadCsv(path);
  PrepareTable(table, r);
  return FitTable(law, table, r, stream);
}

}  // namespace mosaic::scaling
