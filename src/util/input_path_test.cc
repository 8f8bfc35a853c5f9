#include "mosaic/util/input_path.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mosaic/util/error.h"

namespace mosaic {
namespace {

class InputPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mosaic-input-path-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "study");
    std::ofstream(dir_ / "study" / "results.csv") << "arm,loss\n";
    std::ofstream(dir_ / "cwd-only.csv") << "arm,loss\n";
    previous_ = std::filesystem::current_path();
    std::filesystem::current_path(dir_);
  }
  void TearDown() override {
    std::filesystem::current_path(previous_);
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::filesystem::path previous_;
};

TEST_F(InputPathTest, RelativePathIsFoundBesideTheFileThatNamesIt) {
  EXPECT_EQ(ResolveBeside("results.csv", "study/study.toml"), "study/results.csv");
  EXPECT_EQ(ResolveBeside("../study/results.csv", "study/study.toml"), "study/results.csv");
}

TEST_F(InputPathTest, FallsBackToTheWorkingDirectoryThenNamesThePlaceBeside) {
  EXPECT_EQ(ResolveBeside("cwd-only.csv", "study/study.toml"), "cwd-only.csv");
  EXPECT_EQ(ResolveBeside("missing.csv", "study/study.toml"), "study/missing.csv");
}

TEST_F(InputPathTest, AbsoluteAndOriginWithoutFolderAreKept) {
  EXPECT_EQ(ResolveBeside("/abs/x.csv", "study/study.toml"), "/abs/x.csv");
  EXPECT_EQ(ResolveBeside("./results.csv", "study.toml"), "results.csv");
}

TEST_F(InputPathTest, EmbeddedPresetsResolveAndReadAmongTheEmbeddedFiles) {
  const std::string path = ResolveBeside("fsdp-vs-ep-results.csv", "data/studies/fsdp-vs-ep.toml");
  EXPECT_EQ(path, "data/studies/fsdp-vs-ep-results.csv");
  EXPECT_FALSE(ReadInputOrEmbedded(path).empty());
  EXPECT_EQ(ReadInputOrEmbedded("study/results.csv"), "arm,loss\n");
  EXPECT_THROW(ReadInputOrEmbedded("data/studies/none.csv"), InputError);
}

}  // namespace
}  // namespace mosaic
