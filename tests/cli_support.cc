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

RenderedPage RenderInChromium(const std::string& html_path) {
  RenderedPage page;
  if (access("/usr/bin/chromium", X_OK) != 0) {
    page.log = "Debian's chromium is needed (tools/install_deps.sh installs it)";
    return page;
  }
  char dir_template[] = "/tmp/mosaic_chromium_XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return page;
  const std::string dir = dir_template;
  // Flags for a closed network, as root, without a display.
  const std::string command =
      "timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic "
      "--no-first-run --disable-background-networking --disable-component-update --disable-sync "
      "--disable-extensions --disable-dev-shm-usage --enable-logging=stderr --v=0 --user-data-dir='" + dir +
      "/profile' --dump-dom 'file://" + html_path + "' > '" + dir + "/dom.html' 2> '" + dir +
      "/chromium.log'";
  const int status = std::system(command.c_str());
  page.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  page.dom = ReadText(dir + "/dom.html");
  page.log = ReadText(dir + "/chromium.log");
  std::system(("rm -rf '" + dir + "'").c_str());
  return page;
}

size_t CountOf(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace mosaic::testing
