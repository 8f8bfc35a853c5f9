#include "mosaic/util/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "mosaic/util/error.h"

namespace mosaic {
namespace {

namespace fs = std::filesystem;

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("mosaic_atomic_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AtomicFile, WritesAndReplacesWhole) {
  const std::string path = (dir_ / "out.txt").string();
  WriteFileAtomically(path, "first");
  WriteFileAtomically(path, "second");
  EXPECT_EQ(ReadFile(path), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(AtomicFile, KeepsPermissionsOfAnExistingFile) {
  const std::string path = (dir_ / "private.txt").string();
  WriteFileAtomically(path, "x");
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  WriteFileAtomically(path, "y");
  EXPECT_EQ(fs::status(path).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST_F(AtomicFile, ReplacesTheTargetOfASymlinkAndKeepsTheLink) {
  const fs::path target = dir_ / "target.txt";
  const fs::path link = dir_ / "link.txt";
  WriteFileAtomically(target.string(), "old");
  fs::create_symlink(target, link);
  WriteFileAtomically(link.string(), "new");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadFile(target.string()), "new");
}

TEST_F(AtomicFile, WritesIntoDevicesInsteadOfReplacingThem) {
  WriteFileAtomically("/dev/null", "discarded");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(AtomicFile, DirectoryIsAnErrorAndNothingIsLeft) {
  EXPECT_THROW(WriteFileAtomically(dir_.string(), "x"), InputError);
  EXPECT_THROW(WriteFileAtomically((dir_ / "missing" / "x.txt").string(), "x"), InputError);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 0);
}

TEST_F(AtomicFile, WriterAppendsPiecesAndShowsNothingBeforeCommit) {
  const std::string path = (dir_ / "out.csv").string();
  WriteFileAtomically(path, "old");
  {
    AtomicFileWriter writer(path);
    writer.Write("a,b\n");
    writer.Write("1,2\n");
    EXPECT_EQ(ReadFile(path), "old");
    writer.Commit();
  }
  EXPECT_EQ(ReadFile(path), "a,b\n1,2\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(AtomicFile, WriterAbandonedBeforeCommitLeavesTheTargetAndNoTemporaryFile) {
  const std::string path = (dir_ / "out.csv").string();
  WriteFileAtomically(path, "old");
  try {
    AtomicFileWriter writer(path);
    writer.Write("half of the rows");
    throw InputError("a failure while exporting");
  } catch (const InputError&) {
  }
  EXPECT_EQ(ReadFile(path), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(AtomicFile, ReadingADirectoryIsAnError) {
  try {
    ReadFile(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "cannot read " + dir_.string() + ": Is a directory");
  }
}

}  // namespace
}  // namespace mosaic
