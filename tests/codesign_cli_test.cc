// End-to-end tests of `mosaic codesign`: the shipped example spaces, the MOSAIC comparison, the
// outputs, the HTML page in headless Chromium, and a sweep sharded over MPI ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_support.h"
#include "mosaic/codesign/distributed.h"

namespace mosaic::testing {
namespace {

TEST(CodesignCli, Gb200ExampleShowsTheMosaicEffect) {
  const CommandResult r = RunMosaic("codesign gb200-nvl72-sparsity --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architectures"].size(), 30u);  // 3 widths × 10 expert counts
  // Under the FLOPs-only budget the sparsest architecture wins (the edge of the range); on the
  // rack the sparsest architectures do not fit (their training state exceeds its memory) and the
  // optimum is the sparsest one that does, inside the range.
  EXPECT_FALSE(j["flops_sparsity"]["interior"].get<bool>());
  EXPECT_DOUBLE_EQ(j["flops_sparsity"]["sparsity"].get<double>(),
                   j["flops_sparsity"]["high"].get<double>());
  EXPECT_TRUE(j["cluster_sparsity"]["interior"].get<bool>()) << j["finding"];
  EXPECT_EQ(j["finding"].get<std::string>().rfind("The MOSAIC effect holds", 0), 0u);
  // Along the experts axis both optima take the most experts swept for their model (4096): the
  // rack moves the optimum to a smaller model, which the finding says.
  for (const char* key : {"flops_experts", "cluster_experts"}) {
    EXPECT_EQ(j[key]["experts"].get<double>(), 4096) << key;
    EXPECT_EQ(j[key]["high"].get<double>(), 4096) << key;
    EXPECT_FALSE(j[key]["interior"].get<bool>()) << key;
  }
  EXPECT_NE(j["finding"].get<std::string>().find("the cluster moves the optimum to another model "
                                                 "size, not to fewer experts"),
            std::string::npos)
      << j["finding"];
}

TEST(CodesignCli, TextCsvAndHtml) {
  const CommandResult text = RunMosaic("codesign h100-sparsity --quiet");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Best under the cluster budget"), std::string::npos);
  EXPECT_NE(text.out.find("Best loss per routed-expert count"), std::string::npos);
  const CommandResult csv = RunMosaic("codesign h100-sparsity --csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(CountOf(csv.out, "\n"), 1u + 18u);  // header + 2 widths × 9 expert counts
  // Byte counts are whole, and each architecture's peak is the JSON's (the sum of its rounded
  // parts).
  const CommandResult json = RunMosaic("codesign h100-sparsity --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  std::vector<std::string> peaks;
  for (const auto& a : parsed["architectures"]) {
    if (a.contains("estimate")) {
      peaks.push_back(std::to_string(a["estimate"]["memory"]["peak_bytes"].get<int64_t>()));
    }
  }
  ASSERT_FALSE(peaks.empty());
  size_t found = 0;
  for (const std::string& peak : peaks) found += csv.out.find("," + peak + ",") != std::string::npos;
  EXPECT_EQ(found, peaks.size()) << csv.out;

  const std::string page =
      ::testing::TempDir() + "codesign_" + std::to_string(::getpid()) + ".html";
  ASSERT_EQ(RunMosaic("codesign gb200-nvl72-sparsity --html " + page).exit_code, 0);
  const RenderedPage rendered = RenderInChromium(page);
  ASSERT_EQ(rendered.exit_code, 0) << rendered.log;
  EXPECT_EQ(CountOf(rendered.dom, "<svg"), 2u);
  EXPECT_NE(rendered.dom.find("id=\"verdict\""), std::string::npos);
  EXPECT_NE(rendered.dom.find("Predicted loss against sparsity"), std::string::npos);
  EXPECT_EQ(rendered.log.find("CONSOLE"), std::string::npos) << rendered.log;
  std::filesystem::remove(page);
}

// `mpirun -n 2 ` with the options that start it here (loopback only, as root where tests run as
// root, oversubscribing the cores), from the source folder; empty, with the reason in `why`, when
// mosaic was built without MPI or the machine cannot start two ranks of anything (no shared
// memory, a locked-down container): such a machine cannot run a comparison.
std::string Mpirun(std::string* why) {
  if (!BuiltWithMpi()) {
    *why = "mosaic was built without MPI (libopenmpi-dev)";
    return "";
  }
  EXPECT_EQ(access("/usr/bin/mpirun", X_OK), 0) << "MPI is built in but mpirun is missing";
  // Under AddressSanitizer (--preset debug) the ranks' leak check is off: it reports OpenMPI's own
  // allocations at exit (ompi_op_base_op_select and the components it loads), not mosaic's, whose
  // leaks the one-process runs check. Without the sanitizer the variable is ignored.
  const std::string mpirun =
      "cd '" + std::string(MOSAIC_SOURCE_DIR) +
      "' && ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated "
      "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 "
      "timeout 300 mpirun -n 2 --oversubscribe --mca btl self,vader ";
  if (std::system((mpirun + "true > /dev/null 2>&1").c_str()) != 0) {
    *why = "mpirun cannot start two ranks here";
    return "";
  }
  return mpirun;
}

// `mpirun -n 2` gives each rank half of the architectures; rank 0 gathers and prints exactly what
// one process prints. Skipped only when mosaic was built without MPI.
TEST(CodesignCli, MpiRanksGiveTheSameOutputAsOneProcess) {
  std::string why;
  const std::string mpirun = Mpirun(&why);
  if (mpirun.empty()) GTEST_SKIP() << why;
  const CommandResult one = RunMosaic("codesign gb200-nvl72-sparsity --json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string command =
      mpirun + "'" + std::string(MOSAIC_BINARY) + "' codesign gb200-nvl72-sparsity --json > '" +
      ::testing::TempDir() + "mpi_out.json' 2> '" + ::testing::TempDir() + "mpi_err.txt'";
  const int status = std::system(command.c_str());
  ASSERT_EQ(status, 0) << ReadText(::testing::TempDir() + "mpi_err.txt");
  EXPECT_EQ(ReadText(::testing::TempDir() + "mpi_out.json"), one.out);
}

// An input error every rank meets is printed once, by rank 0, and the job fails.
TEST(CodesignCli, MpiRanksPrintAnInputErrorOnce) {
  std::string why;
  const std::string mpirun = Mpirun(&why);
  if (mpirun.empty()) GTEST_SKIP() << why;
  const std::string err = ::testing::TempDir() + "mpi_error.txt";
  const std::string command = mpirun + "'" + std::string(MOSAIC_BINARY) +
                              "' codesign gb200-sparsity > /dev/null 2> '" + err + "'";
  EXPECT_NE(std::system(command.c_str()), 0);
  const std::string text = ReadText(err);
  const std::string message = "mosaic: error: unknown space 'gb200-sparsity'";
  const size_t first = text.find(message);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(message, first + 1), std::string::npos) << text;
  EXPECT_EQ(text.find("rank 1 of 2"), std::string::npos) << text;
}

// Ranks that load different spaces (another file on one node, or one edited during the launch)
// would mix their shares into rank 0's report: rank 0 refuses, naming the rank, and the job fails.
TEST(CodesignCli, MpiRanksOfAnotherSpaceAreRefused) {
  std::string why;
  std::string mpirun = Mpirun(&why);
  if (mpirun.empty()) GTEST_SKIP() << why;
  mpirun.replace(mpirun.find("mpirun -n 2"), 11, "mpirun -n 1");
  const std::string binary = "'" + std::string(MOSAIC_BINARY) + "' codesign ";
  const std::string err = ::testing::TempDir() + "mpi_mixed.txt";
  const std::string command = mpirun + binary + "h100-sparsity --csv : -n 1 " + binary +
                              "gb200-nvl72-sparsity --csv > /dev/null 2> '" + err + "'";
  EXPECT_NE(std::system(command.c_str()), 0);
  const std::string text = ReadText(err);
  EXPECT_NE(text.find("mosaic: error: rank 1 of 2 loaded another space than rank 0's "
                      "(data/spaces/h100-sparsity.toml"),
            std::string::npos)
      << text;
}

// A device file the space names is an input too: --output and --html over it are refused, and it
// is found beside the space file.
TEST(CodesignCli, AnOutputOverTheDeviceFileIsRefused) {
  const std::filesystem::path dir =
      ::testing::TempDir() + "codesign_device_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(SourcePath("data/hardware/h100.toml"), dir / "my-h100.toml");
  std::string space = ReadText(SourcePath("data/spaces/h100-sparsity.toml"));
  const size_t at = space.find("hardware = \"h100\"");
  ASSERT_NE(at, std::string::npos) << space;
  space.replace(at, std::string("hardware = \"h100\"").size(), "hardware = \"my-h100.toml\"");
  {
    std::ofstream f(dir / "space.toml");
    f << space;
  }
  const std::string device = (dir / "my-h100.toml").string();
  for (const std::string flag : {"--output", "--html"}) {
    const CommandResult r =
        RunMosaic("codesign " + (dir / "space.toml").string() + " " + flag + " " + device);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(flag + " = " + device + ". Violated constraint: not one of the "
                         "command's input files"),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(ReadText(device), ReadText(SourcePath("data/hardware/h100.toml")));
  // The report names the device, not the file it was read from.
  const CommandResult r = RunMosaic("codesign " + (dir / "space.toml").string() + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" — 256 × h100 (megatron-h100 profile, calibrated on h100)\n"),
            std::string::npos)
      << r.out.substr(0, 300);
  std::filesystem::remove_all(dir);
}

// The report says which performance profile ranked the layouts, and, as perf does, when it is
// another device's.
TEST(CodesignCli, TheReportNamesTheProfileItUsed) {
  const std::filesystem::path dir =
      ::testing::TempDir() + "codesign_profile_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string space = ReadText(SourcePath("data/spaces/h100-sparsity.toml"));
  const size_t at = space.find("hardware = \"h100\"");
  ASSERT_NE(at, std::string::npos) << space;
  space.replace(at, std::string("hardware = \"h100\"").size(), "hardware = \"h200\"");
  {
    std::ofstream f(dir / "space.toml");
    f << space;
  }
  const CommandResult r = RunMosaic("codesign " + (dir / "space.toml").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json profile = nlohmann::json::parse(r.out)["profile"];
  EXPECT_EQ(profile["name"], "megatron-h100");
  EXPECT_EQ(profile["calibration"], "calibrated on h100");
  ASSERT_EQ(profile["notes"].size(), 1u);
  EXPECT_EQ(profile["notes"][0], "no profile is calibrated on h200; using megatron-h100, "
                                 "calibrated on its closest calibrated sibling h100");
  const CommandResult text = RunMosaic("codesign " + (dir / "space.toml").string() + " --quiet");
  EXPECT_NE(text.out.find("note: no profile is calibrated on h200"), std::string::npos)
      << text.out.substr(0, 400);
  std::filesystem::remove_all(dir);
}

// A study given to codesign, and a space given to decide or plan, are named for what they are
// (it was "unknown key 'axes' (did you mean 'arms'?)").
TEST(CodesignCli, AStudyAndASpaceAreToldApart) {
  const std::string space = SourcePath("data/spaces/h100-sparsity.toml");
  const std::string study = SourcePath("data/studies/fsdp-vs-ep.toml");
  CommandResult r = RunMosaic("codesign " + study);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("[[rungs]] and no [axes]: this is a study"), std::string::npos) << r.err;
  for (const std::string command : {"decide ", "plan "}) {
    r = RunMosaic(command + space);
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.err.find("[axes] and no [[rungs]]: this is a co-design space"), std::string::npos)
        << command << r.err;
  }
}

TEST(CodesignCli, UnknownSpaceSuggestsAName) {
  const CommandResult r = RunMosaic("codesign gb200-sparsity");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown space 'gb200-sparsity'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gb200-nvl72-sparsity"), std::string::npos);
}

}  // namespace
}  // namespace mosaic::testing
