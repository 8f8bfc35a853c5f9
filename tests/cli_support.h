// Helpers for end-to-end tests: run the built mosaic binary and capture what it prints.
#pragma once

#include <string>

namespace mosaic::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `mosaic <arguments>` (arguments are passed to /bin/sh as written) from the source directory.
CommandResult RunMosaic(const std::string& arguments);

// Path of a file under the source tree, e.g. SourcePath("tests/golden/plan.txt").
std::string SourcePath(const std::string& relative);

// The content of a file (empty when missing).
std::string ReadText(const std::string& path);

}  // namespace mosaic::testing
