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
  const int run_column = table.Require(options.run_column, "the run names of --logs");
  std::vector<std::string> run_names;
  for (const runs::Run& run : runs) run_names.push_back(run.name);

  std::vector<double> losses(table.rows(), std::numeric_limits<double>::quiet_NaN());
  // Runs with fewer finite values than last_k: their mean is over all they have.
  std::vector<std::string> short_runs;
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
    const double loss = series->MeanOfLast(options.last_k);
    if (!std::isfinite(loss)) {
      throw LocatedError(where, fmt::format("run '{}': tag '{}' has no finite value", name,
                                            options.tag));
    }
    losses[row] = loss;
    // The finite values from the end, up to last_k: fewer means the mean is over all there are.
    int64_t finite = 0;
    for (auto p = series->points.rbegin(); p != series->points.rend() && finite < options.last_k;
         ++p) {
      finite += std::isfinite(p->value) ? 1 : 0;
    }
    if (finite < options.last_k) short_runs.push_back(fmt::format("{} ({})", name, finite));
  }

  int column = table.Find(options.loss_column);
  if (column < 0) {
    table.names.push_back(options.loss_column);
    table.derivations.push_back("");
    table.text.emplace_back(table.rows());
    table.values.emplace_back(table.rows());
    table.cell_column.emplace_back(table.rows(), 0);
    column = static_cast<int>(table.names.size()) - 1;
  }
  table.derivations[column] =
      options.last_k == 1 ? fmt::format("final '{}' of each run", options.tag)
                          : fmt::format("mean of the last {} '{}' of each run", options.last_k,
                                        options.tag);
  if (!short_runs.empty()) {
    constexpr size_t kNamed = 3;
    table.derivations[column] += fmt::format(
        "; of every value where fewer: {}{}", fmt::join(short_runs.begin(),
                                                         short_runs.begin() +
                                                             std::min(short_runs.size(), kNamed),
                                                         ", "),
        short_runs.size() > kNamed ? fmt::format(" and {} more runs", short_runs.size() - kNamed)
                                   : "");
  }
  for (size_t row = 0; row < table.rows(); ++row) {
    table.values[column][row] = losses[row];
    table.text[column][row] = fmt::format("{}", losses[row]);
    table.cell_column[column][row] = 0;
  }
}

}  // namespace mosaic::scaling
