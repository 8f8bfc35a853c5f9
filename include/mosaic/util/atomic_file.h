// Output files are written whole or not at all: the content goes to a temporary file in the same
// directory, which is then renamed over the target (rename is atomic on POSIX file systems).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mosaic {

// A file written whole or not at all, piece by piece (an output too large to hold in memory):
// the pieces go to a temporary file beside `path`, renamed over it by Commit(). A writer destroyed
// before Commit() (an error, an exception), or a process ended by SIGINT, SIGTERM or SIGHUP while
// it writes, removes the temporary file and leaves `path` as it was. Written in place instead: a
// device or pipe (/dev/null, a FIFO), and the process's own descriptors (/dev/stdout,
// /dev/stderr, /dev/fd/N, /proc/self/fd/N: a pipe, or a file the shell opened for appending).
// Symlinks are followed, dangling ones too, so that the target is created or replaced and the
// link kept.
class AtomicFileWriter {
 public:
  // Throws InputError naming the path and the system error when the temporary file cannot be
  // created (a missing or unwritable directory, `path` a directory).
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends `piece`. Throws InputError naming the path and the system error (a full disk).
  void Write(std::string_view piece);
  // Gives the file an existing target's permissions (or 0666 less the umask), syncs it and renames
  // it over the target. Throws InputError as Write does; the target is then left untouched.
  void Commit();

 private:
  std::string requested_path_;  // as given, for messages
  std::string path_;            // the target, a symlink resolved
  std::string temporary_;       // empty when writing in place
  int fd_ = -1;
  bool own_descriptor_ = false;  // one of the process's own descriptors: never closed
  unsigned mode_ = 0;
  bool committed_ = false;
};

// Writes `content` to `path` atomically. Throws InputError naming the path and the system error
// when the directory is not writable or the write fails; the target is then left untouched.
void WriteFileAtomically(const std::string& path, std::string_view content);

// The most a pipe given as a file (a process substitution, /dev/stdin) is read: 1 GiB.
inline constexpr int64_t kMaxPipeBytes = int64_t{1} << 30;

// Reads the whole file at `path` (a regular file, or a pipe of at most `max_pipe_bytes`). Throws
// InputError naming the path when it cannot be read, is a directory, is a device or a socket
// (which have no end), or is a pipe that goes on past `max_pipe_bytes`.
std::string ReadFile(const std::string& path, int64_t max_pipe_bytes = kMaxPipeBytes);

}  // namespace mosaic
