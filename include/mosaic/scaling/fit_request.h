// A scaling-law fit as a user asks for it (data file or table, column mappings, row filters,
// losses from training logs, law, objective, pins, bootstrap) turned into the fitted arm: the
// points, the fit summary and its bootstrap. One path for `mosaic fit`, the Python package and
// any job that fits an arm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mosaic/scaling/bootstrap.h"
#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/fit.h"

namespace mosaic::scaling {

struct FitRequest {
  // Rows: mappings NAME=COLUMN or NAME=EXPRESSION applied in order, then the rows with the
  // highest loss dropped, then the `where` filter (data_table.h).
  std::vector<std::string> columns;
  std::string where;
  int drop_highest_loss = 0;
  std::string loss_column = "loss";
  std::string run_column = kDefaultRunColumn;        // data_table.h: required when renamed
  std::string weight_column = kDefaultWeightColumn;
  // Losses from training logs: each row's run (run column) read from these directories.
  std::vector<std::string> logs;
  std::string tag;
  int last_k = 1;
  // The fit.
  std::string objective = "huber";  // huber | squared
  std::string space = "log";        // log | linear
  double delta = 1e-3;
  std::vector<std::pair<std::string, double>> pins;
  int threads = 2;
  bool cut_short = true;
  // Bootstrap by run: 0 resamples for none.
  int bootstrap = 0;
  uint64_t seed = 0;
  double confidence = 0.95;
};

struct FittedArm {
  FitData data;
  FitSummary fit;
  std::optional<BootstrapResult> bootstrap;
};

// Checks the request's numbers as `mosaic fit` does its flags: 0 <= drop_highest_loss <= 1e6,
// 1 <= last_k <= 1e6, 0 < delta <= 1e6, 1 <= threads <= 1024, 0 <= bootstrap <= 1e6,
// 0 < confidence < 1, and each pin named once with a finite value. Throws InputError
// "NAME = VALUE. Violated constraint: RULE" for the first that is not. NAME is the request's
// field (bootstrap, last_k) or, with `names` kFlags, the `mosaic fit` flag that sets it
// (--bootstrap, --last-k), so the CLI's message names what its user typed.
enum class RequestNames { kFields, kFlags };
void CheckFitRequest(const FitRequest& request, RequestNames names = RequestNames::kFields);

// The fit options of a request (objective, pins, threads, cut-short), checked by
// CheckFitRequest. Throws InputError for an unknown objective or residual space.
FitOptions MakeFitOptions(const FitRequest& request);

// The rule that selected the points, for the recipe ("--column ...; drop the 5 rows ...").
std::string SubsetRule(const FitRequest& request);

// Applies the request's logs, mappings, drop and filter to `table` (in that order). Throws
// InputError as each step does (unknown column, bad expression, run without the tag, ...).
void PrepareTable(DataTable& table, const FitRequest& request);

// Fits `law` to `table` (already prepared) and bootstraps it when asked; `stream` is the
// bootstrap seed stream (0 for a base arm, 1 for a compared arm: StreamSeed).
FittedArm FitTable(const Law& law, const DataTable& table, const FitRequest& request,
                   uint64_t stream = 0);

// ReadCsv(path), PrepareTable, FitTable.
FittedArm FitFile(const Law& law, const std::string& path, const FitRequest& request,
                  uint64_t stream = 0);

}  // namespace mosaic::scaling
