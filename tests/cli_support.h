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

// A page as headless Chromium (Debian's /usr/bin/chromium) builds it: the DOM after loading, and
// what Chromium logged (console messages appear as "CONSOLE" lines). `exit_code` is non-zero when
// Chromium is missing or failed; `log` then says why.
struct RenderedPage {
  int exit_code = -1;
  std::string dom;
  std::string log;
};
RenderedPage RenderInChromium(const std::string& html_path);

// How many times `needle` occurs in `text`.
size_t CountOf(const std::string& text, const std::string& needle);

}  // namespace mosaic::testing
