// CI (.ci/run, which runs as root) installs its packages with apt-get itself; users run
// tools/install_deps.sh (root or sudo). Both must install the same Debian packages.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli_support.h"

namespace mosaic::testing {
namespace {

// Package names (lower-case Debian names) between `start` and the first line after it that does
// not continue the list; line continuations and array syntax are ignored.
std::set<std::string> PackagesAfter(const std::string& text, const std::string& start,
                                    const std::string& end) {
  const size_t from = text.find(start);
  if (from == std::string::npos) return {};
  const size_t to = text.find(end, from + start.size());
  const std::string list = text.substr(from + start.size(), to - from - start.size());
  std::set<std::string> packages;
  const std::regex name("[a-z0-9][a-z0-9.+-]+");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), name); it != std::sregex_iterator();
       ++it) {
    packages.insert(it->str());
  }
  return packages;
}

TEST(CiPackages, CiAndInstallScriptInstallTheSamePackages) {
  const std::set<std::string> ci = PackagesAfter(
      ReadText(SourcePath(".ci/run")), "--no-install-recommends", "\n\n");
  const std::set<std::string> script = PackagesAfter(
      ReadText(SourcePath("tools/install_deps.sh")), "packages=(", ")");
  EXPECT_FALSE(ci.empty());
  EXPECT_EQ(ci, script);
  EXPECT_TRUE(ci.contains("libceres-dev"));
  EXPECT_TRUE(ci.contains("libre2-dev"));
}

}  // namespace
}  // namespace mosaic::testing
