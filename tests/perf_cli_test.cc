// End-to-end tests of `mosaic perf`: JSON keys, layout errors with their rule, the search, and the
// validation table.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/perf/profile.h"
#include "mosaic/perf/step_model.h"

namespace mosaic::testing {
namespace {

// A file under the temporary directory holding `text`, removed with the test's directory.
std::string WriteTemp(const std::filesystem::path& dir, const std::string& name,
                      const std::string& text) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << text;
  return (dir / name).string();
}

// A scratch directory for edited copies of published.csv, holding the model files its MaxText
// rows name beside the table (models/maxtext-*.toml).
std::filesystem::path DirWithPublishedModels(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::create_directories(dir);
  std::filesystem::copy(SourcePath("tests/fixtures/throughput/models"), dir / "models",
                        std::filesystem::copy_options::recursive |
                            std::filesystem::copy_options::overwrite_existing);
  return dir;
}

// published.csv's header and its rows from `first` up to (not including) `end`, as `name` in
// `dir` (MaxText's dense v6e rows: "V1" to "P9").
std::string WritePublishedRows(const std::filesystem::path& dir, const std::string& name,
                               const std::string& first, const std::string& end) {
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t from = text.find("\n" + first + ",") + 1;
  return WriteTemp(dir, name,
                   text.substr(0, text.find('\n') + 1) +
                       text.substr(from, text.find("\n" + end + ",") + 1 - from));
}

// The shipped profile file without the profile `name` (a device with no calibrated profile of
// its own, as tpu-v6e was before MaxText's rows V1-V7), written into `dir`.
std::string ShippedProfilesWithout(const std::filesystem::path& dir, const std::string& name) {
  std::string profiles = ReadText(SourcePath("data/perf/profiles.toml"));
  const size_t start = profiles.find("[profiles.\"" + name + "\"]");
  EXPECT_NE(start, std::string::npos) << name;
  profiles.erase(start, profiles.find("\n[", start) + 1 - start);
  return WriteTemp(dir, "without-" + name + ".toml", profiles);
}

const char* kHeroEp =
    "perf marin-hero-fsdp --hardware gb200-nvl72 --gpus 64 --batch 1024 --seq 4096 "
    "--profile marin-gb200 --routing fixed-cells --capacity-factor 1.0 "
    "--layout tp=1,pp=1,ep=64,fsdp=64,mbs=16,recompute=full";

TEST(PerfCli, JsonHasTheContractKeys) {
  CommandResult r = RunMosaic(std::string(kHeroEp) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"step_seconds", "tokens_per_s_per_gpu", "mfu", "peak_memory_bytes",
                          "fits", "dropped_fraction"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GT(j["mfu"].get<double>(), 0.0);
  EXPECT_LT(j["mfu"].get<double>(), 1.0);  // a fraction, not a percentage
  EXPECT_TRUE(j["fits"].get<bool>());
  // Memory is in whole bytes, and its parts add up to the peak.
  int64_t parts = 0;
  for (const auto& [key, value] : j["memory"].items()) {
    ASSERT_TRUE(value.is_number_integer()) << key << " = " << value;
    if (key != "peak_bytes" && key != "capacity_bytes") parts += value.get<int64_t>();
  }
  EXPECT_EQ(parts, j["memory"]["peak_bytes"].get<int64_t>());
  EXPECT_EQ(j["peak_memory_bytes"], j["memory"]["peak_bytes"]);
}

TEST(PerfCli, TextShowsBreakdown) {
  CommandResult r = RunMosaic(kHeroEp);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("expert all-to-all"), std::string::npos);
  EXPECT_NE(r.out.find("over nvlink-rack"), std::string::npos);
  EXPECT_NE(r.out.find("optimizer states"), std::string::npos);
}

TEST(PerfCli, BadLayoutsNameTheRule) {
  CommandResult r = RunMosaic(
      "perf mixtral-8x7b --hardware h100 --gpus 64 --batch 256 --layout tp=2,dp=16");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("tp·pp·cp·dp·fsdp = GPUs (2·1·1·16·1 = 32 != 64)"), std::string::npos)
      << r.err;
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 64 --batch 256 --layout ep=16,dp=64");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ep divides experts (8 % 16 != 0)"), std::string::npos) << r.err;
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 64 --batch 256 --layout tp=3,pp=1");
  EXPECT_EQ(r.exit_code, 1);
  r = RunMosaic("perf mixtral-8x7b --hardware h10 --gpus 8 --batch 256 --layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("did you mean 'h100'"), std::string::npos) << r.err;
}

TEST(PerfCli, SearchRanksLayoutsAndCountsRejections) {
  CommandResult r = RunMosaic(
      "perf olmoe-1b-7b --hardware h100 --gpus 64 --batch 256 --seq 4096 --search --top 5 "
      "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  // The request, as the single-layout JSON opens with it.
  EXPECT_EQ(j["model"], "olmoe-1b-7b");
  EXPECT_EQ(j["hardware"], "h100");
  EXPECT_EQ(j["gpus"], 64);
  EXPECT_EQ(j["batch"], 256);
  EXPECT_EQ(j["seq"], 4096);
  EXPECT_EQ(j["routing"], "dropless");
  ASSERT_EQ(j["ranked"].size(), 5u);
  EXPECT_GT(j["feasible"].get<int64_t>(), 5);
  EXPECT_GT(j["rejected"]["does_not_divide"].get<int64_t>(), 0);
  EXPECT_GT(j["rejected"]["exceeds_a_domain"].get<int64_t>(), 0);
  double previous = 1e300;
  for (const auto& c : j["ranked"]) {
    EXPECT_LE(c["tokens_per_s_per_gpu"].get<double>(), previous);
    previous = c["tokens_per_s_per_gpu"].get<double>();
    EXPECT_TRUE(c["fits"].get<bool>());
  }
}

TEST(PerfCli, ValidateReportsEveryPublishedRow) {
  CommandResult r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 41u);
  // Trained, but mosaic's memory model does not fit them yet (docs/guide.md): Llama 3 70B under
  // Megatron FSDP on GB200 (M14), gpt-oss-120b at mbs 4 on B200 (M16), MaxText's 32B and 64B at
  // 24 and 12 sequences per FSDP rank with minimal remat (P1, P2), and MaxText's runs on the
  // 32 GB of a v6e chip and Llama 4 Scout on v5p (V1, V2, V4-V7, P9).
  const std::set<std::string> over_memory = {"M14", "M16", "P1", "P2", "V1", "V2",
                                             "V4",  "V5",  "V6", "V7", "P9"};
  for (const auto& row : j["rows"]) {
    EXPECT_TRUE(row["valid"].get<bool>()) << row["id"];
    EXPECT_EQ(row["fits"].get<bool>(), !over_memory.contains(row["id"])) << row["id"];
    // GB300's three rows fit three parameters, and P9 is the one MoE row of maxtext-tpu-v5p
    // (its per-expert cost): none can be left out (loo_not_run).
    const bool kept = row["profile"] == "megatron-gb300" || row["id"] == "P9";
    EXPECT_EQ(row.contains("loo_error"), !kept) << row["id"];
  }
  // A parameter is at its bound only where a fit of these rows moves it: MaxText's profiles set
  // their per-step overhead by hand (0.05 s, the bound); v5p's one MoE row (P9, no EP) fits its
  // per-expert cost, at 0, and not its EP overlap; v6e's rows are dense.
  for (const auto& p : j["profiles"]) {
    if (p["name"] == "maxtext-tpu-v5p") {
      EXPECT_EQ(p["at_bound"], nlohmann::json::parse(R"(["expert_group_seconds"])"));
    }
    if (p["name"] == "maxtext-tpu-v6e") EXPECT_TRUE(p["at_bound"].empty()) << p;
    if (p["name"] == "megatron-h100") {
      EXPECT_EQ(p["at_bound"], nlohmann::json::parse(
                                   R"(["gemm_efficiency", "expert_group_seconds", "overlap_ep"])"));
    }
  }
  EXPECT_EQ(j["loo_not_run"], nlohmann::json({"M17", "M18", "M19", "P9"}));
  EXPECT_LT(j["rms_log_error"].get<double>(), j["loo_rms_log_error"].get<double>() + 1e-12);
  // The parameters the text marks "(at bound)" are named in the JSON too: the shipped H100
  // profile's GEMM efficiency sits on its 0.8 ceiling; the hand-set DeepSeek profile has none.
  bool h100 = false;
  for (const auto& p : j["profiles"]) {
    if (p["name"] == "megatron-h100") {
      h100 = true;
      EXPECT_NE(std::find(p["at_bound"].begin(), p["at_bound"].end(), "gemm_efficiency"),
                p["at_bound"].end());
      EXPECT_EQ(p["gemm_efficiency"].get<double>(), 0.8);
    }
    if (p["name"] == "deepseek-h800") EXPECT_TRUE(p["at_bound"].empty());
  }
  EXPECT_TRUE(h100);
  EXPECT_TRUE(j["shared_at_bound"].is_array());
}

TEST(PerfCli, Mxfp8NeedsBlackwellTensorCores) {
  CommandResult r = RunMosaic(
      "perf gpt-oss-120b --hardware h100 --gpus 64 --batch 1280 --layout pp=4,ep=8,dp=16 "
      "--format mxfp8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: --format mxfp8: h100 has no MXFP8 tensor cores (peak_mxfp8_tflops = "
            "0; use fp8)\n");
  r = RunMosaic(
      "perf gpt-oss-120b --hardware b200 --gpus 64 --batch 1280 --layout pp=4,ep=8,dp=16 "
      "--format mxfp8 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(PerfCli, MissingOrUnknownOptionValuesAreUsageErrors) {
  CommandResult r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --layout dp=8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "mosaic perf: --batch is required (sequences per step)\nRun 'mosaic perf --help' for "
            "its flags.\n");
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 8 --layout dp=8 --format fp4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "mosaic perf: --format fp4: expected bf16, fp8 or mxfp8\nRun 'mosaic perf --help' for "
            "its flags.\n");
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 8 --layout dp=8 --routing x");
  EXPECT_EQ(r.exit_code, 2);
  // An empty layout is named as such (it read as a missing --layout).
  for (const char* blank : {"''", "'  '"}) {
    r = RunMosaic(std::string("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 8 --layout ") +
                  blank);
    EXPECT_EQ(r.exit_code, 2) << blank;
    EXPECT_NE(r.err.find("--layout: an empty layout"), std::string::npos) << r.err;
  }
  // A layout that does not parse is a malformed flag value (2); one that parses but does not suit
  // the model is bad input (1).
  for (const char* malformed : {"tp=abc", "dp=8,", "dp=8,fsd=1", "dp=8,dp=8"}) {
    r = RunMosaic(std::string("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 8 --layout ") +
                  malformed);
    EXPECT_EQ(r.exit_code, 2) << malformed << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("--layout ") + malformed), std::string::npos) << r.err;
  }
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 16 --batch 16 --layout ep=16,dp=16");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("ep divides experts"), std::string::npos) << r.err;
}

TEST(PerfCli, ProfileFromAnotherDeviceIsNoted) {
  CommandResult r = RunMosaic(
      "perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 --layout ep=8,dp=8 --profile "
      "marin-gb200");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: the marin-gb200 profile was calibrated on gb200-nvl72, not h100\n"),
            std::string::npos)
      << r.out;
  // The JSON carries the same note, single and searched.
  for (const std::string extra : {" --json", " --search --top 1 --json"}) {
    r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 --profile marin-gb200" +
                  std::string(extra == " --json" ? " --layout ep=8,dp=8" : "") + extra);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json notes = nlohmann::json::parse(r.out)["notes"];
    ASSERT_EQ(notes.size(), 1u) << r.out;
    EXPECT_EQ(notes[0], "the marin-gb200 profile was calibrated on gb200-nvl72, not h100");
  }
  // The links the collectives cross, as the text names them.
  r = RunMosaic("perf qwen3-30b-a3b --hardware h100 --gpus 16 --batch 64 --layout ep=16,dp=16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json links = nlohmann::json::parse(r.out)["links"];
  EXPECT_EQ(links["expert_all_to_all"], "network");
  EXPECT_TRUE(links["fsdp"].is_null());  // fsdp = 1: no FSDP collective
  r = RunMosaic("perf qwen3-30b-a3b --hardware h100 --gpus 16 --batch 64 --layout ep=16,fsdp=16 "
                "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["links"]["fsdp"], "network");
  // A dense model routes nothing: no routing, no all-to-all.
  r = RunMosaic("perf llama3-70b --hardware h100 --gpus 64 --batch 64 --layout tp=8,dp=8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json dense = nlohmann::json::parse(r.out);
  EXPECT_TRUE(dense["routing"].is_null());
  EXPECT_TRUE(dense["links"]["expert_all_to_all"].is_null());
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 --layout ep=8,dp=8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("note:"), std::string::npos);
}

TEST(PerfCli, MeasurementFilesAreChecked) {
  // Header + one row: too few rows for the fitted parameters (an error, not a solver abort);
  // validate still predicts it, without a leave-one-out column.
  const std::filesystem::path dir = DirWithPublishedModels("mosaic_one_row");
  const std::filesystem::path path = dir / "one_row.csv";
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t second = text.find('\n', text.find('\n') + 1);
  {
    std::ofstream out(path);
    out << text.substr(0, second + 1);
  }
  CommandResult r = RunMosaic("perf calibrate " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("calibration needs at least one valid measured row per fitted parameter"),
            std::string::npos)
      << r.err;
  r = RunMosaic("perf validate " + path.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["rows"][0].contains("loo_error"));
  // A measurement that is not a positive number is an error, not a blank.
  const std::string row = text.substr(text.find('\n') + 1, second - text.find('\n'));
  const std::string bad_row = row.substr(0, row.find(",3139,")) + ",nan," +
                              row.substr(row.find(",3139,") + 6);
  {
    std::ofstream out(path);
    out << text.substr(0, text.find('\n') + 1) << bad_row;
  }
  r = RunMosaic("perf validate " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(":2: measured_tokens_per_s_per_gpu = 'nan'. Violated constraint: blank or "
                       "a finite decimal number > 0"),
            std::string::npos)
      << r.err;
  // Decimal only: a hexadecimal figure (which strtod would read, 0x510 as 1296) is refused.
  for (const char* hex : {"0x510", "0x1p10"}) {
    {
      std::ofstream out(path);
      out << text.substr(0, text.find('\n') + 1) << row.substr(0, row.find(",3139,")) << ","
          << hex << "," << row.substr(row.find(",3139,") + 6);
    }
    r = RunMosaic("perf validate " + path.string());
    EXPECT_EQ(r.exit_code, 1) << hex;
    EXPECT_NE(r.err.find(std::string(":2: measured_tokens_per_s_per_gpu = '") + hex +
                         "'. Violated constraint: blank or a finite decimal number > 0"),
              std::string::npos)
        << r.err;
  }
  // The a2a_overlap column (the last but two; M9's is 1, its offload_layers blank, its dispatch
  // flat) is 0, 1 or blank; the dispatch column is flat, hierarchical or blank.
  const std::string m9 = text.substr(text.find("\nM9,") + 1);
  const std::string m9_tail = "1,,flat\n";
  ASSERT_EQ(m9.substr(m9.find('\n') + 1 - m9_tail.size(), m9_tail.size()), m9_tail);
  const std::string m9_head = m9.substr(0, m9.find('\n') + 1 - m9_tail.size());
  {
    std::ofstream out(path);
    out << text.substr(0, text.find('\n') + 1) << m9_head << "yes,,flat\n";
  }
  r = RunMosaic("perf validate " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(":2: a2a_overlap = 'yes'. Violated constraint: 0, 1 or blank"),
            std::string::npos)
      << r.err;
  {
    std::ofstream out(path);
    out << text.substr(0, text.find('\n') + 1) << m9_head << "1,,deepep\n";
  }
  r = RunMosaic("perf validate " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(":2: dispatch = 'deepep'. Violated constraint: flat, hierarchical or "
                       "blank"),
            std::string::npos)
      << r.err;
  // An id twice would be fitted while its twin is "left out": refused, naming both lines.
  const std::string m10 = text.substr(text.find("\nM10,") + 1);
  {
    std::ofstream out(path);
    out << text << m10.substr(0, m10.find('\n') + 1);
  }
  r = RunMosaic("perf validate " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(":43: id = 'M10'. Violated constraint: ids are unique (line "),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, TheUntracedSinkCostMovesOnlyWithRowsThatPayIt) {
  // --fit-shared frees a shared parameter only where a row acts on it: MaxText's dense v6e rows
  // (V1-V7) have no sink model, so gpt-oss's untraced cost stays as the file gives it (it was
  // "fitted" to the middle of its range); the output's header names the flags that made it.
  const std::filesystem::path dir = DirWithPublishedModels("mosaic_untraced_fit");
  const std::string csv = WritePublishedRows(dir, "dense.csv", "V1", "P9");
  const std::string out = (dir / "fitted.toml").string();
  CommandResult r = RunMosaic("perf calibrate " + csv + " --fit-shared --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const ProfileSet fitted = ParseProfiles(ReadText(out), out);
  EXPECT_EQ(fitted.shared.untraced_sink_model_seconds,
            LoadProfiles().shared.untraced_sink_model_seconds);
  EXPECT_NE(ReadText(out).find("`mosaic perf calibrate " + csv + " --fit-shared`"),
            std::string::npos)
      << ReadText(out).substr(0, 400);
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, AnEmptyNameIsNotTheDefault) {
  // "--profiles ''" used to mean the shipped profiles, silently, as an omitted flag does.
  const std::string job = "perf gpt-oss-120b --hardware h100 --gpus 64 --batch 1280 "
                          "--layout ep=8,dp=64 ";
  for (const std::string flag : {"--profiles", "--profile"}) {
    const CommandResult r = RunMosaic(job + flag + " ''");
    EXPECT_EQ(r.exit_code, 2) << flag << r.err;
    EXPECT_NE(r.err.find(" is empty"), std::string::npos) << flag << r.err;
  }
  for (const std::string flag : {"--profiles", "--heldout"}) {
    for (const std::string sub : {"validate", "calibrate"}) {
      const CommandResult r =
          RunMosaic("perf " + sub + " tests/fixtures/throughput/published.csv " + flag + " ''");
      EXPECT_EQ(r.exit_code, 2) << sub << flag << r.err;
      EXPECT_NE(r.err.find("FILE is empty"), std::string::npos) << sub << flag << r.err;
    }
  }
}

TEST(PerfCli, AProfileFittedOnDenseRowsKeepsItsMoeParameters) {
  // A dense model's step has no expert GEMMs and no all-to-all: rows of dense models move a
  // profile's GEMM efficiency only, and leave its per-expert cost and EP overlap as its file
  // gives them (MaxText's rows on TPU v6e, V1-V7, are all dense).
  const std::filesystem::path dir = DirWithPublishedModels("mosaic_dense_fit");
  const std::string csv = WritePublishedRows(dir, "dense.csv", "V1", "P9");
  std::string profiles = ReadText(SourcePath("data/perf/profiles.toml"));
  const size_t block = profiles.find("[profiles.\"maxtext-tpu-v6e\"]");
  ASSERT_NE(block, std::string::npos);
  for (const auto& [key, value] :
       {std::pair{"expert_group_seconds = ", "1.2e-05"}, std::pair{"overlap_ep = ", "0.3"}}) {
    const size_t at = profiles.find(key, block) + std::string(key).size();
    profiles.replace(at, profiles.find('\n', at) - at, value);
  }
  const std::string start = WriteTemp(dir, "start.toml", profiles);
  const std::string out = (dir / "fitted.toml").string();
  CommandResult r =
      RunMosaic("perf calibrate " + csv + " --profiles " + start + " --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const ProfileSet fitted = ParseProfiles(ReadText(out), out);
  const PerfProfile& maxtext = fitted.Get("maxtext-tpu-v6e");
  EXPECT_EQ(maxtext.expert_group_seconds, 1.2e-05);
  EXPECT_EQ(maxtext.overlap_ep, 0.3);
  // Its GEMM efficiency is the shipped fit's: the same rows decide it.
  constexpr double kSolverTol = 1e-4;  // relative, as CalibrateReproducesTheShippedProfiles
  const double shipped = LoadProfiles().Get("maxtext-tpu-v6e").gemm_efficiency;
  EXPECT_NEAR(maxtext.gemm_efficiency, shipped, kSolverTol * shipped);
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, AProfileFittedOnMoeRowsWithoutExpertParallelismKeepsItsEpOverlap) {
  // MaxText's v5p rows (P1-P9) hold one MoE run, Llama 4 Scout with its experts FSDP-sharded
  // (ep 1): it moves the profile's per-expert cost, and not its EP overlap, which acts on an
  // all-to-all none of the rows has.
  const std::filesystem::path dir = DirWithPublishedModels("mosaic_no_ep_fit");
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t p1 = text.find("\nP1,") + 1;
  const size_t p9 = text.find("\nP9,") + 1;
  const std::string csv = WriteTemp(
      dir, "v5p.csv",
      text.substr(0, text.find('\n') + 1) + text.substr(p1, text.find("\nV1,") + 1 - p1) +
          text.substr(p9, text.find('\n', p9) + 1 - p9));
  std::string profiles = ReadText(SourcePath("data/perf/profiles.toml"));
  const size_t block = profiles.find("[profiles.\"maxtext-tpu-v5p\"]");
  ASSERT_NE(block, std::string::npos);
  for (const auto& [key, value] :
       {std::pair{"expert_group_seconds = ", "1.2e-05"}, std::pair{"overlap_ep = ", "0.3"}}) {
    const size_t at = profiles.find(key, block) + std::string(key).size();
    profiles.replace(at, profiles.find('\n', at) - at, value);
  }
  const std::string out = (dir / "fitted.toml").string();
  CommandResult r = RunMosaic("perf calibrate " + csv + " --profiles " +
                              WriteTemp(dir, "start.toml", profiles) + " --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const PerfProfile fitted = ParseProfiles(ReadText(out), out).Get("maxtext-tpu-v5p");
  EXPECT_EQ(fitted.overlap_ep, 0.3);
  EXPECT_NE(fitted.expert_group_seconds, 1.2e-05);
  EXPECT_TRUE(fitted.moe_calibrated);
  // The shipped fit of the same rows puts the per-expert cost at its upper bound, 40 µs: Scout
  // runs slower than its FLOPs at the profile's GEMM efficiency (P9, +10% at the bound).
  EXPECT_EQ(LoadProfiles().Get("maxtext-tpu-v5p").expert_group_seconds, 40e-6);
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, ModelAndDeviceFilesTheRowsNameAreInputs) {
  // The MaxText rows name their model files beside the table: --output may not replace one, nor
  // a device file a row names; a missing one is the row's error, naming where it was looked for.
  const std::filesystem::path dir = DirWithPublishedModels("mosaic_named_files");
  std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  std::string p1 = text.substr(text.find("\nP1,") + 1);
  p1 = p1.substr(0, p1.find('\n') + 1);
  const std::string header = text.substr(0, text.find('\n') + 1);
  WriteTemp(dir, "v5p.toml", ReadText(SourcePath("data/hardware/tpu-v5p.toml")));
  std::string on_file = p1;
  on_file.replace(on_file.find(",tpu-v5p,"), 9, ",v5p.toml,");
  const std::string csv = WriteTemp(dir, "rows.csv", header + p1 + on_file.replace(0, 2, "P0"));
  const std::string model = (dir / "models" / "maxtext-32b.toml").string();
  const std::string device = (dir / "v5p.toml").string();
  const std::string model_text = ReadText(model);
  for (const std::string& target : {model, device}) {
    for (const std::string command : {"calibrate", "validate"}) {
      CommandResult r = RunMosaic("perf " + command + " " + csv + " --output " + target);
      EXPECT_EQ(r.exit_code, 1) << command << " " << target;
      EXPECT_NE(r.err.find("Violated constraint: not one of the command's input files"),
                std::string::npos)
          << r.err;
    }
  }
  EXPECT_EQ(ReadText(model), model_text);
  // The device file, named beside the table, is read as tpu-v5p: its row gets MaxText's profile.
  CommandResult r = RunMosaic("perf validate " + csv + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json parsed_rows = nlohmann::json::parse(r.out);
  for (const auto& row : parsed_rows["rows"]) {
    EXPECT_EQ(row["profile"], "maxtext-tpu-v5p") << row["id"];
  }
  // A Marin source picks Marin's profile on its GB200 rack only, not on another device.
  std::string marin = p1;
  marin.replace(marin.find("AI-Hypercomputer/maxtext"), 24, "marin-community/marin");
  r = RunMosaic("perf validate " + WriteTemp(dir, "marin.csv", header + marin) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["rows"][0]["profile"], "maxtext-tpu-v5p");
  std::filesystem::remove(model);
  r = RunMosaic("perf validate " + csv);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rows.csv:2: model = 'models/maxtext-32b.toml' (row P1). Violated "
                       "constraint: a file; none at " + model +
                       " (a relative path is looked for beside " + csv +
                       ", then from the working directory)"),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, AProfileFittedOnDenseModelsSaysSoForAMoeModel) {
  // maxtext-tpu-v6e is fitted on MaxText's dense rows alone (V1-V7, moe_calibrated = false): a
  // MoE model on it is told its MoE layers' time is not calibrated, a dense one is not.
  // maxtext-tpu-v5p has a MoE row (P9, Llama 4 Scout) and says nothing.
  const std::string note =
      "the maxtext-tpu-v6e profile was calibrated on dense models only: its per-expert GEMM cost "
      "and EP overlap are set by hand, so the MoE layers' time is not calibrated";
  CommandResult r = RunMosaic(
      "perf mixtral-8x7b --hardware tpu-v6e --gpus 256 --batch 256 --seq 4096 --layout fsdp=256");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(maxtext-tpu-v6e profile, calibrated on tpu-v6e)"), std::string::npos)
      << r.out;
  EXPECT_NE((r.out + r.err).find(note), std::string::npos) << r.out << r.err;
  r = RunMosaic(
      "perf llama3-70b --hardware tpu-v6e --gpus 256 --batch 256 --seq 4096 --layout fsdp=256");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find("calibrated on dense models only"), std::string::npos);
  r = RunMosaic(
      "perf mixtral-8x7b --hardware tpu-v5p --gpus 256 --batch 256 --seq 4096 --layout fsdp=256");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(maxtext-tpu-v5p profile, calibrated on tpu-v5p)"), std::string::npos)
      << r.out;
  EXPECT_EQ((r.out + r.err).find("calibrated on dense models only"), std::string::npos);
  EXPECT_FALSE(LoadProfiles().Get("maxtext-tpu-v6e").moe_calibrated);
  EXPECT_TRUE(LoadProfiles().Get("maxtext-tpu-v5p").moe_calibrated);
  EXPECT_TRUE(LoadProfiles().Get("megatron-h100").moe_calibrated);
}

TEST(PerfCli, AnExpertParallelLayoutOnAProfileFittedWithoutEpSaysSo) {
  // maxtext-tpu-v5p's one MoE row (P9, Llama 4 Scout) shards its experts with FSDP, no EP:
  // calibrate writes ep_calibrated = false, and an ep > 1 layout on it, evaluated or found by the
  // search, is told its EP overlap is set by hand; the same model without EP, or with EP on a
  // profile fitted on EP rows (megatron-h100), is not.
  const std::string note =
      "under the maxtext-tpu-v5p profile, calibrated on MoE rows without expert parallelism: its "
      "EP overlap (the share of the all-to-all hidden under compute) is set by hand";
  const std::string scout = "perf llama4-scout --hardware tpu-v5p --gpus 64 --batch 64 --seq 8192 ";
  CommandResult r = RunMosaic(scout + "--layout fsdp=8,dp=8,ep=8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("ep=8 " + note), std::string::npos) << r.out << r.err;
  r = RunMosaic(scout + "--layout fsdp=8,dp=8,ep=8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ep=8 " + note), std::string::npos) << r.out;
  r = RunMosaic(scout + "--layout fsdp=64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find("without expert parallelism"), std::string::npos) << r.out;
  r = RunMosaic(scout + "--search --top 1");  // the best layout runs ep=16
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("ep=16 " + note), std::string::npos) << r.out << r.err;
  r = RunMosaic("perf llama4-scout --hardware h100 --gpus 64 --batch 64 --seq 8192 "
                "--layout tp=1,dp=64,ep=8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find("without expert parallelism"), std::string::npos) << r.out;
  const ProfileSet shipped = LoadProfiles();
  EXPECT_TRUE(shipped.Get("maxtext-tpu-v5p").moe_calibrated);
  EXPECT_FALSE(shipped.Get("maxtext-tpu-v5p").ep_calibrated);
  EXPECT_TRUE(shipped.Get("megatron-h100").ep_calibrated);
  EXPECT_TRUE(shipped.Get("marin-gb200").ep_calibrated);
}

TEST(PerfCli, AValuePastItsFitRangeIsMarkedSo) {
  // A profile file may set any GEMM efficiency in its physical range; validate marks one past
  // the range a fit keeps to (0.4-0.8 on a GPU) as such, not "at bound".
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_past_range";
  std::string profiles = ReadText(SourcePath("data/perf/profiles.toml"));
  const size_t block = profiles.find("[profiles.\"megatron-h100\"]");
  const size_t at = profiles.find("gemm_efficiency = ", block);
  profiles.replace(at, profiles.find('\n', at) - at, "gemm_efficiency = 0.9");
  CommandResult r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --profiles " +
                              WriteTemp(dir, "past.toml", profiles));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("megatron-h100    gemm_efficiency 0.9 (outside its fit range 0.4-0.8)"),
            std::string::npos)
      << r.out;
  r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --json --profiles " +
                (dir / "past.toml").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json parsed_profiles = nlohmann::json::parse(r.out);
  for (const auto& p : parsed_profiles["profiles"]) {
    if (p["name"] != "megatron-h100") continue;
    EXPECT_EQ(p["outside_fit_range"], nlohmann::json::parse(R"(["gemm_efficiency"])"));
    // The shipped megatron-h100 keeps both at their bounds (docs/guide.md).
    EXPECT_EQ(p["at_bound"], nlohmann::json::parse(R"(["expert_group_seconds","overlap_ep"])"));
  }
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, ALeaveOneOutRefitMovesOnlyItsRowsProfile) {
  // Without the shared physics in the fit, a row's leave-one-out prediction comes from a refit
  // of its own profile on its other rows: another profile's values, even one started past its
  // fit range, change none of it (a joint refit stopped on the joint cost, and put M11c's at
  // +7.2% or +12.9% by where maxtext-tpu-v5p started).
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_loo_start";
  std::string profiles = ReadText(SourcePath("data/perf/profiles.toml"));
  const size_t at = profiles.find("gemm_efficiency = ",
                                  profiles.find("[profiles.\"maxtext-tpu-v5p\"]"));
  profiles.replace(at, profiles.find('\n', at) - at, "gemm_efficiency = 0.97");
  const std::string base = "perf validate tests/fixtures/throughput/published.csv --json";
  CommandResult shipped = RunMosaic(base);
  CommandResult moved = RunMosaic(base + " --profiles " + WriteTemp(dir, "p.toml", profiles));
  ASSERT_EQ(shipped.exit_code, 0) << shipped.err;
  ASSERT_EQ(moved.exit_code, 0) << moved.err;
  const nlohmann::json a = nlohmann::json::parse(shipped.out)["rows"];
  const nlohmann::json b = nlohmann::json::parse(moved.out)["rows"];
  ASSERT_EQ(a.size(), b.size());
  int compared = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]["profile"] == "maxtext-tpu-v5p" || !a[i].contains("loo_error")) continue;
    const char* key = "loo_predicted_tokens_per_s_per_gpu";
    EXPECT_EQ(a[i][key], b[i][key]) << a[i]["id"];
    ++compared;
  }
  // The Megatron and Marin rows left out (GB300's three are not) and MaxText's on v6e.
  EXPECT_EQ(compared, 29);
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, CalibrateReproducesTheShippedProfiles) {
  // The README's command regenerates data/perf/profiles.toml: the fit starts from defaults, not
  // from the shipped values, so its result is the shipped file (to solver tolerance).
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / "mosaic_calibrated_profiles.toml";
  CommandResult r =
      RunMosaic("perf calibrate tests/fixtures/throughput/published.csv --output " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const ProfileSet fitted = ParseProfiles(ReadText(out.string()), out.string());
  const ProfileSet shipped = LoadProfiles();
  std::filesystem::remove(out);
  constexpr double kSolverTol = 1e-4;  // relative; Ceres' function tolerance is 1e-10
  auto near = [&](double a, double b) { return std::abs(a - b) <= kSolverTol * std::abs(b); };
  ASSERT_EQ(fitted.profiles.size(), shipped.profiles.size());
  for (size_t i = 0; i < shipped.profiles.size(); ++i) {
    EXPECT_TRUE(near(fitted.profiles[i].gemm_efficiency, shipped.profiles[i].gemm_efficiency))
        << shipped.profiles[i].name;
    EXPECT_EQ(fitted.profiles[i].paired_a2a_overlap, shipped.profiles[i].paired_a2a_overlap)
        << shipped.profiles[i].name;
  }
  // The solver's report says which start it comes from: not the shipped values, so its initial
  // cost is not the final one.
  EXPECT_NE((r.out + r.err).find("solver, from the "), std::string::npos) << r.out;
  const SharedPerfParams& a = fitted.shared;
  const SharedPerfParams& b = shipped.shared;
  EXPECT_TRUE(near(a.fp8_gain, b.fp8_gain));
  EXPECT_TRUE(near(a.overlap_contention, b.overlap_contention));
  EXPECT_TRUE(near(a.scale_up_efficiency, b.scale_up_efficiency));
  EXPECT_TRUE(near(a.scale_out_efficiency, b.scale_out_efficiency));
  EXPECT_TRUE(near(a.moe_sync_seconds, b.moe_sync_seconds));
  for (size_t i = 0; i < shipped.profiles.size(); ++i) {
    EXPECT_NEAR(fitted.profiles[i].expert_group_seconds, shipped.profiles[i].expert_group_seconds,
                kSolverTol * 40e-6)
        << shipped.profiles[i].name;
    EXPECT_NEAR(fitted.profiles[i].overlap_ep, shipped.profiles[i].overlap_ep, kSolverTol)
        << shipped.profiles[i].name;
  }
  EXPECT_TRUE(near(a.unfused_attention_passes, b.unfused_attention_passes));
  EXPECT_TRUE(near(a.fp8_quantize_seconds, b.fp8_quantize_seconds));
}

TEST(PerfCli, CalibrateStartsFromTheGivenProfiles) {
  // --profiles: the fit starts from a team's own file and keeps what it does not fit (memory
  // habits, flags); profiles with measured rows come out calibrated, the others as they were.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_cal_from";
  std::filesystem::create_directories(dir);
  std::string text = ReadText(SourcePath("data/perf/profiles.toml"));
  const std::string from = "activation_factor = 1.5\n";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "activation_factor = 1.7\n");  // torch-eager-h100
  const std::string start = (dir / "start.toml").string();
  const std::string out = (dir / "fitted.toml").string();
  {
    std::ofstream f(start);
    f << text;
  }
  CommandResult r = RunMosaic("perf calibrate tests/fixtures/throughput/published.csv --profiles " +
                              start + " --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const ProfileSet fitted = ParseProfiles(ReadText(out), out);
  EXPECT_EQ(fitted.Get("torch-eager-h100").activation_factor, 1.7);
  EXPECT_FALSE(fitted.Get("torch-eager-h100").calibrated);
  EXPECT_FALSE(fitted.Get("deepseek-h800").calibrated);
  EXPECT_TRUE(fitted.Get("megatron-h100").calibrated);
  EXPECT_TRUE(fitted.Get("marin-gb200").calibrated);
  // The output may not overwrite the starting file.
  r = RunMosaic("perf calibrate tests/fixtures/throughput/published.csv --profiles " + start +
                " --output " + start);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Violated constraint: not one of the command's input files"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ReadText(start), text);
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, CalibrationErrorsStayWithinTheirBounds) {
  // The shipped profiles on the 25 calibration rows, every parameter inside its physical bound:
  // RMS log error 0.116 in-sample (median 4.3%), 0.151 leave-one-out (7.1%). The worst rows are
  // Qwen3-235B in fp8 on 256 H100 (M9, +29%: measured slower than the same layout in bf16, Z2)
  // and gpt-oss-120b's unfused sink attention (M12a, M12b: -30%, -18%; M12a's last pipeline rank
  // also runs the output layer, 4.3 layers' FLOPs); the Marin rows stay within 3.1% (MH3, its
  // tokens/s converted from MH2's MFU).
  constexpr double kRmsTol = 0.12;
  constexpr double kLooRmsTol = 0.16;
  constexpr double kRowTol = 0.25;        // |predicted / measured - 1| on every row but these:
  constexpr double kM9Tol = 0.35;
  constexpr double kSinkStandInTol = 0.32;  // M12a (gpt-oss-120b, pp 4)
  constexpr double kMarinRowTol = 0.035;  // the Marin rows (MH*)
  CommandResult r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_LT(j["rms_log_error"].get<double>(), kRmsTol);
  EXPECT_LT(j["loo_rms_log_error"].get<double>(), kLooRmsTol);
  for (const auto& row : j["rows"]) {
    const std::string id = row["id"].get<std::string>();
    const double err = std::abs(row["error"].get<double>());
    EXPECT_LT(err, id == "M9" ? kM9Tol : id == "M12a" ? kSinkStandInTol : kRowTol) << id;
    if (id.rfind("MH", 0) == 0) EXPECT_LT(err, kMarinRowTol) << id;
  }
}

TEST(PerfCli, FixedCellsWithoutExpertParallelismDropsNothing) {
  CommandResult r = RunMosaic(
      "perf marin-hero-fsdp --hardware gb200-nvl72 --gpus 64 --batch 1024 --seq 4096 --layout "
      "fsdp=64,mbs=16,recompute=full --routing fixed-cells --capacity-factor 1.0 --profile "
      "marin-gb200 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["dropped_fraction"].get<double>(), 0.0);
}

TEST(PerfCli, ReadableRangeErrorsAndSuggestions) {
  CommandResult r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 0 --batch 8 --layout dp=8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("mosaic perf: --gpus = 0. Violated constraint: 1 <= --gpus <= 16777216"),
            std::string::npos)
      << r.err;
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 8 --layout dp=8 "
                "--capacity-factor nan");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--capacity-factor = nan. Violated constraint: --capacity-factor in [0.01, 1000]"),
            std::string::npos)
      << r.err;
  // A value that is not a number of the option's type says so before the range.
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 2x --batch 8 --layout dp=8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--gpus = 2x. Violated constraint: --gpus is an integer, 1 <= --gpus <= "
                       "16777216"),
            std::string::npos)
      << r.err;
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 8 --layout dp=8 "
                "--capacity-factor 1.2x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--capacity-factor = 1.2x. Violated constraint: --capacity-factor is a "
                       "number, --capacity-factor in [0.01, 1000]"),
            std::string::npos)
      << r.err;
  r = RunMosaic("perf mixtral-8x7b --hardware gb200 --gpus 8 --batch 8 --layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("(did you mean 'gb200-nvl72'?)"), std::string::npos) << r.err;
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 8 --layout DP=8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown layout key 'DP' (did you mean 'dp'?)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

TEST(PerfCli, ExpertTensorParallelismIsChargedAndBoundedByTheDomain) {
  // etp = 64 on 8-GPU NVLink nodes would need a 64-GPU scale-up domain.
  CommandResult r =
      RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 64 --batch 256 --layout dp=64,etp=64");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("etp <= scale-up domain (64 > 8 GPUs)"), std::string::npos) << r.err;
  // Inside the domain, etp all-gathers the dispatched tokens and reduce-scatters the outputs.
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 --layout dp=8,etp=8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["time"]["tp_seconds"].get<double>(), 0.0);
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 --layout dp=8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["time"]["tp_seconds"].get<double>(), 0.0);
}

TEST(PerfCli, UncalibratedDeviceUsesItsClosestCalibratedSibling) {
  // h200 is H100 silicon with more and faster HBM: the H100 Megatron profile, said so, and never
  // slower than h100 on the same layout.
  const std::string base = "perf mixtral-8x7b --gpus 64 --batch 256 --layout pp=4,ep=8,dp=16";
  CommandResult h200 = RunMosaic(base + " --hardware h200 --json");
  CommandResult h100 = RunMosaic(base + " --hardware h100 --json");
  ASSERT_EQ(h200.exit_code, 0) << h200.err;
  ASSERT_EQ(h100.exit_code, 0) << h100.err;
  const nlohmann::json a = nlohmann::json::parse(h200.out);
  const nlohmann::json b = nlohmann::json::parse(h100.out);
  EXPECT_EQ(a["profile"], "megatron-h100");
  EXPECT_EQ(a["profile_hardware"], "h100");
  EXPECT_GE(a["tokens_per_s_per_gpu"].get<double>(), b["tokens_per_s_per_gpu"].get<double>());
  CommandResult text = RunMosaic(base + " --hardware h200");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::string note =
      "note: no profile is calibrated on h200; using megatron-h100, calibrated on its closest "
      "calibrated sibling h100\n";
  EXPECT_NE(text.out.find(note), std::string::npos) << text.out;
  // A profile set by hand is not called calibrated, on its own device or on a sibling.
  CommandResult by_hand = RunMosaic(base + " --hardware h200 --profile torch-eager-h100");
  ASSERT_EQ(by_hand.exit_code, 0) << by_hand.err;
  EXPECT_NE(by_hand.out.find("(torch-eager-h100 profile, uncalibrated: set by hand for h100)"),
            std::string::npos)
      << by_hand.out;
  EXPECT_NE(by_hand.out.find("note: the torch-eager-h100 profile was set by hand for h100, not "
                             "h200\n"),
            std::string::npos)
      << by_hand.out;
  CommandResult search = RunMosaic(
      "perf mixtral-8x7b --gpus 64 --batch 256 --hardware h200 --search --top 1");
  ASSERT_EQ(search.exit_code, 0) << search.err;
  // 64 GPUs over eight 8-GPU nodes: the header also says how the all-to-all crosses them.
  EXPECT_NE(search.out.find("profile: megatron-h100 (calibrated on h100); routing dropless; EP "
                            "all-to-all across domains hierarchical (the profile's default; "
                            "--dispatch sets it)\n"),
            std::string::npos)
      << search.out;
  EXPECT_NE(search.out.find(note), std::string::npos) << search.out;
  search = RunMosaic(
      "perf mixtral-8x7b --gpus 64 --batch 256 --hardware h200 --search --top 1 --json");
  ASSERT_EQ(search.exit_code, 0) << search.err;
  EXPECT_EQ(nlohmann::json::parse(search.out)["profile"], "megatron-h100");
}

TEST(PerfCli, CalibrationRowsRunOnTheirProfilesDevice) {
  // H100 rows relabelled h200: prediction runs them on megatron-h100 (h200's closest calibrated
  // sibling), but fitting would refit the H100 profile to other silicon: refused, nothing written.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mosaic_h200_rows_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  std::string csv = text.substr(0, text.find('\n') + 1);
  for (const char* id : {"M6,", "M9,", "M11a,", "M12a,", "M13,", "M15,"}) {
    const size_t at = text.find(std::string("\n") + id) + 1;
    std::string row = text.substr(at, text.find('\n', at) + 1 - at);
    row.replace(row.find(",h100,"), 6, ",h200,");
    csv += row;
  }
  const std::filesystem::path rows = dir / "h200.csv", out = dir / "fit.toml";
  std::ofstream(rows) << csv;
  CommandResult r = RunMosaic("perf calibrate " + rows.string() + " --output " + out.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("h200.csv:2: hardware = 'h200' (row M6): fitting profile 'megatron-h100' "
                       "(for h100) to it would refit that device's profile for other silicon. "
                       "Violated constraint: a calibration row runs on its profile's device"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  // validate scores calibration rows in-sample and refits for leave-one-out: the same rule.
  r = RunMosaic("perf validate " + rows.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("h200.csv:2: hardware = 'h200' (row M6): fitting profile 'megatron-h100' "),
            std::string::npos)
      << r.err;
  // Held out, they are predicted with the sibling's profile, and named as such.
  const size_t m3 = text.find("\nM3,") + 1;
  const std::filesystem::path one = dir / "m3.csv";
  std::ofstream(one) << text.substr(0, text.find('\n') + 1)
                     << text.substr(m3, text.find('\n', m3) + 1 - m3);
  r = RunMosaic("perf validate " + one.string() + " --heldout " + rows.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nHeld-out rows predicted with a profile for another device (their "
                       "device's closest calibrated sibling's, or the one the row names): M6 "
                       "(megatron-h100, for h100), M9 (megatron-h100, for h100)"),
            std::string::npos)
      << r.out;
  r = RunMosaic("perf validate " + one.string() + " --heldout " + rows.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["heldout_rows"][0]["profile_device"], "h100");
  EXPECT_EQ(j["rows"][0]["profile_device"], "gb200-nvl72");
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, ValidateLeavesInvalidRowsOutOfEveryFigure) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "mosaic_invalid_row.csv";
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t header_end = text.find('\n') + 1;
  const size_t first_end = text.find('\n', header_end) + 1;
  const size_t second_end = text.find('\n', first_end) + 1;
  std::string invalid = text.substr(header_end, first_end - header_end);  // M3, 256 GPUs
  invalid.replace(invalid.find(",256,"), 5, ",128,");
  {
    std::ofstream out(path);
    out << text.substr(0, header_end) << invalid;
  }
  CommandResult r = RunMosaic("perf validate " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  // 128 GPUs at pp 4 leave 32 data-parallel ranks, too few for ep 64.
  // The row is named by its file and line, as every other row error is.
  EXPECT_NE(r.err.find("no measured row has a valid layout, so there is no error to report (" +
                       path.string() +
                       ":2: row M3: ep·etp divides tp·cp·dp·fsdp (64·1 = 64 does not divide 32))"),
            std::string::npos)
      << r.err;
  // Calibrating on it has nothing to fit: the same error, not an abort inside the solver.
  const std::filesystem::path profiles =
      std::filesystem::temp_directory_path() / "mosaic_invalid_row_profiles.toml";
  std::filesystem::remove(profiles);
  r = RunMosaic("perf calibrate " + path.string() + " --output " + profiles.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no measured row has a valid layout, so there is nothing to fit (" +
                       path.string() + ":2: row M3:"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(profiles));
  {
    std::ofstream out(path);
    out << text.substr(0, header_end) << invalid << text.substr(first_end, second_end - first_end);
  }
  r = RunMosaic("perf validate " + path.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["left_out"], nlohmann::json::array({"M3"}));
  EXPECT_EQ(j["rows_in_figures"].get<int64_t>(), 1);
  EXPECT_FALSE(j["rows"][0].contains("error"));
  // It has no prediction: null, not a prediction of 0 tokens/s on 0 GB.
  for (const char* key : {"predicted_tokens_per_s_per_gpu", "peak_memory_gb", "fits"}) {
    EXPECT_TRUE(j["rows"][0][key].is_null()) << key;
    EXPECT_FALSE(j["rows"][1][key].is_null()) << key;
  }
  EXPECT_GT(j["rms_log_error"].get<double>(), 0.0);
  r = RunMosaic("perf validate " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("row M3 left out of every figure: its layout breaks ep·etp divides"),
            std::string::npos)
      << r.out;
  // One row in the figures; leave-one-out needs two.
  EXPECT_NE(r.out.find("\nin-sample          1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nleave-one-out      0  (not run: it needs two valid rows)"),
            std::string::npos)
      << r.out;
  std::filesystem::remove(path);
}

// The EP all-to-all's path across nodes (layout key dispatch, --dispatch for the search) is
// said wherever it applies: the all-to-all row of the text, the JSON links, the search's header
// and the layouts it ranks; a validated row's search keeps the row's own.
TEST(PerfCli, TheAllToAllsPathAcrossNodesIsSaidAndKept) {
  const std::string base =
      "perf qwen3-235b-a22b --hardware h100 --gpus 256 --batch 2048 --format fp8 --routing "
      "balanced ";
  const std::string layout = "--layout tp=2,pp=8,vpp=4,ep=32,dp=16,pp_embed=1,pp_loss=1";
  CommandResult r = RunMosaic(base + layout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("over network, hierarchical dispatch (the profile's default)\n"),
            std::string::npos)
      << r.out;
  r = RunMosaic(base + layout + ",dispatch=flat --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["links"]["expert_all_to_all"], "network");
  EXPECT_EQ(j["links"]["expert_dispatch"], "flat");
  EXPECT_EQ(j["links"]["expert_dispatch_from"], "layout");
  EXPECT_NE(j["layout"].get<std::string>().find(",dispatch=flat"), std::string::npos);
  // Inside one node (ep 8 on 8-GPU H100 nodes) there is no path across nodes to name.
  r = RunMosaic(base + "--layout tp=2,pp=8,vpp=4,ep=8,dp=16,dispatch=flat --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["links"]["expert_all_to_all"], "nvlink-node");
  EXPECT_TRUE(j["links"]["expert_dispatch"].is_null());
  // The search writes --dispatch into every layout it ranks with ep > 1.
  r = RunMosaic(base + "--search --top 3 --dispatch flat --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["ranked"].empty());
  for (const auto& c : j["ranked"]) {
    const std::string l = c["layout"].get<std::string>();
    EXPECT_EQ(l.find(",ep=1,") == std::string::npos, l.find(",dispatch=flat") != std::string::npos)
        << l;
  }
  EXPECT_EQ(j["expert_dispatch"], "flat");
  EXPECT_EQ(j["expert_dispatch_from"], "search");
  // Where no all-to-all can leave a node (8 GPUs), --dispatch is said to change nothing.
  r = RunMosaic("perf qwen3-30b-a3b --hardware h100 --gpus 8 --batch 64 --search --top 1 "
                "--dispatch flat --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["expert_dispatch"].is_null());
  EXPECT_NE(j["notes"].dump().find("dispatch=flat changes nothing here: the 8 GPUs fit in one "
                                   "scale-up domain of 8"),
            std::string::npos)
      << j["notes"];
  r = RunMosaic(base + "--search --top 1 --dispatch alltoall");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunMosaic(base + layout + " --dispatch flat");
  EXPECT_EQ(r.exit_code, 2) << r.err;  // --dispatch needs --search
  // A validated row's search runs on the row's dispatch: M9 (NCCL's all-to-all) is compared with
  // layouts that cross nodes as it does.
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t m9 = text.find("\nM9,") + 1;
  const std::string path =
      WriteTemp(std::filesystem::temp_directory_path() / "mosaic_dispatch_search", "m9.csv",
                text.substr(0, text.find('\n') + 1) +
                    text.substr(m9, text.find('\n', m9) + 1 - m9));
  r = RunMosaic("perf validate " + path + " --search --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  const std::string best = j["rows"][0]["best_layout"].get<std::string>();
  EXPECT_EQ(best.find(",ep=1,") == std::string::npos,
            best.find(",dispatch=flat") != std::string::npos)
      << best;
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / "mosaic_dispatch_search");
}

// A pp·vpp that does not divide the layers is split evenly, one layer short stages first; the
// note writes that split as the layout string Megatron-Core needs for it, which evaluates the same.
TEST(PerfCli, AnUnevenSplitIsGivenAsMegatronsLayoutString) {
  const std::string base =
      "perf qwen3-235b-a22b --hardware h100 --gpus 256 --batch 2048 --routing balanced --json "
      "--layout ";
  const std::string layout = "tp=2,pp=8,vpp=3,ep=32,dp=16";
  CommandResult r = RunMosaic(base + layout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json even = nlohmann::json::parse(r.out);
  EXPECT_NE(even["notes"].dump().find(
                "pp·vpp = 24 does not divide the 94 layer passes: the first 2 virtual stages hold "
                "one layer less; Megatron-Core runs that split only as a layout string, "
                "--pipeline-model-parallel-layout \\\"Et*3|t*3|(t*4|)*21t*4L\\\""),
            std::string::npos)
      << even["notes"];
  EXPECT_EQ(even["megatron_pp_layout"], "Et*3|t*3|(t*4|)*21t*4L");
  r = RunMosaic(base + "'" + layout + ",pp_layout=Et*3|t*3|(t*4|)*21t*4L'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json written = nlohmann::json::parse(r.out);
  EXPECT_EQ(written["step_seconds"], even["step_seconds"]);
  EXPECT_EQ(written["peak_memory_bytes"], even["peak_memory_bytes"]);
  EXPECT_EQ(written["notes"].dump().find("does not divide"), std::string::npos);
  EXPECT_TRUE(written["megatron_pp_layout"].is_null());
  // An MTP layer goes on the last stage, before the loss, where Megatron-Core builds it without a
  // string: the string evaluates the same there too.
  r = RunMosaic(base + layout + " --set mtp_layers=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json mtp = nlohmann::json::parse(r.out);
  EXPECT_EQ(mtp["megatron_pp_layout"], "Et*3|t*3|(t*4|)*21t*4mL");
  r = RunMosaic(base + "'" + layout + ",pp_layout=Et*3|t*3|(t*4|)*21t*4mL' --set mtp_layers=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["step_seconds"], mtp["step_seconds"]);
}

// Counting the embedding and the loss as layers (pp_embed=1,pp_loss=1) is a second split only
// where it changes what a rank holds: at pp 2 it gives each rank what the default split does, and
// the search lists that layout once.
TEST(PerfCli, TheSearchListsEachSplitOnce) {
  const CommandResult r = RunMosaic(
      "perf qwen3-235b-a22b --hardware h100 --gpus 256 --batch 8192 --format fp8 --routing "
      "balanced --search --top 40 --dispatch flat --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  std::set<std::string> plain;
  bool pp2 = false;
  for (const auto& c : j["ranked"]) {
    std::string l = c["layout"].get<std::string>();
    pp2 = pp2 || l.find(",pp=2,") != std::string::npos;
    const size_t at = l.find(",pp_embed=1,pp_loss=1");
    if (at != std::string::npos) l.erase(at, std::string(",pp_embed=1,pp_loss=1").size());
    EXPECT_TRUE(plain.insert(l).second) << "listed twice: " << l;
  }
  EXPECT_TRUE(pp2);  // the case in question is among the ranked
}

TEST(PerfCli, ValidateChecksARowWithItsRecomputePolicy) {
  // M9 runs with the EP all-to-all overlap; Megatron-Core refuses it with full recompute, so the
  // row stated with recompute=full is left out, named by that rule.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "mosaic_overlap_full_recompute.csv";
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t header_end = text.find('\n') + 1;
  const size_t m9 = text.find("\nM9,") + 1;
  std::string row = text.substr(m9, text.find('\n', m9) + 1 - m9);
  const std::string tail = ",,,causal,\"pp_embed=1,pp_loss=1\",1,,flat\n";
  ASSERT_NE(row.find(tail), std::string::npos) << row;
  row.replace(row.find(tail), tail.size(), ",,full,causal,\"pp_embed=1,pp_loss=1\",1,,flat\n");
  const size_t first_end = text.find('\n', header_end) + 1;
  {
    std::ofstream out(path);
    out << text.substr(0, first_end) << row;
  }
  const CommandResult r = RunMosaic("perf validate " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("row M9 left out of every figure: its layout breaks a2a_overlap excludes "
                       "recompute=full"),
            std::string::npos)
      << r.out;
  std::filesystem::remove(path);
}

TEST(PerfCli, MeaninglessOptionValuesAreRejected) {
  const std::string base = "perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 ";
  CommandResult r = RunMosaic(base + "--layout ep=8,dp=8 --capacity-factor nan");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--capacity-factor"), std::string::npos) << r.err;
  for (const char* top : {"0", "-1"}) {
    r = RunMosaic(base + "--search --top " + top);
    EXPECT_EQ(r.exit_code, 2) << top;
    EXPECT_NE(r.err.find("--top"), std::string::npos) << r.err;
  }
  r = RunMosaic(base + "--layout ep=8,dp=8 --bp-segment 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--bp-segment = 2. Violated constraint: only looped models (loops > 1) "
                       "segment backprop; mixtral-8x7b has loops = 1"),
            std::string::npos)
      << r.err;
  r = RunMosaic("perf looped-moe-329m --hardware h100 --gpus 8 --batch 64 --seq 1024 "
                "--layout fsdp=8 --bp-segment 4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--bp-segment = 4. Violated constraint: --bp-segment <= loops (4 > 3)"),
            std::string::npos)
      << r.err;
  r = RunMosaic(base + "--layout ep=8,dp=8 --search");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--layout and --search exclude each other"), std::string::npos) << r.err;
}

// A model whose recipe caps its experts (marin-hero-ep: capacity_factor = 1.3) runs at that
// capacity unless the command line says otherwise; a model field past the cap is refused.
TEST(PerfCli, TheModelsCapacityFactorIsItsDefault) {
  const std::string base =
      "perf marin-hero-ep --hardware gb200-nvl72 --gpus 64 --batch 1024 "
      "--layout ep=64,fsdp=64,mbs=16,recompute=full --json ";
  auto run = [&](const std::string& extra) {
    const CommandResult r = RunMosaic(base + extra);
    EXPECT_EQ(r.exit_code, 0) << extra << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const nlohmann::json recipe = run("");
  EXPECT_EQ(recipe["routing"], "capacity");
  EXPECT_EQ(recipe["capacity_factor"], 1.3);
  EXPECT_GT(recipe["dropped_fraction"].get<double>(), 0);
  const nlohmann::json set = run("--set capacity_factor=1.0");
  EXPECT_EQ(set["capacity_factor"], 1.0);
  EXPECT_GT(set["dropped_fraction"].get<double>(), recipe["dropped_fraction"].get<double>());
  EXPECT_EQ(run("--capacity-factor 2")["capacity_factor"], 2.0);
  const nlohmann::json dropless = run("--routing dropless");
  EXPECT_EQ(dropless["routing"], "dropless");
  EXPECT_TRUE(dropless["capacity_factor"].is_null());  // the model's 1.3 caps nothing here
  EXPECT_EQ(dropless["dropped_fraction"].get<double>(), 0);
  const CommandResult r = RunMosaic(base + "--set capacity_factor=1e308");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("capacity_factor <= 1000"), std::string::npos) << r.err;
}

// The untraced per-token cost of a sink model is named wherever it is charged, in the text and in
// the JSON's notes; a profile that does not charge it says nothing.
TEST(PerfCli, UntracedSinkModelCostIsCautioned) {
  const std::string base = "perf gpt-oss-120b --hardware gb200-nvl72 --gpus 64 "
                           "--layout ep=64,dp=64,mbs=1,recompute=modules ";
  CommandResult r = RunMosaic(base + "--batch 1280 --seq 8192");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: megatron-gb200 charges gpt-oss-120b gpt-oss's untraced cost, "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  untraced per-token cost "), std::string::npos) << r.out;
  r = RunMosaic(base + "--batch 1280 --seq 4096 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["notes"].size(), 1u) << r.out;
  EXPECT_GT(j["time"]["untraced_seconds"].get<double>(), 0) << r.out;
  // Past the model's own context (gpt-oss: 131072) it says so too.
  r = RunMosaic(base + "--batch 64 --seq 262144 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json notes = nlohmann::json::parse(r.out)["notes"];
  ASSERT_EQ(notes.size(), 2u) << r.out;
  EXPECT_EQ(notes[0].get<std::string>().rfind("seq 262144 is past gpt-oss-120b's max_seq_len 131072", 0),
            0u);
  // A profile file that sets the cost to 0 (or leaves it out) is charged none and says nothing.
  std::string profiles = ReadText(SourcePath("data/perf/profiles.toml"));
  const size_t at = profiles.find("untraced_sink_model_seconds = ");
  ASSERT_NE(at, std::string::npos);
  profiles.replace(at, profiles.find('\n', at) - at, "untraced_sink_model_seconds = -0.0");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_untraced0";
  const std::string file = WriteTemp(dir, "zero.toml", profiles);
  r = RunMosaic(base + "--batch 1280 --seq 4096 --json --profiles " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["notes"].empty()) << r.out;
  EXPECT_EQ(j["time"]["untraced_seconds"].get<double>(), 0) << r.out;
  EXPECT_EQ(r.out.find("-0.0"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
  // A stack without the cost (MaxText) is charged none and cautioned nothing.
  r = RunMosaic("perf gpt-oss-120b --hardware tpu-v5p --gpus 64 --layout fsdp=64,mbs=1 "
                "--batch 64 --seq 4096 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["time"]["untraced_seconds"].get<double>(), 0) << r.out;
  for (const auto& note : j["notes"]) {
    EXPECT_EQ(note.get<std::string>().find("untraced"), std::string::npos) << note;
  }
}

// A full-square MFU above 1 (possible where attention dominates and its kernel is efficient: the
// convention counts the half of the square a causal kernel skips) is explained, in the text and
// the JSON's notes; the shipped profile at 4096 tokens has no such note.
TEST(PerfCli, FullSquareMfuAboveOneIsExplained) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_perf_mfu";
  std::filesystem::create_directories(dir);
  std::string text = ReadText(SourcePath("data/perf/profiles.toml"));
  const std::string from = "attention_efficiency = 0.45\n";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "attention_efficiency = 0.9\n");
  const std::string profiles = (dir / "profiles.toml").string();
  {
    std::ofstream f(profiles);
    f << text;
  }
  const std::string base = "perf olmoe-1b-7b --hardware h100 --gpus 8 --layout cp=8,recompute=none "
                           "--batch 1 --seq 1048576 --profiles " + profiles;
  CommandResult r = RunMosaic(base + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_GT(j["mfu"].get<double>(), 1);
  EXPECT_LT(j["mfu_causal"].get<double>(), 1);
  // The notes: the sequence past OLMoE's 4096, then the MFU's.
  ASSERT_EQ(j["notes"].size(), 2u) << r.out;
  EXPECT_NE(j["notes"][1].get<std::string>().find("passes 1 because it counts the whole attention"),
            std::string::npos);
  r = RunMosaic(base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: the full-square MFU ("), std::string::npos) << r.out;
  r = RunMosaic("perf olmoe-1b-7b --hardware h100 --gpus 8 --layout dp=8 --batch 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["notes"].empty());
  std::filesystem::remove_all(dir);
  // With mxfp8 even the causal MFU passes 1: the reason is the format's faster tensor cores (MFU
  // is against the bf16 peak), not the attention square; the search's table says so too.
  const std::string mxfp8 = "perf llama3-405b --hardware gb300-nvl72 --gpus 1152 --batch 4608 "
                            "--format mxfp8 --seq 8192 ";
  r = RunMosaic(mxfp8 + "--layout fsdp=1152,mbs=2,recompute=modules --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json fp = nlohmann::json::parse(r.out);
  ASSERT_GT(fp["mfu_causal"].get<double>(), 1);
  ASSERT_EQ(fp["notes"].size(), 1u) << r.out;
  EXPECT_NE(fp["notes"][0].get<std::string>().find(
                "passes 1 because it is measured against the bf16 dense peak, and mxfp8 matrix "
                "multiplies run on tensor cores faster than that peak"),
            std::string::npos)
      << fp["notes"][0];
}

// A model field set twice is refused (the last value was kept silently); a device without MXFP8
// or fp8 tensor cores is told to use bf16, not fp8.
TEST(PerfCli, ConflictingSettingsAreRefused) {
  const std::string base = "perf mixtral-8x7b --gpus 8 --batch 64 --layout ep=8,dp=8 ";
  CommandResult r = RunMosaic(base + "--hardware h100 --set top_k=4 --set top_k=2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--set top_k=2: top_k is set twice (to 4 and to 2). Violated constraint: "
                       "each field at most once"),
            std::string::npos)
      << r.err;
  r = RunMosaic(base + "--hardware tpu-v6e --format mxfp8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no MXFP8 tensor cores (peak_mxfp8_tflops = 0; nor fp8: use bf16)"),
            std::string::npos)
      << r.err;
}

// Options that would change nothing are refused rather than ignored.
TEST(PerfCli, OptionsWithoutEffectAreRefused) {
  const std::string base = "perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 ";
  CommandResult r = RunMosaic(base + "--layout ep=8,dp=8 --top 5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--top requires --search"), std::string::npos) << r.err;
  for (const char* routing : {"dropless", "balanced"}) {
    r = RunMosaic(base + "--layout ep=8,dp=8 --capacity-factor 1.25 --routing " + routing);
    EXPECT_EQ(r.exit_code, 2) << routing;  // two flags that contradict: a usage error
    EXPECT_NE(r.err.find("--capacity-factor = 1.25 with --routing " + std::string(routing) +
                         ". Violated constraint: a capacity factor caps tokens only under "
                         "--routing capacity or fixed-cells"),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(RunMosaic(base + "--layout ep=8,dp=8 --capacity-factor 1.25 --routing capacity")
                .exit_code,
            0);
  // Only capacity routing chooses whether to pad its experts' inputs.
  r = RunMosaic(base + "--layout ep=8,dp=8 --routing fixed-cells --no-capacity-padding");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--no-capacity-padding with --routing fixed-cells. Violated constraint: "
                       "only capacity routing chooses whether to pad"),
            std::string::npos)
      << r.err;
  // Unpadded, a factor above 1 computes no more than balanced routing (padded: cf times it).
  auto tokens = [&](const std::string& flags) {
    const CommandResult t = RunMosaic(base + "--layout ep=8,dp=8 --json " + flags);
    EXPECT_EQ(t.exit_code, 0) << flags << t.err;
    return t.exit_code == 0 ? nlohmann::json::parse(t.out)["tokens_per_s_per_gpu"].get<double>()
                            : 0.0;
  };
  // The header says which: the routing, its factor and whether it pads.
  r = RunMosaic(base + "--layout ep=8,dp=8 --capacity-factor 2 --no-capacity-padding");
  EXPECT_NE(r.out.find(", bf16, routing capacity 2 (unpadded)\n"), std::string::npos) << r.out;
  r = RunMosaic(base + "--layout ep=8,dp=8 --capacity-factor 0.5");
  EXPECT_NE(r.out.find(", bf16, routing capacity 0.5 (padded)\n"), std::string::npos) << r.out;
  // Half the assignments dropped: the MFU counts them, and says so.
  EXPECT_NE(r.out.find("note: the MFU counts the model's FLOPs of every routed assignment"),
            std::string::npos)
      << r.out;
  const double unpadded = tokens("--capacity-factor 2 --no-capacity-padding");
  EXPECT_EQ(unpadded, tokens("--routing balanced"));
  EXPECT_LT(tokens("--capacity-factor 2"), unpadded);
  // A dense model has no routed experts to cap.
  r = RunMosaic("perf llama3-70b --hardware h100 --gpus 64 --batch 64 --layout tp=8,dp=8 "
                "--routing capacity --capacity-factor 1.0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--capacity-factor = 1 on llama3-70b. Violated constraint: a capacity "
                       "factor caps the tokens of routed experts, and llama3-70b is dense"),
            std::string::npos)
      << r.err;
  // Nor does a capacity policy alone (its JSON would report a capacity for a dense model);
  // dropless and balanced routing, which cap nothing, are taken.
  for (const char* policy : {"capacity", "fixed-cells"}) {
    r = RunMosaic("perf llama3-70b --hardware h100 --gpus 64 --batch 64 --layout tp=8,dp=8 "
                  "--routing " + std::string(policy));
    EXPECT_EQ(r.exit_code, 1) << policy;
    EXPECT_NE(r.err.find("--routing " + std::string(policy) +
                         " on llama3-70b. Violated constraint: a capacity caps the tokens of "
                         "routed experts, and llama3-70b is dense (experts = 0)"),
              std::string::npos)
        << r.err;
  }
  r = RunMosaic("perf llama3-70b --hardware h100 --gpus 64 --batch 64 --layout tp=8,dp=8 "
                "--routing balanced --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["capacity_factor"].is_null());
  // A device is chosen by name, not renamed: the specifications would stay the old device's.
  r = RunMosaic(base + "--layout ep=8 --set hardware.name=b200");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("hardware.name = b200. Violated constraint: the device is chosen by name"),
            std::string::npos)
      << r.err;
  r = RunMosaic(base + "--layout ep=4,dp=8,moe_chunk=2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("moe_chunk > 1 needs expert weights sharded by FSDP (fsdp 1, "
                       "expert-data-parallel 2 over dp 8)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(RunMosaic(base + "--layout fsdp=8,moe_chunk=2").exit_code, 0);
  r = RunMosaic(base + "--layout ,,,");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--layout ,,,: an empty item (a ',' at the start)"), std::string::npos)
      << r.err;
}

TEST(PerfCli, SearchRefusesAtOnceABatchNoLayoutDivides) {
  // 720,720 GPUs and a batch of 1024: dp·fsdp = GPUs/(tp·pp·cp) cannot divide it with pp <= 94;
  // refused before enumerating (the enumeration alone took tens of seconds), nothing on stdout.
  CommandResult r = RunMosaic(
      "perf qwen3-235b-a22b --hardware h100 --gpus 720720 --batch 1024 --seq 4096 --search");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--search: no layout divides the batch"), std::string::npos) << r.err;
}

TEST(PerfCli, UnevenPipelineAndCrossNodeContextParallelLayoutsRun) {
  CommandResult r = RunMosaic(
      "perf qwen3-235b-a22b --hardware h100 --gpus 256 --batch 2048 --seq 4096 --routing balanced "
      "--layout tp=2,pp=32,vpp=3,ep=8,dp=4,pp_embed=1,pp_loss=1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["layout"].get<std::string>(),
            "tp=2,pp=32,vpp=3,cp=1,dp=4,fsdp=1,ep=8,etp=1,mbs=1,recompute=none,moe_chunk=1,"
            "pp_embed=1,pp_loss=1");
  r = RunMosaic("perf qwen3-235b-a22b --hardware h100 --gpus 256 --batch 256 --seq 131072 "
                "--routing balanced --layout tp=4,pp=8,vpp=4,cp=8,ep=8,recompute=full");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

TEST(PerfCli, ValidateReportsHeldOutErrorApart) {
  // The held-out rows (tests/fixtures/throughput/README.md) are never fitted: in-sample,
  // leave-one-out and held-out error are three summaries, each with its median and worst row.
  // Shipped: held-out median |error| 6.2% over 102 rows. Qwen3-235B on 256 GB200 at ep 8 (Q2) is
  // -7%; across nodes with DeepEP and the all-to-all overlap (Q1, 256 H100, ep 32) -13% (the
  // ModelZoo's measurements of the same layout, Z1 and Z2, -7% and 0%); under Megatron-FSDP
  // with ep 8 across 32 nodes (Z3) -31% (its experts' shards gathered over their own ring, one
  // member per node: -22% while charged with the dense ring's NICs, -28% while every ring
  // crossed the nodes through one NIC each);
  // with uneven first and last stages (Z4, pp_embed=1,pp_loss=1) -1%; the long-context rows
  // (L1-L4, 16k to 131k tokens, context parallel up to 8 across nodes, the whole MoE layer
  // recomputed) -26% to -12%, all fitting in memory as they trained; the ModelZoo's MXFP8 rows
  // on GB200 and GB300 (G1-G3, one at 131k tokens with cp 4) +11%, +3% and -12%;
  // Megatron-Bridge's GB300 rows not fitted (N13, N16-N18) +11%, -3%, -8% and -16%;
  // gpt-oss-120b, its untraced per-token cost fitted on 4096-token rows, at 8192 tokens on GB200
  // and GB300 (N2, N17) -6% and -8% (-45% and -48% while an unfused attention stood in for that
  // cost, growing with the sequence), and every held-out gpt-oss row within 16%;
  // Llama 3 8B on 8 GPUs of each system (25.11: N21-N27, fp8 and mxfp8; 25.09: S12-S14) within
  // 8%; the 26.04 page (U1-U23: Llama 3 70B and 3.1 405B, DeepSeek-V3, gpt-oss-120b and Qwen3
  // on GB300, GB200, B200 and H100) within 25%;
  // the 26.02 page's rows not fitted (R1-R15: Llama 3 70B and 3.1 405B on GB300, GB200 and H100,
  // DeepSeek-V3, gpt-oss-120b, Qwen3 on GB300 and B200) within 16%; the 25.09 page's rows
  // (S1-S11) within 27% but Qwen3-30B on 8 B200 at micro-batch 1 (S6, -43%); Megatron-Bridge's
  // Qwen3-235B on 256 H100 with NCCL's all-to-all (dispatch=flat, as its recipes set it: S11
  // 25.09, N20 25.11 with the all-to-all overlap, U23 26.04 at batch 8192) -3%, +10% and +6%
  // (+36%, +28% and +25% while charged DeepEP's hierarchical dispatch); Llama 3.1 405B under
  // FSDP on two GB200 racks (S2) -5% (-82% as a flat ring at NIC speed); torchtitan's Llama 3
  // 70B on 256 H100 (T1-T2, torch-eager-h100) -7% and -11%;
  // MaxText on TPU v6e with maxtext-tpu-v6e, fitted on Llama 3.1 8B and Mistral 7B (V1-V7):
  // Llama 3 70B and 3.1 405B, Mixtral 8x7B and 8x22B (X1-X7) within 9% (within 19% on the
  // device's uncalibrated defaults); on v5p with maxtext-tpu-v5p, fitted on MaxText's dense v5p
  // table and Llama 4 Scout (P1-P9, Scout's per-expert cost at its 40 µs bound): Llama 3.1 405B
  // (X8) -10%, Llama 4 Maverick (X10) -7% and DeepSeek-V3 (X9) +13% with megablox's row tiles
  // charged (+17% and +24% before; X9 +38% while Llama 4's chunked layers were counted
  // full-square and Scout put the per-expert cost at 0).
  // The rows the model misses by more than 30% are named (docs/guide.md, "What the shipped
  // calibration supports").
  constexpr double kHeldOutMedianTol = 0.10;  // median |predicted / measured − 1|: the target
  constexpr double kHeldOutRowTol = 0.30;      // every valid held-out row but the named ones
  constexpr double kKnownMissTol = 0.70;       // N12, S6, Z3
  constexpr double kFlatDispatchTol = 0.12;    // N20, S11, U23: NCCL's all-to-all across nodes
  constexpr double kSinkLongerSeqTol = 0.10;   // N2, N17: gpt-oss at twice the fitted sequence
  constexpr double kGptOssTol = 0.20;          // every held-out gpt-oss-120b row
  constexpr double kOtherStackTol = 0.20;      // T1-T2 (torchtitan), X1-X10 (MaxText)
  constexpr double kMaxTextV6eTol = 0.10;      // X1-X7, on the profile fitted on V1-V7
  constexpr double kFsdpAcrossRacksTol = 0.10;  // S2: FSDP rings across two NVL72 racks
  constexpr double kFsdpAcrossNodesTol = 0.35;  // Z3: FSDP rings and EP across 32 H100 nodes
  constexpr double kZ4Tol = 0.12;
  constexpr double kQ1Tol = 0.15;              // the issue's four cases: within 15%
  constexpr double kQ2Tol = 0.10;
  constexpr double kLongContextTol = 0.28;     // L1-L4
  constexpr double kModelZooMxfp8Tol = 0.15;   // G1-G3
  CommandResult r = RunMosaic(
      "perf validate tests/fixtures/throughput/published.csv --heldout "
      "tests/fixtures/throughput/heldout.csv --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  int64_t valid = 0;
  for (const auto& row : j["heldout_rows"]) {
    const std::string id = row["id"].get<std::string>();
    if (!row["valid"].get<bool>()) {
      EXPECT_FALSE(row["invalid_rule"].get<std::string>().empty()) << id;
      continue;
    }
    ++valid;
    const double err = std::abs(row["error"].get<double>());
    const bool known_miss = id == "N12" || id == "S6" || id == "Z3";
    EXPECT_LT(err, known_miss ? kKnownMissTol : kHeldOutRowTol) << id;
    if (id == "N2" || id == "N17") EXPECT_LT(err, kSinkLongerSeqTol) << id;
    for (const char* gpt_oss : {"N2", "N11", "N17", "R6", "R12", "U13", "U14", "U15", "U16"}) {
      if (id == gpt_oss) EXPECT_LT(err, kGptOssTol) << id;
    }
    if (id[0] == 'T' || id[0] == 'X') EXPECT_LT(err, kOtherStackTol) << id;
    if (id[0] == 'X') {
      const bool v5p = id == "X8" || id == "X9" || id == "X10";
      EXPECT_EQ(row["profile"], v5p ? "maxtext-tpu-v5p" : "maxtext-tpu-v6e") << id;
      if (!v5p) EXPECT_LT(err, kMaxTextV6eTol) << id;
    }
    if (id[0] == 'T') EXPECT_EQ(row["profile"], "torch-eager-h100") << id;
    if (id == "S2") EXPECT_LT(err, kFsdpAcrossRacksTol) << id;
    if (id == "Z3") EXPECT_LT(err, kFsdpAcrossNodesTol) << id;
    if (id == "Q1") EXPECT_LT(err, kQ1Tol) << id;
    if (id == "N20" || id == "S11" || id == "U23") {
      EXPECT_LT(err, kFlatDispatchTol) << id;
      EXPECT_NE(row["layout"].get<std::string>().find(",dispatch=flat"), std::string::npos) << id;
    }
    if (id == "Q2") EXPECT_LT(err, kQ2Tol) << id;
    if (id == "Z4") EXPECT_LT(err, kZ4Tol) << id;
    if (id.rfind("G", 0) == 0) EXPECT_LT(err, kModelZooMxfp8Tol) << id;
    if (id.rfind("L", 0) == 0) {
      EXPECT_LT(err, kLongContextTol) << id;
      EXPECT_TRUE(row["fits"].get<bool>()) << id;  // recompute=moe, as the runs trained
    }
  }
  EXPECT_EQ(j["heldout"]["rows"].get<int64_t>(), valid);
  EXPECT_EQ(valid, 102);
  // Jobs measured more than once: Qwen3-30B-A3B on 8 B200 at micro-batch 1 measured 9299 and
  // 9691 (25.11, 26.02) and 18066 (25.09), one setting's prediction for all three; torchtitan's
  // Llama 3 70B in fp8 and bf16 (829 and 597.3, 1.39×), a ratio the model follows within 6%
  // (1.46× at the fp8 gain fitted on the calibration rows, 0.89; 1.41× at 0.80).
  constexpr double kFormatRatioTol = 0.06;
  constexpr double kJsonRelTol = 1e-12;  // a ratio of two printed figures, through JSON
  bool b200 = false, torchtitan = false;
  for (const auto& m : j["repeated_measurements"]) {
    const std::vector<std::string> ids = m["ids"].get<std::vector<std::string>>();
    if (ids == std::vector<std::string>{"N6", "M11c", "S6"}) {
      b200 = true;
      EXPECT_NEAR(m["spread"].get<double>(), 18066.0 / 9299.0, kJsonRelTol);
      EXPECT_NEAR(m["predicted_spread"].get<double>(), 1.0, kJsonRelTol);
    }
    if (ids == std::vector<std::string>{"T2", "T1"}) {
      torchtitan = true;
      EXPECT_NEAR(m["predicted_spread"].get<double>() / m["spread"].get<double>(), 1.0,
                  kFormatRatioTol);
    }
  }
  EXPECT_TRUE(b200 && torchtitan) << j["repeated_measurements"];
  EXPECT_LT(j["heldout"]["median_abs_error"].get<double>(), kHeldOutMedianTol);
  EXPECT_EQ(j["in_sample"]["rows"].get<int64_t>(), 41);
  // GB300's 3 rows and P9 (v5p's one MoE row): loo_not_run.
  EXPECT_EQ(j["leave_one_out"]["rows"].get<int64_t>(), 37);
  EXPECT_DOUBLE_EQ(j["in_sample"]["rms_log_error"].get<double>(),
                   j["rms_log_error"].get<double>());

  r = RunMosaic(
      "perf validate tests/fixtures/throughput/published.csv --heldout "
      "tests/fixtures/throughput/heldout.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Held-out rows (never fitted)"), std::string::npos);
  // Rows that ran though the memory model puts them over the HBM are named, with their peak.
  EXPECT_NE(r.out.find("\nMeasured, though predicted over the device's memory with every "
                       "recompute policy"),
            std::string::npos);
  EXPECT_NE(r.out.find("X8 (117 GB)"), std::string::npos);
  for (const char* line : {"\nin-sample ", "\nleave-one-out ", "\nheld-out "}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line;
  }
}

TEST(PerfCli, HeldOutRowsMayNotShareAnIdWithCalibrationRows) {
  CommandResult r = RunMosaic(
      "perf validate tests/fixtures/throughput/published.csv --heldout "
      "tests/fixtures/throughput/published.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("tests/fixtures/throughput/published.csv:2: held-out row M3: the "
                       "calibration rows have a row of the same id "
                       "(tests/fixtures/throughput/published.csv:2)"),
            std::string::npos)
      << r.err;
}

TEST(PerfCli, TflopsRowsConvertWithTheSourcesFlopConvention) {
  // Row L1 gives 295 causal TFLOP/s per GPU: tokens/s = 295e12 / the causal FLOPs per token,
  // more tokens than a full-square reading of the same figure would give.
  CommandResult r = RunMosaic(
      "perf validate tests/fixtures/throughput/published.csv --heldout "
      "tests/fixtures/throughput/heldout.csv --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const ModelShape shape = MakeModelShape(LoadModel("qwen3-235b-a22b").config, 16384);
  bool found = false;
  for (const auto& row : j["heldout_rows"]) {
    if (row["id"] != "L1") continue;
    found = true;
    EXPECT_EQ(row["basis"], "TFLOP/s (causal)");
    const double expected = 295e12 / shape.causal_model_flops_per_token;
    EXPECT_NEAR(row["measured_tokens_per_s_per_gpu"].get<double>(), expected, 1e-9 * expected);
    EXPECT_GT(expected, 295e12 / shape.model_flops_per_token);
  }
  EXPECT_TRUE(found);
}

TEST(PerfCli, CalibrateFromLogsFitsTheTeamsProfile) {
  // Two runs logged as CSV (step, tokens/s per GPU), their model, cluster and layout in
  // perf_runs.toml: the fitted profile is written with --output, the shipped ones unchanged.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "mosaic_perf_calibrate_logs";
  std::filesystem::remove_all(dir);
  const double speeds[] = {5000, 4200, 3100};
  const char* names[] = {"a", "b", "c"};
  const char* layouts[] = {"ep=8,dp=16,recompute=modules",
                           "pp=2,vpp=12,ep=8,dp=8,recompute=modules",
                           "ep=16,dp=16,recompute=modules"};
  const int batches[] = {512, 512, 64};
  std::string runs = "[defaults]\nmodel = \"qwen3-30b-a3b\"\nhardware = \"h100\"\n"
                     "profile = \"team-h100\"\ngpus = 16\nseq_len = 4096\nrouting = \"balanced\"\n"
                     "tag = \"tokens_per_sec_per_gpu\"\nskip_steps = 2\n";
  for (int i = 0; i < 3; ++i) {
    std::filesystem::create_directories(dir / names[i]);
    std::ofstream csv(dir / names[i] / "metrics.csv");
    csv << "step,tokens_per_sec_per_gpu\n";
    for (int s = 0; s < 12; ++s) csv << s << "," << (s < 2 ? speeds[i] / 3 : speeds[i]) << "\n";
    runs += std::string("\n[[run]]\nrun = \"") + names[i] + "\"\nlayout = \"" + layouts[i] +
            "\"\nglobal_batch = " + std::to_string(batches[i]) + "\n";
  }
  {
    std::ofstream out(dir / "perf_runs.toml");
    out << runs;
  }
  const std::filesystem::path out = dir / "fitted.toml";
  CommandResult r = RunMosaic("perf calibrate --logs " + dir.string() + " --output " +
                              out.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["measured_tokens_per_s_per_gpu"].get<double>(), 5000);
  EXPECT_EQ(j["rows"][0]["profile"], "team-h100");
  const ProfileSet fitted = ParseProfiles(ReadText(out.string()), out.string());
  const PerfProfile& team = fitted.Get("team-h100");
  EXPECT_TRUE(team.calibrated);
  EXPECT_EQ(team.hardware, "h100");
  const ProfileSet shipped = LoadProfiles();
  EXPECT_EQ(fitted.Get("megatron-h100").gemm_efficiency,
            shipped.Get("megatron-h100").gemm_efficiency);
  EXPECT_EQ(fitted.shared.overlap_contention, shipped.shared.overlap_contention);
  // --json carries the fitted parameters, as the written file has them.
  bool listed = false;
  for (const nlohmann::json& p : j["profiles"]) {
    if (p["name"] != "team-h100") continue;
    listed = true;
    EXPECT_EQ(p["gemm_efficiency"].get<double>(), team.gemm_efficiency);
    EXPECT_EQ(p["step_overhead_seconds"].get<double>(), team.step_overhead_seconds);
    EXPECT_EQ(p["calibrated"], true);
  }
  EXPECT_TRUE(listed) << j["profiles"];
  // The dropping model's fit to Marin's sweep is the published rows' section, not a team's.
  EXPECT_FALSE(j.contains("dropping"));
  // The output may replace none of the inputs: a log, a run file (it overwrote both).
  const std::string log = (dir / "b" / "metrics.csv").string();
  const std::string before = ReadText(log);
  for (const std::string& input : {log, (dir / "perf_runs.toml").string()}) {
    r = RunMosaic("perf calibrate --logs " + dir.string() + " --output " + input);
    EXPECT_EQ(r.exit_code, 1) << input;
    EXPECT_NE(r.err.find("Violated constraint: not one of the command's input files"),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(ReadText(log), before);

  // One --logs takes several directories (`--logs A B`, as `mosaic runs A B` does): the copy's
  // runs share their names with the first directory's, so they are qualified by directory.
  const std::filesystem::path copy = dir.string() + "_copy";
  std::filesystem::remove_all(copy);
  std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
  std::filesystem::remove(copy / "fitted.toml");
  r = RunMosaic("perf calibrate --json --logs " + dir.string() + " " + copy.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json both = nlohmann::json::parse(r.out);
  ASSERT_EQ(both["rows"].size(), 6u);
  EXPECT_EQ(both["rows"][3]["id"], copy.string() + "/a");
  // ... and a log file of the second directory is an input the output may not replace.
  r = RunMosaic("perf calibrate --logs " + dir.string() + " " + copy.string() + " --output " +
                (copy / "b" / "metrics.csv").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not one of the command's input files"), std::string::npos) << r.err;
  std::filesystem::remove_all(copy);

  r = RunMosaic("perf calibrate tests/fixtures/throughput/published.csv --logs " + dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give either a CSV of measured rows or --logs"), std::string::npos)
      << r.err;
  r = RunMosaic("perf calibrate --runs " + (dir / "perf_runs.toml").string());
  EXPECT_EQ(r.exit_code, 2);
  std::filesystem::remove(dir / "perf_runs.toml");
  r = RunMosaic("perf calibrate --logs " + dir.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no perf_runs.toml in this log directory"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// published.csv's header and the row `id`, changed by `edit`, as a one-row measurement file.
std::string OneRow(const std::string& id, const std::function<void(std::string&)>& edit) {
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t start = text.find("\n" + id + ",") + 1;
  std::string row = text.substr(start, text.find('\n', start) + 1 - start);
  edit(row);
  return text.substr(0, text.find('\n') + 1) + row;
}

void Replace(std::string& text, const std::string& from, const std::string& to) {
  ASSERT_NE(text.find(from), std::string::npos) << from;
  text.replace(text.find(from), from.size(), to);
}

TEST(PerfCli, MeasurementFilesAreReadAsCsvRecords) {
  // A quoted note may hold a line break (a spreadsheet writes one so): the row is one record, and
  // the next row's errors name its own line.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_perf_csv";
  std::string two = OneRow("M17", [](std::string& row) {
    Replace(row, "DGX-GB300), https", "DGX-GB300),\nhttps");  // inside the quoted source
  });
  two += OneRow("M18", [](std::string& row) { Replace(row, ",zero1,", ",zero9,"); })
             .substr(two.find('\n') + 1);
  CommandResult r = RunMosaic("perf validate " + WriteTemp(dir, "quoted.csv", two));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("quoted.csv:4: dp_kind = 'zero9'"), std::string::npos) << r.err;
  // A row with more or fewer fields than the header is refused (its extra cells were dropped,
  // its missing ones read as blank).
  r = RunMosaic("perf validate " +
                WriteTemp(dir, "extra.csv", OneRow("M17", [](std::string& row) {
                            Replace(row, "\n", ",\n");
                          })));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("extra.csv:2: 27 fields, the header has 26. Violated constraint: every row "
                       "has the header's columns"),
            std::string::npos)
      << r.err;
  r = RunMosaic("perf validate " + WriteTemp(dir, "open.csv", OneRow("M17", [](std::string& row) {
                                               Replace(row, "\"NVIDIA", "NVIDIA");
                                             })));
  // Its opening quote gone, the closing one is a quote inside an unquoted field, named where it
  // stands (it opened a field that ran to the next row's quote, reported there).
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("open.csv:2:229: a quote inside an unquoted field"), std::string::npos)
      << r.err;
  // A row without an id has no name in any figure.
  r = RunMosaic("perf validate " + WriteTemp(dir, "noid.csv", OneRow("M17", [](std::string& row) {
                                               Replace(row, "M17,", " ,");
                                             })));
  EXPECT_EQ(r.exit_code, 1);
  // A cell of blanks is blank: cells are read without the whitespace at their ends.
  EXPECT_NE(r.err.find("noid.csv:2: id = ''. Violated constraint: a row has an id"),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, MeasurementsArePhysicallyPossibleAndColumnsKnown) {
  // A figure above the device's fastest peak (a typo, a unit slip) pulled the whole fit; a column
  // twice was read from its last copy, a misspelt one ignored (a new user's report).
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_perf_range";
  auto error_of = [&](const std::string& name, const std::string& text) {
    CommandResult r = RunMosaic("perf validate " + WriteTemp(dir, name, text));
    EXPECT_EQ(r.exit_code, 1) << name;
    return r.err;
  };
  std::string err = error_of("tokens.csv", OneRow("M3", [](std::string& row) {
                               Replace(row, ",3139,782,", ",1e300,782,");
                             }));
  EXPECT_NE(err.find("tokens.csv:2: measured_tokens_per_s_per_gpu = 1e+300. Violated constraint: "
                     "at most 9976.3 tokens/s per GPU, what the gb200-nvl72's bf16 peak of 2500 "
                     "TFLOP/s runs of deepseek-v3"),
            std::string::npos)
      << err;
  // Counted full-square, a figure may pass the peak by the attention the count adds.
  err = error_of("tflops.csv", OneRow("M3", [](std::string& row) {
                   Replace(row, ",3139,782,", ",,1000000000,");
                   Replace(row, ",causal,", ",full-square,");
                 }));
  EXPECT_NE(err.find("tflops.csv:2: measured_tflops_per_gpu = 1000000000. Violated constraint: at "
                     "most 2807.73, the gb200-nvl72's bf16 peak of 2500 TFLOP/s in the row's "
                     "full-square count"),
            std::string::npos)
      << err;
  err = error_of("causal.csv", OneRow("M3", [](std::string& row) {
                   Replace(row, ",3139,782,", ",,1000000000,");
                 }));
  EXPECT_NE(err.find("causal.csv:2: measured_tflops_per_gpu = 1000000000. Violated constraint: at "
                     "most 2500, the gb200-nvl72's bf16 peak of 2500 TFLOP/s in the row's causal "
                     "count"),
            std::string::npos)
      << err;
  // A sequence far past the model's maximum raises its FLOPs per token past any figure: the
  // message points at that cell too.
  err = error_of("long.csv", OneRow("M15", [](std::string& row) {
                   Replace(row, ",128,8192,", ",128,1048576,");
                 }));
  EXPECT_NE(err.find("long.csv:2: measured_tokens_per_s_per_gpu = 1602. Violated constraint: at "
                     "most 433.579 tokens/s per GPU"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("at seq_len 1048576, 128× llama3-70b's max_seq_len 8192: check that cell too"),
            std::string::npos)
      << err;
  // The bound is the row's precision's: a bf16 H100 row (M12a) may not give fp8's rate.
  err = error_of("bf16.csv", OneRow("M12a", [](std::string& row) {
                   Replace(row, ",5993,163,", ",,1500,");
                 }));
  EXPECT_NE(err.find("bf16.csv:2: measured_tflops_per_gpu = 1500. Violated constraint: at most "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("the h100's bf16 peak of 989"), std::string::npos) << err;
  // Two figures of one run more than a factor of 2 apart.
  err = error_of("apart.csv", OneRow("M3", [](std::string& row) {
                   Replace(row, ",3139,782,", ",3139,200,");
                 }));
  EXPECT_NE(err.find("apart.csv:2: measured_tflops_per_gpu = 200 with "
                     "measured_tokens_per_s_per_gpu = 3139, which is "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("Violated constraint: the two agree within a factor of 2"), std::string::npos)
      << err;
  err = error_of("mfu.csv", OneRow("M3", [](std::string& row) {
                   Replace(row, ",3139,782,,", ",,,150,");
                 }));
  EXPECT_NE(err.find("mfu.csv:2: measured_mfu_pct = 150. Violated constraint: at most 100"),
            std::string::npos)
      << err;
  // Nor below 0.1% of the bf16 peak (a figure per node or per minute); in TFLOP/s the same.
  err = error_of("tiny.csv", OneRow("M3", [](std::string& row) {
                   Replace(row, ",3139,782,", ",1e-05,,");
                 }));
  EXPECT_NE(err.find("tiny.csv:2: measured_tokens_per_s_per_gpu = 1e-05. Violated constraint: at "
                     "least 9.976 tokens/s per GPU, 0.1% of the gb200-nvl72's bf16 peak of 2500 "
                     "TFLOP/s"),
            std::string::npos)
      << err;
  err = error_of("tiny_tflops.csv", OneRow("M3", [](std::string& row) {
                   Replace(row, ",3139,782,", ",,0.5,");
                 }));
  EXPECT_NE(err.find("tiny_tflops.csv:2: measured_tflops_per_gpu = 0.5. Violated constraint: at "
                     "least 2.5, 0.1% of the gb200-nvl72's bf16 peak of 2500 TFLOP/s"),
            std::string::npos)
      << err;
  // An MFU beside tokens/s agrees with what they imply (M3: 3139 tokens/s is 31.5% of the bf16
  // peak, 15.7% of the fp8 one): 5% is more than a factor of 2 below both.
  err = error_of("mfu_apart.csv", OneRow("M3", [](std::string& row) {
                   Replace(row, ",3139,782,,", ",3139,,5,");
                 }));
  EXPECT_NE(err.find("mfu_apart.csv:2: measured_mfu_pct = 5 with measured_tokens_per_s_per_gpu = "
                     "3139, which is "),
            std::string::npos)
      << err;
  // Sizes past what `mosaic perf` takes are refused at their cell.
  err = error_of("huge.csv", OneRow("M3", [](std::string& row) {
                   Replace(row, ",4096,4096,", ",2147483648,4096,");
                 }));
  EXPECT_NE(err.find("huge.csv:2: global_batch = '2147483648'. Violated constraint: an integer in "
                     "[1, 1073741824]"),
            std::string::npos)
      << err;
  const std::string one = OneRow("M3", [](std::string&) {});
  std::string twice = one;
  Replace(twice, ",dispatch\n", ",dispatch,gpus\n");
  Replace(twice, ",\n", ",,7\n");
  err = error_of("twice.csv", twice);
  EXPECT_NE(err.find("twice.csv:1:"), std::string::npos) << err;
  EXPECT_NE(err.find(": column 'gpus' appears twice (columns 4 and 27 of the header, 1-based). "
                     "Violated constraint: column names are unique"),
            std::string::npos)
      << err;
  std::string misspelt = one;
  Replace(misspelt, ",recompute,", ",recomput,");
  err = error_of("misspelt.csv", misspelt);
  EXPECT_NE(err.find("misspelt.csv:1: unknown column 'recomput' (did you mean 'recompute'?)"),
            std::string::npos)
      << err;
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, MeasurementFilesMayStartWithAByteOrderMark) {
  // A CSV saved by a spreadsheet starts with a UTF-8 byte-order mark: it is not part of the
  // first column's name ("bom.csv:1: missing column 'id'"), for validate, --heldout and
  // calibrate alike (text_input.h, as `mosaic fit` and `mosaic runs` read).
  const std::filesystem::path dir = DirWithPublishedModels("mosaic_perf_bom");
  const std::string bom = "\xEF\xBB\xBF";
  const std::string published = WriteTemp(
      dir, "published.csv", bom + ReadText(SourcePath("tests/fixtures/throughput/published.csv")));
  const std::string heldout = WriteTemp(
      dir, "heldout.csv", bom + ReadText(SourcePath("tests/fixtures/throughput/heldout.csv")));
  CommandResult with_bom =
      RunMosaic("perf validate " + published + " --heldout " + heldout + " --json");
  ASSERT_EQ(with_bom.exit_code, 0) << with_bom.err;
  CommandResult plain = RunMosaic(
      "perf validate tests/fixtures/throughput/published.csv --heldout "
      "tests/fixtures/throughput/heldout.csv --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(with_bom.out, plain.out);
  // calibrate reads the same way: one row is read, and is too few to fit.
  const std::string one = WriteTemp(dir, "one.csv", bom + OneRow("M3", [](std::string&) {}));
  CommandResult r = RunMosaic("perf calibrate " + one);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("calibration needs at least one valid measured row per fitted parameter"),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, RowErrorsNameFileLineAndColumn) {
  // Every error of a measured row names the file, its line, the column, the value and the rule,
  // as the reader's other messages do ("file:2: dp_kind = 'x'. Violated constraint: ...").
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_perf_rows";
  auto error_of = [&](const std::function<void(std::string&)>& edit) {
    const std::string path = WriteTemp(dir, "v3.csv", OneRow("M3", edit));
    CommandResult r = RunMosaic("perf validate " + path);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    return r.err;
  };
  const std::string at = "mosaic: error: " + (dir / "v3.csv").string() + ":2: ";
  std::string err = error_of([](std::string& row) { Replace(row, "deepseek-v3", "nomodel"); });
  EXPECT_TRUE(err.starts_with(at + "model = 'nomodel' (row M3): unknown model preset 'nomodel'"))
      << err;
  EXPECT_NE(err.find("\nPresets: "), std::string::npos) << err;
  err = error_of([](std::string& row) { Replace(row, "gb200-nvl72", "gb201"); });
  EXPECT_TRUE(err.starts_with(at + "hardware = 'gb201' (row M3): unknown hardware 'gb201' (did "
                                   "you mean 'b200'?); known: "))
      << err;
  err = error_of([](std::string& row) { Replace(row, ",3139,782,", ",,,"); });
  EXPECT_EQ(err, at + "measured_tokens_per_s_per_gpu, measured_tflops_per_gpu and "
                      "measured_mfu_pct are all blank (row M3). Violated constraint: a row gives a "
                      "measurement: tokens/s per GPU, model TFLOP/s per GPU or MFU %\n");
  err = error_of([](std::string& row) { Replace(row, ",3139,782,", ",,,41.5"); });
  EXPECT_TRUE(err.starts_with(at + "measured_mfu_pct = '41.5' with "
                                   "measured_tokens_per_s_per_gpu and measured_tflops_per_gpu "
                                   "blank (row M3). Violated constraint: an MFU-only row needs a "
                                   "row of the same model, hardware and ep"))
      << err;
  // Cells that did not parse ended the program (an uncaught std::invalid_argument), or divided
  // by zero.
  err = error_of(
      [](std::string& row) { Replace(row, "dropless-forced-balance", "capacity-factor-x"); });
  EXPECT_EQ(err, at + "routing = 'capacity-factor-x'. Violated constraint: capacity-factor-F "
                      "with F a number in (0, 1000], then optionally a note after a space\n");
  err = error_of(
      [](std::string& row) { Replace(row, "dropless-forced-balance", "token-drop-1.25x"); });
  EXPECT_TRUE(err.starts_with(at + "routing = 'token-drop-1.25x'. Violated constraint:")) << err;
  // A routing that contradicts the model: M3 is DeepSeek-V3, a MoE model.
  err = error_of([](std::string& row) { Replace(row, "dropless-forced-balance", "dense"); });
  EXPECT_EQ(err, at + "routing = 'dense'. Violated constraint: a MoE routing for deepseek-v3 (a "
                      "MoE model)\n");
  err = error_of(
      [](std::string& row) { Replace(row, "dropless-forced-balance", "token-drop-0"); });
  EXPECT_EQ(err, at + "routing = 'token-drop-0'. Violated constraint: token-drop-F with F a "
                      "number in (0, 1000], then optionally a note after a space\n");
  err = error_of([](std::string& row) { Replace(row, "zero1", "fsdp0 + dp2"); });
  EXPECT_TRUE(err.starts_with(at + "dp_kind = 'fsdp0 + dp2'. Violated constraint:")) << err;
  err = error_of([](std::string& row) { Replace(row, "zero1", "fsdpx + dp2"); });
  EXPECT_TRUE(err.starts_with(at + "dp_kind = 'fsdpx + dp2'. Violated constraint:")) << err;
  err = error_of([](std::string& row) { Replace(row, "dropless-forced-balance", "sinkhorn"); });
  EXPECT_TRUE(err.starts_with(at + "routing = 'sinkhorn'. Violated constraint: dense, dropless"))
      << err;
  // A device the profiles do not cover: the row's line and hardware, the profile sought, and
  // what to do; a profile the row names is reported as the profile cell.
  {
    const std::string path = WriteTemp(
        dir, "v3.csv", OneRow("M3", [](std::string& row) { Replace(row, "gb200-nvl72", "tpu-v6e"); }));
    CommandResult r = RunMosaic("perf validate " + path + " --profiles " +
                                ShippedProfilesWithout(dir, "maxtext-tpu-v6e"));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(r.err.starts_with(at + "hardware = 'tpu-v6e': the profile set has no profile for "
                                       "this device (megatron-tpu-v6e by default) (row M3). "
                                       "Violated constraint: a calibration row names an existing "
                                       "profile"))
        << r.err;
  }
  {
    std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
    const size_t header_end = text.find('\n');
    std::string header = text.substr(0, header_end) + ",profile\n";
    const size_t start = text.find("\nM3,") + 1;
    std::string row = text.substr(start, text.find('\n', start) - start) + ",megatron-h10\n";
    const std::string path = WriteTemp(dir, "p.csv", header + row);
    const CommandResult p = RunMosaic("perf validate " + path);
    EXPECT_EQ(p.exit_code, 1);
    EXPECT_NE(p.err.find(path + ":2: profile = 'megatron-h10'. Violated constraint: a profile of "
                                "the profile set (did you mean 'megatron-h100'?) (row M3)"),
              std::string::npos)
        << p.err;
  }
  std::filesystem::remove_all(dir);
}

// A row whose cells form no layout (tp·pp·cp does not divide the GPUs, fsdp does not divide the
// data-parallel size) is left out of every figure under that rule, as a row whose layout breaks
// another rule is; it failed the whole file.
TEST(PerfCli, ValidateLeavesOutARowWithoutALayout) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "mosaic_perf_no_layout";
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t m9 = text.find("\nM9,") + 1;
  const std::string valid = text.substr(m9, text.find('\n', m9) + 1 - m9);
  struct Case {
    std::string from, to, rule;
  };
  for (const Case& c :
       {Case{",256,1,4,", ",250,1,4,", "tp·pp·cp divides gpus (1·4·1 = 4 does not divide 250)"},
        Case{"zero1", "fsdp7 + dp2", "fsdp divides the data-parallel size gpus / (tp·pp·cp) "
                                     "(fsdp 7 of dp_kind 'fsdp7 + dp2' does not divide 64)"}}) {
    const std::string path =
        WriteTemp(dir, "rows.csv", OneRow("M3", [&](std::string& row) {
                    Replace(row, c.from, c.to);
                  }) + valid);
    CommandResult r = RunMosaic("perf validate " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("row M3 left out of every figure: its layout breaks " + c.rule),
              std::string::npos)
        << r.out;
    // The data-parallel sizes the GPUs do not give are shown unknown, not truncated.
    EXPECT_NE(r.out.find(",dp=?,fsdp=?,"), std::string::npos) << r.out;
    r = RunMosaic("perf validate " + path + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["left_out"], nlohmann::json::array({"M3"}));
    EXPECT_EQ(j["rows_in_figures"].get<int64_t>(), 1);
  }
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, RangeRulesAreStatedOnce) {
  // The rule a value breaks is the rule every value is checked against: loops = -1 said
  // "loops >= 0", then loops = 0 "loops >= 1"; a 2.5-GPU domain "whole number in [0, 1048576]",
  // then 0 "scale_up_domain_gpus >= 1".
  const std::string base = "perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 --layout dp=8 ";
  for (const char* loops : {"-1", "0"}) {
    CommandResult r = RunMosaic(base + "--set loops=" + loops);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, std::string("mosaic: error: --set loops=") + loops + ": loops = " + loops +
                         ". Violated constraint: loops >= 1\n");
  }
  for (const char* gpus : {"2.5", "0"}) {
    CommandResult r = RunMosaic(base + "--set hardware.scale_up_domain_gpus=" + gpus);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, std::string("mosaic: error: --set hardware.scale_up_domain_gpus=") + gpus +
                         ": scale_up_domain_gpus = " + gpus +
                         ". Violated constraint: scale_up_domain_gpus is a whole number in [1, "
                         "1048576] (GPUs)\n");
  }
}

TEST(PerfCli, HardwareValuesHaveAPhysicalRange) {
  // A peak of 1e308 TFLOP/s printed MFU 0.0000 and exit 0; 1e-300 a step time hundreds of digits
  // long. Device files and --set go through the same range check.
  const std::string base = "perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 --layout dp=8 ";
  for (const char* peak : {"1e308", "1e-300"}) {
    CommandResult r = RunMosaic(base + "--set hardware.peak_bf16_tflops=" + peak);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, std::string("mosaic: error: --set hardware.peak_bf16_tflops=") + peak +
                         ": peak_bf16_tflops = " + peak +
                         ". Violated constraint: peak_bf16_tflops is in [0.1, 100000] "
                         "(TFLOP/s)\n");
  }
  // Its own folder: the measurement test removes "mosaic_perf_range" while this one may run.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "mosaic_perf_device_range";
  std::string device = ReadText(SourcePath("data/hardware/h100.toml"));
  Replace(device, "hbm_gb = 80\n", "hbm_gb = 8e5\n");
  const std::string path = WriteTemp(dir, "big.toml", device);
  CommandResult r = RunMosaic("perf mixtral-8x7b --hardware " + path +
                              " --gpus 8 --batch 64 --layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(path + ":7:10: hbm_gb = 800000. Violated constraint: hbm_gb is in [0.1, "
                              "100000] (GB)"),
            std::string::npos)
      << r.err;
  // Every shipped device is inside every range.
  for (const char* name : {"h100", "h200", "h800", "b200", "gb200-nvl72", "gb300-nvl72", "tpu-v5p",
                           "tpu-v6e"}) {
    EXPECT_EQ(RunMosaic(std::string("perf mixtral-8x7b --hardware ") + name +
                        " --gpus 8 --batch 64 --layout dp=8 --json")
                  .exit_code,
              0)
        << name;
  }
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, DirectoriesGivenAsFilesAreSaidToBeDirectories) {
  // --hardware DIR said "unknown hardware 'DIR'; known: ...": a path is read as a file, so the
  // error is the file's, as for every other file input.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_perf_dir";
  std::filesystem::create_directories(dir);
  const std::string is_dir = "cannot read " + dir.string() + ": Is a directory";
  CommandResult r =
      RunMosaic("perf mixtral-8x7b --hardware " + dir.string() + " --gpus 8 --batch 64 "
                "--layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + is_dir + "\n");
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --profiles " + dir.string() +
                " --gpus 8 --batch 64 --layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + is_dir + "\n");
  r = RunMosaic("perf " + dir.string() + " --hardware h100 --gpus 8 --batch 64 --layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + is_dir + "\n");
  r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --profiles " +
                dir.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: " + is_dir + "\n");
  // A path that does not exist is a missing file, not an unknown device name.
  r = RunMosaic("perf mixtral-8x7b --hardware " + (dir / "none").string() +
                " --gpus 8 --batch 64 --layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: cannot read " + (dir / "none").string() +
                       ": No such file or directory\n");
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, UncalibratedProfileIsSaidSoForOneLayoutAsForTheSearch) {
  // tpu-v6e without its profile has no calibrated profile nor sibling: --search said "generic
  // (uncalibrated defaults)", one layout only "(generic profile)".
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_uncalibrated";
  const std::string base = "perf mixtral-8x7b --hardware tpu-v6e --gpus 8 --batch 64 --profiles " +
                           ShippedProfilesWithout(dir, "maxtext-tpu-v6e") + " ";
  CommandResult one = RunMosaic(base + "--layout dp=8");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(
      one.out.find("mixtral-8x7b on 8 × tpu-v6e (generic-tpu-v6e profile, uncalibrated defaults)"),
      std::string::npos)
      << one.out;
  CommandResult search = RunMosaic(base + "--search --top 1");
  ASSERT_EQ(search.exit_code, 0) << search.err;
  EXPECT_NE(search.out.find("profile: generic-tpu-v6e (uncalibrated defaults); routing dropless\n"),
            std::string::npos)
      << search.out;
  const nlohmann::json j = nlohmann::json::parse(RunMosaic(base + "--layout dp=8 --json").out);
  EXPECT_EQ(j["profile"], "generic-tpu-v6e");
  EXPECT_EQ(j["profile_calibrated"], false);
  // The name perf validate gives the row's profile is one --profile takes; another device's
  // defaults are refused.
  CommandResult named = RunMosaic(base + "--layout dp=8 --profile generic-tpu-v6e --json");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(nlohmann::json::parse(named.out)["step_seconds"], j["step_seconds"]);
  CommandResult other = RunMosaic(base + "--layout dp=8 --profile generic-h100");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("--profile = generic-h100. Violated constraint: uncalibrated defaults "
                           "are those of the device run, generic-tpu-v6e"),
            std::string::npos)
      << other.err;
  // A calibrated profile says where it was calibrated, in both.
  one = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 8 --batch 64 --layout dp=8");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("(megatron-h100 profile, calibrated on h100)"), std::string::npos)
      << one.out;
  std::filesystem::remove_all(dir);
}

TEST(PerfCli, MemoryPastWholeBytesIsRefused) {
  // A micro-batch of 2^24 sequences of 2^30 tokens holds about 1.2e23 bytes of activations:
  // whole bytes in 64 bits cannot write it (it came out as -9223372036854775808), so the layout
  // is refused, naming the part; a large but writable estimate is printed as it is.
  CommandResult r = RunMosaic(
      "perf mixtral-8x7b --hardware h100 --gpus 1 --batch 16777216 --layout mbs=16777216 "
      "--seq 1073741824 --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--layout mbs=16777216: its activation_bytes (1.198e+23 bytes) is past "
                       "2^59 bytes"),
            std::string::npos)
      << r.err;
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 1 --batch 64 --layout mbs=1 --set "
                "d_model=16777216 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  int64_t sum = 0;
  for (const char* part : {"weights_bytes", "gradients_bytes", "optimizer_bytes",
                           "gather_buffer_bytes", "activation_bytes", "logits_bytes",
                           "dispatch_bytes", "reserve_bytes"}) {
    EXPECT_GE(j["memory"][part].get<int64_t>(), 0) << part;
    sum += j["memory"][part].get<int64_t>();
  }
  EXPECT_EQ(j["memory"]["peak_bytes"].get<int64_t>(), sum);
  EXPECT_FALSE(j["fits"].get<bool>());
}

TEST(PerfCli, EchoedInputIsEscapedForTheTerminal) {
  // Names and layout keys echoed in errors carry control characters escaped (terminal_text.h):
  // an ANSI escape in a layout key must not colour the terminal.
  const std::string base = "perf mixtral-8x7b --gpus 8 --batch 64 ";
  CommandResult r =
      RunMosaic(base + "--hardware h100 --layout \"$(printf 'dp=8,\\033[31m=1')\"");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown layout key '\\x1b[31m'"), std::string::npos) << r.err;
  r = RunMosaic(base + "--hardware \"$(printf 'h1\\033[2J')\" --layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown hardware 'h1\\x1b[2J'"), std::string::npos) << r.err;
  r = RunMosaic("perf \"$(printf 'mix\\033]0;owned\\007')\" --hardware h100 --gpus 8 --batch 64 "
                "--layout dp=8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown model preset 'mix\\x1b]0;owned\\x07'"), std::string::npos)
      << r.err;
  // The message keeps its own newlines (the preset list is on a line of its own).
  EXPECT_NE(r.err.find("\nPresets: "), std::string::npos) << r.err;
  r = RunMosaic(base + "--hardware h100 --layout dp=8 --profile \"$(printf 'x\\033[0m')\"");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown perf profile 'x\\x1b[0m'"), std::string::npos) << r.err;
  // Whatever else reaches the error line is escaped where it is printed: a model field's value.
  r = RunMosaic(base + "--hardware h100 --layout dp=8 --set \"$(printf 'd_model=1\\033[5m')\"");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("d_model = '1\\x1b[5m'"), std::string::npos) << r.err;
}


// A best micro-batch whose gain over micro-batch 1 comes mostly from the expert GEMMs' fitted
// per-expert cost is said to be one measured releases disagree on; a dense model has none.
TEST(PerfCli, SearchCautionsAMicroBatchGainFromPerExpertCosts) {
  CommandResult r = RunMosaic(
      "perf qwen3-30b-a3b --hardware b200 --gpus 8 --batch 512 --format mxfp8 --routing balanced "
      "--search --top 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["ranked"].size(), 1u);
  ASSERT_EQ(j["ranked"][0]["layout"].get<std::string>().find(",mbs=1,"), std::string::npos);
  bool found = false;
  for (const auto& note : j["notes"]) {
    found = found || note.get<std::string>().find("faster than micro-batch 1 in the model") !=
                         std::string::npos;
  }
  EXPECT_TRUE(found) << j["notes"];
  r = RunMosaic("perf llama3-70b --hardware h100 --gpus 64 --batch 64 --search --top 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("faster than micro-batch 1"), std::string::npos) << r.out;
}

// --offload tries activation offload where no recompute policy fits; a search that finds
// nothing for lack of memory says so where offload can help. Llama 3 70B on 64 H100 cut to
// 24 GB: every layout's weights, gradients and optimizer states alone are past the HBM, so no
// offload is suggested; at 131k tokens and 34 GB, where only the activations are too many,
// it is (and offloading every layer of a rank fits); at 30 GB and 8k tokens every layer of a
// rank offloaded is the fastest.
TEST(PerfCli, SearchTriesOffloadWhenAsked) {
  const std::string base =
      "perf llama3-70b --hardware h100 --gpus 64 --batch 64 --seq 8192 --search --top 1 ";
  const std::string hint =
      "No feasible layout.\nLayouts over the HBM under every recompute policy may fit with "
      "activation offload: --offload modules or --offload layers tries it.";
  CommandResult none = RunMosaic(base + "--set hardware.hbm_gb=24");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("No feasible layout."), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("activation offload"), std::string::npos) << none.out;
  const std::string long_context =
      "perf llama3-70b --hardware h100 --gpus 64 --batch 64 --seq 131072 --search --top 1 --set "
      "hardware.hbm_gb=34";
  none = RunMosaic(long_context);
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find(hint), std::string::npos) << none.out;
  CommandResult offloaded = RunMosaic(long_context + " --offload layers --json");
  ASSERT_EQ(offloaded.exit_code, 0) << offloaded.err;
  EXPECT_NE(nlohmann::json::parse(offloaded.out)["ranked"][0]["layout"].get<std::string>().find(
                ",offload_layers="),
            std::string::npos)
      << offloaded.out;
  CommandResult layers = RunMosaic(base + "--set hardware.hbm_gb=30 --offload layers --json");
  ASSERT_EQ(layers.exit_code, 0) << layers.err;
  const nlohmann::json j = nlohmann::json::parse(layers.out);
  EXPECT_NE(j["ranked"][0]["layout"].get<std::string>().find(",offload_layers=80"),
            std::string::npos)
      << j["ranked"][0];
  EXPECT_EQ(RunMosaic(base + "--offload everything").exit_code, 2);
  // Modules whose inputs the policy does not keep move nothing: said.
  CommandResult idle = RunMosaic(
      "perf qwen3-30b-a3b --hardware h100 --gpus 16 --batch 256 --layout "
      "ep=16,fsdp=16,recompute=moe,offload_modules=expert_fc1+moe_act+core_attn");
  ASSERT_EQ(idle.exit_code, 0) << idle.err;
  EXPECT_NE(idle.out.find("note: offload_modules expert_fc1+moe_act move nothing under "
                          "recompute=moe, which does not keep their inputs"),
            std::string::npos)
      << idle.out;
  EXPECT_EQ(RunMosaic("perf llama3-70b --hardware h100 --gpus 64 --batch 64 --layout tp=8,fsdp=8 "
                      "--offload layers")
                .exit_code,
            2);
}

TEST(PerfCli, SearchSaysWhichPipelineSplitsItTries) {
  // Qwen3-235B's 94 layers: pp 8 × vpp 4 divides 96 slots, the embedding and the loss counted as
  // a layer each, as Megatron-Bridge's recipe splits them; the best layout unloads the last stage
  // of its output layer that way.
  CommandResult r = RunMosaic(
      "perf qwen3-235b-a22b --hardware h100 --gpus 256 --batch 2048 --search --top 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["ranked"].size(), 1u) << r.out;
  const std::string layout = j["ranked"][0]["layout"].get<std::string>();
  EXPECT_NE(layout.find("a2a_overlap=1"), std::string::npos) << layout;
  EXPECT_NE(layout.find("pp_embed=1,pp_loss=1"), std::string::npos) << layout;
  EXPECT_EQ(j["notes"].back().get<std::string>().rfind(
                "the search splits the layers as evenly as pp·vpp allows", 0),
            0u)
      << j["notes"];
  // A search whose best layout has one stage has no such note.
  r = RunMosaic("perf olmoe-1b-7b --hardware h100 --gpus 8 --batch 64 --search --top 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json one = nlohmann::json::parse(r.out);
  ASSERT_EQ(one["ranked"].size(), 1u) << r.out;
  ASSERT_NE(one["ranked"][0]["layout"].get<std::string>().find(",pp=1,"), std::string::npos)
      << one["ranked"][0];
  for (const auto& note : one["notes"]) {
    EXPECT_EQ(note.get<std::string>().find("the search splits the layers"), std::string::npos)
        << note;
  }
  // Mixtral 8x7B's 32 layers: pp·vpp divides 34 only where it divides 32 (pp 2) or past the
  // GPUs' divisors (17, 34), so no pipelined layout counts the embedding and the loss.
  r = RunMosaic("perf mixtral-8x7b --hardware h100 --gpus 64 --batch 256 --search --top 100 "
                "--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json mixtral = nlohmann::json::parse(r.out);
  ASSERT_EQ(mixtral["ranked"].size(), 100u);
  for (const auto& row : mixtral["ranked"]) {
    const std::string l = row["layout"].get<std::string>();
    EXPECT_EQ(l.find(",pp=1,"), std::string::npos) << l;  // pipelined, as the best are
    EXPECT_EQ(l.find("pp_embed"), std::string::npos) << l;
  }
}

TEST(PerfCli, AllToAllOverlapIsSearchedOnlyUnderAStackThatRunsIt) {
  const std::string base = "perf olmoe-1b-7b --hardware h100 --gpus 8 --batch 64 ";
  CommandResult r = RunMosaic(base + "--search --top 20 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json megatron = nlohmann::json::parse(r.out)["ranked"];
  ASSERT_FALSE(megatron.empty()) << r.out;
  EXPECT_NE(megatron[0]["layout"].get<std::string>().find("a2a_overlap=1"), std::string::npos)
      << r.out;
  // Marin's JAX stack does not run Megatron-Core's paired overlap: the search leaves it out, and a
  // layout that asks for it is evaluated with a caution.
  r = RunMosaic(base + "--profile marin-gb200 --search --top 20 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json ranked = nlohmann::json::parse(r.out)["ranked"];
  ASSERT_EQ(ranked.size(), 20u);
  for (const auto& c : ranked) {
    EXPECT_EQ(c["layout"].get<std::string>().find("a2a_overlap"), std::string::npos) << c;
  }
  r = RunMosaic(base + "--profile marin-gb200 --layout ep=8,dp=8,a2a_overlap=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: a2a_overlap=1 under the marin-gb200 profile, whose stack does not "
                       "run Megatron-Core's paired all-to-all overlap"),
            std::string::npos)
      << r.out;
  r = RunMosaic(base + "--layout ep=8,dp=8,a2a_overlap=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("paired all-to-all overlap"), std::string::npos) << r.out;
}

// Activation offload through the CLI: the host memory beside the HBM's, the copies and what of
// them is exposed, in text and JSON; a device file without its host link refuses it (exit 1).
TEST(PerfCli, OffloadedActivationsAreShownBesideTheHbm) {
  const std::string base =
      "perf llama3-405b --hardware tpu-v5p --gpus 512 --batch 1024 --seq 8192 ";
  CommandResult r = RunMosaic(base + "--layout fsdp=512,mbs=2,recompute=full,offload_layers=126");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("host memory per GPU     67.65 GB of 112.00 GB (offloaded activations; "
                       "fits)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("activation offload"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over the host link (16 GB/s)"), std::string::npos) << r.out;
  r = RunMosaic(base + "--layout fsdp=512,mbs=2,recompute=full,offload_layers=126 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // 126 layer inputs of 2 × 8192 tokens × 16384 × 2 bytes.
  EXPECT_EQ(j["host_memory"]["activation_bytes"].get<int64_t>(), 67645734912);
  EXPECT_EQ(j["host_memory"]["capacity_bytes"].get<int64_t>(), 112000000000);
  EXPECT_GT(j["time"]["offload_seconds"].get<double>(), 0);
  EXPECT_TRUE(j["fits"].get<bool>());
  // Without offload the same layout is over the HBM, and prints no host lines.
  r = RunMosaic(base + "--layout fsdp=512,mbs=2,recompute=full");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(DOES NOT FIT)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("host memory"), std::string::npos) << r.out;
  r = RunMosaic(base + "--set hardware.host_link_gb_per_s=0 "
                       "--layout fsdp=512,mbs=2,recompute=full,offload_layers=126");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Violated constraint: offload_layers needs the device's host link and "
                       "host memory (host_link_gb_per_s = 0"),
            std::string::npos)
      << r.err;
}

// The offload_layers column of a measured row: MaxText's rows that offload the decoder layer
// input hold it; a value that is no positive integer is refused with its line.
TEST(PerfCli, MeasuredRowsReadTheirOffloadedLayers) {
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/heldout.csv"));
  const std::string header = text.substr(0, text.find('\n') + 1);
  const std::string x1 = text.substr(text.find("\nX1,") + 1);
  const std::string row = x1.substr(0, x1.find('\n'));
  ASSERT_EQ(row.substr(row.rfind(",126,")), ",126,,");  // offload_layers, offload_modules, dispatch
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "mosaic_offload_rows.csv";
  {
    std::ofstream out(path);
    out << header << row << "\n";
  }
  // Held out: predicted with the TPU's uncalibrated defaults.
  const std::string validate =
      "perf validate tests/fixtures/throughput/published.csv --heldout " + path.string();
  CommandResult r = RunMosaic(validate);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("recompute=full,moe_chunk=1,offload_layers=126"), std::string::npos)
      << r.out;
  {
    std::ofstream out(path);
    out << header << row.substr(0, row.rfind(",126,")) << ",-2,,\n";
  }
  r = RunMosaic(validate);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(":2: offload_layers = '-2'. Violated constraint: an integer in [1, "),
            std::string::npos)
      << r.err;
  // The offload_modules column as the layout key writes it (G1: expert_fc1+moe_act).
  r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --heldout "
                "tests/fixtures/throughput/heldout.csv");
  EXPECT_NE(r.out.find("a2a_overlap=1,offload_modules=expert_fc1+moe_act  [TFLOP/s (causal)]"),
            std::string::npos)
      << r.out;
  {
    std::ofstream out(path);
    out << header << row.substr(0, row.rfind(",126,")) << ",,moe_act+fc2,\n";
  }
  r = RunMosaic(validate);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(":2: offload_modules = 'moe_act+fc2'. Violated constraint: module names "
                       "joined by '+'"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

TEST(PerfCli, RowsWhoseTflopsDisagreeWithTheirTokensAreNamed) {
  // Tokens/s is scored; a row's TFLOP/s off what its tokens/s imply at mosaic's causal count
  // by more than 5% is named with the ratio: gpt-oss-120b's Megatron-Bridge rows (M12a, M12b)
  // count 0.83× mosaic's; DeepSeek-V3's 25.11 row (M3) agrees within 1%.
  constexpr double kAgreementTol = 0.01;
  CommandResult r = RunMosaic("perf validate tests/fixtures/throughput/published.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nRows whose TFLOP/s are not what their tokens/s imply at mosaic's FLOPs "
                       "per token in their flop_convention, by more than 5% (tokens/s is scored; "
                       "the source counts FLOPs another way, the convention is the other one, or "
                       "a figure is off): M12a (0.83×), M12b (0.83×)\n"),
            std::string::npos)
      << r.out;
  r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json parsed_rows = nlohmann::json::parse(r.out);
  for (const auto& row : parsed_rows["rows"]) {
    if (row["id"] == "M3") EXPECT_NEAR(row["tflops_over_tokens"].get<double>(), 1, kAgreementTol);
    if (row["id"] == "M13") EXPECT_FALSE(row.contains("tflops_over_tokens"));  // TFLOP/s only
  }
  // "physical", full-square's former name, is taken as a study file takes it.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_physical";
  std::string text = ReadText(SourcePath("tests/fixtures/throughput/published.csv"));
  const size_t m13 = text.find("\nM13,") + 1;
  std::string row = text.substr(m13, text.find('\n', m13) + 1 - m13);
  const size_t first = text.find('\n') + 1;
  // notes, recompute, flop_convention, split, a2a, offload, dispatch
  const std::string tail = ",,,,,,,\n";
  ASSERT_TRUE(row.ends_with(tail)) << row;
  row.replace(row.size() - tail.size(), tail.size(), ",,,full-square,,,,\n");
  const std::string full = WriteTemp(dir, "full.csv", text.substr(0, first) + row);
  row.replace(row.find(",full-square,"), 13, ",physical,");
  const std::string physical = WriteTemp(dir, "physical.csv", text.substr(0, first) + row);
  const CommandResult a = RunMosaic("perf validate " + full + " --json");
  const CommandResult b = RunMosaic("perf validate " + physical + " --json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["rows"], nlohmann::json::parse(b.out)["rows"]);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

TEST(PerfCli, HeldOutRowsTakeTheirDevicesUncalibratedDefaultsByName) {
  // The name validate prints for a device's uncalibrated defaults (generic-h100) is one a
  // held-out row's profile cell takes, as --profile does; an invalid held-out row is left out
  // of the held-out figure, not of the calibration rows' count.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mosaic_generic_row";
  const std::string text = ReadText(SourcePath("tests/fixtures/throughput/heldout.csv"));
  const size_t first = text.find('\n') + 1;
  auto row = [&](const std::string& id) {
    const size_t at = text.find("\n" + id + ",") + 1;
    return text.substr(at, text.find('\n', at) + 1 - at);
  };
  std::string named = row("N27");  // Llama 3 8B on 8 H100, the profile cell the last but three
  const std::string tail = ",,,,\n";
  ASSERT_TRUE(named.ends_with(tail)) << named;
  named.replace(named.size() - tail.size(), tail.size(), ",generic-h100,,,\n");
  std::string invalid = row("Q2");
  invalid.replace(invalid.find(",256,"), 5, ",255,");  // 255 GPUs: pp 8 does not divide them
  const std::string heldout = WriteTemp(dir, "h.csv", text.substr(0, first) + named + invalid);
  CommandResult r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --heldout " +
                              heldout + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["heldout_rows"][0]["profile"], "generic-h100");
  EXPECT_EQ(j["heldout"]["rows"], 1);
  EXPECT_EQ(j["rows_in_figures"], j["in_sample"]["rows"]);
  EXPECT_EQ(j["rows_in_figures"], 41);
  // Another device's uncalibrated defaults are refused, as `mosaic perf --profile` refuses them.
  std::string other = named;
  other.replace(other.find("generic-h100"), 12, "generic-b200");
  const std::string wrong = WriteTemp(dir, "w.csv", text.substr(0, first) + other);
  r = RunMosaic("perf validate tests/fixtures/throughput/published.csv --heldout " + wrong);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("w.csv:2: profile (row N27) = generic-b200. Violated constraint: "
                       "uncalibrated defaults are those of the device run, generic-h100"),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mosaic::testing
