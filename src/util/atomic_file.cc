#include "mosaic/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic {

void WriteFileAtomically(const std::string& path, std::string_view content) {
  std::string pattern = path + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0) {
    throw InputError("cannot write " + path + ": " + std::strerror(errno));
  }
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t written = write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      close(fd);
      unlink(name.data());
      throw InputError("cannot write " + path + ": " + std::strerror(error));
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  fchmod(fd, 0644);
  if (fsync(fd) != 0 || close(fd) != 0 || std::rename(name.data(), path.c_str()) != 0) {
    int error = errno;
    unlink(name.data());
    throw InputError("cannot write " + path + ": " + std::strerror(error));
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError("cannot read " + path + ": read failed");
  return buffer.str();
}

}  // namespace mosaic
