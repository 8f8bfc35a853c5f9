// End-to-end tests of `mosaic runs` on the real fixtures.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>

#include "cli_support.h"
#include "mosaic/runs/event_writer.h"

namespace mosaic::testing {
namespace {

const std::string kRerun = "tests/fixtures/ZeroToMax-ZYZ__study_tensorboard/runs/my_first_experiment";
const std::string kTf2 = "tests/fixtures/orktes__go-tensorboard";

TEST(RunsCli, WorksOnEveryFixtureDirectory) {
  for (const char* dir : {"CursedSeraphim__process-tensorboard-logs", "ZeroToMax-ZYZ__study_tensorboard",
                          "janosh__tensorboard-reducer", "orktes__go-tensorboard",
                          "yuanjun0416__tensorboard_use"}) {
    CommandResult r = RunMosaic(std::string("runs tests/fixtures/") + dir);
    EXPECT_EQ(r.exit_code, 0) << dir << r.err;
    EXPECT_NE(r.out.find("run "), std::string::npos);
  }
}

TEST(RunsCli, TableShowsTagsAndRestartFindings) {
  CommandResult r = RunMosaic("runs " + kRerun);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("run . (2 event files; restarts: first; 400 points written, 200 kept)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Metrics/Loss: restart: in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("back from step 99 to step 0, 100 points overlapped"), std::string::npos);
}

TEST(RunsCli, OutputIsTheSameOnAnyNumberOfThreads) {
  // Every fixture directory (many runs, restarts, damaged files, CSV and JSONL), as the table, the
  // JSON summary and the export, read one file at a time and on several threads.
  const std::string all = "tests/fixtures/CursedSeraphim__process-tensorboard-logs "
                          "tests/fixtures/ZeroToMax-ZYZ__study_tensorboard "
                          "tests/fixtures/janosh__tensorboard-reducer "
                          "tests/fixtures/orktes__go-tensorboard "
                          "tests/fixtures/yuanjun0416__tensorboard_use";
  for (const std::string flags : {"", " --json", " --restarts last --export csv",
                                  " --restarts all --export json"}) {
    SCOPED_TRACE(flags);
    CommandResult one = RunMosaic("runs " + all + flags + " --threads 1");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_GT(one.out.size(), 1000u);
    for (const char* threads : {" --threads 2", " --threads 5", ""}) {
      CommandResult many = RunMosaic("runs " + all + flags + threads);
      EXPECT_EQ(many.exit_code, 0) << many.err;
      EXPECT_EQ(many.out, one.out) << threads;
    }
  }
  EXPECT_NE(RunMosaic("runs " + kTf2 + " --threads -1").exit_code, 0);
}

TEST(RunsCli, OutputIsTheSameForAnyBatchSize) {
  // Every fixture directory read in batches of 1 MB (many runs to a batch, and the larger runs a
  // batch of their own) and all at once: the table, the summary, --json and both exports agree.
  const std::string all = "tests/fixtures/CursedSeraphim__process-tensorboard-logs "
                          "tests/fixtures/ZeroToMax-ZYZ__study_tensorboard "
                          "tests/fixtures/janosh__tensorboard-reducer "
                          "tests/fixtures/orktes__go-tensorboard "
                          "tests/fixtures/yuanjun0416__tensorboard_use";
  for (const std::string flags : {"", " --summary", " --json", " --restarts last --export csv",
                                  " --restarts all --export json"}) {
    SCOPED_TRACE(flags);
    CommandResult whole = RunMosaic("runs " + all + flags);
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    CommandResult batched = RunMosaic("runs " + all + flags + " --batch-mb 1");
    EXPECT_EQ(batched.exit_code, 0) << batched.err;
    EXPECT_EQ(batched.out, whole.out);
  }
  EXPECT_NE(RunMosaic("runs " + kTf2 + " --batch-mb 0").exit_code, 0);
}

TEST(RunsCli, CsvExportOfTheKnownValueFile) {
  CommandResult r = RunMosaic("runs " + kTf2 + " --export csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "run,tag,step,wall_time,value");
  int rows = 0;
  size_t at = r.out.find('\n') + 1;
  while (at < r.out.size()) {
    const size_t end = r.out.find('\n', at);
    const std::string line = r.out.substr(at, end - at);
    EXPECT_EQ(line.rfind("testdata/tfevents,my_metric,", 0), 0u) << line;
    const int step = std::stoi(line.substr(28));
    const double value = std::stod(line.substr(line.rfind(',') + 1));
    EXPECT_EQ(value, 0.5 * step);
    ++rows;
    at = end + 1;
  }
  EXPECT_EQ(rows, 100);
}

TEST(RunsCli, JsonExportWithPassesAndOutputFile) {
  const std::string out = std::filesystem::temp_directory_path() / "mosaic_runs_export.json";
  std::remove(out.c_str());
  CommandResult r = RunMosaic("runs " + kRerun + " --restarts all --tags Loss --export json --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  nlohmann::json j = nlohmann::json::parse(ReadText(out));
  ASSERT_EQ(j.size(), 200u);
  EXPECT_EQ(j[0]["tag"], "Metrics/Loss");
  EXPECT_EQ(j[0]["pass"], 1);
  EXPECT_EQ(j[100]["pass"], 2);
  EXPECT_EQ(j[100]["step"], 0);
  EXPECT_NEAR(j[0]["value"].get<double>(), 4.93373, 5e-6);
  std::remove(out.c_str());
}

TEST(RunsCli, JsonSummaryListsRestartsAndEncodings) {
  CommandResult r = RunMosaic("runs tests/fixtures/janosh__tensorboard-reducer/tests/runs/duplicate_steps --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["run"], "run_1");
  EXPECT_EQ(j[0]["restarts_found"][0]["back_to_step"], 90);
  EXPECT_EQ(j[0]["restarts_found"][0]["overlapped_points"], 10);
  EXPECT_EQ(j[0]["tags"][0]["points"], 200);
  EXPECT_EQ(j[0]["files"][0]["scalar_encodings"]["simple_value"], 420);
  EXPECT_EQ(j[0]["files"][0]["tensors"], 0);
  EXPECT_EQ(j[0]["files"][0]["file_version"], "brain.Event:2");
  EXPECT_TRUE(j[0]["files"][0]["first_wall_time"].is_number());
}

TEST(RunsCli, CompareReportsTheOffset) {
  CommandResult r = RunMosaic(
      "runs compare tests/fixtures/janosh__tensorboard-reducer/tests/runs/strict/run_1 "
      "tests/fixtures/janosh__tensorboard-reducer/tests/runs/strict/run_2 --tag strict/foo --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["common_steps"], 100);
  EXPECT_GT(j["mean_difference"].get<double>(), 0);
  CommandResult text = RunMosaic(
      "runs compare tests/fixtures/janosh__tensorboard-reducer/tests/runs/strict/run_1 "
      "tests/fixtures/janosh__tensorboard-reducer/tests/runs/strict/run_2 --tag strict/foo");
  EXPECT_NE(text.out.find("mean difference"), std::string::npos) << text.out;
}

TEST(RunsCli, ErrorsAndExitCodes) {
  CommandResult missing = RunMosaic("runs tests/fixtures/no-such-dir");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "mosaic: error: tests/fixtures/no-such-dir: no such file or directory\n");
  // Every path that cannot be read is named, not only the first.
  CommandResult two = RunMosaic("runs tests/fixtures/no-such-1 " + kRerun + " tests/fixtures/no-such-2");
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_EQ(two.err, "mosaic: error: 2 of the 3 log paths cannot be read:\n"
                     "  tests/fixtures/no-such-1: no such file or directory\n"
                     "  tests/fixtures/no-such-2: no such file or directory\n");
  CommandResult policy = RunMosaic("runs " + kRerun + " --restarts newest");
  EXPECT_EQ(policy.exit_code, 2);
  // The summary's flags beside --export are refused, not ignored.
  for (const char* flag : {"--json", "--summary", "--tag loss"}) {
    CommandResult both = RunMosaic("runs " + kRerun + " --export csv " + flag);
    EXPECT_EQ(both.exit_code, 2) << flag;
    EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
  }
  CommandResult regex = RunMosaic("runs " + kRerun + " --tags '(x'");
  EXPECT_EQ(regex.exit_code, 2);  // a malformed flag
  EXPECT_NE(regex.err.find("--tags = (x. Violated constraint: a valid regular expression"),
            std::string::npos)
      << regex.err;
  // A filter that keeps no tag is a mistake, not runs without tags.
  for (const char* export_flag : {"", " --export csv"}) {
    CommandResult none = RunMosaic("runs " + kRerun + " --tags zzz" + export_flag);
    EXPECT_EQ(none.exit_code, 1) << export_flag;
    EXPECT_NE(none.err.find("--tags = zzz. Violated constraint: a pattern that matches some tag "
                            "of the runs read"),
              std::string::npos)
        << none.err;
  }
  CommandResult tag = RunMosaic("runs compare " + kRerun + " " + kRerun + " --tag Metrics/Los");
  EXPECT_EQ(tag.exit_code, 1);
  EXPECT_NE(tag.err.find("no run has the tag 'Metrics/Los' (did you mean 'Metrics/Loss'?)"),
            std::string::npos)
      << tag.err;
}

// A run folder holding mosaic's own export reads back as the same points (not as tags named
// "run", "tag" and "value"), restarts and all.
TEST(RunsCli, AnExportReadsBackAsTheSamePoints) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_runs_reexport";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "points.csv").string();
  CommandResult exported = RunMosaic("runs " + kRerun + " --restarts all --export csv --output " + csv);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  CommandResult original = RunMosaic("runs " + kRerun + " --restarts all --export csv");
  CommandResult again = RunMosaic("runs " + dir.string() + " --restarts all --export csv");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, original.out);
  CommandResult summary = RunMosaic("runs " + dir.string());
  EXPECT_NE(summary.out.find("back from step 99 to step 0, 100 points overlapped"),
            std::string::npos)
      << summary.out;
  std::filesystem::remove_all(dir);
}

// An export of several runs written among the logs it reads would be read back as one run's
// logs (and refused there): refused, nothing written. One run's export into its own folder reads
// back as its points.
TEST(RunsCli, AnExportOfSeveralRunsIsNotWrittenAmongTheirLogs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "mosaic_runs_export_inside";
  fs::remove_all(dir);
  fs::copy(SourcePath("tests/fixtures/janosh__tensorboard-reducer/tests/runs/strict"), dir,
           fs::copy_options::recursive);
  const fs::path inside = dir / "run_1" / "all.csv";
  CommandResult r = RunMosaic("runs " + dir.string() + " --export csv --output " + inside.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--output = " + inside.string() + ". Violated constraint: outside the log "
                       "directories this export reads (" + dir.string() + " is one)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(inside));
  // One run into another run's folder would become that run's points.
  const fs::path other = dir / "run_2" / "x.csv";
  CommandResult into_other = RunMosaic("runs " + (dir / "run_1").string() +
                                       " --export csv --output " + other.string());
  EXPECT_EQ(into_other.exit_code, 1);
  EXPECT_NE(into_other.err.find("outside another run's folder"), std::string::npos)
      << into_other.err;
  EXPECT_FALSE(fs::exists(other));
  const fs::path own = dir / "run_1" / "own.csv";
  CommandResult one = RunMosaic("runs " + (dir / "run_1").string() + " --export csv --output " +
                                own.string());
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_TRUE(fs::exists(own));
  // A symbolic link, dangling or not, is followed: the export would create its target among the
  // logs.
  const fs::path link = fs::temp_directory_path() / "mosaic_runs_export_link.csv";
  fs::remove(link);
  fs::create_symlink(dir / "all.csv", link);
  r = RunMosaic("runs " + dir.string() + " --export csv --output " + link.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--output = " + link.string() + ". Violated constraint: outside the log "
                       "directories this export reads"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "all.csv"));
  fs::remove(link);
  fs::remove_all(dir);
}

// What --output may not name, a stdout redirected to a file may not be either: appended to a log
// it reads (`>> run/log.csv`), the report or export would become that run's points.
TEST(RunsCli, AStdoutAppendedToALogItReadsIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("mosaic_runs_stdout_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "r");
  const std::string log = "step,loss\n0,2.5\n1,2.4\n2,2.3\n";
  { std::ofstream(dir / "r" / "log.csv") << log; }
  for (const std::string extra : {"", " --export csv"}) {
    const std::string command = "'" + std::string(MOSAIC_BINARY) + "' runs '" +
                                (dir / "r").string() + "'" + extra + " >> '" +
                                (dir / "r" / "log.csv").string() + "' 2> '" +
                                (dir / "err.txt").string() + "'";
    EXPECT_NE(std::system(command.c_str()), 0) << extra;
    EXPECT_NE(ReadText((dir / "err.txt").string())
                  .find("stdout = " + (dir / "r" / "log.csv").string() +
                        ". Violated constraint: not one of the command's input files"),
              std::string::npos)
        << ReadText((dir / "err.txt").string());
    EXPECT_EQ(ReadText((dir / "r" / "log.csv").string()), log) << extra;
  }
  // Into a file of its own, stdout is written as before.
  const std::string command = "'" + std::string(MOSAIC_BINARY) + "' runs '" + (dir / "r").string() +
                              "' --export csv > '" + (dir / "out.csv").string() + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
  EXPECT_NE(ReadText((dir / "out.csv").string()).find("2.4"), std::string::npos);
  fs::remove_all(dir);
}

TEST(RunsCli, DamagedFileIsReportedAndTheRestKept) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_runs_damaged";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string name = "events.out.tfevents.1622543341.hostA.86862.0";
  std::string bytes = ReadText(SourcePath(
      "tests/fixtures/janosh__tensorboard-reducer/tests/runs/strict/run_1/" + name));
  bytes[200] ^= 0x20;                      // inside an early record's payload
  bytes.resize(bytes.size() - 7);          // and a truncated tail
  {
    FILE* f = std::fopen((dir / name).c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  CommandResult r = RunMosaic("runs " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bad payload CRC"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: " + (dir / name).string() + ": byte offset"), std::string::npos);
  EXPECT_NE(r.out.find("truncated last record"), std::string::npos);
  EXPECT_NE(r.out.find("strict/foo       98 "), std::string::npos) << r.out;
  // In JSON the damage is a run-level finding: its tag is null, not an empty tag.
  CommandResult json = RunMosaic("runs " + dir.string() + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  ASSERT_FALSE(j[0]["findings"].empty());
  EXPECT_EQ(j[0]["findings"][0]["kind"], "damaged");
  EXPECT_TRUE(j[0]["findings"][0]["tag"].is_null());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// Two symlinks back up the tree must not make the directory walk revisit it without end.
TEST(RunsCli, SymlinkLoopsAreWalkedOnce) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / ("mosaic_loop_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "loop" / "a");
  fs::path event_file;
  for (const auto& entry : fs::recursive_directory_iterator(SourcePath("tests/fixtures"))) {
    if (entry.path().filename().string().starts_with("events.out.tfevents")) {
      event_file = entry.path();
      break;
    }
  }
  ASSERT_FALSE(event_file.empty());
  fs::copy_file(event_file, root / "loop" / "a" / event_file.filename());
  fs::create_directory_symlink("..", root / "loop" / "a" / "up");
  fs::create_directory_symlink(root / "loop", root / "loop" / "self");
  CommandResult r = RunMosaic("runs '" + (root / "loop").string() + "' --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 1u) << r.out;
  fs::remove_all(root);
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// A CSV without a step column is one finding ("unreadable file"), not also a note; an empty event
// file gets a note.
TEST(RunsCli, UnusableFilesAreReportedOnce) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / ("mosaic_unusable_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "run");
  { std::ofstream(root / "run" / "metrics.csv") << "name,comment\na,b\n"; }
  { std::ofstream(root / "run" / "events.out.tfevents.1.host"); }
  CommandResult r = RunMosaic("runs '" + root.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unreadable file: " + (root / "run" / "metrics.csv").string() +
                       ":1: no step column"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("note: file skipped"), std::string::npos) << r.out;
  // The run's header counts the file read and the one that could not be.
  EXPECT_NE(r.out.find("run run (1 event file, 1 unreadable; restarts: first"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("no complete record (an empty or just-created file)"), std::string::npos)
      << r.out;
  // Bytes that are no record at all: damage, not a just-created file.
  { std::ofstream(root / "run" / "events.out.tfevents.1.host") << std::string(64, '\x5a'); }
  r = RunMosaic("runs '" + root.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bad length CRC"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("just-created"), std::string::npos) << r.out;
  fs::remove_all(root);
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// Names that are not UTF-8 (a Latin-1 folder, CSV column and event tag) reach JSON as U+FFFD, so
// the JSON stays valid; the CSV export keeps the bytes as they were and the text escapes them.
TEST(RunsCli, NamesThatAreNotUtf8GiveValidJson) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::path(::testing::TempDir()) / ("mosaic_latin1_" + std::to_string(getpid()));
  fs::remove_all(root);
  const fs::path run = root / "r\xE9sum\xE9";
  fs::create_directories(run);
  { std::ofstream(run / "metrics.csv") << "step,caf\xE9_loss\n1,2.5\n2,2.25\n"; }
  {
    std::ofstream events(run / "events.out.tfevents.1.host", std::ios::binary);
    events << runs::FrameRecord(runs::EncodeFileVersionEvent(1))
           << runs::FrameRecord(runs::EncodeScalarEvent(1, 1, "na\xEFve", 0.5));
  }
  for (const std::string format : {"--json", "--export json"}) {
    CommandResult r = RunMosaic("runs '" + root.string() + "' " + format);
    ASSERT_EQ(r.exit_code, 0) << format << r.err;
    EXPECT_TRUE(nlohmann::json::accept(r.out)) << format << r.out;
    EXPECT_NE(r.out.find("caf\xEF\xBF\xBD_loss"), std::string::npos) << format << r.out;
    EXPECT_NE(r.out.find("na\xEF\xBF\xBDve"), std::string::npos) << format << r.out;
  }
  CommandResult csv = RunMosaic("runs '" + root.string() + "' --export csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find("r\xE9sum\xE9,caf\xE9_loss,1,"), std::string::npos) << csv.out;
  // The text table shows each such byte escaped, as the guide says.
  CommandResult text = RunMosaic("runs '" + root.string() + "'");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("caf\\xe9_loss"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("caf\xE9"), std::string::npos) << text.out;
  fs::remove_all(root);
}

// --tags is matched by RE2: a pattern that backtracking engines need exponential time or stack
// for is matched in linear time; a huge or deeply nested pattern is compiled or refused with the
// flag named, never a crash.
TEST(RunsCli, TagPatternsCannotHangOrCrash) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::path(::testing::TempDir()) / ("mosaic_tags_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string as(5000, 'a');
  { std::ofstream(root / "metrics.csv") << "step," << as << "," << as << "!\n1,1,2\n"; }
  CommandResult r = RunMosaic("runs '" + root.string() + "' --tags '^(a+)+$' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j[0]["tags"].size(), 1u);
  EXPECT_EQ(j[0]["tags"][0]["tag"], as);

  std::string long_pattern;
  while (long_pattern.size() < 90000) long_pattern += "(ab|cd)?";
  const std::string nested = std::string(30000, '(') + "a" + std::string(30000, ')');
  for (const std::string& pattern : {long_pattern, nested}) {
    CommandResult p = RunMosaic("runs '" + root.string() + "' --tags '" + pattern + "'");
    EXPECT_TRUE(p.exit_code == 0 || p.exit_code == 1) << p.exit_code << p.err.substr(0, 300);
    if (p.exit_code == 1) {
      EXPECT_EQ(p.err.rfind("mosaic: error: --tags = ", 0), 0u) << p.err.substr(0, 300);
      EXPECT_NE(p.err.find("Violated constraint: a valid regular expression (RE2 syntax: "),
                std::string::npos)
          << p.err.substr(0, 300);
      EXPECT_LT(p.err.size(), 400u);  // the pattern is shortened
    }
  }
  fs::remove_all(root);
}

// An output file that is one of the logs read is refused before anything is written.
TEST(RunsCli, OutputOverAnInputIsRefused) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / ("mosaic_own_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "run");
  const std::string log = "step,loss\n1,2.5\n2,2.25\n";
  { std::ofstream(root / "run" / "metrics.csv") << log; }
  CommandResult r = RunMosaic("runs '" + root.string() + "' --export csv --output '" +
                              (root / "run" / ".." / "run" / "metrics.csv").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Violated constraint: not one of the command's input files"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ReadText((root / "run" / "metrics.csv").string()), log);
  CommandResult empty = RunMosaic("runs '" + root.string() + "' --json --output ''");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--output: FILE is empty"), std::string::npos) << empty.err;
  fs::remove_all(root);
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

namespace fs = std::filesystem;

fs::path FreshDir(const std::string& name) {
  const fs::path root = fs::path(::testing::TempDir()) / (name + "_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

// A CSV saved by a spreadsheet starts with a byte-order mark; its step column is found, and can
// be named.
TEST(RunsCli, ByteOrderMarkDoesNotHideTheStepColumn) {
  const fs::path root = FreshDir("mosaic_bom");
  { std::ofstream(root / "metrics.csv") << "\xEF\xBB\xBFstep,loss\n1,2.5\n2,2.25\n"; }
  for (const std::string extra : {"", " --step-column step"}) {
    CommandResult r = RunMosaic("runs '" + root.string() + "'" + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("  loss "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("no step column"), std::string::npos) << r.out;
  }
  fs::remove_all(root);
}

// A folder that cannot be listed is a finding naming it; the other runs are still read, and the
// exit is non-zero only when nothing could be read. A symlink loop cannot be listed by anyone,
// root included.
TEST(RunsCli, UnreadableFoldersAreFindingsLikeUnreadableFiles) {
  const fs::path root = FreshDir("mosaic_unreadable");
  fs::create_directories(root / "good");
  { std::ofstream(root / "good" / "metrics.csv") << "step,loss\n1,2\n"; }
  fs::create_directory_symlink(root / "loop", root / "loop");
  CommandResult r = RunMosaic("runs '" + root.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unreadable folder: " + (root / "loop").string() + ": cannot list this "
                       "folder"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("run good "), std::string::npos) << r.out;
  CommandResult only = RunMosaic("runs '" + (root / "loop").string() + "'");
  EXPECT_EQ(only.exit_code, 1) << only.out;
  EXPECT_NE(only.err.find("nothing could be read"), std::string::npos) << only.err;
  fs::remove_all(root);
}

// The same for folders and files without read permission (which do not stop root).
TEST(RunsCli, FoldersAndFilesWithoutPermissionAreFindings) {
  if (geteuid() == 0) GTEST_SKIP() << "permissions do not stop root from reading";
  const fs::path root = FreshDir("mosaic_locked");
  fs::create_directories(root / "good");
  { std::ofstream(root / "good" / "metrics.csv") << "step,loss\n1,2\n"; }
  fs::create_directories(root / "locked");
  { std::ofstream(root / "locked" / "metrics.csv") << "step,loss\n1,2\n"; }
  { std::ofstream(root / "good" / "secret.csv") << "step,loss\n1,2\n"; }
  fs::permissions(root / "locked", fs::perms::none);
  fs::permissions(root / "good" / "secret.csv", fs::perms::none);
  CommandResult locked = RunMosaic("runs '" + root.string() + "'");
  EXPECT_EQ(locked.exit_code, 0) << locked.err;
  EXPECT_NE(locked.out.find("unreadable folder: " + (root / "locked").string()), std::string::npos)
      << locked.out;
  const std::string secret = (root / "good" / "secret.csv").string();
  EXPECT_NE(locked.out.find("unreadable file: cannot read " + secret), std::string::npos)
      << locked.out;
  fs::permissions(root / "locked", fs::perms::owner_all);
  fs::remove_all(root);
}

// Newlines and ANSI escapes in a tag are shown escaped in text output.
TEST(RunsCli, ControlCharactersInTagsAreEscaped) {
  const fs::path root = FreshDir("mosaic_control");
  { std::ofstream(root / "metrics.csv") << "step,\"lo\nss\",\"\x1b[31mred\x1b[0m\"\n1,2,3\n"; }
  CommandResult r = RunMosaic("runs '" + root.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lo\\nss"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b[31mred\\x1b[0m"), std::string::npos) << r.out;
  fs::remove_all(root);
}

// One line per run: run, last step, final value of the loss tag (or --tag), points, findings.
TEST(RunsCli, OneLinePerRunWithTheFinalLoss) {
  const fs::path root = FreshDir("mosaic_summary");
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  {
    std::ofstream(root / "a" / "metrics.csv")
        << "step,train/loss,val_loss,lr\n1,2.5,3,0.1\n2,2.25,2.75,0.1\n";
  }
  { std::ofstream(root / "b" / "metrics.csv") << "step,loss\n10,1.5\n"; }
  CommandResult r = RunMosaic("runs '" + root.string() + "' --summary");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "run  last step  loss tag    final  points  findings\n"
            "a            2  train/loss   2.25       2  ok\n"
            "b           10  loss          1.5       1  ok\n");
  CommandResult tag = RunMosaic("runs '" + root.string() + "' --summary --tag lr");
  EXPECT_NE(tag.out.find("a            2  lr     0.1       2  ok\n"), std::string::npos) << tag.out;
  EXPECT_NE(tag.out.find("b           10  -        -       -  ok\n"), std::string::npos) << tag.out;
  CommandResult full = RunMosaic("runs '" + root.string() + "'");
  EXPECT_EQ(full.out.rfind("run  last step  loss tag", 0), 0u) << full.out;
  fs::remove_all(root);
}

// runs compare: an unknown tag names the tags both runs have; one common step or a zero baseline
// give n/a rather than a spread of 0 or +0.0000 %.
TEST(RunsCli, CompareNamesCommonTagsAndSaysNotAvailable) {
  const fs::path root = FreshDir("mosaic_compare");
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  { std::ofstream(root / "a" / "m.csv") << "step,loss,acc,only_a\n1,0,0.5,1\n"; }
  { std::ofstream(root / "b" / "m.csv") << "step,loss,acc,only_b\n1,0.25,0.5,1\n2,0.5,0.5,1\n"; }
  const std::string a = "'" + (root / "a").string() + "'";
  const std::string b = "'" + (root / "b").string() + "'";
  CommandResult unknown = RunMosaic("runs compare " + a + " " + b + " --tag los");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no run has the tag 'los' (did you mean 'loss'?). Tags both runs "
                             "have: acc, loss"),
            std::string::npos)
      << unknown.err;
  CommandResult one = RunMosaic("runs compare " + a + " " + b + " --tag loss");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("spread              n/a (one common step"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("relative            n/a (A is 0 at every common step)"),
            std::string::npos)
      << one.out;
  EXPECT_EQ(one.out.find("+0.0000"), std::string::npos) << one.out;
  CommandResult json = RunMosaic("runs compare " + a + " " + b + " --tag loss --json");
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_TRUE(j["standard_error"].is_null());
  EXPECT_TRUE(j["mean_relative_difference"].is_null());
  EXPECT_EQ(j["non_finite_steps"], 0);
  // Steps both runs logged but one as NaN are left out, and counted.
  { std::ofstream(root / "a" / "m.csv") << "step,loss\n1,1\n2,nan\n3,1\n"; }
  { std::ofstream(root / "b" / "m.csv") << "step,loss\n1,1.5\n2,1.5\n3,1.5\n"; }
  CommandResult nan = RunMosaic("runs compare " + a + " " + b + " --tag loss");
  ASSERT_EQ(nan.exit_code, 0) << nan.err;
  EXPECT_NE(nan.out.find("common steps        2 (steps 1–3); 1 more left out: a non-finite value"),
            std::string::npos)
      << nan.out;
  fs::remove_all(root);
}

// Run paths with control characters reach the terminal escaped in every text report.
TEST(RunsCli, CompareEscapesControlCharactersOfPaths) {
  const fs::path root = FreshDir("mosaic_compare_escape");
  const fs::path a = root / "a\x1b[31m";
  fs::create_directories(a);
  fs::create_directories(root / "b");
  { std::ofstream(a / "m.csv") << "step,loss\n1,2\n2,1.5\n"; }
  { std::ofstream(root / "b" / "m.csv") << "step,loss\n1,2.5\n2,2\n"; }
  CommandResult r = RunMosaic("runs compare '" + a.string() + "' '" + (root / "b").string() +
                              "' --tag loss");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a\\x1b[31m"), std::string::npos) << r.out;
  fs::remove_all(root);
}

// The summary's --tag names a tag some run has; a tag of none is an error listing the runs' tags.
TEST(RunsCli, SummaryTagOfNoRunListsTheTags) {
  const fs::path root = FreshDir("mosaic_summary_tag");
  fs::create_directories(root / "a");
  { std::ofstream(root / "a" / "m.csv") << "step,loss,grad_norm\n1,2,0.5\n2,1.5,0.4\n"; }
  const std::string dir = "'" + root.string() + "'";
  CommandResult unknown = RunMosaic("runs " + dir + " --summary --tag los");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("--tag los: no run has this tag (did you mean 'loss'?). Tags the runs "
                             "have: grad_norm, loss"),
            std::string::npos)
      << unknown.err;
  CommandResult known = RunMosaic("runs " + dir + " --summary --tag grad_norm");
  ASSERT_EQ(known.exit_code, 0) << known.err;
  EXPECT_NE(known.out.find("grad_norm"), std::string::npos) << known.out;
  fs::remove_all(root);
}


// Errors echo what was typed and what the files hold escaped: a --tag of no run whose nearest tag
// holds an ANSI escape, and a path with one that does not exist.
TEST(RunsCli, ErrorsEscapeControlCharacters) {
  const fs::path root = FreshDir("mosaic_error_escape");
  fs::create_directories(root / "a");
  { std::ofstream(root / "a" / "m.csv") << "step,\"los\x1b[31ms\"\n1,2\n"; }
  CommandResult tag = RunMosaic("runs '" + root.string() + "' --summary --tag los");
  EXPECT_EQ(tag.exit_code, 1);
  EXPECT_EQ(tag.err.find('\x1b'), std::string::npos) << tag.err;
  EXPECT_NE(tag.err.find("(did you mean 'los\\x1b[31ms'?)"), std::string::npos) << tag.err;
  CommandResult path = RunMosaic("runs '" + (root / "none\x1b[31m").string() + "'");
  EXPECT_EQ(path.exit_code, 1);
  EXPECT_EQ(path.err.find('\x1b'), std::string::npos) << path.err;
  EXPECT_NE(path.err.find("none\\x1b[31m"), std::string::npos) << path.err;
  fs::remove_all(root);
}

// A CSV or JSONL log with nothing written yet (0 bytes, or a byte-order mark and a blank line) is a
// file just created, as an event file without a record is: a note, not an unreadable file.
TEST(RunsCli, EmptyTableLogsAreJustCreatedNotUnreadable) {
  const fs::path root = FreshDir("mosaic_empty_tables");
  fs::create_directories(root / "csv");
  fs::create_directories(root / "jsonl");
  { std::ofstream(root / "csv" / "m.csv"); }
  { std::ofstream(root / "jsonl" / "m.jsonl") << "\xEF\xBB\xBF\n"; }
  CommandResult r = RunMosaic("runs '" + root.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("unreadable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("m.csv: no complete record (an empty or just-created file)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("m.jsonl: no complete record (an empty or just-created file)"),
            std::string::npos)
      << r.out;
  fs::remove_all(root);
}

// The mean of the last k values says how many values it covers (fewer than k in a short series),
// and compare's relative difference says over how many steps it is averaged when A is 0 at some.
TEST(RunsCli, AveragesSayHowManyValuesTheyCover) {
  const fs::path root = FreshDir("mosaic_average_counts");
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  { std::ofstream(root / "a" / "m.csv") << "step,loss\n1,0\n2,2\n"; }
  { std::ofstream(root / "b" / "m.csv") << "step,loss\n1,1\n2,1\n"; }
  CommandResult json = RunMosaic("runs '" + (root / "a").string() + "' --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json runs = nlohmann::json::parse(json.out);
  EXPECT_EQ(runs[0]["tags"][0]["k"], 10);
  EXPECT_EQ(runs[0]["tags"][0]["mean_last_k_points"], 2);
  const std::string a = "'" + (root / "a").string() + "'";
  const std::string b = "'" + (root / "b").string() + "'";
  CommandResult compare = RunMosaic("runs compare " + a + " " + b + " --tag loss");
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_NE(compare.out.find("relative            -50.0000% of A on average (over the 1 of 2 "
                             "common steps where A is not 0)"),
            std::string::npos)
      << compare.out;
  CommandResult compare_json = RunMosaic("runs compare " + a + " " + b + " --tag loss --json");
  EXPECT_EQ(nlohmann::json::parse(compare_json.out)["relative_steps"], 1);
  // Without a common finite step the JSON keeps its keys, null where nothing was measured.
  fs::create_directories(root / "c");
  { std::ofstream(root / "c" / "m.csv") << "step,loss\n1,nan\n2,inf\n"; }
  CommandResult none = RunMosaic("runs compare " + a + " '" + (root / "c").string() +
                                 "' --tag loss --json");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  const nlohmann::json n = nlohmann::json::parse(none.out);
  EXPECT_EQ(n["common_steps"], 0);
  EXPECT_EQ(n["relative_steps"], 0);
  EXPECT_TRUE(n.contains("mean_difference") && n["mean_difference"].is_null());
  EXPECT_TRUE(n.contains("mean_relative_difference") && n["mean_relative_difference"].is_null());
  fs::remove_all(root);
}

}  // namespace
}  // namespace mosaic::testing
