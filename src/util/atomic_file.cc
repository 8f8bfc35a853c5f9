#include "mosaic/util/atomic_file.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "mosaic/util/error.h"
#include "mosaic/util/terminal_text.h"

namespace mosaic {

namespace {

InputError WriteError(const std::string& path, int error) {
  return InputError("cannot write " + Printable(path) + ": " + std::strerror(error));
}

// Writes all of `content` to `fd`; returns 0 or the errno of the failure.
int WriteAll(int fd, std::string_view content) {
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t written = write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  return 0;
}

// The temporary files of writers not yet committed (the first 16 at once), which a SIGINT,
// SIGTERM or SIGHUP removes before the process dies of it (unlink is async-signal-safe; the slots
// are lock-free atomics).
constexpr int kPendingSlots = 16;
std::atomic<const char*> g_pending[kPendingSlots];

void RemovePendingAndDie(int signal_number) {
  for (std::atomic<const char*>& slot : g_pending) {
    if (const char* path = slot.load()) unlink(path);
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// Installs RemovePendingAndDie for the signals whose action is still the default (an ignored
// signal, or one the program handles itself, is left alone).
void InstallSignalCleanupOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction current {};
      if (sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) {
        continue;
      }
      struct sigaction action {};
      action.sa_handler = RemovePendingAndDie;
      sigemptyset(&action.sa_mask);
      sigaction(signal_number, &action, nullptr);
    }
  });
}

void Track(const char* path) {
  for (std::atomic<const char*>& slot : g_pending) {
    const char* empty = nullptr;
    if (slot.compare_exchange_strong(empty, path)) return;
  }
}

void Untrack(const char* path) {
  for (std::atomic<const char*>& slot : g_pending) {
    const char* expected = path;
    if (slot.compare_exchange_strong(expected, nullptr)) return;
  }
}

// The process's own descriptor a path names (/dev/stdout, /dev/stderr, /dev/fd/N,
// /proc/self/fd/N), which is written as it is (a pipe, a terminal, a file opened for appending);
// -1 for any other path.
int OwnDescriptor(std::string_view path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!path.starts_with(prefix)) continue;
    const std::string_view digits = path.substr(prefix.size());
    int fd = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), fd);
    if (ec == std::errc() && end == digits.data() + digits.size() && fd >= 0) return fd;
  }
  return -1;
}

// `path` with every symlink on its last component followed, whether or not the final target
// exists yet (a dangling link names the file to create). Throws ELOOP after 40 links.
std::string FollowLinks(const std::string& path) {
  std::filesystem::path p = path;
  std::error_code ec;
  for (int hops = 0; std::filesystem::is_symlink(p, ec); ++hops) {
    if (hops == 40) throw WriteError(path, ELOOP);
    const std::filesystem::path target = std::filesystem::read_symlink(p, ec);
    if (ec) throw WriteError(path, ec.value());
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p.string();
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(const std::string& requested_path)
    : requested_path_(requested_path), path_(requested_path) {
  const int own = OwnDescriptor(requested_path);
  if (own >= 0) {
    // Whatever stdio holds for it goes first.
    std::fflush(stdout);
    std::fflush(stderr);
    fd_ = own;
    own_descriptor_ = true;
    return;
  }
  path_ = FollowLinks(requested_path);
  struct stat existing;
  const bool exists = stat(path_.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode)) throw WriteError(requested_path, EISDIR);
  if (exists && !S_ISREG(existing.st_mode)) {
    // Devices and pipes cannot be replaced: written into.
    fd_ = open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw WriteError(requested_path, errno);
    return;
  }
  // A file the user may not write is not replaced behind its back (a rename needs only the
  // directory's permission): refused as open(2) would refuse it.
  if (exists && access(path_.c_str(), W_OK) != 0) throw WriteError(requested_path, errno);
  // Keep an existing file's permissions; a new file gets 0666 less the umask, like open(2).
  if (exists) {
    mode_ = existing.st_mode & 07777;
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    mode_ = 0666 & ~mask;
  }
  // The temporary file beside the target; a long name is shortened so that the temporary one
  // stays within the 255 bytes a name may have.
  const std::filesystem::path target(path_);
  std::string name = target.filename().string();
  if (name.size() > 200) name.resize(200);
  std::string pattern = (target.parent_path() / (name + ".tmp.XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  InstallSignalCleanupOnce();
  fd_ = mkstemp(buffer.data());
  if (fd_ < 0) throw WriteError(requested_path, errno);
  temporary_ = buffer.data();
  Track(temporary_.c_str());
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0 && !own_descriptor_) close(fd_);
  if (!committed_ && !temporary_.empty()) {
    unlink(temporary_.c_str());
    Untrack(temporary_.c_str());
  }
}

void AtomicFileWriter::Write(std::string_view piece) {
  const int error = fd_ < 0 ? EBADF : WriteAll(fd_, piece);
  if (error != 0) throw WriteError(requested_path_, error);
}

void AtomicFileWriter::Commit() {
  int error = fd_ < 0 ? EBADF : 0;
  if (error == 0 && !temporary_.empty()) {
    if (fchmod(fd_, static_cast<mode_t>(mode_)) != 0) error = errno;
    if (error == 0 && fsync(fd_) != 0) error = errno;
  }
  if (fd_ >= 0 && !own_descriptor_ && close(fd_) != 0 && error == 0) error = errno;
  fd_ = -1;
  if (error == 0 && !temporary_.empty() && std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) throw WriteError(requested_path_, error);
  committed_ = true;
  if (!temporary_.empty()) Untrack(temporary_.c_str());
}

void WriteFileAtomically(const std::string& path, std::string_view content) {
  AtomicFileWriter writer(path);
  writer.Write(content);
  writer.Commit();
}

std::string ReadFile(const std::string& path, int64_t max_pipe_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError("cannot read " + Printable(path) + ": " + std::strerror(EISDIR));
  }
  // A device (/dev/zero, a terminal) or a socket has no end to read to: refused. A pipe (a shell's
  // process substitution, /dev/fd/N) ends when its writer closes it, and is read.
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 &&
      (S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) || S_ISSOCK(info.st_mode))) {
    throw InputError("cannot read " + Printable(path) + ": not a regular file (a " +
                     (S_ISSOCK(info.st_mode) ? "socket" : "device") + ")");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + Printable(path) + ": " + std::strerror(errno));
  // A pipe has no size to check: it is read up to the cap (an endless writer, such as
  // `cat /dev/zero`, would otherwise fill the memory).
  const int64_t cap = S_ISFIFO(info.st_mode) ? max_pipe_bytes : INT64_MAX;
  std::string text;
  if (S_ISREG(info.st_mode)) text.reserve(static_cast<size_t>(info.st_size));
  std::vector<char> block(size_t{1} << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    text.append(block.data(), static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > cap) {
      throw InputError(fmt::format("cannot read {}: a pipe of more than {} bytes (write it to a "
                                   "file first)",
                                   Printable(path), cap));
    }
  }
  if (in.bad()) throw InputError("cannot read " + Printable(path) + ": read failed");
  return text;
}

}  // namespace mosaic
