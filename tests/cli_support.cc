#include "cli_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mosaic::testing {

std::string SourcePath(const std::string& relative) {
  return std::string(MOSAIC_SOURCE_DIR) + "/" + relative;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

CommandResult RunMosaic(const std::string& arguments) {
  char err_template[] = "/tmp/mosaic_test_err_XXXXXX";
  int err_fd = mkstemp(err_template);
  close(err_fd);
  const std::string command = "cd '" + std::string(MOSAIC_SOURCE_DIR) + "' && '" + MOSAIC_BINARY +
                              "' " + arguments + " 2>'" + err_template + "' </dev/null";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = ReadText(err_template);
  unlink(err_template);
  return result;
}

}  // namespace mosaic::testing
