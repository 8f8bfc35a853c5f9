// The points a law is fitted to: one value per law input, the observed loss, a weight and the run
// each point belongs to (bootstrap resamples runs, not checkpoints). Built from a DataTable by
// SelectFitData (data_table.h) or directly in code and tests.
#pragma once

#include <string>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic::scaling {

// The largest weight a point may carry: weights are relative, and the bound keeps every weighted
// sum of squares of the objective finite (a weight of 1e308 overflows it).
inline constexpr double kMaxFitWeight = 1e100;
// The rule a point's weight must meet, as error messages name it.
inline constexpr const char* kFitWeightRule = "0 <= weight <= 1e100";
// True when `weight` meets kFitWeightRule (NaN does not).
constexpr bool IsValidFitWeight(double weight) { return weight >= 0 && weight <= kMaxFitWeight; }

struct FitData {
  std::string origin;                       // file name, for messages and the recipe
  std::vector<std::string> input_names;     // law input order
  std::vector<std::vector<double>> inputs;  // [input][point], raw units (e.g. N in parameters)
  std::vector<double> loss;                 // observed loss, > 0
  std::vector<double> weight;               // per point, in [0, kMaxFitWeight] (1 when none)
  std::vector<int> run;                     // run index per point, 0..num_runs-1
  std::vector<std::string> run_names;       // one per run
  std::vector<int> line;                    // source line per point (0 when unknown)
  // Points from a DataFrame rather than a file: `line` holds each point's 0-based row position,
  // and messages name it "<origin> row <position>".
  bool lines_are_rows = false;

  size_t size() const { return loss.size(); }
  int num_runs() const { return static_cast<int>(run_names.size()); }
  // The point's inputs, in law order, copied into x (size input_names.size()).
  void Point(size_t i, double* x) const;
  // The subset at `indices` (runs renumbered, order kept).
  FitData Subset(const std::vector<size_t>& indices) const;
  // Where point `i` came from, for messages: "<origin>:<line>", "<origin> row <position>" for a
  // DataFrame, "<origin>" when its line is unknown.
  SourceLocation Where(size_t i) const;
};

}  // namespace mosaic::scaling
