// Runs read in batches and digested batch by batch give what reading them all at once gives.
#include "mosaic/runs/run_digest.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "mosaic/runs/event_writer.h"
#include "mosaic/runs/export.h"
#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"
#include "run_loading.h"
#include "series_checks.h"

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

// Every figure and finding of two digests, as text (NaN equal to NaN).
std::string Describe(const RunDigest& d) {
  std::string text = Describe(d.run) + fmt::format("k={} kept={}\n", d.last_k, d.kept_points());
  for (size_t k = 0; k < d.series.size(); ++k) {
    const SeriesDigest& s = d.series[k];
    text += fmt::format("{} {} float32={}: {} points, {}..{}, min {}, {} non-finite, final {}, "
                        "mean {}\n",
                        d.run.series[k].tag, d.run.series[k].points.size(),
                        d.run.series[k].float32, s.points, s.summary.first_step,
                        s.summary.last_step, s.summary.min, s.summary.non_finite, s.final_value,
                        s.mean_last_k);
  }
  for (const HistogramSeries& h : d.run.histograms) text += fmt::format("hist {} {}\n", h.tag, h.points);
  for (const Finding& f : d.findings) {
    text += fmt::format("{} {} [{}] {}\n", ToString(f.kind), f.tag, fmt::join(f.steps, ","),
                        f.message);
  }
  return text;
}

void ExpectSameDigests(const std::vector<RunDirectory>& directories, const LoadOptions& options,
                       int last_k, const HealthOptions& health) {
  const std::vector<RunDigest> expected = DigestRuns(LoadRuns(directories, options), last_k, health);
  for (int64_t batch_bytes : {int64_t{1}, kDefaultBatchBytes}) {
    const std::vector<RunDigest> streamed =
        ReadRunDigests(directories, options, last_k, health, batch_bytes);
    ASSERT_EQ(streamed.size(), expected.size());
    for (size_t r = 0; r < expected.size(); ++r) {
      EXPECT_EQ(Describe(streamed[r]), Describe(expected[r])) << expected[r].run.name;
    }
  }
}

TEST(ReadRunDigests, RealFixturesAsDigestedWithTheirPoints) {
  std::vector<RunDirectory> directories = ManyRuns();
  const std::vector<RunDirectory> more = DiscoverRuns(
      {kFixtures + "orktes__go-tensorboard", kFixtures + "yuanjun0416__tensorboard_use"});
  directories.insert(directories.end(), more.begin(), more.end());
  for (RestartPolicy policy : {RestartPolicy::kFirst, RestartPolicy::kLast, RestartPolicy::kAll}) {
    for (int threads : {1, 3}) {
      SCOPED_TRACE(fmt::format("{} on {} threads", ToString(policy), threads));
      LoadOptions options;
      options.restarts = policy;
      options.threads = threads;
      options.min_part_bytes = 2048;  // the larger files in parts
      ExpectSameDigests(directories, options, 10, {});
    }
  }
}

// Event files built to cross every rule of the streamed digest: spikes, non-finite values and a
// skip counter on both sides of where the parts of a file meet and where files meet, irregular
// intervals that cannot make a gap, a step gap and a stall (found from the streams), and runs
// that need their points (a restart, a purge, a CSV log).
TEST(ReadRunDigests, FilesInPartsAndRunsThatNeedTheirPoints) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_digest_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto write_run = [&](const std::string& name, int files, int points, auto step_of, auto wall_of,
                       auto value_of, bool purge = false, bool csv = false) {
    const std::filesystem::path run = dir / name;
    std::filesystem::create_directories(run);
    int i = 0;
    for (int f = 0; f < files; ++f) {
      std::string bytes = FrameRecord(EncodeFileVersionEvent(wall_of(i)));
      if (purge && f == 1) bytes += FrameRecord(EncodeSessionStartEvent(wall_of(i), step_of(i)));
      for (int n = 0; n < points / files; ++n, ++i) {
        const int64_t step = step_of(i);
        const double wall = wall_of(i);
        bytes += FrameRecord(EncodeScalarEvent(wall, step, "train/loss", value_of(i)));
        bytes += FrameRecord(EncodeScalarEvent(wall, step, "grad_norm", value_of(i + 7) * 0.5,
                                               ScalarEncoding::kTensorContent));
        bytes += FrameRecord(EncodeScalarEvent(wall, step, "skipped_steps", i / 37));
        if (i % 5 == 0) bytes += FrameRecord(EncodeScalarEvent(wall, step, "lr", 1e-3 * i));
      }
      std::ofstream((run / fmt::format("events.out.tfevents.{}.host", 1000 + f)).string(),
                    std::ios::binary)
          << bytes;
    }
    if (csv) std::ofstream((run / "metrics.csv").string()) << "step,acc\n1,0.5\n2,0.6\n";
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Spikes every 97 points (some within the first 50 finite values of a part), NaN and inf.
  auto bumpy = [&](int i) {
    if (i % 211 == 13) return nan;
    if (i % 307 == 5) return inf;
    return 2.0 + 1.0 / (1 + 0.01 * i) + 0.001 * (i % 3) + (i % 97 == 40 ? 5.0 : 0.0);
  };
  auto regular = [](int i) { return int64_t{10} * i; };
  auto irregular = [](int i) { return int64_t{3} * i + (i % 2); };  // intervals 3 and 2 and 4
  auto wall = [](int i) { return 1.7e9 + 2.0 * i; };
  write_run("regular", 1, 3000, regular, wall, bumpy);
  write_run("three_files", 3, 3000, regular, wall, bumpy);
  write_run("irregular", 2, 2000, irregular, wall, bumpy);
  write_run("gap", 1, 2000, [](int i) { return int64_t{i} + (i >= 1000 ? 500 : 0); }, wall, bumpy);
  write_run("stall", 1, 2000, regular, [](int i) { return 1.7e9 + i + (i >= 700 ? 4000.0 : 0); },
            bumpy);
  write_run("restart", 2, 2000, [](int i) { return int64_t{i % 1200}; }, wall, bumpy);
  write_run("purge", 2, 2000, regular, wall, bumpy, true);
  write_run("csv", 1, 1000, regular, wall, bumpy, false, true);
  write_run("short", 1, 2, regular, wall, bumpy);
  const std::vector<RunDirectory> directories = DiscoverRuns(dir.string());
  ASSERT_EQ(directories.size(), 9u);
  {
    LoadOptions parts;
    parts.threads = 7;
    parts.min_part_bytes = 1;
    EXPECT_GE(LoadRuns({directories.front()}, parts).front().files.front().parts, 5);
  }
  HealthOptions small_window;
  small_window.spike_window = 7;
  small_window.spike_min_points = 3;
  for (RestartPolicy policy : {RestartPolicy::kFirst, RestartPolicy::kLast, RestartPolicy::kAll}) {
    for (int threads : {1, 2, 7}) {
      for (int64_t part_bytes : {int64_t{1}, int64_t{5000}, int64_t{16} << 20}) {
        SCOPED_TRACE(fmt::format("{} on {} threads, parts of {}", ToString(policy), threads,
                                 part_bytes));
        LoadOptions options;
        options.restarts = policy;
        options.threads = threads;
        options.min_part_bytes = part_bytes;
        ExpectSameDigests(directories, options, 10, {});
        ExpectSameDigests(directories, options, 80, small_window);
        // One run at a time: its single file is then read in parts, one per thread.
        if (threads > 1 && part_bytes < 5000) {
          for (const RunDirectory& d : directories) {
            ExpectSameDigests({d}, options, 10, {});
            ExpectSameDigests({d}, options, 80, small_window);
          }
        }
      }
    }
  }
  // The runs that need their points are those named so; the others' digests found spikes,
  // non-finite values and skipped updates.
  LoadOptions options;
  options.threads = 7;
  options.min_part_bytes = 1;
  const std::vector<RunDigest> digests = ReadRunDigests(directories, options, 10);
  std::string kinds;
  for (const RunDigest& d : digests) {
    for (const Finding& f : d.findings) kinds += d.run.name + ":" + std::string(ToString(f.kind)) + " ";
  }
  for (const char* expected : {"regular:spike", "regular:non-finite", "regular:skipped-update",
                               "three_files:spike", "irregular:spike", "gap:step-gap",
                               "stall:stall", "restart:restart"}) {
    EXPECT_NE(kinds.find(expected), std::string::npos) << expected << " in " << kinds;
  }
  // Only the runs a digest cannot take from their streams are read a second time, with their
  // points: the gap and the stall are found from the streams' interval logs.
  for (RestartPolicy policy : {RestartPolicy::kFirst, RestartPolicy::kLast}) {
    options.restarts = policy;
    const HealthOptions health;
    const std::unique_ptr<RE2> spike_tags = detail::CompileSpikeTags(health);
    const detail::SeriesStreamOptions stream{&health, spike_tags.get(), 10};
    std::string with_points;
    for (const detail::LoadedRun& r : detail::LoadRunsWith(directories, options, &stream)) {
      if (!r.StreamsSuffice()) with_points += r.run.name + " ";
    }
    EXPECT_EQ(with_points, policy == RestartPolicy::kLast ? "csv purge restart " : "csv restart ");
  }
  std::filesystem::remove_all(dir);
}

// A run of many files that each log hundreds of tags a few times (per-layer diagnostics written
// by a new file each step) between files of many steps, and a k beyond what streams keep values
// for.
TEST(ReadRunDigests, ManyFilesOfManyTagsAndALargeK) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_wide_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "wide");
  int next_step = 0;
  for (int f = 0; f < 40; ++f) {
    std::string bytes = FrameRecord(EncodeFileVersionEvent(1.7e9 + next_step));
    // Every fifth file holds 100 steps (streamed while read), the others 1 to 3 (kept as points
    // and streamed into the run's series after the streamed files before them).
    const int points = f % 5 == 0 ? 100 : 1 + f % 3;
    for (int point = 0; point < points; ++point) {
      const int step = next_step++;
      for (int t = 0; t < 300; ++t) {
        const double value = 1.0 + 0.01 * t + (step % 17 == 3 && t % 7 == 0 ? 40.0 : 0.001 * step);
        bytes += FrameRecord(EncodeScalarEvent(1.7e9 + step, step,
                                               fmt::format("layer{}/grad_norm", t), value));
      }
      bytes += FrameRecord(EncodeScalarEvent(1.7e9 + step, step, "train/loss", 3.0 - 0.01 * step));
    }
    std::ofstream((dir / "wide" / fmt::format("events.out.tfevents.{}.host", 2000 + f)).string(),
                  std::ios::binary)
        << bytes;
  }
  const std::vector<RunDirectory> directories = DiscoverRuns(dir.string());
  ASSERT_EQ(directories.size(), 1u);
  HealthOptions small_window;
  small_window.spike_window = 4;
  small_window.spike_min_points = 2;
  for (int threads : {1, 4}) {
    LoadOptions options;
    options.threads = threads;
    for (int last_k : {1, 10, 5000}) {
      SCOPED_TRACE(fmt::format("k {} on {} threads", last_k, threads));
      ExpectSameDigests(directories, options, last_k, {});
      ExpectSameDigests(directories, options, last_k, small_window);
    }
  }
  // The run is streamed (steps only increase, no gap, no stall): its series' streams stand for
  // the points, which a run needing them would not show as a difference here.
  for (const RunDigest& d : ReadRunDigests(directories, {}, 10)) {
    for (const Finding& f : d.findings) {
      EXPECT_NE(f.kind, FindingKind::kStepGap);
      EXPECT_NE(f.kind, FindingKind::kStall);
    }
  }
  // The small window finds the spikes of the per-layer tags.
  const std::vector<RunDigest> digests = ReadRunDigests(directories, {}, 10, small_window);
  int spikes = 0;
  for (const Finding& f : digests.front().findings) spikes += f.kind == FindingKind::kSpike;
  EXPECT_GT(spikes, 10);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mosaic::runs
