#include "mosaic/util/input_path.h"

#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>

#include "mosaic/util/embedded_data.h"
#include "mosaic/util/text_input.h"

namespace mosaic {
namespace {

constexpr std::string_view kEmbeddedPrefix = "data/";

bool IsEmbedded(const std::string& path) {
  return path.starts_with(kEmbeddedPrefix) &&
         FindEmbeddedFile(std::string_view(path).substr(kEmbeddedPrefix.size())).has_value();
}

bool IsFileOnDisk(const std::string& path) {
  std::error_code ignored;
  return std::filesystem::is_regular_file(path, ignored);
}

}  // namespace

std::string ResolveBeside(const std::string& path, const std::string& origin) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  const std::filesystem::path dir = std::filesystem::path(origin).parent_path();
  if (dir.empty()) return p.lexically_normal().string();
  const std::string beside = (dir / p).lexically_normal().string();
  if (IsFileOnDisk(beside) || IsEmbedded(beside)) return beside;
  if (IsFileOnDisk(path)) return p.lexically_normal().string();
  return beside;
}

bool InputFileExists(const std::string& path) { return IsFileOnDisk(path) || IsEmbedded(path); }

std::string MissingInputFileRule(const std::string& resolved, const std::string& origin) {
  return "a file; none at " + resolved + " (a relative path is looked for beside " + origin +
         ", then from the working directory)";
}

std::string ReadInputOrEmbedded(const std::string& path) {
  if (!IsFileOnDisk(path) && path.starts_with(kEmbeddedPrefix)) {
    if (std::optional<std::string_view> text =
            FindEmbeddedFile(std::string_view(path).substr(kEmbeddedPrefix.size()))) {
      return std::string(*text);
    }
  }
  return ReadTextFile(path);  // throws InputError naming the path
}

std::string ReadInputBeside(const std::string& path, bool origin_embedded) {
  if (origin_embedded && path.starts_with(kEmbeddedPrefix)) {
    if (std::optional<std::string_view> text =
            FindEmbeddedFile(std::string_view(path).substr(kEmbeddedPrefix.size()))) {
      return std::string(*text);
    }
  }
  return ReadInputOrEmbedded(path);
}

bool IsPathArgument(std::string_view argument) {
  std::error_code ignored;
  return std::filesystem::exists(std::filesystem::path(argument), ignored) ||
         argument.ends_with(".toml") || argument.find('/') != std::string_view::npos;
}

}  // namespace mosaic
