// End-to-end tests of `mosaic decide`: the embedded study's report (text, JSON, HTML), the HTML
// page rendered in headless Chromium, and errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>

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
  EXPECT_EQ(html.find("http://www.w3.org/2000/svg\" width"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);  // nothing fetched from the network
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromium"))
      << "Debian's chromium is needed (tools/install_deps.sh installs it)";
  const std::string dom = dir + "/dom.html", log = dir + "/chromium.log";
  const std::string command =
      "timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic "
      "--no-first-run --disable-background-networking --disable-component-update --disable-sync "
      "--disable-extensions --enable-logging=stderr --v=0 --user-data-dir=" + dir +
      "/profile --dump-dom file://" + page + " > " + dom + " 2> " + log;
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadText(log);
  const std::string rendered = ReadText(dom);
  size_t charts = 0;
  for (size_t at = rendered.find("<svg"); at != std::string::npos; at = rendered.find("<svg", at + 1)) {
    ++charts;
  }
  EXPECT_GE(charts, 4u) << "loss, tokens/s, MFU, dropped share and memory charts";
  EXPECT_NE(rendered.find("id=\"verdict\""), std::string::npos);
  EXPECT_NE(rendered.find("Verdict (measured throughput): fsdp-chunk1"), std::string::npos);
  EXPECT_NE(rendered.find("Loss against training compute"), std::string::npos);
  // The page raised no console error and no resource failed to load.
  const std::string messages = ReadText(log);
  EXPECT_EQ(messages.find("CONSOLE"), std::string::npos) << messages;
  EXPECT_EQ(messages.find("net::ERR"), std::string::npos) << messages;
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
