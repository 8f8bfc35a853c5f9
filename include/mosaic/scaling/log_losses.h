// Losses for a fit taken from training logs (runs/): each row of a data table names a run in its
// `run` column, and its loss becomes that run's final value of a tag, or the mean of its last k
// points (the "final or last-k mean of each run" of the scaling studies). Data flows from logs to
// fits, never back.
#pragma once

#include <string>
#include <vector>

#include "mosaic/runs/run.h"
#include "mosaic/scaling/data_table.h"

namespace mosaic::scaling {

struct LogLossOptions {
  std::string tag;                  // the scalar tag holding the loss, e.g. "eval/loss"
  int last_k = 1;                   // points averaged at the end of each run (1: the final value)
  std::string run_column = "run";   // the table's column naming the run
  std::string loss_column = "loss"; // the column to add (it must not be in the table already)
};

// Adds `options.loss_column` to `table`, each row's value from the run named in its run column.
// Throws InputError naming the file, line and value for: a table that already has the loss
// column (its losses would be replaced unseen), a table without the run column, a run
// name that no run has (with "did you mean"), a run without the tag (with the run's closest tag),
// a tag with no finite value, a tag that ends in NaN or inf (the run diverged), or a run with
// fewer finite values than `last_k` (its mean would reach back into the start of training).
// Non-finite points before the end are left out of the last-k mean. `runs` are as runs::LoadRun
// returns them.
void AttachLossesFromLogs(DataTable& table, const std::vector<runs::Run>& runs,
                          const LogLossOptions& options);

}  // namespace mosaic::scaling
