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

// Devices and pipes (/dev/stdout, /dev/null, a FIFO) cannot be replaced: write into them.
void WriteInPlace(const std::string& path, std::string_view content) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw WriteError(path, errno);
  int error = WriteAll(fd, content);
  if (close(fd) != 0 && error == 0) error = errno;
  if (error != 0) throw WriteError(path, error);
}

}  // namespace

void WriteFileAtomically(const std::string& requested_path, std::string_view content) {
  // A symlink is followed, so that its target is replaced and the link kept.
  std::error_code ec;
  std::string path = requested_path;
  if (std::filesystem::is_symlink(requested_path, ec)) {
    path = std::filesystem::weakly_canonical(requested_path, ec).string();
    if (ec) throw WriteError(requested_path, ec.value());
  }
  struct stat existing;
  const bool exists = stat(path.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode)) throw WriteError(requested_path, EISDIR);
  if (exists && !S_ISREG(existing.st_mode)) {
    WriteInPlace(path, content);
    return;
  }

  std::string pattern = path + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0) throw WriteError(requested_path, errno);
  int error = WriteAll(fd, content);
  // Keep an existing file's permissions; a new file gets 0666 less the umask, like open(2).
  mode_t mode = 0;
  if (exists) {
    mode = existing.st_mode & 07777;
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  if (error == 0 && fchmod(fd, mode) != 0) error = errno;
  if (error == 0 && fsync(fd) != 0) error = errno;
  if (close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && std::rename(name.data(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    unlink(name.data());
    throw WriteError(requested_path, error);
  }
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
