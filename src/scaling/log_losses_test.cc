#include "mosaic/scaling/log_losses.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "mosaic/util/error.h"

namespace mosaic::scaling {
namespace {

std::vector<runs::Run> LoadFixtureRuns() {
  std::vector<runs::Run> loaded;
  for (const runs::RunDirectory& directory : runs::DiscoverRuns(
           std::string(MOSAIC_SOURCE_DIR) +
           "/tests/fixtures/janosh__tensorboard-reducer/tests/runs")) {
    loaded.push_back(runs::LoadRun(directory, {}));
  }
  return loaded;
}

// The final values of strict/foo in the three strict runs, as written in the event files
// (float32): 1.2120903, 2.4890914, 3.3318732.
TEST(AttachLossesFromLogs, FinalValuesOfEachRun) {
  DataTable table = ReadCsv(std::string(MOSAIC_SOURCE_DIR) +
                            "/tests/fixtures/scaling/logged_runs.csv");
  AttachLossesFromLogs(table, LoadFixtureRuns(), {.tag = "strict/foo"});
  const int loss = table.Find("loss");
  ASSERT_GE(loss, 0);
  EXPECT_FLOAT_EQ(static_cast<float>(table.values[loss][0]), 1.2120903f);
  EXPECT_FLOAT_EQ(static_cast<float>(table.values[loss][1]), 2.4890914f);
  EXPECT_FLOAT_EQ(static_cast<float>(table.values[loss][2]), 3.3318732f);
}

TEST(AttachLossesFromLogs, LastKMeanUsesTheSeries) {
  const std::vector<runs::Run> loaded = LoadFixtureRuns();
  DataTable table = ReadCsv(std::string(MOSAIC_SOURCE_DIR) +
                            "/tests/fixtures/scaling/logged_runs.csv");
  AttachLossesFromLogs(table, loaded, {.tag = "strict/foo", .last_k = 10});
  const runs::TimeSeries* series = nullptr;
  for (const runs::Run& run : loaded) {
    if (run.name == "strict/run_2") series = run.FindSeries("strict/foo");
  }
  ASSERT_NE(series, nullptr);
  EXPECT_DOUBLE_EQ(table.values[table.Find("loss")][1], series->MeanOfLast(10));
  // Every run has 10 values or more: the derivation says the mean of the last 10, nothing else.
  EXPECT_EQ(table.derivations[table.Find("loss")], "mean of the last 10 'strict/foo' of each run");
  // Asked for more values than a run has, the mean would reach back to the start of training
  // (it was taken over all the run has, with a note in the recipe): an error of the run's row.
  DataTable more = ReadCsv(std::string(MOSAIC_SOURCE_DIR) +
                           "/tests/fixtures/scaling/logged_runs.csv");
  const int64_t points = static_cast<int64_t>(series->points.size());
  try {
    AttachLossesFromLogs(more, loaded,
                         {.tag = "strict/foo", .last_k = static_cast<int>(points + 1)});
    FAIL() << "a run shorter than --last-k was averaged whole";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(fmt::format(
                  "logged_runs.csv:2:1: run 'strict/run_1': tag 'strict/foo' has {} finite "
                  "values, fewer than --last-k {}: the mean would reach back into the start of "
                  "training. Violated constraint: every run has --last-k finite values (give "
                  "--last-k {} or less, or leave the run out)",
                  points, points + 1, points)),
              std::string::npos)
        << error.what();
  }
}

TEST(AttachLossesFromLogs, UnknownRunAndTagAreErrors) {
  const std::vector<runs::Run> loaded = LoadFixtureRuns();
  const std::string typo = std::string(MOSAIC_SOURCE_DIR) +
                           "/tests/fixtures/scaling/logged_runs_typo.csv";
  DataTable table = ReadCsv(typo);
  try {
    AttachLossesFromLogs(table, loaded, {.tag = "strict/foo"});
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              typo + ":3:1: run 'strict/rnu_2' is not in the logs (did you mean 'strict/run_2'?)\n"
                     "  strict/rnu_2,2e8,4e9\n"
                     "  ^");
  }
  table = ReadCsv(std::string(MOSAIC_SOURCE_DIR) + "/tests/fixtures/scaling/logged_runs.csv");
  try {
    AttachLossesFromLogs(table, loaded, {.tag = "strict/fo"});
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(
                  "run 'strict/run_1' has no tag 'strict/fo' (did you mean 'strict/foo'?)"),
              std::string::npos)
        << error.what();
  }
}

// A table with a loss column of its own would have its losses replaced by the logs' unseen: the
// losses come from one place. Under another --loss-column name, the logs' losses are added.
TEST(AttachLossesFromLogs, ATableWithItsOwnLossesIsRefused) {
  DataTable table = ParseCsv("run,N,D,loss\nstrict/run_1,1e8,2e9,3.5\n", "runs.csv");
  try {
    AttachLossesFromLogs(table, LoadFixtureRuns(), {.tag = "strict/foo"});
    FAIL() << "the table's losses were replaced";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "runs.csv: column 'loss' holds losses, and --logs would replace them with each "
              "run's 'strict/foo'. Violated constraint: the losses come from the table or from "
              "the logs, not both (drop the column, or name the logs' loss column apart with "
              "--loss-column)");
  }
  AttachLossesFromLogs(table, LoadFixtureRuns(), {.tag = "strict/foo", .loss_column = "logged"});
  EXPECT_EQ(table.values[table.Find("loss")][0], 3.5);
  EXPECT_FLOAT_EQ(static_cast<float>(table.values[table.Find("logged")][0]), 1.2120903f);
}

// A run whose tag ends in NaN diverged: its last finite value must not stand in for its loss.
TEST(AttachLossesFromLogs, ARunEndingInNanHasNoLoss) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "mosaic_log_losses_nan";
  fs::remove_all(root);
  fs::create_directories(root / "r7");
  std::ofstream(root / "r7" / "m.csv") << "step,loss\n1,3\n2,2.5\n3,nan\n";
  std::vector<runs::Run> loaded;
  for (const runs::RunDirectory& directory : runs::DiscoverRuns(root.string())) {
    loaded.push_back(runs::LoadRun(directory, {}));
  }
  DataTable table = ParseCsv("run,C\nr7,1e18\n", "lad.csv");
  try {
    AttachLossesFromLogs(table, loaded, {.tag = "loss", .last_k = 2});
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("lad.csv:2:1: run 'r7': tag 'loss' ends in nan at "
                                             "step 3 (the run diverged): it has no final loss to "
                                             "fit; remove its row"),
              std::string::npos)
        << error.what();
  }
  // A name without its directory's prefix is suggested with it.
  for (runs::Run& run : loaded) run.name = "logs/" + run.name;
  DataTable unprefixed = ParseCsv("run,C\nr7,1e18\n", "lad.csv");
  try {
    AttachLossesFromLogs(unprefixed, loaded, {.tag = "loss"});
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("run 'r7' is not in the logs (did you mean 'logs/r7'?"),
              std::string::npos)
        << error.what();
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace mosaic::scaling
