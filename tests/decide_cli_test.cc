// End-to-end tests of `mosaic decide`: the embedded study's report (text, JSON, HTML), the HTML
// page rendered in headless Chromium, and errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include "cli_support.h"

namespace mosaic::testing {
namespace {

TEST(DecideCli, EmbeddedStudyPrintsTheVerdictAndItsReasons) {
  const CommandResult r = RunMosaic("decide");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ep64              3.0331     3.2326    5.50%  1.177×"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fsdp-chunk4       3.0570     3.0777    2.37%  0.988×"), std::string::npos);
  EXPECT_NE(r.out.find("(a) PASS     projected advantage at the target >= 5%"), std::string::npos);
  EXPECT_NE(r.out.find("(b) UNKNOWN  ep64 wins at the largest rung (d2048)"), std::string::npos);
  EXPECT_NE(r.out.find("to settle: train fsdp-chunk1 at d2048: 47,414 steps, 795.5B tokens on 4 "
                       "racks"),
            std::string::npos);
  EXPECT_NE(r.out.find("Verdict (measured): keep fsdp-chunk1 for now: wins_at_largest_rung, "
                       "context_extension, no_anomalies are unknown"),
            std::string::npos);
  EXPECT_NE(r.out.find("Verdict (model): keep fsdp-chunk1"), std::string::npos);
  // Why no interval was computed, once, from the arms' own reasons (it said "the fits' cautions
  // say why" beside a second parenthesis, and no caution said it).
  EXPECT_NE(r.out.find("  intervals: 95% percentile, bootstrap by rung, 1000 resamples, none "
                       "computed: fsdp-chunk1 is fitted on one rung; ep64 is fitted on one rung\n"),
            std::string::npos)
      << r.out;
}

TEST(DecideCli, JsonHasEveryNumber) {
  const CommandResult r = RunMosaic("decide --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["study"]["challenger"], "ep64");
  EXPECT_EQ(j["results"].size(), 6u);
  EXPECT_NEAR(j["target"]["effective_compute"].get<double>(), 1.177, 5e-4);
  ASSERT_EQ(j["scenarios"].size(), 2u);
  EXPECT_EQ(j["scenarios"][0]["verdict"]["chosen_arm"], "fsdp-chunk1");
  EXPECT_EQ(j["scenarios"][0]["criteria"][1]["status"], "UNKNOWN");
  EXPECT_EQ(j["scenarios"][1]["arms"][2]["estimate"]["layout"],
            "tp=1,pp=1,vpp=1,cp=1,dp=1,fsdp=64,ep=64,etp=1,mbs=16,recompute=full,moe_chunk=1");
  EXPECT_TRUE(j["noise"]["inside_noise"].is_boolean());
}

// Renders the report in headless Chromium (Debian's chromium, installed by tools/install_deps.sh
// and CI) and reads back the DOM it built: the page loads, with its charts and the verdict.
TEST(DecideCli, HtmlReportRendersInHeadlessChromium) {
  const std::string dir = ::testing::TempDir() + "decide_html_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string page = dir + "/decision.html";
  const CommandResult r = RunMosaic("decide --html " + page);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadText(page);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);  // nothing fetched from the network
  const RenderedPage rendered_page = RenderInChromium(page);
  ASSERT_EQ(rendered_page.exit_code, 0) << rendered_page.log;
  const std::string& rendered = rendered_page.dom;
  const size_t charts = CountOf(rendered, "<svg");
  EXPECT_GE(charts, 4u) << "loss, tokens/s, MFU, dropped share and memory charts";
  EXPECT_NE(rendered.find("id=\"verdict\""), std::string::npos);
  EXPECT_NE(rendered.find("Verdict (measured throughput): fsdp-chunk1"), std::string::npos);
  EXPECT_NE(rendered.find("Loss against training compute"), std::string::npos);
  // The text report's noise comparison and sensitivity are on the page too.
  EXPECT_NE(rendered.find("The projected effective-compute gain +17.7% is outside the noise (6.7%)"),
            std::string::npos);
  EXPECT_NE(rendered.find("Sensitivity, not used to decide: fitted on every rung each arm ran"),
            std::string::npos);
  EXPECT_NE(rendered.find("measured: tokens/s ratio ep64 / fsdp-chunk1 = 1.360; wall-clock "
                          "advantage 1.601×."),
            std::string::npos);
  // The page raised no console error.
  EXPECT_EQ(rendered_page.log.find("CONSOLE"), std::string::npos) << rendered_page.log;
  std::filesystem::remove_all(dir);
}

// --html and --output naming one file not yet written, spelt two ways relative to the working
// directory (the commands run in the source tree), are refused before either is written (only
// the text was kept).
TEST(DecideCli, HtmlAndOutputSpeltTwoWaysAreOneFile) {
  const std::string name = "decide_same_" + std::to_string(::getpid()) + ".txt";
  for (const std::string& html : {"./" + name, std::string(MOSAIC_SOURCE_DIR) + "/" + name}) {
    const CommandResult r = RunMosaic("decide --output " + name + " --html " + html);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--html and --output name the same file"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(std::string(MOSAIC_SOURCE_DIR) + "/" + name)) << html;
    std::filesystem::remove(std::string(MOSAIC_SOURCE_DIR) + "/" + name);
  }
}

// A study that gives no throughput (no measured rows, model = false) says so in its headings,
// text and HTML alike (they read "Criteria with none throughput" and "Verdict (none)").
TEST(DecideCli, AStudyWithoutThroughputSaysSo) {
  const std::string dir = ::testing::TempDir() + "decide_none_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string text = ReadText(SourcePath("data/studies/fsdp-vs-ep.toml"));
  const size_t from = text.find("[throughput]\nmodel = true");
  const size_t to = text.find("# Context extension");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  text.replace(from, to - from, "[throughput]\nmodel = false\n\n");
  // Nor does its [target] describe itself: the HTML names the target by its budget alone.
  const size_t description = text.find("description = \"d6144 hero");
  ASSERT_NE(description, std::string::npos);
  text.erase(description, text.find('\n', description) + 1 - description);
  std::ofstream(dir + "/study.toml") << text;
  std::filesystem::copy_file(SourcePath("data/studies/fsdp-vs-ep-results.csv"),
                             dir + "/fsdp-vs-ep-results.csv");
  const CommandResult r =
      RunMosaic("decide " + dir + "/study.toml --html " + dir + "/decision.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nCriteria with no throughput (threshold 5%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nVerdict (no throughput): keep fsdp-chunk1"), std::string::npos)
      << r.out;
  const std::string html = ReadText(dir + "/decision.html");
  EXPECT_NE(html.find("<h2>Criteria with no throughput</h2>"), std::string::npos);
  EXPECT_EQ(html.find("none throughput"), std::string::npos);
  EXPECT_EQ(html.find("Target: ."), std::string::npos);
  EXPECT_NE(html.find("\">C = "), std::string::npos);
  std::filesystem::remove_all(dir);
}

// An output that cannot be written leaves the other one unwritten too (the HTML page was written
// before --output failed).
TEST(DecideCli, AnUnwritableOutputWritesNeither) {
  const std::string dir = ::testing::TempDir() + "decide_outputs_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string page = dir + "/decision.html";
  CommandResult r = RunMosaic("decide --html " + page + " --output " + dir + "/missing/out.txt");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(page));
  r = RunMosaic("decide --output " + dir + "/out.txt --html " + dir + "/missing/page.html");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.txt"));
  // --html over the study names --html, and leaves the study as it was.
  std::filesystem::copy_file(SourcePath("data/studies/fsdp-vs-ep.toml"), dir + "/study.toml");
  std::filesystem::copy_file(SourcePath("data/studies/fsdp-vs-ep-results.csv"),
                             dir + "/fsdp-vs-ep-results.csv");
  r = RunMosaic("decide " + dir + "/study.toml --html " + dir + "/study.toml");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--html = " + dir + "/study.toml. Violated constraint: not one of the "
                       "command's input files"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ReadText(dir + "/study.toml"), ReadText(SourcePath("data/studies/fsdp-vs-ep.toml")));
  std::filesystem::remove_all(dir);
}

// The [target]'s device file and [[target.arms]] model files are found beside the study, as its
// results are, whatever the working directory; --html and --output over one are refused and the
// file is left as it was.
TEST(DecideCli, TargetFilesAreFoundBesideTheStudyAndNeverOverwritten) {
  const std::string dir = ::testing::TempDir() + "decide_target_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string study = ReadText(SourcePath("data/studies/fsdp-vs-ep.toml"));
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"hardware = \"gb200-nvl72\"",
                                                                    "hardware = \"hw.toml\""},
                                 {"model = \"marin-hero-ep\"", "model = \"hero.toml\""}}) {
    ASSERT_NE(study.find(from), std::string::npos) << from;
    study.replace(study.find(from), from.size(), to);
  }
  std::ofstream(dir + "/study.toml") << study;
  std::filesystem::copy_file(SourcePath("data/studies/fsdp-vs-ep-results.csv"),
                             dir + "/fsdp-vs-ep-results.csv");
  std::filesystem::copy_file(SourcePath("data/hardware/gb200-nvl72.toml"), dir + "/hw.toml");
  std::filesystem::copy_file(SourcePath("data/models/marin-hero-ep.toml"), dir + "/hero.toml");
  CommandResult r = RunMosaic("decide " + dir + "/study.toml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The device file is named by its device, not its path.
  EXPECT_NE(r.out.find("mosaic's performance model on 64 × gb200-nvl72, batch"), std::string::npos)
      << r.out;
  // The same device and models as the preset's: the same model throughput and verdicts.
  const std::string preset = RunMosaic("decide").out;
  for (const std::string line : {"    ep64                4274  24.68%", "\nVerdict (model): ",
                                 "\nVerdict (measured): "}) {
    const size_t at = preset.find(line);
    ASSERT_NE(at, std::string::npos) << line;
    const std::string whole = preset.substr(at, preset.find('\n', at + 1) - at);
    EXPECT_NE(r.out.find(whole), std::string::npos) << whole << "\n" << r.out;
  }
  for (const std::string flag : {"--html", "--output"}) {
    for (const std::string file : {"hw.toml", "hero.toml"}) {
      r = RunMosaic("decide " + dir + "/study.toml " + flag + " " + dir + "/" + file);
      EXPECT_EQ(r.exit_code, 1) << r.err;
      EXPECT_NE(r.err.find("Violated constraint: not one of the command's input files"),
                std::string::npos)
          << r.err;
    }
  }
  EXPECT_EQ(ReadText(dir + "/hw.toml"), ReadText(SourcePath("data/hardware/gb200-nvl72.toml")));
  EXPECT_EQ(ReadText(dir + "/hero.toml"), ReadText(SourcePath("data/models/marin-hero-ep.toml")));
  std::filesystem::remove_all(dir);
}

// A study whose results are training logs reads every event file under them: --html and --output
// over one are refused, and the file is left as it was.
TEST(DecideCli, AnOutputOverALogFileItReadsIsRefused) {
  const std::filesystem::path dir =
      ::testing::TempDir() + "decide_logs_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir / "runs" / "ep64-d768");
  const std::filesystem::path events = dir / "runs" / "ep64-d768" / "events.out.tfevents.1.host";
  std::FILE* f = std::fopen(events.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("not yet read", f);
  std::fclose(f);
  std::string study = ReadText(SourcePath("data/studies/fsdp-vs-ep.toml"));
  const std::string csv_line = "csv = \"fsdp-vs-ep-results.csv\"";
  ASSERT_NE(study.find(csv_line), std::string::npos);
  study.replace(study.find(csv_line), csv_line.size(),
                "logs = [\"runs/\"]\ntag = \"eval/paloma/macro_loss\"\n"
                "run_pattern = \"{arm}-d{d_model}\"");
  f = std::fopen((dir / "study.toml").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(study.c_str(), f);
  std::fclose(f);
  for (const std::string flag : {"--html", "--output"}) {
    const CommandResult r =
        RunMosaic("decide " + (dir / "study.toml").string() + " " + flag + " " + events.string());
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(flag + " = " + events.string() + ". Violated constraint: not one of the "
                         "command's input files"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(ReadText(events.string()), "not yet read");
  }
  std::filesystem::remove_all(dir);
}

TEST(DecideCli, AStudyWithoutResultsIsAnInputError) {
  const CommandResult r = RunMosaic("decide data/studies/fsdp-vs-ep.toml --json --threads 0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const CommandResult plan_only = RunMosaic("decide tests/fixtures/studies/tiny_study.toml");
  EXPECT_EQ(plan_only.exit_code, 1);
  EXPECT_NE(plan_only.err.find("the study has no [results]"), std::string::npos) << plan_only.err;
}

}  // namespace
}  // namespace mosaic::testing
