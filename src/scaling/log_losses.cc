#include "mosaic/scaling/log_losses.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"

namespace mosaic::scaling {

void AttachLossesFromLogs(DataTable& table, const std::vector<runs::Run>& runs,
                          const LogLossOptions& options) {
  if (options.last_k < 1) {
    throw InputError(fmt::format("--last-k = {}. Violated constraint: --last-k >= 1",
                                 options.last_k));
  }
  if (table.Find(options.loss_column) >= 0) {
    throw InputError(fmt::format(
        "{}: column '{}' holds losses, and --logs would replace them with each run's '{}'. "
        "Violated constraint: the losses come from the table or from the logs, not both (drop "
        "the column, or name the logs' loss column apart with --loss-column)",
        table.origin, options.loss_column, options.tag));
  }
  const int run_column = table.Require(options.run_column, "the run names of --logs");
  std::vector<std::string> run_names;
  for (const runs::Run& run : runs) run_names.push_back(run.name);

  std::vector<double> losses(table.rows(), std::numeric_limits<double>::quiet_NaN());
  for (size_t row = 0; row < table.rows(); ++row) {
    const std::string& name = table.text[run_column][row];
    const SourceLocation where = table.CellWhere(run_column, row);
    const runs::Run* run = nullptr;
    for (const runs::Run& candidate : runs) {
      if (candidate.name == name) run = &candidate;
    }
    if (run == nullptr) {
      // With several log directories a run's name starts with its directory's: suggest the run
      // whose name ends in this one.
      std::string hint = DidYouMean(name, run_names);
      for (const std::string& candidate : run_names) {
        if (hint.empty() && candidate.size() > name.size() + 1 && candidate.ends_with(name) &&
            candidate[candidate.size() - name.size() - 1] == '/') {
          hint = fmt::format(" (did you mean '{}'? with several log directories, run names "
                             "start with their directory's)",
                             candidate);
        }
      }
      throw LocatedError(where, fmt::format("run '{}' is not in the logs{}", name, hint));
    }
    const runs::TimeSeries* series = run->FindSeries(options.tag);
    if (series == nullptr) {
      const std::vector<std::string> tags = run->Tags();
      throw LocatedError(where, fmt::format("run '{}' has no tag '{}'{}", name, options.tag,
                                            DidYouMean(options.tag, tags)));
    }
    // A run whose tag ends in NaN or inf diverged: its final value is not a loss to fit, and the
    // last finite one before it would stand in for it unseen.
    if (!series->points.empty() && !std::isfinite(series->points.back().value)) {
      throw LocatedError(where, fmt::format("run '{}': tag '{}' ends in {} at step {} (the run "
                                            "diverged): it has no final loss to fit; remove its "
                                            "row",
                                            name, options.tag, series->points.back().value,
                                            series->points.back().step));
    }
    // A run with fewer finite values than last_k would average back to the start of training,
    // where the loss is far higher: the mean would not be the run's loss.
    int64_t finite = 0;
    for (const runs::ScalarPoint& p : series->points) finite += std::isfinite(p.value) ? 1 : 0;
    if (finite == 0) {
      throw LocatedError(where, fmt::format("run '{}': tag '{}' has no finite value", name,
                                            options.tag));
    }
    if (finite < options.last_k) {
      throw LocatedError(where, fmt::format(
          "run '{}': tag '{}' has {} finite value{}, fewer than --last-k {}: the mean would "
          "reach back into the start of training. Violated constraint: every run has --last-k "
          "finite values (give --last-k {} or less, or leave the run out)",
          name, options.tag, finite, finite == 1 ? "" : "s", options.last_k, finite));
    }
    losses[row] = series->MeanOfLast(options.last_k);
  }

  table.names.push_back(options.loss_column);
  table.derivations.push_back("");
  table.text.emplace_back(table.rows());
  table.values.emplace_back(table.rows());
  table.cell_column.emplace_back(table.rows(), 0);
  const int column = static_cast<int>(table.names.size()) - 1;
  table.derivations[column] =
      options.last_k == 1 ? fmt::format("final '{}' of each run", options.tag)
                          : fmt::format("mean of the last {} '{}' of each run", options.last_k,
                                        options.tag);
  for (size_t row = 0; row < table.rows(); ++row) {
    table.values[column][row] = losses[row];
    table.text[column][row] = fmt::format("{}", losses[row]);
    table.cell_column[column][row] = 0;
  }
}

}  // namespace mosaic::scaling
