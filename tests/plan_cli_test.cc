// End-to-end tests of `mosaic plan`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_support.h"

namespace mosaic::testing {
namespace {

TEST(PlanCli, DefaultPrintsTheSeedTable) {
  CommandResult r = RunMosaic("plan");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ReadText(SourcePath("tests/golden/plan.txt")));
  // The seed's table, verbatim (seeds/000).
  EXPECT_NE(r.out.find("| size | layers | active params | token budget | racks | step budget | "
                       "train FLOPs | est. time |\n|---|---|---|---|---|---|---|---|\n"
                       "| d768 | 8 | 54.3M | 40.7B | 1 | 9,703 | 4.81e19 | ~0.6 h |\n"
                       "| d1024 | 12 | 145.5M | 109.1B | 1 | 26,016 | 2.39e20 | ~2.8 h |\n"
                       "| d1536 | 16 | 434.1M | 325.6B | 1 | 77,625 | 1.58e21 | ~18.3 h |\n"
                       "| d2048 | 22 | 1.06B | 795.5B | 4 | 47,414 | 7.81e21 | ~22.6 h |\n"),
            std::string::npos)
      << r.out;
}

TEST(PlanCli, ShippedStudyFileEqualsEmbedded) {
  CommandResult embedded = RunMosaic("plan --csv");
  CommandResult file = RunMosaic("plan data/studies/fsdp-vs-ep.toml --csv");
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out, embedded.out);
  EXPECT_EQ(file.out, ReadText(SourcePath("tests/golden/plan.csv")));
}

TEST(PlanCli, JsonRowsAreExact) {
  CommandResult r = RunMosaic("plan --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 12u);
  EXPECT_EQ(j["rows"][3]["active_params"].get<int64_t>(), 1'060'634'624);
  EXPECT_EQ(j["rows"][3]["steps"].get<int64_t>(), 47'414);
  EXPECT_EQ(j["rows"][11]["arm"].get<std::string>(), "ep64");
  EXPECT_EQ(j["study"]["flop_convention"].get<std::string>(), "levanter-table");
}

TEST(PlanCli, OutputFileIsWrittenWhole) {
  const std::string path = ::testing::TempDir() + "/mosaic_plan_output.json";
  std::remove(path.c_str());
  CommandResult r = RunMosaic("plan --json --output '" + path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(ReadText(path), RunMosaic("plan --json").out);
  std::remove(path.c_str());
}

TEST(PlanCli, UnwritableOutputIsAnErrorAndLeavesNothing) {
  CommandResult r = RunMosaic("plan --output /nonexistent-dir/plan.txt");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: cannot write /nonexistent-dir/plan.txt: No such file or directory\n");
  EXPECT_FALSE(std::filesystem::exists("/nonexistent-dir/plan.txt"));
}

TEST(PlanCli, UnknownStudySuggestsClosest) {
  CommandResult r = RunMosaic("plan fsdp-vs-ap");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown study 'fsdp-vs-ap' (did you mean 'fsdp-vs-ep'?)"),
            std::string::npos)
      << r.err;
}

TEST(PlanCli, JsonAndCsvExcludeEachOther) {
  CommandResult r = RunMosaic("plan --json --csv");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(PlanCli, BadArmOverrideNamesStudyArmAndRung) {
  CommandResult r = RunMosaic("plan tests/fixtures/bad/latent_not_integer.toml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: tests/fixtures/bad/latent_not_integer.toml:11:22: arm 'thirds', rung "
            "d1024: latent_dim = \"d/3\" at d = 1024. Violated constraint: the quotient is an "
            "exact integer\n"
            "  set = { latent_dim = \"d/3\" }\n"
            "                       ^\n");
}

// A rung whose shape breaks a rule of the model family, with no override to blame, is located at
// its d_model; an unknown model preset at the study's model key.
TEST(PlanCli, ShapeErrorsAreLocatedAtTheRungAndModel) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_plan_rung_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string study = ReadText(SourcePath("data/studies/fsdp-vs-ep.toml"));
  auto plan_with = [&](const std::string& from, const std::string& to) {
    std::string text = study;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(dir / "study.toml") << text;
    return RunMosaic("plan " + (dir / "study.toml").string());
  };
  const std::string file = (dir / "study.toml").string();
  CommandResult r = plan_with("\nd_model = 1024\n", "\nd_model = 1000\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(file + ":25:11: arm 'fsdp-chunk1', rung d1000: d_model = 1000. Violated "
                       "constraint: d_model is a positive multiple of head_dim (128)"),
            std::string::npos)
      << r.err;
  r = plan_with("model = \"marin-ladder\"", "model = \"marin-ladde\"");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(file + ":9:9: model = \"marin-ladde\". Violated constraint: a model preset"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(did you mean 'marin-ladder'?)"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

TEST(PlanCli, ArmWithTopKAboveExperts) {
  CommandResult r = RunMosaic("plan tests/fixtures/bad/arm_top_k.toml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: tests/fixtures/bad/arm_top_k.toml: arm 'few-experts', rung d768: "
            "preset marin-ladder:17:9: top_k = 4. Violated constraint: 1 <= top_k <= experts (2) "
            "(after d_model=768 (tests/fixtures/bad/arm_top_k.toml), experts=2 "
            "(tests/fixtures/bad/arm_top_k.toml:11:19))\n"
            "  top_k = 4\n"
            "          ^\n");
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// A model file named in a study is found beside the study, whatever the working directory.
TEST(PlanCli, ModelPathIsRelativeToTheStudy) {
  CommandResult r = RunMosaic("plan tests/fixtures/studies/tiny_study.toml --csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("base,512,4,1,"), std::string::npos) << r.out;
}

TEST(PlanCli, RungWithoutCadenceSaysNone) {
  CommandResult r = RunMosaic("plan tests/fixtures/studies/tiny_study.toml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Under three minutes the estimate is in minutes, not "~0.0 h".
  EXPECT_NE(r.out.find("| d512 | 4 | 6.31M | 126.2M | 1 | 30 | 3.00e16 | ~0.2 min |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| d512 | none (no [[cadence]] rule covers d512) | 0 |"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// A study in a folder named in Latin-1: its origin reaches the JSON as U+FFFD.
TEST(PlanCli, StudyNamedInLatin1GivesValidJson) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_\xE9tude_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* file : {"tiny_study.toml", "tiny_model.toml"}) {
    fs::copy_file(SourcePath(std::string("tests/fixtures/studies/") + file), dir / file);
  }
  CommandResult r = RunMosaic("plan '" + (dir / "tiny_study.toml").string() + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["study"]["origin"].get<std::string>().find("\xEF\xBF\xBDtude"), std::string::npos);
  fs::remove_all(dir);
}

// Writing the output over the study or the model file it names is refused, the file untouched.
TEST(PlanCli, OutputOverAnInputIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_plan_own_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* file : {"tiny_study.toml", "tiny_model.toml"}) {
    fs::copy_file(SourcePath(std::string("tests/fixtures/studies/") + file), dir / file);
  }
  const std::string study = (dir / "tiny_study.toml").string();
  for (const char* file : {"tiny_study.toml", "tiny_model.toml"}) {
    const std::string before = ReadText((dir / file).string());
    CommandResult r = RunMosaic("plan '" + study + "' --output '" + (dir / file).string() + "'");
    EXPECT_EQ(r.exit_code, 1) << file;
    EXPECT_NE(r.err.find("not one of the command's input files"), std::string::npos) << r.err;
    EXPECT_EQ(ReadText((dir / file).string()), before);
  }
  fs::remove_all(dir);
}

// The study's results CSV is not read by plan, but a plan written over it would destroy the
// study's data: refused as decide refuses it.
TEST(PlanCli, OutputOverTheStudysResultsIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_plan_results_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* file : {"fsdp-vs-ep.toml", "fsdp-vs-ep-results.csv"}) {
    fs::copy_file(SourcePath(std::string("data/studies/") + file), dir / file);
  }
  const std::string results = (dir / "fsdp-vs-ep-results.csv").string();
  const std::string before = ReadText(results);
  CommandResult r = RunMosaic("plan '" + (dir / "fsdp-vs-ep.toml").string() + "' --output '" +
                              results + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("not one of the command's input files"), std::string::npos) << r.err;
  EXPECT_EQ(ReadText(results), before);
  fs::remove_all(dir);
}

// A title with a right-to-left override (U+202E) would reorder the terminal's line: the text
// reports of plan and decide show it escaped; JSON keeps it as the file has it.
TEST(PlanCli, ABidiControlInATitleIsShownEscaped) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_plan_bidi_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text = ReadText(SourcePath("data/studies/fsdp-vs-ep.toml"));
  const std::string title = "title = \"FSDP vs EP ladder (seed 000)\"";
  text.replace(text.find(title), title.size(), "title = \"FSDP \u202e vs EP\"");
  {
    std::ofstream out(dir / "study.toml");
    out << text;
  }
  fs::copy_file(SourcePath("data/studies/fsdp-vs-ep-results.csv"), dir / "fsdp-vs-ep-results.csv");
  const std::string study = (dir / "study.toml").string();
  for (const std::string command : {"plan '" + study + "'", "decide '" + study + "'"}) {
    const CommandResult r = RunMosaic(command);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("FSDP \\u{202e} vs EP"), std::string::npos) << command;
    EXPECT_EQ(r.out.find("\xE2\x80\xAE"), std::string::npos) << command;
  }
  const CommandResult json = RunMosaic("plan '" + study + "' --json");
  EXPECT_NE(json.out.find("FSDP \xE2\x80\xAE vs EP"), std::string::npos) << json.out.substr(0, 300);
  fs::remove_all(dir);
}

// A ladder is planned before its results exist: plan prints it; decide refuses the study at the
// key naming the missing file.
TEST(PlanCli, AStudyWhoseResultsAreNotYetWrittenIsPlanned) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_plan_before_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(SourcePath("data/studies/fsdp-vs-ep.toml"), dir / "fsdp-vs-ep.toml");
  const std::string study = (dir / "fsdp-vs-ep.toml").string();
  const CommandResult plan = RunMosaic("plan '" + study + "'");
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("| d2048 | 22 | 1.06B | 795.5B | 4 | 47,414 | 7.81e21 | ~22.6 h |"),
            std::string::npos)
      << plan.out;
  const CommandResult decide = RunMosaic("decide '" + study + "'");
  EXPECT_EQ(decide.exit_code, 1) << decide.out;
  EXPECT_NE(decide.err.find("fsdp-vs-ep.toml:66:7: csv = \"fsdp-vs-ep-results.csv\". Violated "
                            "constraint: a file; none at "),
            std::string::npos)
      << decide.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mosaic::testing
