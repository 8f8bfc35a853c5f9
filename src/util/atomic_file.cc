#include "mosaic/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic {

namespace {

InputError WriteError(const std::string& path, int error) {
  return InputError("cannot write " + path + ": " + std::strerror(error));
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

}  // namespace

AtomicFileWriter::AtomicFileWriter(const std::string& requested_path)
    : requested_path_(requested_path), path_(requested_path) {
  std::error_code ec;
  if (std::filesystem::is_symlink(requested_path, ec)) {
    path_ = std::filesystem::weakly_canonical(requested_path, ec).string();
    if (ec) throw WriteError(requested_path, ec.value());
  }
  struct stat existing;
  const bool exists = stat(path_.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode)) throw WriteError(requested_path, EISDIR);
  if (exists && !S_ISREG(existing.st_mode)) {
    // Devices and pipes cannot be replaced: written into.
    fd_ = open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw WriteError(requested_path, errno);
    return;
  }
  // Keep an existing file's permissions; a new file gets 0666 less the umask, like open(2).
  if (exists) {
    mode_ = existing.st_mode & 07777;
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    mode_ = 0666 & ~mask;
  }
  std::string pattern = path_ + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd_ = mkstemp(name.data());
  if (fd_ < 0) throw WriteError(requested_path, errno);
  temporary_ = name.data();
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) close(fd_);
  if (!committed_ && !temporary_.empty()) unlink(temporary_.c_str());
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
  if (fd_ >= 0 && close(fd_) != 0 && error == 0) error = errno;
  fd_ = -1;
  if (error == 0 && !temporary_.empty() && std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) throw WriteError(requested_path_, error);
  committed_ = true;
}

void WriteFileAtomically(const std::string& path, std::string_view content) {
  AtomicFileWriter writer(path);
  writer.Write(content);
  writer.Commit();
}

std::string ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError("cannot read " + path + ": " + std::strerror(EISDIR));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError("cannot read " + path + ": read failed");
  return buffer.str();
}

}  // namespace mosaic
