#include "mosaic/util/atomic_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

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

// A rename needs only the directory's permission: a read-only file was replaced (and changed
// owner) though open(2) would have refused to write it.
TEST_F(AtomicFile, AFileTheUserMayNotWriteIsRefusedAndKept) {
  if (geteuid() == 0) GTEST_SKIP() << "permissions do not stop root from writing";
  const std::string path = (dir_ / "read_only.txt").string();
  WriteFileAtomically(path, "kept");
  fs::permissions(path, fs::perms::owner_read);
  try {
    WriteFileAtomically(path, "replaced");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write " + path + ": Permission denied"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(ReadFile(path), "kept");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
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

TEST_F(AtomicFile, WritesIntoTheProcesssOwnDescriptorsAsTheyAre) {
  // /dev/fd/N (and /dev/stdout, /proc/self/fd/N) name a descriptor the process holds: a pipe
  // here, which a path-based replace could never reach. It is written, and left open.
  int ends[2];
  ASSERT_EQ(pipe(ends), 0);
  const std::string path = "/dev/fd/" + std::to_string(ends[1]);
  {
    AtomicFileWriter writer(path);
    writer.Write("piped ");
    writer.Write("text");
    writer.Commit();
  }
  ASSERT_EQ(write(ends[1], "!", 1), 1);  // still open
  close(ends[1]);
  char buffer[64] = {};
  const ssize_t n = read(ends[0], buffer, sizeof buffer);
  close(ends[0]);
  EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0), "piped text!");
}

TEST_F(AtomicFile, ADanglingSymlinkIsFollowedToTheFileItNames) {
  fs::create_directories(dir_ / "sub");
  const fs::path link = dir_ / "dangling.csv";
  fs::create_symlink("sub/not_yet.csv", link);
  WriteFileAtomically(link.string(), "created");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(ReadFile((dir_ / "sub" / "not_yet.csv").string()), "created");
}

TEST_F(AtomicFile, ALongFileNameIsWritable) {
  // 250 bytes: within the 255 a name may have, although name + ".tmp.XXXXXX" is not.
  const std::string path = (dir_ / std::string(250, 'n')).string();
  WriteFileAtomically(path, "long");
  EXPECT_EQ(ReadFile(path), "long");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(AtomicFile, ASignalWhileWritingLeavesTheTargetAndNoTemporaryFile) {
  const std::string path = (dir_ / "out.csv").string();
  WriteFileAtomically(path, "old");
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      AtomicFileWriter writer(path);
      writer.Write("half of the rows");
      raise(signal_number);
      _exit(0);  // not reached
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal_number) << signal_number;
    EXPECT_EQ(ReadFile(path), "old");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  }
}

TEST_F(AtomicFile, ReadingADirectoryIsAnError) {
  try {
    ReadFile(dir_.string());
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "cannot read " + dir_.string() + ": Is a directory");
  }
}


// A device has no end (/dev/zero would be read until memory ran out): refused by name. A pipe
// (process substitution) ends when its writer closes it, and is read, up to a cap.
TEST_F(AtomicFile, ReadingADeviceIsAnErrorAndAPipeIsReadUpToItsCap) {
  try {
    ReadFile("/dev/zero");
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "cannot read /dev/zero: not a regular file (a device)");
  }
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    const int fd = open(fifo.c_str(), O_WRONLY);
    const ssize_t n = write(fd, "piped", 5);
    _exit(n == 5 ? 0 : 1);
  }
  EXPECT_EQ(ReadFile(fifo.string()), "piped");
  int status = 0;
  ASSERT_EQ(waitpid(writer, &status, 0), writer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // A pipe that goes on past the cap (an endless writer) is refused, not read into memory.
  const pid_t endless = fork();
  ASSERT_GE(endless, 0);
  if (endless == 0) {
    signal(SIGPIPE, SIG_DFL);
    const int fd = open(fifo.c_str(), O_WRONLY);
    const std::string chunk(4096, 'z');
    for (int i = 0; i < 64; ++i) {
      if (write(fd, chunk.data(), chunk.size()) < 0) break;
    }
    _exit(0);
  }
  try {
    ReadFile(fifo.string(), 1000);
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "cannot read " + fifo.string() +
                                             ": a pipe of more than 1000 bytes (write it to a "
                                             "file first)");
  }
  ASSERT_EQ(waitpid(endless, &status, 0), endless);
}
}  // namespace
}  // namespace mosaic
