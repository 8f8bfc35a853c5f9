#include "mosaic/decision/decision.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "mosaic/runs/event_writer.h"
#include "mosaic/scaling/data_table.h"
#include "mosaic/util/embedded_data.h"

namespace mosaic {
namespace {

// The study printed 1.177× (EP64) and 0.988× (FSDP chunk 4) at d768 (marin issue 8062; the
// shipped results, data/studies/fsdp-vs-ep-results.csv): three digits.
constexpr double kPrintedDigits = 5e-4;

const Decision::RungMultiplier* Multiplier(const Decision& d, const std::string& arm, int64_t dm) {
  for (const auto& m : d.rung_multipliers) {
    if (m.arm == arm && m.d_model == dm) return &m;
  }
  return nullptr;
}

const CriterionResult& Criterion(const Scenario& s, const std::string& name) {
  for (const CriterionResult& c : s.criteria) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no criterion " + name);
}

TEST(Decide, EmbeddedStudyReproducesThePrintedEffectiveCompute) {
  const Decision d = Decide(LoadStudy(kDefaultStudy));
  ASSERT_NE(Multiplier(d, "ep64", 768), nullptr);
  ASSERT_NE(Multiplier(d, "fsdp-chunk4", 768), nullptr);
  EXPECT_NEAR(Multiplier(d, "ep64", 768)->effective_compute, 1.177, kPrintedDigits);
  EXPECT_NEAR(Multiplier(d, "fsdp-chunk4", 768)->effective_compute, 0.988, kPrintedDigits);
  // The closed form ((L_base − E)/(L − E))^(1/alpha) on the dropless losses 3.0553 and 3.0331.
  EXPECT_NEAR(Multiplier(d, "ep64", 768)->effective_compute,
              std::pow((3.0553 - 1.6) / (3.0331 - 1.6), 1 / 0.0941), 1e-9);
  // Only d768 has both arms: the deciding fits are on it, so the projection keeps 1.177×.
  ASSERT_TRUE(d.effective_compute.has_value());
  EXPECT_NEAR(*d.effective_compute, 1.177, kPrintedDigits);
  EXPECT_EQ(d.fits[0].rungs, std::vector<int64_t>{768});
  EXPECT_FALSE(d.fits[0].bootstrap.has_value());  // one rung: no interval
  ASSERT_TRUE(d.effective_compute_all_rungs.has_value());
  EXPECT_GT(*d.effective_compute_all_rungs, *d.effective_compute);
}

TEST(Decide, EmbeddedVerdictKeepsTheDefaultAndNamesTheUnknowns) {
  const Decision d = Decide(LoadStudy(kDefaultStudy));
  ASSERT_EQ(d.scenarios.size(), 2u);
  EXPECT_EQ(d.scenarios[0].name, "measured");
  EXPECT_EQ(d.scenarios[1].name, "model");
  const Scenario& measured = d.scenarios[0];
  // Measured: 316473 / 232700 tokens/s on one rack each.
  ASSERT_TRUE(measured.tokens_per_s_ratio.has_value());
  EXPECT_NEAR(*measured.tokens_per_s_ratio, 316473.0 / 232700.0, 1e-12);
  EXPECT_EQ(Criterion(measured, "projected_advantage").status, CriterionStatus::kPass);
  // Both arms are fitted on the one rung they share (d768): no bootstrap interval, said.
  EXPECT_EQ(Criterion(measured, "projected_advantage").caveat,
            "no interval (fsdp-chunk1 is fitted on one rung; ep64 is fitted on one rung): how "
            "far the projection may be off is not known");
  const CriterionResult& largest = Criterion(measured, "wins_at_largest_rung");
  EXPECT_EQ(largest.status, CriterionStatus::kUnknown);
  EXPECT_EQ(largest.missing, "no fsdp-chunk1 loss at d2048");
  EXPECT_NE(largest.settle.find("47,414 steps"), std::string::npos) << largest.settle;
  const CriterionResult& extension = Criterion(measured, "context_extension");
  EXPECT_EQ(extension.status, CriterionStatus::kUnknown);
  EXPECT_NE(extension.missing.find("interrupted"), std::string::npos);
  EXPECT_EQ(Criterion(measured, "no_anomalies").status, CriterionStatus::kUnknown);
  for (const Scenario& s : d.scenarios) {
    EXPECT_EQ(s.verdict.chosen_arm, "fsdp-chunk1");
    EXPECT_FALSE(s.verdict.challenger_picked);
    EXPECT_EQ(s.verdict.decided_by,
              (std::vector<std::string>{"wins_at_largest_rung", "context_extension",
                                        "no_anomalies"}));
  }
  // The stated noise (6.72% of effective compute) is below the projected gain (17.7%).
  ASSERT_TRUE(d.noise.has_value());
  EXPECT_DOUBLE_EQ(d.noise->used_effective_compute, 0.0672);
  EXPECT_FALSE(d.inside_noise);
  // Derived on the default arm's fit at d768: ((1.4553 + 0.0042)/1.4553)^(1/0.0941) − 1.
  EXPECT_NEAR(d.noise->derived_effective_compute,
              std::pow((3.0553 + 0.0042 - 1.6) / (3.0553 - 1.6), 1 / 0.0941) - 1, 1e-9);
}

// A scratch directory removed at the end of the test.
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("mosaic_decide_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
};

// One event file per row of the shipped results: a few earlier evals, then the row's dropless
// loss at the last step; `nan_arm` also logs a non-finite gradient norm; `nan_final_run` (e.g.
// "ep64-d768") logs a NaN eval one step after its last.
void WriteLogs(const std::filesystem::path& logs, const std::string& nan_arm = "",
               int64_t stop_at = 0, const std::string& nan_final_run = "", int64_t short_by = 0) {
  const std::string csv(*FindEmbeddedFile("studies/fsdp-vs-ep-results.csv"));
  const scaling::DataTable table = scaling::ParseCsv(csv, "results.csv");
  const int arm = table.Find("arm"), d = table.Find("d_model"), loss = table.Find("loss_dropless");
  const int dropped = table.Find("dropped_share");
  const LadderPlan plan = PlanLadder(LoadStudy(kDefaultStudy));
  for (size_t i = 0; i < table.rows(); ++i) {
    const std::string run = table.text[arm][i] + "-d" + table.text[d][i];
    std::filesystem::create_directories(logs / run);
    std::string bytes = runs::FrameRecord(runs::EncodeFileVersionEvent(1.7e9));
    // Every run reaches its step budget (the last point: the rung's loss), unless `stop_at`.
    int64_t budget = 0;
    for (const LadderRow& row : plan.rows) {
      if (row.arm == table.text[arm][i] && std::to_string(row.d_model) == table.text[d][i]) {
        budget = row.steps;
      }
    }
    if (stop_at > 0) budget = stop_at;
    budget -= short_by;
    for (int64_t step : {int64_t{1000}, int64_t{2000}, int64_t{3000}, int64_t{4000}, budget}) {
      const double value = step == budget ? table.values[loss][i] : 3.5 - step * 1e-5;
      bytes += runs::FrameRecord(runs::EncodeScalarEvent(1.7e9 + step, step, "eval/paloma/macro_loss",
                                                         value, runs::ScalarEncoding::kDoubleVal));
      bytes += runs::FrameRecord(runs::EncodeScalarEvent(1.7e9 + step, step, "train/dropped_share",
                                                         table.values[dropped][i],
                                                         runs::ScalarEncoding::kDoubleVal));
      const double grad = table.text[arm][i] == nan_arm && step == 3000 ? NAN : 0.5;
      bytes += runs::FrameRecord(runs::EncodeScalarEvent(1.7e9 + step, step, "grad/norm/total",
                                                         grad, runs::ScalarEncoding::kDoubleVal));
    }
    if (run == nan_final_run) {
      bytes += runs::FrameRecord(runs::EncodeScalarEvent(1.7e9 + budget + 1, budget + 1,
                                                         "eval/paloma/macro_loss", NAN,
                                                         runs::ScalarEncoding::kDoubleVal));
    }
    std::ofstream(logs / run / "events.out.tfevents.1700000000.host.1.0", std::ios::binary)
        << bytes;
  }
}

// The embedded study with [results] read from `logs` instead of the CSV.
StudyConfig StudyOnLogs(const std::filesystem::path& dir) {
  std::string text(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
  const std::string csv_line = "csv = \"fsdp-vs-ep-results.csv\"";
  text.replace(text.find(csv_line), csv_line.size(),
               "logs = [\"logs\"]\ntag = \"eval/paloma/macro_loss\"\n"
               "dropped_tag = \"train/dropped_share\"\nrun_pattern = \"{arm}-d{d_model}\"");
  return LoadStudyFromToml(text, (dir / "study.toml").string());
}

TEST(Decide, LogsReachTheSameNumbersAsTheCsv) {
  ScratchDir scratch("logs");
  WriteLogs(scratch.path / "logs");
  const Decision from_logs = Decide(StudyOnLogs(scratch.path));
  const Decision from_csv = Decide(LoadStudy(kDefaultStudy));
  EXPECT_TRUE(from_logs.logs_read);
  ASSERT_EQ(from_logs.rung_multipliers.size(), from_csv.rung_multipliers.size());
  for (size_t i = 0; i < from_csv.rung_multipliers.size(); ++i) {
    EXPECT_EQ(from_logs.rung_multipliers[i].arm, from_csv.rung_multipliers[i].arm);
    EXPECT_DOUBLE_EQ(from_logs.rung_multipliers[i].effective_compute,
                     from_csv.rung_multipliers[i].effective_compute);
  }
  ASSERT_TRUE(from_logs.effective_compute.has_value());
  EXPECT_DOUBLE_EQ(*from_logs.effective_compute, *from_csv.effective_compute);
  ASSERT_TRUE(from_logs.Find("ep64", 2048) != nullptr);
  EXPECT_DOUBLE_EQ(*from_logs.Find("ep64", 2048)->dropped_share, 0.0711);
  // Runs that do not exist (fsdp arms above d768) are notes, not errors.
  EXPECT_EQ(from_logs.result_notes.size(), 6u);
  // With logs, the health criterion is decided: clean runs pass.
  EXPECT_EQ(Criterion(from_logs.scenarios[0], "no_anomalies").status, CriterionStatus::kPass);
}

TEST(Decide, ANonFiniteGradientInTheChallengersRunsFailsNoAnomalies) {
  ScratchDir scratch("nan");
  WriteLogs(scratch.path / "logs", "ep64");
  const Decision d = Decide(StudyOnLogs(scratch.path));
  const CriterionResult& c = Criterion(d.scenarios[0], "no_anomalies");
  EXPECT_EQ(c.status, CriterionStatus::kFail);
  EXPECT_NE(c.reason.find("ep64-d768: grad/norm/total: "), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("step 3000"), std::string::npos) << c.reason;
  EXPECT_EQ(d.scenarios[0].verdict.decided_by, std::vector<std::string>{"no_anomalies"});
}

// Runs that stopped far short of their step budget (here at step 5000) are noted, and their last
// loss is not taken as the rung's result (it made a criterion FAIL on a run still training).
// Runs at their budget (the test above) get no such note.
TEST(Decide, RunsStoppedShortOfTheirBudgetAreNoted) {
  ScratchDir scratch("short");
  WriteLogs(scratch.path / "logs", "", 5000);
  const Decision d = Decide(StudyOnLogs(scratch.path));
  int stopped = 0;
  for (const std::string& note : d.result_notes) {
    if (note.find("stopped at step 5,000 of the") != std::string::npos) ++stopped;
  }
  EXPECT_EQ(stopped, 6) << fmt::format("{}", fmt::join(d.result_notes, "\n"));
  // Their loss is not a result: no fit, projection or rung comparison rests on it.
  const RungResult* r = d.Find("ep64", 1024);
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r->source.find(", stopped at step 5000 of "), std::string::npos) << r->source;
  EXPECT_FALSE(r->Loss(DecisionLoss::kDropless).has_value());
  const CriterionResult& largest = Criterion(d.scenarios[0], "wins_at_largest_rung");
  EXPECT_EQ(largest.status, CriterionStatus::kUnknown);
  EXPECT_EQ(largest.reason, "no fsdp-chunk1 loss at d2048; no ep64 loss at d2048");
  EXPECT_EQ(Criterion(d.scenarios[0], "projected_advantage").status, CriterionStatus::kUnknown);
  // The stopped runs were read all the same: their health counts.
  EXPECT_EQ(Criterion(d.scenarios[0], "no_anomalies").status, CriterionStatus::kPass);
}

// A dropped_tag that no run logs is a misspelling, not runs without drops: an error with the tags.
TEST(Decide, ADroppedTagThatNoRunLogsIsAnError) {
  ScratchDir scratch("dropped_tag");
  WriteLogs(scratch.path / "logs");
  StudyConfig study = StudyOnLogs(scratch.path);
  study.decision.results->dropped_tag = "train/droped_share";
  std::string error;
  try {
    Decide(study);
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("dropped_tag = \"train/droped_share\". Violated constraint: dropped_tag "
                       "names a tag that some run read logs (did you mean "
                       "'train/dropped_share'?)"),
            std::string::npos)
      << error;
}

// A final eval that is not finite is passed over for the finite ones before it, and noted.
TEST(Decide, ANonFiniteFinalEvalIsNoted) {
  ScratchDir scratch("nan_final");
  WriteLogs(scratch.path / "logs", "", 0, "ep64-d768");
  const Decision d = Decide(StudyOnLogs(scratch.path));
  const std::string notes = fmt::format("{}", fmt::join(d.result_notes, "\n"));
  EXPECT_NE(notes.find("run ep64-d768: its last eval/paloma/macro_loss (step "),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find(") is nan: the loss is of the last 1 finite value before it"),
            std::string::npos)
      << notes;
  EXPECT_DOUBLE_EQ(*d.Find("ep64", 768)->Loss(DecisionLoss::kDropless),
                   *Decide(LoadStudy(kDefaultStudy)).Find("ep64", 768)->Loss(DecisionLoss::kDropless));
}

// Two eval intervals short of the budget is short, though within a tenth of it (d1536: 6,000 of
// about 75,000 steps, evals every 3,000): the partial loss made a criterion PASS.
TEST(Decide, ARunShortByMoreThanAnEvalIntervalGivesNoLoss) {
  ScratchDir scratch("short_by");
  WriteLogs(scratch.path / "logs", "", 0, "", 6000);
  const Decision d = Decide(StudyOnLogs(scratch.path));
  const RungResult* r = d.Find("ep64", 1536);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->Loss(DecisionLoss::kDropless).has_value()) << r->source;
  EXPECT_NE(r->source.find("no loss yet"), std::string::npos) << r->source;
}

TEST(Decide, ALogTagThatIsMissingIsAnError) {
  ScratchDir scratch("tag");
  WriteLogs(scratch.path / "logs");
  StudyConfig study = StudyOnLogs(scratch.path);
  study.decision.results->tag = "eval/paloma/macro_los";
  try {
    Decide(study);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("has no tag 'eval/paloma/macro_los' (did you mean "
                                             "'eval/paloma/macro_loss'?)"),
              std::string::npos)
        << error.what();
  }
}

// The error of deciding the study `text` written in `scratch`, or "" when it decides.
std::string DecideError(const std::string& text, const ScratchDir& scratch) {
  try {
    Decide(LoadStudyFromToml(text, (scratch.path / "study.toml").string()));
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// The error of the embedded study on logs, with `results` keys in [results] and `tables` at the
// end of the file.
std::string LogsErrorOf(const std::string& results, const std::string& tables = "") {
  ScratchDir scratch("logs-bad");
  WriteLogs(scratch.path / "logs");
  std::string text(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
  const std::string csv_line = "csv = \"fsdp-vs-ep-results.csv\"";
  text.replace(text.find(csv_line), csv_line.size(),
               "logs = [\"logs\"]\ntag = \"eval/paloma/macro_loss\"\n" + results);
  text += "\n" + tables;
  return DecideError(text, scratch);
}

// A run pattern that names no run at all, or has a placeholder mosaic does not fill, is an
// error (it gave a study of notes and UNKNOWNs); a second [[results.runs]] entry for one arm and
// rung, or one run read for two arms, is an error naming the first.
TEST(Decide, ResultsFromLogsThatCannotBeRightAreRefused) {
  const std::string none = LogsErrorOf("run_pattern = \"runs/{arm}-d{d_model}\"");
  EXPECT_NE(none.find("run_pattern = \"runs/{arm}-d{d_model}\". Violated constraint: run_pattern "
                      "names runs in /"),
            std::string::npos)
      << none;
  EXPECT_NE(none.find("none of its 12 names (e.g. runs/fsdp-chunk1-d768) is there (did you mean "
                      "'fsdp-chunk1-d768'?)"),
            std::string::npos)
      << none;
  const std::string placeholder = LogsErrorOf("run_pattern = \"{arm}-d{d_model}-{seed}\"");
  EXPECT_NE(placeholder.find("run_pattern contains {arm} and {d_model} and no other placeholder"),
            std::string::npos)
      << placeholder;
  const std::string entry = "[[results.runs]]\narm = \"ep64\"\nd_model = 768\nrun = \"ep64-d768\"\n";
  const std::string twice = LogsErrorOf(
      "", entry + "[[results.runs]]\narm = \"ep64\"\nd_model = 768\nrun = \"ep64-d1024\"\n");
  EXPECT_NE(twice.find("[[results.runs]]: a second entry for arm ep64 at d_model 768 (first at "),
            std::string::npos)
      << twice;
  const std::string shared = LogsErrorOf(
      "", entry + "[[results.runs]]\narm = \"fsdp-chunk1\"\nd_model = 768\nrun = \"ep64-d768\"\n");
  EXPECT_NE(shared.find("run = \"ep64-d768\". Violated constraint: each run is read for one arm "
                        "and rung (it is already read for ep64 at d_model 768"),
            std::string::npos)
      << shared;
}

std::string ErrorOf(const std::string& replace, const std::string& with,
                    const std::string& csv = "") {
  ScratchDir scratch("bad");
  std::string text(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
  const size_t at = text.find(replace);
  EXPECT_NE(at, std::string::npos) << replace;
  text.replace(at, replace.size(), with);
  std::ofstream(scratch.path / "fsdp-vs-ep-results.csv")
      << (csv.empty() ? std::string(*FindEmbeddedFile("studies/fsdp-vs-ep-results.csv")) : csv);
  return DecideError(text, scratch);
}

// The embedded study reads its embedded results wherever it runs: a directory holding a
// data/studies/fsdp-vs-ep-results.csv of its own (one row, another loss) changes nothing (it was
// read instead, and the report named the embedded study's results).
TEST(Decide, TheEmbeddedStudyReadsItsEmbeddedResultsInAnyDirectory) {
  const Decision shipped = Decide(LoadStudy(kDefaultStudy));
  ScratchDir scratch("cwd");
  std::filesystem::create_directories(scratch.path / "data" / "studies");
  std::ofstream(scratch.path / "data" / "studies" / "fsdp-vs-ep-results.csv")
      << "arm,d_model,loss_dropless\nfsdp-chunk1,768,2.0\n";
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(scratch.path);
  std::optional<Decision> there;
  try {
    there = Decide(LoadStudy(kDefaultStudy));
  } catch (...) {
    std::filesystem::current_path(previous);
    throw;
  }
  std::filesystem::current_path(previous);
  ASSERT_EQ(there->results.size(), shipped.results.size());
  ASSERT_TRUE(there->effective_compute.has_value());
  EXPECT_EQ(*there->effective_compute, *shipped.effective_compute);
}

// Measured tokens/s are checked against the target's model, which needs [target]'s batch: a
// study without it is told so at [target] (it read "[[target.arms]] fsdp-chunk1: batch = 0").
TEST(Decide, MeasuredThroughputNeedsTheTargetsBatch) {
  const std::string e = ErrorOf("[throughput]\nmodel = true", "[throughput]\nmodel = false");
  EXPECT_EQ(e, "") << e;
  const std::string missing =
      ErrorOf("batch_seqs = 1024\nseq_len = 4096\nprofile", "seq_len = 4096\nprofile");
  EXPECT_NE(missing.find("[throughput] model = true needs [target] hardware, gpus and batch_seqs"),
            std::string::npos)
      << missing;
  std::string text(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
  for (auto [from, to] : {std::pair<std::string, std::string>{"batch_seqs = 1024\nseq_len",
                                                              "seq_len"},
                          {"[throughput]\nmodel = true", "[throughput]\nmodel = false"}}) {
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  ScratchDir scratch("no-batch");
  std::ofstream(scratch.path / "fsdp-vs-ep-results.csv")
      << *FindEmbeddedFile("studies/fsdp-vs-ep-results.csv");
  const std::string error = DecideError(text, scratch);
  EXPECT_NE(error.find("[target] needs batch_seqs for the target's model of fsdp-chunk1 (measured "
                       "tokens/s are checked against it)"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("batch = 0"), std::string::npos) << error;
}

TEST(Decide, BadStudyFilesGetClearErrors) {
  EXPECT_NE(ErrorOf("criteria = [\"projected_advantage\",", "criteria = [\"projected_advantag\",")
                .find("each criterion is one of projected_advantage, wins_at_largest_rung, "
                      "context_extension, no_anomalies (did you mean 'projected_advantage'?)"),
            std::string::npos);
  EXPECT_NE(ErrorOf("criteria = [\"projected_advantage\", \"wins_at_largest_rung\", "
                    "\"context_extension\", \"no_anomalies\"]",
                    "criteria = []")
                .find("criteria lists at least one criterion"),
            std::string::npos);
  EXPECT_NE(ErrorOf("threshold = 0.05", "threshold = 5")
                .find("threshold = 5. Violated constraint: 0 < threshold < 1 (a fraction: 0.05, "
                      "not 5)"),
            std::string::npos);
  // A results CSV of its header alone is refused, not read as no results.
  {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("decide_header_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string study(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
    const std::string results(*FindEmbeddedFile("studies/fsdp-vs-ep-results.csv"));
    std::ofstream(dir / "study.toml") << study;
    std::ofstream(dir / "fsdp-vs-ep-results.csv") << results.substr(0, results.find('\n') + 1);
    try {
      Decide(LoadStudy((dir / "study.toml").string()));
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("fsdp-vs-ep-results.csv: a header and no rows."),
                std::string::npos)
          << e.what();
    }
    std::filesystem::remove_all(dir);
  }
  // A [fit] pin against the law's form is located at its value, as every study field is.
  EXPECT_NE(ErrorOf("alpha = 0.0941 }", "alpha = -0.0941 }")
                .find(":73:26: alpha = -0.0941. Violated constraint: alpha > 0 (compute exponent "
                      "of law compute: its term must fall as its input grows)"),
            std::string::npos)
      << ErrorOf("alpha = 0.0941 }", "alpha = -0.0941 }");
  EXPECT_NE(ErrorOf("E = 1.6,", "E = -1.6,")
                .find(":73:13: E = -1.6. Violated constraint: E > 0 (a scale of law compute)"),
            std::string::npos)
      << ErrorOf("E = 1.6,", "E = -1.6,");
  // A context extension's d_model that is no rung is located at the d_model, not the header.
  EXPECT_NE(ErrorOf("variant = \"ep64\"\nd_model = 2048", "variant = \"ep64\"\nd_model = 2047")
                .find(":148:11: d_model = 2047. Violated constraint: d_model names a rung of the "
                      "study"),
            std::string::npos)
      << ErrorOf("variant = \"ep64\"\nd_model = 2048", "variant = \"ep64\"\nd_model = 2047");
  // 1.5 reads as no percentage: the rule alone, without a 0.015 no one meant.
  const std::string too_sure = ErrorOf("confidence = 0.95", "confidence = 1.5");
  EXPECT_NE(too_sure.find("confidence = 1.5. Violated constraint: 0 < confidence < 1"),
            std::string::npos)
      << too_sure;
  EXPECT_EQ(too_sure.find("a fraction"), std::string::npos) << too_sure;
  EXPECT_NE(ErrorOf("challenger = \"ep64\"", "challenger = \"ep65\"")
                .find("challenger names an arm of the study (fsdp-chunk1, fsdp-chunk4, ep64) (did "
                      "you mean 'ep64'?)"),
            std::string::npos);
  EXPECT_NE(ErrorOf("challenger = \"ep64\"", "challenger = \"fsdp-chunk1\"")
                .find("the challenger differs from the default arm"),
            std::string::npos);
  // A pin naming no parameter of the law: at its key, in the file's words (not --pin's).
  EXPECT_NE(ErrorOf("pin = { E = 1.6, alpha = 0.0941 }", "pin = { E = 1.6, alfa = 0.0941 }")
                .find("study.toml:73:18: pin = alfa. Violated constraint: a parameter of law "
                      "compute: E, A, alpha (did you mean 'alpha'?)"),
            std::string::npos)
      << ErrorOf("pin = { E = 1.6, alpha = 0.0941 }", "pin = { E = 1.6, alfa = 0.0941 }");
  // A measured throughput the target's device cannot run, or an MFU far from what its tokens/s
  // imply, is a typo, refused at its entry (a 10^7 slip used to flip the decision).
  const std::string fast = ErrorOf("tokens_per_s = 316473", "tokens_per_s = 2.327e12");
  EXPECT_NE(fast.find("study.toml:134:1: [[throughput.measured]] ep64 on the target's 64 × "
                      "gb200-nvl72: tokens_per_s / gpus = 36359375000. Violated constraint: at "
                      "most 17478.1 tokens/s per GPU"),
            std::string::npos)
      << fast;
  // An entry whose arm has no model on the target cannot be checked: refused, not trusted.
  const std::string unchecked = ErrorOf("arm = \"ep64\"\nmodel = \"marin-hero-ep\"",
                                        "arm = \"fsdp-chunk4\"\nmodel = \"marin-hero-ep\"");
  EXPECT_NE(unchecked.find("[[throughput.measured]] ep64: no [[target.arms]] entry for ep64"),
            std::string::npos)
      << unchecked;
  // A second entry for one arm would silently replace the first's model and layout.
  const std::string twice_on_target = ErrorOf("arm = \"ep64\"\nmodel = \"marin-hero-ep\"",
                                              "arm = \"fsdp-chunk1\"\nmodel = \"marin-hero-ep\"");
  EXPECT_NE(twice_on_target.find("study.toml:115:1: arm = \"fsdp-chunk1\". Violated constraint: "
                                 "each arm has one [[target.arms]] entry (the first is at "),
            std::string::npos)
      << twice_on_target;
  // A target past any pretraining run is a slipped exponent.
  EXPECT_NE(ErrorOf("tokens = 20e12", "tokens = 20e40")
                .find("tokens = 2e+41. Violated constraint: tokens <= 1e18"),
            std::string::npos)
      << ErrorOf("tokens = 20e12", "tokens = 20e40");
  const std::string mfu = ErrorOf("mfu = 0.1941", "mfu = 0.9");
  EXPECT_NE(mfu.find("[[throughput.measured]] fsdp-chunk1 on the target's 64 × gb200-nvl72: mfu "
                     "(%) = 90 with tokens_per_s / gpus = 3635.9375, which is 19.2% of the "
                     "gb200-nvl72's bf16 peak"),
            std::string::npos)
      << mfu;
  // A results row naming an arm the study does not have: file, line, column, value and rule.
  const std::string csv =
      "arm,d_model,loss_dropless\nfsdp-chunk1,768,3.0553\nep-64,768,3.0331\n";
  const std::string unknown_arm = ErrorOf("loss = \"dropless\"", "loss = \"dropless\"", csv);
  EXPECT_NE(unknown_arm.find("fsdp-vs-ep-results.csv:3:1: arm = ep-64. Violated constraint: arm "
                             "names an arm of the study"),
            std::string::npos)
      << unknown_arm;
  const std::string bad_rung =
      ErrorOf("loss = \"dropless\"", "loss = \"dropless\"",
              "arm,d_model,loss_dropless\nfsdp-chunk1,769,3.0553\n");
  EXPECT_NE(bad_rung.find("d_model = 769. Violated constraint: d_model names a rung of the study "
                          "(768, 1024, 1536, 2048)"),
            std::string::npos)
      << bad_rung;
  const std::string bad_loss = ErrorOf("loss = \"dropless\"", "loss = \"dropless\"",
                                       "arm,d_model,loss_dropless\nfsdp-chunk1,768,-3\n");
  EXPECT_NE(bad_loss.find("a loss is blank or a finite number > 0"), std::string::npos) << bad_loss;
  // A target arm's layout is named as the study file gives it, not as a command-line flag.
  const std::string layout = ErrorOf("layout = \"fsdp=64,mbs=16,recompute=full\"",
                                     "layout = \"fsdp=16,mbs=16,recompute=full\"");
  EXPECT_NE(layout.find("study.toml:112:10: [[target.arms]] fsdp-chunk1: layout "
                        "fsdp=16,mbs=16,recompute=full: does not divide. Violated constraint: "
                        "tp·pp·cp·dp·fsdp = GPUs"),
            std::string::npos)
      << layout;
  EXPECT_EQ(layout.find("--layout"), std::string::npos) << layout;
  // An entry's model that does not load, and a rule naming no arm, are located at their values.
  const std::string model = ErrorOf("model = \"marin-hero-ep\"", "model = \"marin-hero-epp\"");
  EXPECT_NE(model.find("study.toml:117:9: [[target.arms]] ep64: "), std::string::npos) << model;
  const std::string challenger = ErrorOf("challenger = \"ep64\"", "challenger = \"ep65\"");
  EXPECT_NE(challenger.find("study.toml:84:14: challenger = \"ep65\""), std::string::npos)
      << challenger;
  // A loss no language model has (a slipped exponent) is refused at its cell.
  const std::string huge_loss = ErrorOf("loss = \"dropless\"", "loss = \"dropless\"",
                                        "arm,d_model,loss_dropless\nfsdp-chunk1,768,1e300\n");
  EXPECT_NE(huge_loss.find(":2:17: loss_dropless = 1e300. Violated constraint: a loss is blank or "
                           "a cross-entropy in nats in (0, 100]"),
            std::string::npos)
      << huge_loss;
  const std::string twice =
      ErrorOf("loss = \"dropless\"", "loss = \"dropless\"",
              "arm,d_model,loss_dropless\nfsdp-chunk1,768,3.0553\nfsdp-chunk1,768,3.1\n");
  EXPECT_NE(twice.find("a second row for arm fsdp-chunk1 at d_model 768"), std::string::npos)
      << twice;
}

// [target] compute_flops stands alone: the budget is C as given, no tokens needed; neither is
// an error naming both.
TEST(Decide, ATargetBudgetInFlopsNeedsNoTokens) {
  std::string text(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
  const size_t at = text.find("tokens = 20e12");
  ASSERT_NE(at, std::string::npos);
  ScratchDir scratch("budget");
  std::ofstream(scratch.path / "fsdp-vs-ep-results.csv")
      << *FindEmbeddedFile("studies/fsdp-vs-ep-results.csv");
  std::string budget = text;
  budget.replace(at, 14, "compute_flops = 1e23");
  const Decision d = Decide(LoadStudyFromToml(budget, (scratch.path / "study.toml").string()));
  EXPECT_EQ(d.target_compute_flops, 1e23);
  EXPECT_EQ(d.target_compute_rule, "[target] compute_flops");
  EXPECT_TRUE(d.effective_compute.has_value());
  EXPECT_EQ(d.target_below_ladder, "");
  // A budget below every fitted rung's (the d768 rung trains about 1e20 FLOPs) is projected,
  // and said to run the law below its data.
  std::string small = text;
  small.replace(at, 14, "compute_flops = 1e10");
  const Decision below = Decide(LoadStudyFromToml(small, (scratch.path / "study.toml").string()));
  EXPECT_NE(below.target_below_ladder.find("the target is below the smallest fitted rung ("),
            std::string::npos)
      << below.target_below_ladder;
  EXPECT_NE(below.target_below_ladder.find("FLOPs of fsdp-chunk1): the projection runs the law "
                                           "below its data"),
            std::string::npos)
      << below.target_below_ladder;
  std::string neither = text;
  neither.replace(at, 14, "");
  try {
    LoadStudyFromToml(neither, (scratch.path / "study.toml").string());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("[target] needs tokens (training tokens, e.g. 20e12) or "
                                         "compute_flops"),
              std::string::npos)
        << e.what();
  }
}

// A default arm whose losses rise with compute (3.0, 3.2, 3.4 at d768-d1536) fits alpha < 0
// once alpha is free: the projection on it would make any challenger look better (it passed as
// "56% lower loss"), so the projection is unknown, with what would settle it.
TEST(Decide, AFitWhoseLossGrowsWithScaleProjectsNothing) {
  ScratchDir scratch("rising");
  std::ofstream(scratch.path / "fsdp-vs-ep-results.csv")
      << *FindEmbeddedFile("studies/fsdp-vs-ep-results.csv")
      << "fsdp-chunk1,1024,3.2000,3.2000,0.0,x1,\"test rung\"\n"
      << "fsdp-chunk1,1536,3.4000,3.4000,0.0,x2,\"test rung\"\n";
  std::string text(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
  const std::string pins = "pin = { E = 1.6, alpha = 0.0941 }";
  const size_t at = text.find(pins);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, pins.size(), "pin = { E = 1.6 }");
  const Decision d = Decide(LoadStudyFromToml(text, (scratch.path / "study.toml").string()));
  EXPECT_FALSE(d.effective_compute.has_value());
  EXPECT_NE(d.missing_fit.find("the fit of fsdp-chunk1 goes against the law's form (alpha = "),
            std::string::npos)
      << d.missing_fit;
  EXPECT_NE(d.missing_fit.find("< 0: its loss grows with scale)"), std::string::npos)
      << d.missing_fit;
  EXPECT_NE(d.settle_fit.find("losses of fsdp-chunk1 that fall with scale"), std::string::npos)
      << d.settle_fit;
  for (const Scenario& s : d.scenarios) {
    for (const CriterionResult& c : s.criteria) {
      if (c.name == "projected_advantage") EXPECT_EQ(c.status, CriterionStatus::kUnknown);
    }
  }
}

// Arms fitted on the same rungs are resampled together, rung by rung: what their losses share at
// a rung cancels. With the default arm at every rung of the challenger (per-rung effective
// compute 1.18-1.30×), the paired interval stays around them; resampled independently it was
// [0.68, 2.25], its low end reaching into a loss.
TEST(Decide, ArmsOnTheSameRungsAreBootstrappedInPairs) {
  ScratchDir scratch("paired");
  std::ofstream(scratch.path / "fsdp-vs-ep-results.csv")
      << *FindEmbeddedFile("studies/fsdp-vs-ep-results.csv")
      << "fsdp-chunk1,1024,2.8130,2.8130,0.0,x1,\"test rung\"\n"
      << "fsdp-chunk1,1536,2.5950,2.5950,0.0,x2,\"test rung\"\n"
      << "fsdp-chunk1,2048,2.4300,2.4300,0.0,x3,\"test rung\"\n";
  const std::string text(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
  const Decision d = Decide(LoadStudyFromToml(text, (scratch.path / "study.toml").string()));
  EXPECT_TRUE(d.paired_bootstrap);
  ASSERT_TRUE(d.effective_compute.has_value());
  ASSERT_TRUE(d.effective_compute_interval.has_value());
  EXPECT_NEAR(*d.effective_compute, 1.193, 5e-4);
  EXPECT_GT(d.effective_compute_interval->low, 1.15);
  EXPECT_LT(d.effective_compute_interval->high, 1.35);
  // The shipped study: the arms share one rung, so nothing is resampled in pairs.
  EXPECT_FALSE(Decide(LoadStudy(kDefaultStudy)).paired_bootstrap);
}

// A pinned floor E above every loss leaves no compute that reaches the losses: the projection is
// not finite, so the advantage is UNKNOWN with the reason, never a PASS on infinity.
TEST(Decide, AFloorAboveTheLossesLeavesTheProjectionUnknown) {
  StudyConfig study = LoadStudy(kDefaultStudy);
  study.decision.fit.pins = {{"E", 5.0}, {"alpha", 0.0941}};
  study.decision.rule->criteria = {"projected_advantage"};
  const Decision d = Decide(study);
  EXPECT_FALSE(d.effective_compute.has_value());
  // Every loss is under the floor: no arm is fitted, and the reason names the row and the pin.
  EXPECT_NE(d.missing_fit.find("loss = 3.0553 (fsdp-chunk1 d768, data/studies/fsdp-vs-ep-results.csv:2)"
                               ". Violated constraint: loss > the pinned floor E = 5 of law compute"),
            std::string::npos)
      << d.missing_fit;
  EXPECT_FALSE(d.fits[0].fitted);
  EXPECT_TRUE(d.rung_multipliers.empty());
  for (const Scenario& s : d.scenarios) {
    EXPECT_EQ(Criterion(s, "projected_advantage").status, CriterionStatus::kUnknown);
    // What settles it is the pin or the rows the reason names, not more results at the same
    // rungs (both arms have every rung).
    EXPECT_EQ(Criterion(s, "projected_advantage").settle,
              "what the reason names: the [fit] pins or the result rows of fsdp-chunk1");
    EXPECT_FALSE(s.verdict.challenger_picked);
  }
}

// A [noise] spread at least the default's loss above the floor (3.0553 − E 1.6 = 1.4553 at d768)
// would put an identical run under the floor: refused at the line of loss_spread (it gave a
// 4,116,380% noise for 2.5 nats). Just under it is still read.
TEST(Decide, ANoiseSpreadBeyondTheLossAboveTheFloorIsRefused) {
  StudyConfig study = LoadStudy(kDefaultStudy);
  ASSERT_TRUE(study.decision.noise.has_value());
  study.decision.noise->effective_compute_spread = 0;
  study.decision.noise->loss_spread = 1.4554;
  try {
    Decide(study);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "loss_spread = 1.4554. Violated constraint: below fsdp-chunk1's loss above its "
                  "floor at d768 (3.0553 − E 1.6 = 1.4553)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("fsdp-vs-ep.toml:92:"), std::string::npos) << e.what();
  }
  study.decision.noise->loss_spread = 1.4552;
  const Decision d = Decide(study);
  ASSERT_TRUE(d.noise.has_value());
  EXPECT_GT(d.noise->derived_effective_compute, 1.0);
}

// One arm's loss under the pinned floor leaves that arm unfitted, naming the row; the other arm
// still projects its own loss to the target (it printed 0.0000 when the comparison failed).
TEST(Decide, AnArmUnderTheFloorLeavesTheOtherArmsProjection) {
  StudyConfig study = LoadStudy(kDefaultStudy);
  study.decision.fit.pins = {{"E", 2.5}, {"alpha", 0.0941}};
  study.decision.fit.rungs = "all";
  const Decision d = Decide(study);
  ASSERT_TRUE(d.fits[0].fitted) << d.fits[0].why_not;
  EXPECT_FALSE(d.fits[1].fitted);
  EXPECT_NE(d.fits[1].why_not.find("loss = 2.4106 (ep64 d2048, data/studies/fsdp-vs-ep-results.csv:7)"),
            std::string::npos)
      << d.fits[1].why_not;
  EXPECT_FALSE(d.effective_compute.has_value());
  EXPECT_GT(d.fits[0].target_loss, 2.5);
  EXPECT_LT(d.fits[0].target_loss, 3.0553);  // the target is past the d768 rung's budget
}

// Chinchilla on ep64's four rungs: D is the reference arm's budget, so it follows N closely and
// the fit drives beta so high that B (left at its start) changes no prediction. The fit says so
// (and that it has no degree of freedom), in the arm's cautions, which the text report prints.
TEST(Decide, AnUndeterminedParameterIsCautioned) {
  StudyConfig study = LoadStudy(kDefaultStudy);
  study.decision.fit.law = "chinchilla";
  study.decision.fit.pins = {{"E", 1.6}};
  study.decision.fit.rungs = "all";
  const Decision d = Decide(study);
  // beta fitted so large that B/D^beta is nothing at every rung: the fit lost that term.
  EXPECT_FALSE(d.fits[1].fitted);
  EXPECT_NE(d.fits[1].why_not.find("the fit of ep64 lost a term: B = "), std::string::npos)
      << d.fits[1].why_not;
  const std::vector<std::string> cautions = d.fits[1].Cautions();
  const std::string all = fmt::format("{}", fmt::join(cautions, "\n"));
  EXPECT_NE(all.find("4 free parameters on 4 points"), std::string::npos) << all;
  EXPECT_NE(all.find("B = 1: halving it moves no prediction"), std::string::npos) << all;
}

// A fit that drives a scale to nothing (chinchilla with both exponents pinned on ep64's four
// shipped rungs, where D is a fixed multiple of N) is not an arm's fit: the projection is
// UNKNOWN with the reason, never a PASS or FAIL on the term that is left.
TEST(Decide, AFitThatLostATermDecidesNothing) {
  StudyConfig study = LoadStudy(kDefaultStudy);
  study.decision.fit.law = "chinchilla";
  study.decision.fit.pins = {{"E", 1.6}, {"alpha", 0.34}, {"beta", 0.28}};
  study.decision.fit.rungs = "all";
  study.decision.rule->criteria = {"projected_advantage"};
  const Decision d = Decide(study);
  bool lost = false;
  for (const ArmFit& f : d.fits) {
    if (!f.fit.negligible_params.empty()) {
      lost = true;
      EXPECT_FALSE(f.fitted);
      EXPECT_NE(f.why_not.find("lost a term: "), std::string::npos) << f.why_not;
    }
  }
  ASSERT_TRUE(lost);
  EXPECT_FALSE(d.effective_compute.has_value());
  for (const Scenario& s : d.scenarios) {
    EXPECT_EQ(Criterion(s, "projected_advantage").status, CriterionStatus::kUnknown);
  }
}

// The measured ep64 tokens/s dropped 9.97% of assignments while the deciding losses are
// dropless: the scenario says so.
TEST(Decide, ThroughputMeasuredWithDropsBesideDroplessLossesIsNoted) {
  const Decision d = Decide(LoadStudy(kDefaultStudy));
  ASSERT_FALSE(d.scenarios.empty());
  ASSERT_EQ(d.scenarios[0].name, "measured");
  ASSERT_EQ(d.scenarios[0].notes.size(), 1u);
  EXPECT_EQ(d.scenarios[0].notes[0].rfind("ep64's tokens/s was measured dropping 9.97% of routed "
                                          "assignments, while the deciding losses are dropless",
                                          0),
            0u);
  // The model scenario's share is predicted, not measured.
  ASSERT_EQ(d.scenarios.size(), 2u);
  ASSERT_EQ(d.scenarios[1].name, "model");
  ASSERT_EQ(d.scenarios[1].notes.size(), 1u);
  EXPECT_EQ(d.scenarios[1].notes[0].rfind("ep64's tokens/s is predicted dropping ", 0), 0u)
      << d.scenarios[1].notes[0];
}

// A measured throughput on another GPU count than the target's is taken per GPU, and said so.
TEST(Decide, ThroughputMeasuredOnOtherGpusThanTheTargetIsNoted) {
  std::string text(*FindEmbeddedFile("studies/fsdp-vs-ep.toml"));
  const std::string entry = "tokens_per_s = 316473\ngpus = 64";
  const size_t at = text.find(entry);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, entry.size(), "tokens_per_s = 632946\ngpus = 128");
  ScratchDir scratch("gpus");
  std::ofstream(scratch.path / "fsdp-vs-ep-results.csv")
      << *FindEmbeddedFile("studies/fsdp-vs-ep-results.csv");
  const Decision d = Decide(LoadStudyFromToml(text, (scratch.path / "study.toml").string()));
  ASSERT_EQ(d.scenarios[0].name, "measured");
  // The same tokens/s per GPU as the embedded study's 316473 on 64.
  EXPECT_NEAR(*d.scenarios[0].tokens_per_s_ratio, 316473.0 / 232700.0, 1e-12);
  const std::vector<std::string>& notes = d.scenarios[0].notes;
  EXPECT_TRUE(std::ranges::any_of(notes, [](const std::string& note) {
    return note.starts_with("ep64's tokens/s was measured on 128 GPUs and is taken per GPU on the "
                            "target's 64");
  }));
  // The embedded study's entries are on the target's 64 GPUs: no such note.
  const Decision same = Decide(LoadStudy(kDefaultStudy));
  for (const std::string& note : same.scenarios[0].notes) {
    EXPECT_EQ(note.find("GPUs and is taken per GPU"), std::string::npos) << note;
  }
}

// With the fit on the common rung (d768), ep64's d2048 loss 2.4106 sits under a floor pinned at
// 2.5 without any fit refusing it: the results say so.
TEST(Decide, AResultUnderTheFloorOutsideTheFitIsNoted) {
  StudyConfig study = LoadStudy(kDefaultStudy);
  study.decision.fit.pins = {{"E", 2.5}, {"alpha", 0.0941}};
  ASSERT_EQ(study.decision.fit.rungs, "common");
  const Decision d = Decide(study);
  int under = 0;
  for (const std::string& note : d.result_notes) {
    if (note.find("is at or below the pinned floor E = 2.5") != std::string::npos) ++under;
  }
  EXPECT_EQ(under, 1) << fmt::format("{}", fmt::join(d.result_notes, "\n"));
  EXPECT_TRUE(d.fits[1].fitted) << d.fits[1].why_not;  // on d768 only, above the floor
}

TEST(Decide, AStudyWithoutDecisionSectionsIsRefused) {
  StudyConfig study = LoadStudy(kDefaultStudy);
  study.decision.results.reset();
  try {
    Decide(study);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("the study has no [results]"), std::string::npos);
  }
}

}  // namespace
}  // namespace mosaic
