// End-to-end tests of `mosaic runs ablation` on seed-004-shaped logs written by the generator in
// tests/support: the text and JSON reports, the HTML page rendered in headless Chromium, and
// errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli_support.h"
#include "seed004_logs.h"

namespace mosaic::testing {
namespace {

// eval/loss is stored as float32; an effect is built from three such values.
constexpr double kFloat32Tol = 2e-6;

class AblationCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(::testing::TempDir() + "mosaic_ablation_cli_" +
                            std::to_string(::getpid()));
    WriteSeed004Logs(*root_);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*root_);
    delete root_;
  }
  // The command of the seed: the offset pair and the explicit pairs.
  static std::string Command(const std::string& extra = "") {
    return "runs ablation " + *root_ + "/ablation --baseline " + *root_ +
           "/baseline --offset-pair nobpk_H3=H3 --tag eval/loss --pair nobpk_H6=H6 "
           "--pair nobpk_H9_mb8=H9 --pair nobpk_H12_mb8=H12 --pair nonorm_H3_5k=H3_5k "
           "--pair noreinject_H3_5k=H3_5k" +
           (extra.empty() ? "" : " " + extra);
  }
  static std::string* root_;
};
std::string* AblationCli::root_ = nullptr;

TEST_F(AblationCli, TextReportHasTheOffsetEffectsHealthAndLoops) {
  const CommandResult r = RunMosaic(Command());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Platform offset, nobpk_H3 − H3 over 40 common steps (250–10000):\n"
                       "  +0.03750 ± 0.00032 (standard error); sd 0.00203"),
            std::string::npos)
      << r.out;
  // nobpk_H6: −0.015 from the switch, −0.002 of eval noise at step 10000.
  EXPECT_NE(r.out.find("-0.0170 ± 0.0028"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("logged twice 1000–1500 (first pass kept); non-finite train/grad_norm at "
                       "1500, 1852"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("spike train/loss at 8390"), std::string::npos);
  EXPECT_NE(r.out.find("5000 (run's final; baseline to 10000)"), std::string::npos);
  EXPECT_NE(r.out.find("lam1_H3_5k        H3 †"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("act_norm (activation norm, moe) grows most in cH12"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("eff_rank (effective rank, moe) falls most in cH12 L07"), std::string::npos);
  EXPECT_NE(r.out.find("20 always-zero columns ignored (module_diag/L00/attn/grad_norm_mean, …)"),
            std::string::npos);
}

TEST_F(AblationCli, JsonHasEveryNumber) {
  const CommandResult r = RunMosaic(Command("--json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["offset"]["mean_difference"].get<double>(), kPlatformOffset, kFloat32Tol);
  ASSERT_EQ(j["runs"].size(), 7u);
  for (const auto& row : j["runs"]) {
    const SeedRun& run = FindSeedRun(row["run"]);
    const SeedRun& base = FindSeedRun(row["base_run"]);
    if (run.steps != base.steps) continue;
    EXPECT_NEAR(row["effect"].get<double>(), run.effect - kEvalNoise, kFloat32Tol) << row["run"];
    EXPECT_EQ(row["points"].size(), static_cast<size_t>(run.steps / kEvalEvery));
  }
  EXPECT_EQ(j["runs"][0]["run"], "nobpk_H3");
  EXPECT_TRUE(j["runs"][0]["inside_offset_uncertainty"].get<bool>());
  const auto& h9 = j["runs"][4];  // the offset pair, then by name
  ASSERT_EQ(h9["run"], "nobpk_H9_mb8");
  EXPECT_EQ(h9["health"]["logged_twice"][0]["from_step"], 1000);
  EXPECT_EQ(h9["health"]["non_finite"][0]["steps"], nlohmann::json::array({1500, 1852}));
  EXPECT_EQ(h9["diagnostics"]["loops"].size(), 9u);
  EXPECT_EQ(h9["diagnostics"]["zero_columns"].size(), 20u);
  EXPECT_EQ(j["baseline_health"].size(), 5u);
}

TEST_F(AblationCli, MatchedFractionsAreAnOption) {
  const CommandResult r = RunMosaic(Command("--align fraction --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& row : j["runs"]) {
    if (row["run"] != "lam1_H3_5k") continue;
    EXPECT_EQ(row["alignment"], "fraction");
    EXPECT_EQ(row["compared_at"]["base_step"], 10000);
    EXPECT_NEAR(row["effect"].get<double>(),
                BaseEvalLoss(5000, 5000, 3) - BaseEvalLoss(10000, 10000, 3) - 0.010 - kEvalNoise,
                kFloat32Tol);
  }
  const CommandResult text = RunMosaic(Command("--align fraction"));
  EXPECT_NE(text.out.find("f 1.000: 5000 ↔ 10000"), std::string::npos) << text.out;
}

// Renders the page in headless Chromium (as the decision report's test does) and reads back the
// DOM it built: the page loads, with its charts, the offset and the effect table.
// A compared tag that stops far short of its run's other tags (epochs against iterations in the
// shipped Keras logs: epoch_loss to 999, the evaluation tags to 5000) is noted under --align
// fraction, since the fractions take the run's length; not under --align step.
TEST(AblationCliFixture, ATagShortOfItsRunIsNotedUnderFractions) {
  const std::string root = SourcePath("tests/fixtures/yuanjun0416__tensorboard_use");
  const std::string command = "runs ablation " + root + "/loop_noise5_cbamconcat_rms1_batchsize512 "
                              "--baseline " + root + "/loop_noise5_cbamconcat_rms10_batchsize512 "
                              "--offset-pair train=train --pair validation=validation "
                              "--tag epoch_loss";
  CommandResult r = RunMosaic(command + " --align fraction");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: run validation: tag 'epoch_loss' ends at step 999, its other tags "
                       "at step 5000; schedule fractions take 5000 as its length"),
            std::string::npos)
      << r.out;
  r = RunMosaic(command);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("its other tags at step"), std::string::npos) << r.out;
  // Matched steps call the tag's own last step final (it read "999 (run's final; baseline to
  // 5000)", the baseline's other tags' length).
  EXPECT_NE(r.out.find("validation  validation  final 999 "), std::string::npos) << r.out;
}

// --html and --output naming one file, however spelt, would leave only one of the two reports.
TEST_F(AblationCli, HtmlAndOutputMustBeTwoFiles) {
  const std::string dir = ::testing::TempDir() + "ablation_same_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string report = dir + "/a.json";
  const CommandResult r =
      RunMosaic(Command("--json --output " + report + " --html " + dir + "/./a.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--html and --output name the same file"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(report));
  std::filesystem::remove_all(dir);
}

TEST_F(AblationCli, HtmlReportRendersInHeadlessChromium) {
  const std::string dir = ::testing::TempDir() + "ablation_html_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string page = dir + "/ablation.html";
  const CommandResult r = RunMosaic(Command("--html " + page));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Platform offset"), std::string::npos);  // the text still goes to stdout
  const std::string html = ReadText(page);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);  // nothing fetched from the network
  const RenderedPage rendered_page = RenderInChromium(page);
  ASSERT_EQ(rendered_page.exit_code, 0) << rendered_page.log;
  const std::string& rendered = rendered_page.dom;
  const size_t charts = CountOf(rendered, "<svg");
  // Two effect charts, seven curves, 5 metrics × 2 branches by loop, 7 runs × 2 branches over time.
  EXPECT_EQ(charts, 2u + 7u + 10u + 14u);
  EXPECT_NE(rendered.find("id=\"offset\""), std::string::npos);
  EXPECT_NE(rendered.find("Platform offset +0.03750 ± 0.00032"), std::string::npos);
  EXPECT_NE(rendered.find("<td>nobpk_H9_mb8</td>"), std::string::npos);
  EXPECT_NE(rendered.find("act_norm · moe"), std::string::npos);
  // Six runs compared: the seventh, the offset pair, sets the offset and is not counted.
  EXPECT_NE(rendered.find("1 of 6 runs have an effect inside the offset's uncertainty"),
            std::string::npos)
      << rendered.substr(rendered.find("runs have an effect") - 20, 300);
  EXPECT_EQ(rendered_page.log.find("CONSOLE"), std::string::npos) << rendered_page.log;
  std::filesystem::remove_all(dir);
}

// A report written into a log folder it reads would be read back as that run's log (the run's
// health then read "unreadable file"): refused, as runs --export is; a missing tag names --tag
// and the tags the run has.
TEST_F(AblationCli, AReportIsNotWrittenAmongTheLogsItReads) {
  for (const std::string name : {"out.csv", "res.jsonl"}) {
    const std::string inside = *root_ + "/ablation/nobpk_H3/" + name;
    const CommandResult r = RunMosaic(Command("--output " + inside));
    EXPECT_EQ(r.exit_code, 1) << name << r.out;
    EXPECT_NE(r.err.find("--output = " + inside + ". Violated constraint: outside the log "
                         "directories this command reads"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(inside)) << inside;
  }
  // Nor a stdout redirected there (`> run/out.csv`): held to --output's rules (the shell has made
  // the file, so it is already one of the logs read), nothing written.
  const std::string inside = *root_ + "/ablation/nobpk_H3/out.csv";
  const std::string err = *root_ + "/stdout_err.txt";
  const std::string shell = "'" + std::string(MOSAIC_BINARY) + "' " + Command() + " > '" +
                            inside + "' 2> '" + err + "'";
  EXPECT_NE(std::system(shell.c_str()), 0);
  EXPECT_NE(ReadText(err).find("stdout = " + inside + ". Violated constraint: "), std::string::npos)
      << ReadText(err);
  std::filesystem::remove(inside);  // the shell creates it before mosaic runs: left empty
  std::filesystem::remove(err);
  const CommandResult tag = RunMosaic("runs ablation " + *root_ + "/ablation --baseline " +
                                      *root_ + "/baseline --offset-pair nobpk_H3=H3 --tag nope");
  EXPECT_EQ(tag.exit_code, 1);
  EXPECT_NE(tag.err.find("--tag = nope. Violated constraint: a tag of run nobpk_H3 "
                         "(--offset-pair nobpk_H3=H3)"),
            std::string::npos)
      << tag.err;
  EXPECT_NE(tag.err.find("; its tags: "), std::string::npos) << tag.err;
}

TEST_F(AblationCli, ErrorsAndExitCodes) {
  const CommandResult missing = RunMosaic("runs ablation " + *root_ + "/ablation --baseline " +
                                          *root_ + "/baseline --tag eval/loss");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("--offset-pair"), std::string::npos) << missing.err;
  const CommandResult unknown = RunMosaic(Command("--pair nobpk_H9=H9"));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("--pair = nobpk_H9=H9. Violated constraint: RUN must be a run of the "
                             "ablation directory"),
            std::string::npos)
      << unknown.err;
  EXPECT_NE(unknown.err.find("(did you mean 'nobpk_H9_mb8'?)"), std::string::npos);
  const CommandResult malformed = RunMosaic(Command("--pair nobpk_H6"));
  EXPECT_EQ(malformed.exit_code, 1);
  EXPECT_NE(malformed.err.find("--pair = nobpk_H6. Violated constraint: RUN=BASE_RUN"),
            std::string::npos)
      << malformed.err;
  const CommandResult align = RunMosaic(Command("--align steps"));
  EXPECT_EQ(align.exit_code, 2);
  for (const char* sigmas : {"nan", "-1", "0", "1e309"}) {
    const CommandResult bad = RunMosaic(Command(std::string("--sigmas ") + sigmas));
    EXPECT_EQ(bad.exit_code, 2) << sigmas;
    EXPECT_NE(bad.err.find(std::string("--sigmas = ") + sigmas + ". Violated constraint: --sigmas in (0, 1000]"),
              std::string::npos)
        << bad.err;
  }
  const CommandResult word = RunMosaic(Command("--sigmas 2x"));
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_NE(word.err.find("--sigmas = 2x. Violated constraint: --sigmas is a number, --sigmas in "
                          "(0, 1000]"),
            std::string::npos)
      << word.err;
  const CommandResult no_dir = RunMosaic("runs ablation " + *root_ + "/nothing --baseline " +
                                         *root_ + "/baseline --offset-pair a=b --tag eval/loss");
  EXPECT_EQ(no_dir.exit_code, 1);
  EXPECT_NE(no_dir.err.find("no such file or directory"), std::string::npos) << no_dir.err;
  // The ablation directory given as its own baseline, one run paired with itself.
  const CommandResult itself =
      RunMosaic("runs ablation " + *root_ + "/ablation --baseline " + *root_ +
                "/ablation --offset-pair nobpk_H3=nobpk_H3 --tag eval/loss");
  EXPECT_EQ(itself.exit_code, 1);
  EXPECT_NE(itself.err.find("--offset-pair = nobpk_H3=nobpk_H3. Violated constraint: two runs "
                            "(both name "),
            std::string::npos)
      << itself.err;
  // So is a --pair of one run; a run that would fall back on the offset pair's baseline, itself,
  // is left out with a note.
  const std::string same_dir = "runs ablation " + *root_ + "/ablation --baseline " + *root_ +
                               "/ablation --offset-pair nobpk_H3=nobpk_H6 --tag eval/loss";
  const CommandResult pair = RunMosaic(same_dir + " --pair nobpk_H9_mb8=nobpk_H9_mb8");
  EXPECT_EQ(pair.exit_code, 1);
  EXPECT_NE(pair.err.find("--pair = nobpk_H9_mb8=nobpk_H9_mb8. Violated constraint: two runs "
                          "(both name "),
            std::string::npos)
      << pair.err;
  const CommandResult fallback = RunMosaic(same_dir + " --json");
  ASSERT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_NE(fallback.out.find("run nobpk_H6 is the offset pair's baseline run itself: left out"),
            std::string::npos)
      << fallback.out;
}

}  // namespace
}  // namespace mosaic::testing
