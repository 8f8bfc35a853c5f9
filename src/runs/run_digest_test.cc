// Runs read in batches and digested batch by batch give what reading them all at once gives.
#include "mosaic/runs/run_digest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "mosaic/runs/export.h"
#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"

namespace mosaic::runs {
namespace {

const std::string kFixtures = std::string(MOSAIC_SOURCE_DIR) + "/tests/fixtures/";

// Real fixtures of many runs: 25 runs of TensorBoard event files (some damaged, re-runs into one
// directory), and runs with duplicate steps, restarts and CSV logs.
std::vector<RunDirectory> ManyRuns() {
  std::vector<RunDirectory> all = DiscoverRuns(
      {kFixtures + "ZeroToMax-ZYZ__study_tensorboard", kFixtures + "janosh__tensorboard-reducer",
       kFixtures + "CursedSeraphim__process-tensorboard-logs", kFixtures + "marin"});
  return all;
}

int64_t LogBytes(const RunDirectory& d) {
  int64_t bytes = 0;
  for (const auto* files : {&d.event_files, &d.table_files}) {
    for (const std::string& path : *files) {
      bytes += static_cast<int64_t>(std::filesystem::file_size(path));
    }
  }
  return bytes;
}

// Everything of a run a report can show: its name, counts, restarts, notes, issues and every
// point (through the export, which writes them all exactly).
std::string Describe(const Run& run) {
  std::string text = run.name + "|" + std::to_string(run.written_points) + "|" +
                     std::to_string(run.files.size()) + "|" + std::to_string(run.restarts.size()) +
                     "|" + std::to_string(run.record_issues.size()) + "|" +
                     std::to_string(run.notes.size()) + "\n";
  for (const std::string& note : run.notes) text += note + "\n";
  return text + ExportRuns({run}, ExportFormat::kCsv, run.policy == RestartPolicy::kAll);
}

TEST(LoadRunsInBatches, BatchesJoinedAreTheRunsLoadedAtOnce) {
  const std::vector<RunDirectory> directories = ManyRuns();
  ASSERT_GT(directories.size(), 30u);
  int64_t largest_run = 0;
  for (const RunDirectory& d : directories) largest_run = std::max(largest_run, LogBytes(d));
  for (RestartPolicy policy : {RestartPolicy::kFirst, RestartPolicy::kLast, RestartPolicy::kAll}) {
    LoadOptions options;
    options.restarts = policy;
    options.threads = 3;
    const std::vector<runs::Run> whole = LoadRuns(directories, options);
    for (int64_t batch_bytes : {int64_t{0}, int64_t{1}, int64_t{20000}, largest_run,
                                int64_t{1} << 40}) {
      SCOPED_TRACE(std::string(ToString(policy)) + " in batches of " + std::to_string(batch_bytes));
      size_t next = 0;
      int batches = 0;
      LoadRunsInBatches(directories, options, batch_bytes, [&](std::vector<runs::Run>&& batch, size_t first) {
        ++batches;
        ASSERT_EQ(first, next);
        ASSERT_FALSE(batch.empty());
        int64_t bytes = 0;
        for (size_t i = 0; i < batch.size(); ++i) {
          bytes += LogBytes(directories[first + i]);
          EXPECT_EQ(Describe(batch[i]), Describe(whole[first + i]));
        }
        // A batch holds at most batch_bytes of logs, or a single run.
        EXPECT_TRUE(batch.size() == 1 || bytes <= batch_bytes) << bytes;
        next = first + batch.size();
      });
      EXPECT_EQ(next, directories.size());
      if (batch_bytes < 1) EXPECT_EQ(batches, static_cast<int>(directories.size()));
      if (batch_bytes == int64_t{1} << 40) EXPECT_EQ(batches, 1);
      if (batch_bytes == 20000) EXPECT_GT(batches, 2);
    }
  }
}

TEST(ExportWriter, BatchesAddedOneByOneWriteTheWholeExport) {
  const std::vector<RunDirectory> directories = ManyRuns();
  LoadOptions options;
  options.restarts = RestartPolicy::kAll;
  const std::vector<runs::Run> whole = LoadRuns(directories, options);
  for (ExportFormat format : {ExportFormat::kCsv, ExportFormat::kJson}) {
    SCOPED_TRACE(std::string(ToString(format)));
    const std::string expected = ExportRuns(whole, format, true);
    std::string joined;
    ExportWriter writer(format, true, [&](std::string_view piece) { joined += piece; }, 2);
    writer.Add({});  // an empty batch first: no row, and the next batch's first row is the first
    EXPECT_EQ(joined, format == ExportFormat::kCsv ? "run,tag,step,wall_time,value,pass\n" : "[");
    LoadRunsInBatches(directories, options, 20000,
                      [&](std::vector<runs::Run>&& batch, size_t) { writer.Add(batch); });
    writer.Finish();
    EXPECT_EQ(joined, expected);
  }
  // Nothing added: the export of no run.
  for (ExportFormat format : {ExportFormat::kCsv, ExportFormat::kJson}) {
    std::string text;
    ExportWriter writer(format, false, [&](std::string_view piece) { text += piece; });
    EXPECT_EQ(text, "");  // nothing is written before the first batch
    writer.Finish();
    EXPECT_EQ(text, ExportRuns({}, format, false));
  }
}

TEST(DigestRuns, FiguresAndFindingsAreThoseOfTheLoadedRuns) {
  const std::vector<RunDirectory> directories = ManyRuns();
  for (RestartPolicy policy : {RestartPolicy::kFirst, RestartPolicy::kAll}) {
    LoadOptions options;
    options.restarts = policy;
    const std::vector<runs::Run> runs = LoadRuns(directories, options);
    const std::vector<std::vector<Finding>> findings = CheckHealthOfRuns(runs);
    for (int threads : {1, 4}) {
      SCOPED_TRACE(std::string(ToString(policy)) + " on " + std::to_string(threads));
      const std::vector<RunDigest> digests =
          DigestRuns(LoadRuns(directories, options), 7, {}, threads);
      ASSERT_EQ(digests.size(), runs.size());
      int64_t points = 0;
      for (size_t r = 0; r < runs.size(); ++r) {
        const RunDigest& d = digests[r];
        EXPECT_EQ(d.run.name, runs[r].name);
        EXPECT_EQ(d.last_k, 7);
        ASSERT_EQ(d.findings.size(), findings[r].size());
        for (size_t f = 0; f < findings[r].size(); ++f) {
          EXPECT_EQ(d.findings[f].message, findings[r][f].message);
          EXPECT_EQ(d.findings[f].steps, findings[r][f].steps);
        }
        ASSERT_EQ(d.series.size(), runs[r].series.size());
        int64_t kept = 0;
        for (size_t k = 0; k < runs[r].series.size(); ++k) {
          const TimeSeries& s = runs[r].series[k];
          const SeriesDigest& sd = d.series[k];
          EXPECT_EQ(d.run.series[k].tag, s.tag);
          EXPECT_TRUE(d.run.series[k].points.empty());  // released
          EXPECT_EQ(&d.Of(d.run.series[k]), &sd);
          EXPECT_EQ(sd.points, static_cast<int64_t>(s.points.size()));
          const SeriesSummary expected = s.Summarize();
          EXPECT_EQ(sd.summary.first_step, expected.first_step);
          EXPECT_EQ(sd.summary.last_step, expected.last_step);
          EXPECT_EQ(sd.summary.non_finite, expected.non_finite);
          // NaN for no finite value: compared as text so that NaN equals NaN.
          EXPECT_EQ(std::to_string(sd.summary.min), std::to_string(expected.min));
          EXPECT_EQ(std::to_string(sd.final_value), std::to_string(s.FinalValue()));
          EXPECT_EQ(std::to_string(sd.mean_last_k), std::to_string(s.MeanOfLast(7)));
          kept += sd.points;
        }
        EXPECT_EQ(d.kept_points(), kept);
        points += kept;
      }
      EXPECT_GT(points, 10000);
    }
  }
}

}  // namespace
}  // namespace mosaic::runs
