// Runs over the real fixtures: restart policies, re-runs, mixed encodings, the Ray Tune twin
// files, and the health checks.
#include "mosaic/runs/run.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include "mosaic/runs/compare.h"
#include "mosaic/runs/event_writer.h"
#include "mosaic/runs/export.h"
#include "mosaic/runs/health.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"

namespace mosaic::runs {
namespace {

const std::string kFixtures = std::string(MOSAIC_SOURCE_DIR) + "/tests/fixtures/";

runs::Run LoadOnly(const std::string& relative, RestartPolicy policy = RestartPolicy::kFirst) {
  std::vector<RunDirectory> dirs = DiscoverRuns(kFixtures + relative);
  EXPECT_EQ(dirs.size(), 1u);
  LoadOptions options;
  options.restarts = policy;
  return LoadRun(dirs.at(0), options);
}

TEST(Runs, DiscoveryFindsEveryRunDirectory) {
  const std::vector<RunDirectory> runs = DiscoverRuns(kFixtures + "ZeroToMax-ZYZ__study_tensorboard");
  std::vector<std::string> names;
  for (const RunDirectory& r : runs) names.push_back(r.name);
  EXPECT_EQ(runs.size(), 25u);
  EXPECT_NE(std::find(names.begin(), names.end(), "runs/hparams_search_exp_1/1771595857.3236299"),
            names.end());
  EXPECT_NE(std::find(names.begin(), names.end(),
                      "logs/logs_upload/01_AlexNet_SGD_20260128-181343"),
            names.end());
  EXPECT_THROW(DiscoverRuns(kFixtures + "no-such-dir"), InputError);
}

TEST(Runs, EventFilesAreOrderedByStartTimeInTheirName) {
  EXPECT_EQ(EventFileStartSeconds("events.out.tfevents.1771594466.hostC.21024.0"), 1771594466);
  EXPECT_EQ(EventFileStartSeconds("module_diag.csv"), -1);
}

TEST(Runs, DuplicateStepsUnderEachPolicy) {
  const std::string dir = "janosh__tensorboard-reducer/tests/runs/duplicate_steps/run_1";
  const runs::Run first = LoadOnly(dir, RestartPolicy::kFirst);
  const runs::Run last = LoadOnly(dir, RestartPolicy::kLast);
  const runs::Run all = LoadOnly(dir, RestartPolicy::kAll);
  ASSERT_EQ(first.series.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(first.series[i].tag);
    EXPECT_EQ(first.series[i].points.size(), 200u);
    EXPECT_EQ(last.series[i].points.size(), 200u);
    EXPECT_EQ(all.series[i].points.size(), 210u);
    // Steps 90-99 were written twice: first keeps the earlier value, last the later.
    const std::vector<ScalarPoint>& a = all.series[i].points;
    EXPECT_EQ(a[100].step, 90);
    EXPECT_EQ(all.series[i].PassOf(100), 2);
    EXPECT_EQ(all.series[i].PassOf(99), 1);
    EXPECT_EQ(all.series[i].pass_starts, (std::vector<size_t>{100}));
    EXPECT_TRUE(first.series[i].pass_starts.empty());
    EXPECT_EQ(*first.series[i].ValueAt(95), a[95].value);
    EXPECT_EQ(*last.series[i].ValueAt(95), a[105].value);
    EXPECT_EQ(*first.series[i].ValueAt(150), *last.series[i].ValueAt(150));
  }
  ASSERT_EQ(first.restarts.size(), 2u);
  EXPECT_EQ(first.restarts[0].from_step, 99);
  EXPECT_EQ(first.restarts[0].back_to_step, 90);
  EXPECT_EQ(first.restarts[0].overlapped_points, 10);
}

TEST(Runs, RerunIntoTheSameDirectoryKeepsTheFirstPass) {
  const std::string dir = "ZeroToMax-ZYZ__study_tensorboard/runs/my_first_experiment";
  const runs::Run first = LoadOnly(dir, RestartPolicy::kFirst);
  const runs::Run last = LoadOnly(dir, RestartPolicy::kLast);
  ASSERT_EQ(first.files.size(), 2u);
  EXPECT_NE(first.files[0].path.find("1771594466"), std::string::npos);
  const TimeSeries* loss = first.FindSeries("Metrics/Loss");
  ASSERT_NE(loss, nullptr);
  EXPECT_EQ(loss->points.size(), 100u);
  EXPECT_NEAR(*loss->ValueAt(0), 4.93373, 5e-6);
  EXPECT_EQ(FormatValue(*loss->ValueAt(0), true), "4.9337287");
  EXPECT_NEAR(*last.FindSeries("Metrics/Loss")->ValueAt(0), 4.825678, 5e-7);
  ASSERT_EQ(first.restarts.size(), 2u);
  for (const Restart& r : first.restarts) {
    EXPECT_EQ(r.source, 1);
    EXPECT_EQ(r.from_step, 99);
    EXPECT_EQ(r.back_to_step, 0);
    EXPECT_EQ(r.overlapped_points, 100);
  }
}

TEST(Runs, KerasTensorAndSimpleValueRunsGiveTheSameKindOfSeries) {
  const runs::Run tensors = LoadOnly("yuanjun0416__tensorboard_use/loop_noise5_cbamconcat_rms10_batchsize512/train");
  const runs::Run simple = LoadOnly("yuanjun0416__tensorboard_use/loop_noise5_cbamconcat_rms1_batchsize512/train");
  EXPECT_EQ(tensors.files[0].events.scalar_encodings.at(ScalarEncoding::kTensorContent), 3000);
  EXPECT_EQ(simple.files[0].events.scalar_encodings.at(ScalarEncoding::kSimpleValue), 3000);
  ASSERT_EQ(tensors.Tags(), simple.Tags());
  for (size_t i = 0; i < tensors.series.size(); ++i) {
    const TimeSeries& a = tensors.series[i];
    const TimeSeries& b = simple.series[i];
    EXPECT_EQ(a.points.size(), 1000u);
    EXPECT_EQ(b.points.size(), 1000u);
    EXPECT_EQ(a.FirstStep(), b.FirstStep());
    EXPECT_EQ(a.LastStep(), b.LastStep());
    EXPECT_TRUE(a.float32 && b.float32);
    EXPECT_TRUE(std::isfinite(a.FinalValue()) && std::isfinite(b.FinalValue()));
  }
}

TEST(Runs, RayScalarsAgreeWithProgressCsvExceptItsNanRows) {
  const runs::Run run = LoadOnly("CursedSeraphim__process-tensorboard-logs/Ray_PPO_cycle_1e6");
  ASSERT_EQ(run.files.size(), 2u);
  EXPECT_EQ(run.files[1].format, SourceFormat::kCsv);
  EXPECT_EQ(run.files[1].rows, 500);
  int compared_tags = 0;
  int64_t nan_rows = 0;
  for (const TimeSeries& event : run.series) {
    if (event.tag.rfind("ray/tune/", 0) != 0) continue;
    const TimeSeries* csv = run.FindSeries(event.tag.substr(9));
    if (csv == nullptr) continue;
    ++compared_tags;
    SCOPED_TRACE(event.tag);
    std::vector<ScalarPoint> finite;
    for (const ScalarPoint& p : csv->points) {
      if (std::isfinite(p.value)) {
        finite.push_back(p);
      } else {
        ++nan_rows;
      }
    }
    ASSERT_EQ(finite.size(), event.points.size());
    for (size_t i = 0; i < finite.size(); ++i) {
      ASSERT_EQ(finite[i].step, event.points[i].step);
      ASSERT_EQ(static_cast<float>(finite[i].value), static_cast<float>(event.points[i].value));
    }
  }
  EXPECT_EQ(compared_tags, 30);  // of 36: done is True/False in the CSV, the rest absent there
  EXPECT_EQ(nan_rows, 2 * 4);  // two rows, NaN in the four episode_* columns
}

TEST(Runs, TagFilterAndHistograms) {
  std::vector<RunDirectory> dirs =
      DiscoverRuns(kFixtures + "CursedSeraphim__process-tensorboard-logs/Ray_PPO_cycle_1e6");
  LoadOptions options;
  options.tags = CompileTagFilter("^ray/tune/episode_reward_m(in|ax)$");
  const runs::Run run = LoadRun(dirs.at(0), options);
  EXPECT_EQ(run.Tags(), (std::vector<std::string>{"ray/tune/episode_reward_max",
                                                  "ray/tune/episode_reward_min"}));
  EXPECT_TRUE(run.histograms.empty());
  EXPECT_THROW(CompileTagFilter("(unclosed"), UsageError);  // a malformed --tags
  const runs::Run unfiltered = LoadOnly("CursedSeraphim__process-tensorboard-logs/Ray_PPO_cycle_1e6");
  int64_t histogram_values = 0;
  for (const HistogramSeries& h : unfiltered.histograms) histogram_values += h.points;
  EXPECT_EQ(histogram_values, 996);
}

TEST(Runs, LastPolicyHonoursPurgeMarkers) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_purge_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string first = FrameRecord(EncodeFileVersionEvent(1000));
  for (int s = 0; s < 10; ++s) first += FrameRecord(EncodeScalarEvent(1000 + s, s, "loss", s));
  std::string second = FrameRecord(EncodeFileVersionEvent(2000));
  second += FrameRecord(EncodeSessionStartEvent(2000, 5));
  second += FrameRecord(EncodeScalarEvent(2001, 7, "loss", 70));
  WriteFileAtomically((dir / "events.out.tfevents.1000.h").string(), first);
  WriteFileAtomically((dir / "events.out.tfevents.2000.h").string(), second);
  LoadOptions options;
  options.restarts = RestartPolicy::kLast;
  const runs::Run last = LoadRun(DiscoverRuns(dir.string()).at(0), options);
  const std::vector<ScalarPoint>& points = last.series.at(0).points;
  ASSERT_EQ(points.size(), 6u);  // 0-4, then 7; 5, 6, 8, 9 purged
  EXPECT_EQ(points.back().step, 7);
  EXPECT_EQ(points.back().value, 70);
  options.restarts = RestartPolicy::kFirst;
  const runs::Run kept_first = LoadRun(DiscoverRuns(dir.string()).at(0), options);
  EXPECT_EQ(kept_first.series.at(0).points.size(), 10u);
  EXPECT_EQ(*kept_first.series.at(0).ValueAt(7), 7);
  std::filesystem::remove_all(dir);
}

TEST(Runs, PurgeMarkerCountsPointsOfEarlierFilesAndOfItsOwnFile) {
  // File 1: a and b at steps 0-4. File 2: a at 5-6, then a purge at step 3, then a at 3-4 and a
  // new tag c at 3-5. Under `last` the purge evicts steps >= 3 of every tag written so far
  // (including a's steps 5-6 of the same file) but not c, which starts after it.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_purge2_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string first = FrameRecord(EncodeFileVersionEvent(1000));
  for (int s = 0; s < 5; ++s) {
    first += FrameRecord(EncodeScalarEvent(1000 + s, s, "a", s));
    first += FrameRecord(EncodeScalarEvent(1000 + s, s, "b", 10 + s));
  }
  std::string second = FrameRecord(EncodeFileVersionEvent(2000));
  for (int s = 5; s < 7; ++s) second += FrameRecord(EncodeScalarEvent(2000 + s, s, "a", s));
  second += FrameRecord(EncodeSessionStartEvent(2010, 3));
  for (int s = 3; s < 5; ++s) second += FrameRecord(EncodeScalarEvent(2010 + s, s, "a", 100 + s));
  for (int s = 3; s < 6; ++s) second += FrameRecord(EncodeScalarEvent(2010 + s, s, "c", 200 + s));
  WriteFileAtomically((dir / "events.out.tfevents.1000.h").string(), first);
  WriteFileAtomically((dir / "events.out.tfevents.2000.h").string(), second);
  auto values = [](const TimeSeries* series) {
    std::vector<std::pair<int64_t, double>> out;
    for (const ScalarPoint& p : series->points) out.emplace_back(p.step, p.value);
    return out;
  };
  using Points = std::vector<std::pair<int64_t, double>>;
  for (int threads : {1, 3}) {
    LoadOptions options;
    options.restarts = RestartPolicy::kLast;
    options.threads = threads;
    const runs::Run last = LoadRun(DiscoverRuns(dir.string()).at(0), options);
    EXPECT_EQ(values(last.FindSeries("a")),
              (Points{{0, 0}, {1, 1}, {2, 2}, {3, 103}, {4, 104}}));
    EXPECT_EQ(values(last.FindSeries("b")), (Points{{0, 10}, {1, 11}, {2, 12}}));
    EXPECT_EQ(values(last.FindSeries("c")), (Points{{3, 203}, {4, 204}, {5, 205}}));
  }
  std::filesystem::remove_all(dir);
}

// Everything a loaded run reports, as text, for comparing loads.
std::string Describe(const std::vector<runs::Run>& runs) {
  std::string text = ExportRuns(runs, ExportFormat::kCsv, true);
  for (const runs::Run& run : runs) {
    text += run.name + "\n";
    for (const SourceFile& f : run.files) {
      const EventFileStats& e = f.events;
      text += fmt::format("file {} {} {} {} {} {} {} {} {} {} {} {} {} {:.17g} {:.17g}\n", f.path,
                          f.loaded, f.skip_reason, e.records, e.scalars, e.histograms, e.images,
                          e.audio, e.tensors, e.metadata_only, e.graphs, e.file_version, f.rows,
                          e.first_wall_time_seconds, e.last_wall_time_seconds);
      for (const auto& [encoding, count] : e.scalar_encodings) {
        text += fmt::format("encoding {} {}\n", static_cast<int>(encoding), count);
      }
    }
    for (const Restart& r : run.restarts) {
      text += fmt::format("restart {} {} {} {} {}\n", r.tag, r.source, r.from_step,
                          r.back_to_step, r.overlapped_points);
    }
    for (const RecordIssue& i : run.record_issues) text += i.Message() + "\n";
    for (const std::string& note : run.notes) text += note + "\n";
    for (const ConcurrentFiles& c : run.concurrent_files) {
      text += fmt::format("concurrent {} {}\n", c.first, c.second);
    }
    for (const HistogramSeries& h : run.histograms) {
      text += fmt::format("histogram {} {} {}\n", h.tag, h.points, h.last_step);
    }
    for (const Finding& f : CheckHealth(run)) text += f.message + "\n";
    text += fmt::format("written {}\n", run.written_points);
  }
  return text;
}

TEST(Runs, LoadingOnSeveralThreadsGivesTheSameRuns) {
  // Runs of several event files each (restarts, concurrent writers, a purge, a damaged record, a
  // file of another run's tags) and a CSV file; loaded run by run on one thread, and all at once
  // on 1, 2 and 7 threads, under every policy.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_threads_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (int r = 0; r < 5; ++r) {
    const std::filesystem::path run = dir / fmt::format("run{}", r);
    std::filesystem::create_directories(run);
    for (int f = 0; f < 4; ++f) {
      const double start = 1000.0 * (f + 1) + (r % 2 == 0 && f == 3 ? -990 : 0);  // overlap
      std::string bytes = FrameRecord(EncodeFileVersionEvent(start));
      if (f == 2 && r == 1) bytes += FrameRecord(EncodeSessionStartEvent(start, 20));
      for (int s = 0; s < 40 + 10 * r; ++s) {
        const int step = f * 30 + s;  // each file goes back 10 steps: a restart
        bytes += FrameRecord(EncodeScalarEvent(start + s, step, "loss", 3.0 - 0.01 * step + f));
        if (s % 3 == 0) {
          bytes += FrameRecord(EncodeScalarEvent(start + s, step, fmt::format("t{}", f), s));
        }
      }
      if (f == 1 && r == 3) bytes[bytes.size() / 2] ^= 0x55;  // a damaged record
      WriteFileAtomically((run / fmt::format("events.out.tfevents.{}.h", 1000 * (f + 1))).string(),
                          bytes);
    }
    std::string csv = "step,acc\n";
    for (int s = 0; s < 30; ++s) csv += fmt::format("{},{}\n", s * 5, 0.01 * s);
    WriteFileAtomically((run / "metrics.csv").string(), csv);
  }
  const std::vector<RunDirectory> directories = DiscoverRuns(dir.string());
  ASSERT_EQ(directories.size(), 5u);
  for (RestartPolicy policy : {RestartPolicy::kFirst, RestartPolicy::kLast, RestartPolicy::kAll}) {
    SCOPED_TRACE(ToString(policy));
    LoadOptions options;
    options.restarts = policy;
    std::vector<runs::Run> one_by_one;
    for (const RunDirectory& d : directories) one_by_one.push_back(LoadRun(d, options));
    const std::string expected = Describe(one_by_one);
    EXPECT_NE(expected.find("restart loss"), std::string::npos);
    EXPECT_NE(expected.find("concurrent"), std::string::npos);
    EXPECT_NE(expected.find("byte offset"), std::string::npos);
    for (int threads : {1, 2, 7}) {
      options.threads = threads;
      EXPECT_EQ(Describe(LoadRuns(directories, options)), expected) << threads << " threads";
      EXPECT_EQ(Describe({LoadRun(directories[3], options)}), Describe({one_by_one[3]}));
    }
  }
  std::filesystem::remove_all(dir);
}

// Loads `directories` reading every event file in parts (parts of at least `min_part_bytes` on
// `threads` threads); returns what Describe reports and the largest number of parts of a file.
std::pair<std::string, int> DescribeInParts(const std::vector<RunDirectory>& directories,
                                            LoadOptions options, int64_t min_part_bytes,
                                            int threads) {
  options.min_part_bytes = min_part_bytes;
  options.threads = threads;
  std::vector<runs::Run> loaded = LoadRuns(directories, options);
  int most = 0;
  for (runs::Run& run : loaded) {
    for (SourceFile& file : run.files) {
      most = std::max(most, file.parts);
      file.parts = 1;
    }
  }
  return {Describe(loaded), most};
}

TEST(Runs, OneFileReadInPartsGivesTheSameRun) {
  // One large event file per run: purge markers, restarts, a tag of a non-scalar plugin declared
  // once at the start (whose later values a part's reader cannot tell from scalars), a large
  // record spanning parts, a damaged record; read whole, and in parts of 1 byte to 4 KiB on 2 to
  // 7 threads, under every policy. Parts are joined where they can be, and otherwise the file is
  // read again whole: the runs are the same either way.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_parts_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  enum Kind { kClean, kPurge, kPlugin, kDamaged, kLargeRecord };
  for (Kind kind : {kClean, kPurge, kPlugin, kDamaged, kLargeRecord}) {
    const std::filesystem::path run = dir / fmt::format("run{}", static_cast<int>(kind));
    std::filesystem::create_directories(run);
    std::string bytes = FrameRecord(EncodeFileVersionEvent(1000));
    if (kind == kPlugin) {
      bytes += FrameRecord(EncodeScalarEvent(1000, 0, "hp/lr", 0.1, ScalarEncoding::kSimpleValue,
                                             "hparams"));
    }
    for (int s = 0; s < 3000; ++s) {
      const int step = s < 2000 ? s : s - 500;  // back 500 steps at the 2000th: a restart
      bytes += FrameRecord(EncodeScalarEvent(1000 + s, step, "loss", 3.0 - 1e-4 * s));
      if (s % 7 == 0) bytes += FrameRecord(EncodeScalarEvent(1000 + s, step, "lr", 1e-3 * s));
      if (kind == kPlugin && s % 100 == 0) {
        bytes += FrameRecord(EncodeScalarEvent(1000 + s, step, "hp/lr", s));
      }
      if (kind == kPurge && s == 2000) bytes += FrameRecord(EncodeSessionStartEvent(1000 + s, 1500));
      if (kind == kLargeRecord && s == 1500) {
        bytes += FrameRecord(EncodeScalarEvent(1000 + s, step, std::string(20000, 'x'), 1.0));
      }
    }
    if (kind == kDamaged) bytes[bytes.size() / 3] ^= 0x20;
    WriteFileAtomically((run / "events.out.tfevents.1000.h").string(), bytes);
  }
  const std::vector<RunDirectory> directories = DiscoverRuns(dir.string());
  ASSERT_EQ(directories.size(), 5u);
  for (RestartPolicy policy : {RestartPolicy::kFirst, RestartPolicy::kLast, RestartPolicy::kAll}) {
    SCOPED_TRACE(ToString(policy));
    LoadOptions options;
    options.restarts = policy;
    const std::string whole = Describe(LoadRuns(directories, options));
    EXPECT_NE(whole.find("restart loss"), std::string::npos);
    EXPECT_NE(whole.find("byte offset"), std::string::npos);
    // hp/lr: 31 values counted as tensors (the first by its own plugin, the others by the cached
    // declaration), not as scalars.
    EXPECT_NE(whole.find(directories[kPlugin].event_files[0] + " true  3461 3429 0 0 0 31 0 0 "),
              std::string::npos);
    // Each run on its own, so that its file is the one large file: the clean, purged and
    // large-record files are joined from their parts; the damaged one, and the one whose plugin
    // declaration a later part could not see, are read again whole.
    for (size_t r = 0; r < directories.size(); ++r) {
      SCOPED_TRACE(directories[r].name);
      const std::string expected = Describe({LoadRun(directories[r], options)});
      for (int64_t min_part_bytes : {1, 100, 4096}) {
        for (int threads : {2, 3, 7}) {
          const auto [text, parts] =
              DescribeInParts({directories[r]}, options, min_part_bytes, threads);
          EXPECT_EQ(text, expected) << min_part_bytes << " bytes, " << threads << " threads";
          EXPECT_EQ(parts, r == kPlugin || r == kDamaged ? 1 : threads);
        }
      }
    }
    // All runs at once: no file is large against a thread's share, none is split.
    const auto [text, parts] = DescribeInParts(directories, options, 1, 3);
    EXPECT_EQ(text, whole);
    EXPECT_EQ(parts, 1);
  }
  std::filesystem::remove_all(dir);
}

TEST(Runs, RealEventFilesReadInPartsGiveTheSameRuns) {
  // Every fixture directory of real event files (histograms, images, hparams, graphs, text,
  // several writers): the same runs read whole and in parts.
  int joined = 0;
  for (const char* fixture : {"CursedSeraphim__process-tensorboard-logs", "janosh__tensorboard-reducer",
                              "orktes__go-tensorboard", "yuanjun0416__tensorboard_use",
                              "ZeroToMax-ZYZ__study_tensorboard"}) {
    SCOPED_TRACE(fixture);
    const std::vector<RunDirectory> directories =
        DiscoverRuns(kFixtures + fixture);
    ASSERT_FALSE(directories.empty());
    LoadOptions options;
    const std::string whole = Describe(LoadRuns(directories, options));
    for (int64_t min_part_bytes : {1, 333}) {
      const auto [text, parts] = DescribeInParts(directories, options, min_part_bytes, 5);
      EXPECT_EQ(text, whole) << min_part_bytes;
      joined += parts > 1;
    }
  }
  EXPECT_GT(joined, 0);
}

TEST(Runs, OverlappingFilesUnderEachPolicy) {
  // File 1 writes steps 0-3 of "loss"; file 2 goes back to step 2 and writes 2-5 (values + 100).
  // "lr" only moves forward across both files.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_overlap_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string first = FrameRecord(EncodeFileVersionEvent(1000));
  for (int s = 0; s < 4; ++s) {
    first += FrameRecord(EncodeScalarEvent(1000 + s, s, "loss", s));
    first += FrameRecord(EncodeScalarEvent(1000 + s, s, "lr", 0.5 * s));
  }
  std::string second = FrameRecord(EncodeFileVersionEvent(2000));
  for (int s = 2; s < 6; ++s) second += FrameRecord(EncodeScalarEvent(2000 + s, s, "loss", 100 + s));
  for (int s = 4; s < 6; ++s) second += FrameRecord(EncodeScalarEvent(2000 + s, s, "lr", 0.5 * s));
  WriteFileAtomically((dir / "events.out.tfevents.1000.h").string(), first);
  WriteFileAtomically((dir / "events.out.tfevents.2000.h").string(), second);
  auto values = [](const TimeSeries& series) {
    std::vector<std::pair<int64_t, double>> out;
    for (const ScalarPoint& p : series.points) out.emplace_back(p.step, p.value);
    return out;
  };
  using Points = std::vector<std::pair<int64_t, double>>;
  LoadOptions options;
  const runs::Run first_run = LoadRun(DiscoverRuns(dir.string()).at(0), options);
  EXPECT_EQ(values(*first_run.FindSeries("loss")),
            (Points{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 104}, {5, 105}}));
  EXPECT_EQ(values(*first_run.FindSeries("lr")),
            (Points{{0, 0}, {1, 0.5}, {2, 1}, {3, 1.5}, {4, 2}, {5, 2.5}}));
  ASSERT_EQ(first_run.restarts.size(), 1u);
  EXPECT_EQ(first_run.restarts[0].tag, "loss");
  EXPECT_EQ(first_run.restarts[0].source, 1);
  EXPECT_EQ(first_run.restarts[0].from_step, 3);
  EXPECT_EQ(first_run.restarts[0].back_to_step, 2);
  EXPECT_EQ(first_run.restarts[0].overlapped_points, 2);
  EXPECT_EQ(first_run.written_points, 14);

  options.restarts = RestartPolicy::kLast;
  const runs::Run last_run = LoadRun(DiscoverRuns(dir.string()).at(0), options);
  EXPECT_EQ(values(*last_run.FindSeries("loss")),
            (Points{{0, 0}, {1, 1}, {2, 102}, {3, 103}, {4, 104}, {5, 105}}));

  options.restarts = RestartPolicy::kAll;
  const runs::Run all_run = LoadRun(DiscoverRuns(dir.string()).at(0), options);
  std::vector<int32_t> passes;
  const TimeSeries& all_loss = *all_run.FindSeries("loss");
  for (size_t i = 0; i < all_loss.points.size(); ++i) passes.push_back(all_loss.PassOf(i));
  EXPECT_EQ(passes, (std::vector<int32_t>{1, 1, 1, 1, 2, 2, 2, 2}));
  std::filesystem::remove_all(dir);
}

// One writer logging four values per step (gradient accumulation), wall time increasing: repeated
// values, not restarts. `first` keeps the first value of each step, `last` the last, `all` every
// value in one pass.
TEST(Runs, RepeatedValuesAtOneStepAreNotRestarts) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mosaic_repeated_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string bytes = FrameRecord(EncodeFileVersionEvent(1000));
  double wall = 1000;
  for (int s = 0; s < 3; ++s) {
    for (int k = 0; k < 4; ++k) {
      bytes += FrameRecord(EncodeScalarEvent(wall += 1, s, "loss", 10 * s + k));
    }
  }
  WriteFileAtomically((dir / "events.out.tfevents.1000.h").string(), bytes);
  // A CSV logger repeating a step for epoch and step metrics.
  WriteFileAtomically((dir / "metrics.csv").string(),
                      "step,epoch,train_loss,val_loss\n0,0,2.5,\n0,0,,2.75\n1,0,2.25,\n1,0,,2.5\n");
  LoadOptions options;
  for (const RestartPolicy policy :
       {RestartPolicy::kFirst, RestartPolicy::kLast, RestartPolicy::kAll}) {
    SCOPED_TRACE(std::string(ToString(policy)));
    options.restarts = policy;
    const runs::Run run = LoadRun(DiscoverRuns(dir.string()).at(0), options);
    EXPECT_TRUE(run.restarts.empty()) << run.restarts.size();
    const TimeSeries& loss = *run.FindSeries("loss");
    std::vector<double> values;
    std::vector<int32_t> passes;
    for (size_t i = 0; i < loss.points.size(); ++i) {
      values.push_back(loss.points[i].value);
      passes.push_back(loss.PassOf(i));
    }
    switch (policy) {
      case RestartPolicy::kFirst: EXPECT_EQ(values, (std::vector<double>{0, 10, 20})); break;
      case RestartPolicy::kLast: EXPECT_EQ(values, (std::vector<double>{3, 13, 23})); break;
      case RestartPolicy::kAll:
        EXPECT_EQ(values.size(), 12u);
        EXPECT_EQ(passes, std::vector<int32_t>(12, 1));
        break;
    }
    EXPECT_EQ(run.FindSeries("epoch")->points.size(), policy == RestartPolicy::kAll ? 4u : 2u);
    for (const Finding& f : CheckHealth(run)) EXPECT_NE(f.kind, FindingKind::kRestart) << f.message;
  }
  // A step logged again from a later file is still a restart.
  std::string resumed = FrameRecord(EncodeFileVersionEvent(2000));
  resumed += FrameRecord(EncodeScalarEvent(2001, 2, "loss", 99));
  WriteFileAtomically((dir / "events.out.tfevents.2000.h").string(), resumed);
  options.restarts = RestartPolicy::kFirst;
  const runs::Run run = LoadRun(DiscoverRuns(dir.string()).at(0), options);
  ASSERT_EQ(run.restarts.size(), 1u);
  EXPECT_EQ(run.restarts[0].back_to_step, 2);
  EXPECT_EQ(run.restarts[0].overlapped_points, 1);
  std::filesystem::remove_all(dir);
}

// Keras's profiler leaves an "events.out.tfevents.*.profile-empty" file (one record, no scalar)
// inside the training run's time: it writes no series, so it is no concurrent writer.
TEST(Runs, AFileWithoutScalarsIsNoConcurrentWriter) {
  const std::string root = std::string(MOSAIC_SOURCE_DIR) +
                           "/tests/fixtures/yuanjun0416__tensorboard_use/"
                           "loop_noise5_cbamconcat_rms1_batchsize512/train";
  const runs::Run run = LoadRun(DiscoverRuns(root).at(0), LoadOptions{});
  ASSERT_EQ(run.files.size(), 2u);
  EXPECT_TRUE(run.concurrent_files.empty());
  for (const Finding& f : CheckHealth(run)) {
    EXPECT_NE(f.kind, FindingKind::kConcurrentWriters) << f.message;
  }
}

// Two ranks writing event files into one directory at the same time: a concurrent-writers
// finding, no restart; each file is a writer of its own.
TEST(Runs, ConcurrentWritersAreAFindingNotARestart) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mosaic_concurrent_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (int rank = 0; rank < 2; ++rank) {
    std::string bytes = FrameRecord(EncodeFileVersionEvent(1000 + rank));
    for (int s = 0; s < 5; ++s) {
      bytes += FrameRecord(EncodeScalarEvent(1000 + rank + 10 * s, s, "loss", 100 * rank + s));
    }
    WriteFileAtomically((dir / ("events.out.tfevents.1000.rank" + std::to_string(rank))).string(),
                        bytes);
  }
  LoadOptions options;
  for (const RestartPolicy policy :
       {RestartPolicy::kFirst, RestartPolicy::kLast, RestartPolicy::kAll}) {
    SCOPED_TRACE(std::string(ToString(policy)));
    options.restarts = policy;
    const runs::Run run = LoadRun(DiscoverRuns(dir.string()).at(0), options);
    EXPECT_TRUE(run.restarts.empty());
    ASSERT_EQ(run.concurrent_files.size(), 1u);
    const std::vector<Finding> findings = CheckHealth(run);
    int concurrent = 0;
    for (const Finding& f : findings) {
      EXPECT_NE(f.kind, FindingKind::kRestart) << f.message;
      if (f.kind == FindingKind::kConcurrentWriters) ++concurrent;
    }
    EXPECT_EQ(concurrent, 1);
    const TimeSeries& loss = *run.FindSeries("loss");
    switch (policy) {
      case RestartPolicy::kFirst:  // the file that sorts first
        ASSERT_EQ(loss.points.size(), 5u);
        EXPECT_EQ(loss.points[4].value, 4);
        break;
      case RestartPolicy::kLast:  // the last written of each step
        ASSERT_EQ(loss.points.size(), 5u);
        EXPECT_EQ(loss.points[0].value, 100);
        EXPECT_EQ(loss.points[4].value, 104);
        break;
      case RestartPolicy::kAll:
        ASSERT_EQ(loss.points.size(), 10u);
        EXPECT_TRUE(loss.pass_starts.empty());
        for (size_t i = 0; i < loss.points.size(); ++i) EXPECT_EQ(loss.PassOf(i), 1);
        break;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Runs, AConcurrentWriterDoesNotHideTheNextFilesResume) {
  // File a logs steps 0-99; c, a small writer beside it (overlapping wall times), steps 0-9; b
  // resumes at step 50 after a ended. b's resume is a restart from step 99 whether or not c is
  // there: c's points are judged against c's own and do not pull the run back.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mosaic_hidden_resume_" + std::to_string(::getpid()));
  for (bool with_c : {false, true}) {
    SCOPED_TRACE(with_c ? "with c" : "without c");
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto write = [&](const std::string& name, double start, int first, int last) {
      std::string bytes = FrameRecord(EncodeFileVersionEvent(start));
      for (int s = first; s <= last; ++s) {
        bytes += FrameRecord(EncodeScalarEvent(start + (s - first), s, "loss", s));
      }
      WriteFileAtomically((dir / name).string(), bytes);
    };
    write("events.out.tfevents.1000.a", 1000, 0, 99);
    if (with_c) write("events.out.tfevents.1010.c", 1010, 0, 9);
    write("events.out.tfevents.1500.b", 1500, 50, 149);
    LoadOptions options;
    options.restarts = RestartPolicy::kAll;
    const runs::Run run = LoadRun(DiscoverRuns(dir.string()).at(0), options);
    EXPECT_EQ(run.concurrent_files.size(), with_c ? 1u : 0u);
    ASSERT_EQ(run.restarts.size(), 1u);
    EXPECT_EQ(run.restarts[0].from_step, 99);
    EXPECT_EQ(run.restarts[0].back_to_step, 50);
    const TimeSeries& loss = *run.FindSeries("loss");
    int pass_two = 0;
    for (size_t i = 0; i < loss.points.size(); ++i) pass_two += loss.PassOf(i) == 2;
    EXPECT_EQ(pass_two, 100);  // all of b
  }
  std::filesystem::remove_all(dir);
}

TEST(Runs, ARestartIsReportedFromTheStepTheWriterHadReached) {
  // Steps 0-99, back to 50-89, then a purge marker at 70: the second restart goes back from 89
  // (where the writer was), not from 99.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mosaic_restart_from_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string bytes = FrameRecord(EncodeFileVersionEvent(1000));
  double wall = 1000;
  for (int s = 0; s < 140; ++s) {
    bytes += FrameRecord(EncodeScalarEvent(++wall, s < 100 ? s : s - 50, "loss", 1.0));
  }
  bytes += FrameRecord(EncodeSessionStartEvent(++wall, 70));
  for (int s = 70; s <= 120; ++s) bytes += FrameRecord(EncodeScalarEvent(++wall, s, "loss", 2.0));
  WriteFileAtomically((dir / "events.out.tfevents.1000.h").string(), bytes);
  LoadOptions options;
  options.restarts = RestartPolicy::kLast;
  const runs::Run run = LoadRun(DiscoverRuns(dir.string()).at(0), options);
  ASSERT_EQ(run.restarts.size(), 2u);
  EXPECT_EQ(run.restarts[0].from_step, 99);
  EXPECT_EQ(run.restarts[0].back_to_step, 50);
  EXPECT_EQ(run.restarts[0].overlapped_points, 40);
  EXPECT_EQ(run.restarts[1].from_step, 89);
  EXPECT_EQ(run.restarts[1].back_to_step, 70);
  EXPECT_EQ(run.restarts[1].overlapped_points, 20);
  std::filesystem::remove_all(dir);
}

TEST(Runs, SeveralLogdirsGiveUniqueStableNames) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("mosaic_names_" + std::to_string(::getpid()));
  const std::string events = FrameRecord(EncodeFileVersionEvent(1000)) +
                             FrameRecord(EncodeScalarEvent(1000, 0, "loss", 1));
  for (const char* run : {"x/logs/r1", "x/logs/r2", "y/logs/r1", "y/other"}) {
    std::filesystem::create_directories(root / run);
    WriteFileAtomically((root / run / "events.out.tfevents.1000.h").string(), events);
  }
  WriteFileAtomically((root / "metrics.csv").string(), "step,loss\n0,1\n");
  const std::string x = (root / "x/logs/").string();  // a trailing slash changes nothing
  const std::string y = (root / "y/logs").string();
  const std::string other = (root / "y/other").string();
  const std::string csv = (root / "metrics.csv").string();

  auto names = [](const std::vector<RunDirectory>& runs) {
    std::vector<std::string> out;
    for (const RunDirectory& r : runs) out.push_back(r.name);
    return out;
  };
  using Names = std::vector<std::string>;
  // One log directory: names relative to it, as before.
  EXPECT_EQ(names(DiscoverRuns(std::vector<std::string>{x})), (Names{"r1", "r2"}));
  // Distinct base names: the base name is the prefix; a run at the argument itself is the label.
  EXPECT_EQ(names(DiscoverRuns(std::vector<std::string>{y, other, csv})),
            (Names{"logs/r1", "other", "metrics.csv"}));
  // Two "logs": the normalized paths tell them apart; the same directory twice gets "#2".
  const std::string xn = (root / "x/logs").string();
  EXPECT_EQ(names(DiscoverRuns(std::vector<std::string>{x, y, x})),
            (Names{xn + "/r1", xn + "/r2", y + "/r1", xn + "#2/r1", xn + "#2/r2"}));
  // Loaded series carry the prefixed run name.
  const std::vector<RunDirectory> runs = DiscoverRuns(std::vector<std::string>{y, other});
  EXPECT_EQ(LoadRun(runs.at(0), LoadOptions{}).series.at(0).run, "logs/r1");
  std::filesystem::remove_all(root);
}

TEST(Health, FindsNonFiniteSpikesGapsAndRestarts) {
  runs::Run run;
  run.name = "r";
  run.files.push_back({"f", SourceFormat::kEvents, {}, 0, true});
  TimeSeries loss{"r", "train/loss", {}, false};
  for (int s = 0; s < 100; ++s) {
    double v = 3.0 - 0.001 * s + 0.01 * ((s * 7) % 5);
    if (s == 60) v = 9.0;
    loss.points.push_back({s < 80 ? s : s + 40, 1000.0 + s, v});
  }
  TimeSeries grad{"r", "train/grad_norm", {}, false};
  for (int s = 0; s < 20; ++s) {
    grad.points.push_back({s, 1000.0 + s, s == 12 ? std::nan("") : 1.0 + 0.01 * (s % 3)});
  }
  run.series = {grad, loss};
  run.restarts.push_back({"train/loss", 0, 99, 90, 10});
  const std::vector<Finding> findings = CheckHealth(run);
  std::map<FindingKind, std::vector<int64_t>> by_kind;
  for (const Finding& f : findings) by_kind[f.kind] = f.steps;
  EXPECT_EQ(by_kind[FindingKind::kNonFinite], (std::vector<int64_t>{12}));
  EXPECT_EQ(by_kind[FindingKind::kSpike], (std::vector<int64_t>{60}));
  EXPECT_EQ(by_kind[FindingKind::kStepGap], (std::vector<int64_t>{79}));
  EXPECT_EQ(by_kind[FindingKind::kRestart], (std::vector<int64_t>{90}));
  EXPECT_NE(findings[0].message.find("update skipped"), std::string::npos) << findings[0].message;
}

// A restart that replays steps takes time before the next new step: that time is the restart's
// (its finding says how long), not a stall reported beside it.
TEST(Health, TheTimeARestartTakesIsInItsFindingNotAStall) {
  runs::Run run;
  run.name = "r";
  run.files.push_back({"f", SourceFormat::kEvents, {}, 0, true});
  TimeSeries loss{"r", "loss", {}, false};
  double wall = 1000;
  // Under `first`: steps 0-39 at 30 s each, then 40-59 after 10 replayed steps (330 s to 40).
  for (int64_t step = 0; step < 60; ++step) {
    loss.points.push_back({step, wall += step == 40 ? 330 : 30, 1.0});
  }
  run.series = {loss};
  run.restarts.push_back({"loss", 0, 39, 30, 10});
  const std::vector<Finding> findings = CheckHealth(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, FindingKind::kRestart);
  EXPECT_EQ(findings[0].message,
            "in f: back from step 39 to step 30, 10 points overlapped; 330 s of wall time before "
            "the run went on");
  // Under `last` the later pass is kept from step 30 on: the wait is before step 30.
  TimeSeries last{"r", "loss", {}, false};
  wall = 1000;
  for (int64_t step = 0; step < 60; ++step) {
    last.points.push_back({step, wall += step == 30 ? 630 : 30, 1.0});
  }
  run.series = {last};
  const std::vector<Finding> under_last = CheckHealth(run);
  ASSERT_EQ(under_last.size(), 1u);
  EXPECT_EQ(under_last[0].kind, FindingKind::kRestart);
  EXPECT_NE(under_last[0].message.find("; 630 s of wall time before the run went on"),
            std::string::npos)
      << under_last[0].message;
  // Without the restart the same wait is a stall.
  run.restarts.clear();
  const std::vector<Finding> stalled = CheckHealth(run);
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].kind, FindingKind::kStall);
}

// Steps spanning the whole 64-bit range: the intervals are measured without overflow (-5 to
// 2^63 - 1 is a gap of about 9.2e18 steps, not a negative one), and the gap names both ends.
TEST(Health, StepGapsAcrossTheWholeSixtyFourBitRange) {
  runs::Run run;
  run.name = "r";
  run.files.push_back({"f", SourceFormat::kEvents, {}, 0, true});
  TimeSeries loss{"r", "loss", {}, false};
  for (int64_t s : {int64_t{-7}, int64_t{-6}, int64_t{-5}, std::numeric_limits<int64_t>::max()}) {
    loss.points.push_back({s, 1000.0 + static_cast<double>(loss.points.size()), 1.0});
  }
  run.series = {loss};
  const std::vector<Finding> findings = CheckHealth(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, FindingKind::kStepGap);
  EXPECT_EQ(findings[0].steps, (std::vector<int64_t>{-5}));
  EXPECT_NE(findings[0].message.find("largest -5 → 9223372036854775807"), std::string::npos)
      << findings[0].message;
}

// Under `all` a resumed run's steps past its restart are in pass 2: the gap and stall checks see
// the distinct steps, each at its first occurrence, and find what `first` finds (a stall after
// the restart, none at the overlap).
TEST(Health, GapsAndStallsUnderAllSeeEveryPass) {
  auto run_with = [](bool all) {
    runs::Run run;
    run.name = "r";
    run.files.push_back({"f", SourceFormat::kEvents, {}, 0, true});
    TimeSeries loss{"r", "loss", {}, false};
    double wall = 1000;
    for (int64_t step = 0; step < 10; ++step) loss.points.push_back({step, wall += 10, 1.0});
    if (all) loss.pass_starts.push_back(loss.points.size());
    for (int64_t step = all ? 5 : 10; step < 30; ++step) {
      loss.points.push_back({step, wall += step == 20 ? 5000 : 10, 1.0});
    }
    run.series = {loss};
    return CheckHealth(run);
  };
  const std::vector<Finding> first = run_with(false);
  const std::vector<Finding> all = run_with(true);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].kind, FindingKind::kStall);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].kind, FindingKind::kStall);
  EXPECT_EQ(all[0].steps, first[0].steps);
  EXPECT_EQ(all[0].message, first[0].message);
  // Several values at each step from one writer (no restart, no second pass): `all` keeps them
  // all, and the gap from step 99 to 200 is still one, against the usual interval 1, not 0.
  auto gaps_with = [](int repeats) {
    runs::Run run;
    run.name = "r";
    run.files.push_back({"f", SourceFormat::kEvents, {}, 0, true});
    TimeSeries loss{"r", "loss", {}, false};
    double wall = 1000;
    for (int64_t step = 0; step < 300; ++step) {
      if (step >= 100 && step < 200) continue;
      for (int k = 0; k < repeats; ++k) loss.points.push_back({step, wall += 0.25, 1.0});
    }
    run.series = {loss};
    return CheckHealth(run);
  };
  const std::vector<Finding> once = gaps_with(1);
  const std::vector<Finding> repeated = gaps_with(4);
  ASSERT_EQ(once.size(), 1u);
  EXPECT_EQ(once[0].kind, FindingKind::kStepGap);
  ASSERT_EQ(repeated.size(), 1u);
  EXPECT_EQ(repeated[0].message, once[0].message);
}

// Entries named as logs that are not files to read (a symbolic link to nothing, a FIFO) are
// unreadable files of their run, never opened (a FIFO would wait for a writer); the run's other
// files are read.
TEST(Discover, LinksToNothingAndFifosAreUnreadableFiles) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("mosaic_fifo_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "r");
  { std::ofstream(root / "r" / "a.csv") << "step,loss\n1,2\n2,1.5\n"; }
  std::filesystem::create_symlink(root / "missing.csv", root / "r" / "gone.csv");
  ASSERT_EQ(::mkfifo((root / "r" / "pipe.jsonl").c_str(), 0600), 0);
  const std::vector<RunDirectory> dirs = DiscoverRuns(root.string());
  ASSERT_EQ(dirs.size(), 1u);
  ASSERT_EQ(dirs[0].unusable_files.size(), 2u);
  const std::vector<runs::Run> loaded = LoadRuns(dirs, {});
  ASSERT_EQ(loaded.size(), 1u);
  ASSERT_NE(loaded[0].FindSeries("loss"), nullptr);
  EXPECT_EQ(loaded[0].FindSeries("loss")->points.size(), 2u);
  std::set<std::string> reasons;
  for (const Finding& f : CheckHealth(loaded[0])) {
    if (f.kind == FindingKind::kUnreadableFile) reasons.insert(f.message);
  }
  // Given by name, a FIFO is refused at once rather than opened.
  try {
    DiscoverRuns((root / "r" / "pipe.jsonl").string());
    ADD_FAILURE() << "a FIFO was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (root / "r" / "pipe.jsonl").string() +
                                         ": a FIFO, not a regular file; give a log folder or a "
                                         "log file");
  }
  EXPECT_EQ(reasons, (std::set<std::string>{
                         (root / "r" / "gone.csv").string() +
                             ": a symbolic link to a file that does not exist; not read",
                         (root / "r" / "pipe.jsonl").string() +
                             ": a FIFO, not a regular file; not read"}));
  std::filesystem::remove_all(root);
}

// Health of several runs with every series a task of its own: each run's findings are
// CheckHealth's, in its order, on any number of threads.
TEST(Health, RunsCheckedSeriesBySeriesOnAnyThreadsAsOneByOne) {
  std::vector<runs::Run> runs_in(3);
  for (size_t r = 0; r < runs_in.size(); ++r) {
    runs::Run& run = runs_in[r];
    run.name = "r" + std::to_string(r);
    run.files.push_back({"f", SourceFormat::kEvents, {}, 0, r != 1, r == 1 ? "f: unreadable" : ""});
    for (int t = 0; t < 3 + static_cast<int>(r); ++t) {
      TimeSeries s{run.name, t % 2 == 0 ? "loss" + std::to_string(t) : "grad_norm" + std::to_string(t),
                   {}, false};
      const int n = 50 + 40 * t;
      for (int i = 0; i < n; ++i) {
        double v = 2.0 + 0.01 * ((i * (t + 3)) % 7);
        if (i == 30 + t) v = 50.0;                            // a spike
        if (i == 20 + static_cast<int>(r)) v = std::nan("");  // a non-finite value
        s.points.push_back({i < n / 2 ? i : i + 10, 100.0 + i + (i == 40 ? 1000 : 0), v});
      }
      run.series.push_back(std::move(s));
    }
  }
  // Long series are also spike-tested in parts (here of at least 1, 5 and 16 points, so that
  // parts begin before, at and after spikes and non-finite values): the same findings.
  for (int64_t part_points : {int64_t{1} << 18, int64_t{1}, int64_t{5}, int64_t{16}})
  for (int threads : {1, 2, 3, 7}) {
    SCOPED_TRACE(fmt::format("{} threads, parts of {}", threads, part_points));
    HealthOptions options;
    options.spike_part_points = part_points;
    const std::vector<std::vector<Finding>> all = CheckHealthOfRuns(runs_in, options, threads);
    ASSERT_EQ(all.size(), runs_in.size());
    for (size_t r = 0; r < runs_in.size(); ++r) {
      const std::vector<Finding> one = CheckHealth(runs_in[r]);
      ASSERT_EQ(all[r].size(), one.size());
      EXPECT_GT(one.size(), 6u);
      for (size_t i = 0; i < one.size(); ++i) {
        EXPECT_EQ(all[r][i].kind, one[i].kind);
        EXPECT_EQ(all[r][i].tag, one[i].tag);
        EXPECT_EQ(all[r][i].steps, one[i].steps);
        EXPECT_EQ(all[r][i].message, one[i].message);
      }
    }
  }
  EXPECT_EQ(CheckHealth(runs_in[1]).front().kind, FindingKind::kUnreadableFile);
}

// The spike rule written out directly (docs/logs.md): median and MAD of a copy of the previous
// spike_window finite values, each found by sorting.
std::vector<int64_t> ReferenceSpikes(const TimeSeries& s, const HealthOptions& o,
                                     double* worst_sigmas) {
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t mid = v.size() / 2;
    return v.size() % 2 == 1 ? v[mid] : (v[mid] + v[mid - 1]) / 2;
  };
  std::vector<double> window;
  std::vector<int64_t> spikes;
  *worst_sigmas = 0;
  for (const ScalarPoint& p : s.points) {
    if (!std::isfinite(p.value)) continue;
    if (static_cast<int>(window.size()) >= o.spike_min_points) {
      const double m = median(window);
      std::vector<double> deviations;
      for (double v : window) deviations.push_back(std::fabs(v - m));
      const double sigma =
          std::max(1.4826 * median(deviations), o.spike_floor_relative * std::fabs(m));
      if (sigma > 0 && (p.value - m) / sigma > o.spike_sigmas) {
        spikes.push_back(p.step);
        *worst_sigmas = std::max(*worst_sigmas, (p.value - m) / sigma);
      }
    }
    window.push_back(p.value);
    if (static_cast<int>(window.size()) > o.spike_window) window.erase(window.begin());
  }
  return spikes;
}

TEST(Health, RollingSpikeBaselineMatchesTheRuleWrittenOut) {
  // Noisy series with ties, repeated values, zeros of both signs, NaNs and real spikes; windows of
  // odd and even sizes, so that both median branches and the MAD's bisection ends are taken.
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  for (int window : {1, 2, 7, 10, 11, 50}) {
    for (int shape = 0; shape < 3; ++shape) {
      SCOPED_TRACE(testing::Message() << "window " << window << ", shape " << shape);
      TimeSeries loss{"r", "train/loss", {}, false};
      for (int step = 0; step < 3000; ++step) {
        double v = 0;
        const double u = next();
        if (shape == 0) v = 2.0 + 0.05 * u;                         // continuous noise
        if (shape == 1) v = std::floor(u * 4) * 0.25;               // heavy ties, zeros
        if (shape == 2) v = (u < 0.5 ? -0.0 : 0.0) + (u > 0.9 ? 1.0 : 0.0);  // ±0 and ones
        if (next() < 0.01) v += 5 + 10 * next();                    // spikes
        if (next() < 0.005) v = std::nan("");
        loss.points.push_back({step, 1000.0 + step, v});
      }
      runs::Run run;
      run.name = "r";
      run.series = {loss};
      HealthOptions options;
      options.spike_window = window;
      options.spike_min_points = std::min(window, 10);
      double worst = 0;
      const std::vector<int64_t> expected = ReferenceSpikes(loss, options, &worst);
      std::vector<int64_t> found;
      std::string message;
      for (const Finding& f : CheckHealth(run, options)) {
        if (f.kind == FindingKind::kSpike) {
          found = f.steps;
          message = f.message;
        }
      }
      EXPECT_EQ(found, expected);
      if (!expected.empty()) {
        EXPECT_NE(message.find(fmt::format("largest {:.1f} sd", worst)), std::string::npos)
            << message;
      }
    }
  }
}

TEST(TimeSeries, Summaries) {
  TimeSeries s{"r", "t", {{0, 0, 4}, {10, 0, std::nan("")}, {20, 0, 2}, {30, 0, 3}}};
  EXPECT_EQ(s.FinalValue(), 3);
  EXPECT_EQ(s.MeanOfLast(2), 2.5);
  EXPECT_EQ(s.MeanOfLast(3), 3);  // the NaN is passed over
  EXPECT_EQ(s.Min(), 2);
  EXPECT_EQ(s.ValueAt(20), 2);
  EXPECT_FALSE(s.ValueAt(5).has_value());
  EXPECT_EQ(s.NonFiniteCount(), 1);
  EXPECT_EQ(s.FirstStep(), 0);
  EXPECT_EQ(s.LastStep(), 30);
}

TEST(Compare, OffsetOverCommonSteps) {
  TimeSeries a{"a", "loss", {{0, 0, 3.0}, {1, 0, 2.5}, {2, 0, 2.0}, {3, 0, 1.0}}};
  TimeSeries b{"b", "loss", {{1, 0, 2.6}, {2, 0, 2.2}, {3, 0, std::nan("")}, {9, 0, 1}}};
  const std::optional<SeriesOffset> o = CompareSeries(a, b);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->common_steps, 2);
  EXPECT_NEAR(o->mean_difference, 0.15, 1e-12);
  EXPECT_NEAR(o->sd_difference, std::sqrt(0.005), 1e-12);
  EXPECT_FALSE(CompareSeries(a, TimeSeries{"c", "loss", {{7, 0, 1}}}).has_value());
}

TEST(Export, CsvAndJsonWriteNonFiniteAndMissingWallTimes) {
  runs::Run run;
  run.name = "r,1";
  run.series.push_back({"r,1", "t", {{0, 1.5, 0.1f}, {1, std::nan(""), INFINITY}}, true, {1}});
  EXPECT_EQ(ExportRuns({run}, ExportFormat::kCsv, true),
            "run,tag,step,wall_time,value,pass\n\"r,1\",t,0,1.5,0.1,1\n\"r,1\",t,1,,inf,2\n");
  EXPECT_EQ(ExportRuns({run}, ExportFormat::kJson, false),
            "[\n  {\"run\": \"r,1\", \"tag\": \"t\", \"step\": 0, \"wall_time\": 1.5, \"value\": "
            "0.1},\n  {\"run\": \"r,1\", \"tag\": \"t\", \"step\": 1, \"wall_time\": null, "
            "\"value\": null}\n]\n");
  // Wall times in fixed notation: a whole second is not written 1.7e+09.
  runs::Run timed;
  timed.name = "r";
  timed.series.push_back({"r", "t", {{0, 1.7e9, 1.0}, {1, 1700000000.25, 2.0}}, true});
  EXPECT_EQ(ExportRuns({timed}, ExportFormat::kCsv, false),
            "run,tag,step,wall_time,value\nr,t,0,1700000000,1\nr,t,1,1700000000.25,2\n");
  EXPECT_EQ(FormatWallTime(1.7e9), "1700000000");
  EXPECT_EQ(FormatWallTime(0.1), "0.1");
  EXPECT_EQ(FormatWallTime(std::nan("")), "nan");
  EXPECT_EQ(FormatValue(std::nan(""), false), "nan");
  EXPECT_EQ(FormatValue(-INFINITY, false), "-inf");
}

TEST(Export, StreamedOnSeveralThreadsInBoundedPiecesAsOneString) {
  // Two runs, series of 0, 1 and 20000 points (blocks of 8192 rows: several per series), float32
  // and double values, passes; the pieces joined equal ExportRuns on any number of threads, and
  // no piece holds more than one block.
  std::vector<runs::Run> all(2);
  for (size_t r = 0; r < all.size(); ++r) {
    all[r].name = "run" + std::to_string(r);
    for (int n : {0, 1, 20000}) {
      TimeSeries s{all[r].name, "tag" + std::to_string(n), {}, n % 2 == 0, {}};
      for (int i = 0; i < n; ++i) {
        s.points.push_back({i, 1.7e9 + 0.25 * i, std::sin(0.001 * i) / (1.0 + i)});
      }
      if (n > 2) s.pass_starts = {static_cast<size_t>(n / 2)};
      all[r].series.push_back(s);
    }
  }
  for (ExportFormat format : {ExportFormat::kCsv, ExportFormat::kJson}) {
    const std::string whole = ExportRuns(all, format, true);
    for (int threads : {1, 2, 3, 8}) {
      std::string joined;
      size_t largest = 0;
      WriteExport(all, format, true,
                  [&](std::string_view piece) {
                    joined += piece;
                    largest = std::max(largest, piece.size());
                  },
                  threads);
      EXPECT_EQ(joined, whole) << ToString(format) << " on " << threads << " threads";
      EXPECT_LT(largest, size_t{8192} * 200);
    }
  }
  EXPECT_EQ(ExportRuns({}, ExportFormat::kJson, false), "[]\n");
}

}  // namespace
}  // namespace mosaic::runs
