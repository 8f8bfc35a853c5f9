// End-to-end tests of `mosaic model` and of the command-line contract (exit codes, did-you-mean).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_support.h"

namespace mosaic::testing {
namespace {

TEST(Cli, UnknownSubcommandSuggestsClosest) {
  CommandResult r = RunMosaic("modle mixtral-8x7b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown subcommand 'modle' (did you mean 'model'?)"), std::string::npos)
      << r.err;
}

TEST(Cli, HelpShowsExamples) {
  CommandResult r = RunMosaic("model --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("mosaic model marin-ladder --set d_model=2048"), std::string::npos);
}

TEST(ModelCli, JsonHasExactTotals) {
  CommandResult r = RunMosaic("model marin-hero-fsdp --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["total_params"].get<int64_t>(), 359'643'629'568);
  EXPECT_EQ(j["active_params"].get<int64_t>(), 22'622'914'560);
}

TEST(ModelCli, TokensAndNotesAreInTheJsonToo) {
  // The text's "6·N·D" total was missing from the JSON; --tokens 0 printed nothing and exited 0.
  CommandResult r = RunMosaic("model llama3-8b --tokens 15e12 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"].get<double>(), 15e12);
  EXPECT_EQ(j["six_n_train_flops"].get<double>(),
            static_cast<double>(j["six_n_flops_per_token"].get<int64_t>()) * 15e12);
  EXPECT_TRUE(j["notes"].empty());
  r = RunMosaic("model llama3-8b --tokens 0");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  r = RunMosaic("model gpt-oss-120b --set sliding_window=0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: global_every = 2 has no effect: every layer is global without a "
                       "sliding_window\n"),
            std::string::npos)
      << r.out;
}

TEST(ModelCli, SetOverridesAndDerives) {
  CommandResult r = RunMosaic("model marin-ladder --set d_model=1024 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["active_params_matmul_no_embedding"].get<int64_t>(), 145'489'920);
  EXPECT_EQ(j["derivation"][0].get<std::string>(),
            "layers = 12 (round(1024 / (64 + 4·log2 1024 − 9)) = round(10.78) = 11, bumped to "
            "even)");
}

TEST(ModelCli, UnknownPresetSuggestsClosest) {
  CommandResult r = RunMosaic("model mixtral-8x7");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown model preset 'mixtral-8x7' (did you mean 'mixtral-8x7b'?)"),
            std::string::npos)
      << r.err;
}

TEST(ModelCli, UnknownSetFieldSuggestsClosest) {
  CommandResult r = RunMosaic("model mixtral-8x7b --set topk=3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: --set topk=3: unknown model field 'topk' (did you mean 'top_k'?)\n");
}

TEST(ModelCli, TopKAboveExpertsNamesFieldValueAndRule) {
  CommandResult r = RunMosaic("model mixtral-8x7b --set top_k=9");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: --set top_k=9: top_k = 9. Violated constraint: 1 <= top_k <= experts "
            "(8)\n");
}

TEST(ModelCli, DModelNotDivisibleByHeads) {
  CommandResult r = RunMosaic("model mixtral-8x7b --set d_model=4100");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: --set d_model=4100: d_model = 4100. Violated constraint: d_model "
            "divisible by heads (32) when head_dim is not set\n");
}

TEST(ModelCli, NegativeCount) {
  CommandResult r = RunMosaic("model olmoe-1b-7b --set shared_experts=-1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: --set shared_experts=-1: shared_experts = -1. Violated constraint: "
            "shared_experts >= 0\n");
}

TEST(ModelCli, TomlSyntaxErrorShowsFileLineColumnAndLine) {
  CommandResult r = RunMosaic("model tests/fixtures/bad/syntax_error.toml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: tests/fixtures/bad/syntax_error.toml:3:11: TOML syntax error: "
            "Error while parsing key-value pair: expected value, saw '\\n'\n"
            "  d_model = \n"
            "            ^\n");
}

TEST(ModelCli, TomlValueErrorPointsAtTheField) {
  CommandResult r = RunMosaic("model tests/fixtures/bad/top_k_above_experts.toml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: tests/fixtures/bad/top_k_above_experts.toml:9:9: top_k = 12. Violated "
            "constraint: 1 <= top_k <= experts (8)\n"
            "  top_k = 12\n"
            "          ^\n");
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

TEST(ModelCli, MissingModelIsAUsageError) {
  CommandResult r = RunMosaic("model");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "mosaic model: name a preset or a CONFIG.toml (see mosaic model --list)\nRun 'mosaic "
            "model --help' for its flags.\n");
  // --list lists every preset; a model beside it was silently ignored.
  r = RunMosaic("model mixtral-8x7b --list");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--list lists every preset: give it without a model (mixtral-8x7b)"),
            std::string::npos)
      << r.err;
}

// A repeatable flag takes one value each time: the positional argument after it stays the
// positional argument.
TEST(ModelCli, RepeatableFlagTakesOneValue) {
  CommandResult before = RunMosaic("model --set top_k=3 --set experts=16 mixtral-8x7b --json");
  CommandResult after = RunMosaic("model mixtral-8x7b --set top_k=3 --set experts=16 --json");
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.out, after.out);
  EXPECT_NE(before.out.find("\"top_k=3\""), std::string::npos) << before.out;
  EXPECT_NE(before.out.find("\"experts=16\""), std::string::npos) << before.out;
  // Two values after one --set: the second is not a value of --set.
  CommandResult two = RunMosaic("model --set top_k=3 experts=16 mixtral-8x7b");
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_EQ(two.err,
            "mosaic model: unexpected argument 'mixtral-8x7b'\n"
            "Run 'mosaic model --help' for its flags.\n");
  CommandResult perf = RunMosaic(
      "perf --set top_k=1 mixtral-8x7b --hardware h100 --gpus 8 --batch 8 --layout dp=8 --json");
  EXPECT_EQ(perf.exit_code, 0) << perf.err;
}

// The argument parser's errors read like mosaic's others: the command, what is wrong, the rule.
TEST(ModelCli, UsageErrorsInOneVoice) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "mosaic: name a subcommand (model, plan, perf, fit, runs, decide, codesign)\n"
           "Run 'mosaic --help' for the subcommands.\n"},
      {"runs", "mosaic runs: LOGDIR is required (name at least one log directory)\n"
               "Run 'mosaic runs --help' for its flags.\n"},
      {"runs --restarts first --restarts last logs",
       "mosaic runs: --restarts is given 2 times. Violated constraint: --restarts is given at "
       "most once\nRun 'mosaic runs --help' for its flags.\n"},
      {"model mixtral-8x7b extra",
       "mosaic model: unexpected argument 'extra'\nRun 'mosaic model --help' for its flags.\n"},
      {"plan --bogus", "mosaic plan: unknown option '--bogus'\nRun 'mosaic plan --help' for its "
                       "flags.\n"},
      {"model --seq 0 mixtral-8x7b",
       "mosaic model: --seq = 0. Violated constraint: 1 <= --seq <= 1073741824\n"
       "Run 'mosaic model --help' for its flags.\n"},
      {"perf mixtral-8x7b --gpus",
       "mosaic perf: --gpus needs a value (GPU count)\nRun 'mosaic perf --help' for its flags.\n"},
      {"fit", "mosaic fit: DATA is required (CSV file of runs)\nRun 'mosaic fit --help' for its "
              "flags.\n"},
      {"runs compare",
       "mosaic runs compare: RUN_A is required (the reference run (directory or file))\n"
       "Run 'mosaic runs compare --help' for its flags.\n"},
  };
  for (const auto& [arguments, message] : cases) {
    CommandResult r = RunMosaic(arguments);
    EXPECT_EQ(r.exit_code, 2) << arguments;
    EXPECT_EQ(r.err, message) << arguments;
  }
}

TEST(ModelCli, MisspelledOptionSuggestsClosest) {
  CommandResult r = RunMosaic("model --jsn mixtral-8x7b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("mosaic model: unknown option '--jsn' (did you mean '--json'?)"),
            std::string::npos)
      << r.err;
}

TEST(ModelCli, PathThatDoesNotExistIsNotAPreset) {
  CommandResult r = RunMosaic("model ./no-such-model.toml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mosaic: error: cannot read ./no-such-model.toml: No such file or directory\n");
}

// Counts that would overflow 64 bits are errors, never negative numbers.
TEST(ModelCli, OverflowIsAnError) {
  CommandResult r = RunMosaic("model marin-ladder --set d_model=12800000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("does not fit in 64 bits"), std::string::npos) << r.err;
  r = RunMosaic("model mixtral-8x7b --set layers=4000000000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "mosaic: error: --set layers=4000000000: layers = 4000000000. Violated constraint: "
            "layers <= 1048576\n");
}

TEST(ModelCli, ListAndFieldsHaveJson) {
  CommandResult r = RunMosaic("model --list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json list = nlohmann::json::parse(r.out);
  EXPECT_EQ(list.size(), 16u);
  r = RunMosaic("model --fields --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["name"].get<std::string>(), "name");
}

}  // namespace
}  // namespace mosaic::testing

namespace mosaic::testing {
namespace {

// A model file in a folder named in Latin-1: its origin reaches the JSON as U+FFFD.
TEST(ModelCli, FileNamedInLatin1GivesValidJson) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_mod\xE8le_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path model = dir / "tiny.toml";
  fs::copy_file(SourcePath("tests/fixtures/studies/tiny_model.toml"), model);
  CommandResult r = RunMosaic("model '" + model.string() + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(nlohmann::json::parse(r.out)["origin"].get<std::string>().find("mod\xEF\xBF\xBDle"),
            std::string::npos);
  fs::remove_all(dir);
}

// Writing the output over the model file (however spelled) is refused, the file untouched.
TEST(ModelCli, OutputOverTheModelFileIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("mosaic_model_own_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path model = dir / "tiny.toml";
  fs::copy_file(SourcePath("tests/fixtures/studies/tiny_model.toml"), model);
  const std::string before = ReadText(model.string());
  CommandResult r = RunMosaic("model '" + model.string() + "' --output '" +
                              (dir / ".." / dir.filename() / "tiny.toml").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not one of the command's input files"), std::string::npos) << r.err;
  EXPECT_EQ(ReadText(model.string()), before);
  fs::remove_all(dir);
}

TEST(ModelCli, TokensMustBeANumberInRange) {
  for (const char* tokens : {"nan", "-1", "0", "1e31"}) {
    CommandResult r = RunMosaic(std::string("model mixtral-8x7b --tokens ") + tokens);
    EXPECT_EQ(r.exit_code, 2) << tokens;
    EXPECT_NE(r.err.find("--tokens = " + std::string(tokens) +
                         ". Violated constraint: --tokens in (0, 1e+30]"),
              std::string::npos)
        << r.err;
  }
}

// A whole number written as a float is shown as written (24.0), so that "layers is of type
// integer" explains itself.
TEST(ModelCli, AnIntegerWrittenAsAFloatIsShownAsWritten) {
  const std::filesystem::path file =
      std::filesystem::path(::testing::TempDir()) / ("float_layers_" + std::to_string(getpid()) + ".toml");
  std::string text = ReadText(SourcePath("data/models/mixtral-8x7b.toml"));
  const size_t at = text.find("\nlayers = 32\n");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 13, "\nlayers = 32.0\n");
  std::ofstream(file) << text;
  CommandResult r = RunMosaic("model " + file.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("layers = 32.0. Violated constraint: layers is of type integer"),
            std::string::npos)
      << r.err;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace mosaic::testing
