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

// `path` with every symbolic link resolved; empty when that fails (no such file).
std::string CanonicalPath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path canonical = std::filesystem::canonical(path, error);
  return error ? std::string() : canonical.string();
}

// The folder of the file a symbolic link `origin` points to (its canonical path's folder), when
// that is another folder than the one `origin` is in; nullopt otherwise (not a link, a link to a
// file in its own folder, a file that is not on disk).
std::optional<std::filesystem::path> LinkTargetFolder(const std::string& origin) {
  const std::string canonical = CanonicalPath(origin);
  if (canonical.empty()) return std::nullopt;
  const std::filesystem::path target_dir = std::filesystem::path(canonical).parent_path();
  std::filesystem::path origin_dir = std::filesystem::path(origin).parent_path();
  if (origin_dir.empty()) origin_dir = ".";
  std::error_code error;
  // The folder `origin` is in, its own links resolved: a link to the folder holding the file is
  // no other place to look.
  const std::filesystem::path canonical_dir = std::filesystem::canonical(origin_dir, error);
  if (error || canonical_dir == target_dir) return std::nullopt;
  return target_dir;
}

}  // namespace

std::string ResolveBeside(const std::string& path, const std::string& origin) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  const std::filesystem::path dir = std::filesystem::path(origin).parent_path();
  const std::string beside = (dir / p).lexically_normal().string();
  if (IsFileOnDisk(beside) || IsEmbedded(beside)) return beside;
  const std::optional<std::filesystem::path> target_dir = LinkTargetFolder(origin);
  const std::string beside_target =
      target_dir ? (*target_dir / p).lexically_normal().string() : std::string();
  if (target_dir && IsFileOnDisk(beside_target)) return beside_target;
  if (IsFileOnDisk(path)) return p.lexically_normal().string();
  return beside;
}

bool InputFileExists(const std::string& path) { return IsFileOnDisk(path) || IsEmbedded(path); }

std::string MissingInputFileRule(const std::string& resolved, const std::string& origin) {
  std::error_code ignored;
  const std::optional<std::filesystem::path> target_dir = LinkTargetFolder(origin);
  // The same relative path beside the link's target (ResolveBeside's second place), when the
  // origin is such a link: a directory there is the one to name.
  std::string beside_target;
  if (target_dir) {
    const std::filesystem::path relative = std::filesystem::path(resolved).lexically_relative(
        std::filesystem::path(origin).parent_path());
    if (!relative.empty() && !relative.is_absolute() && *relative.begin() != "..") {
      beside_target = (*target_dir / relative).lexically_normal().string();
    }
  }
  const std::string found =
      std::filesystem::is_directory(resolved, ignored) ? resolved + " is a directory"
      : !beside_target.empty() && std::filesystem::is_directory(beside_target, ignored)
          ? beside_target + " is a directory"
          : "none at " + resolved;
  const std::string target =
      target_dir ? ", then beside its link target " + CanonicalPath(origin) : std::string();
  return "a file; " + found + " (a relative path is looked for beside " + origin + target +
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

bool IsWrittenAsPath(std::string_view text) {
  return text.ends_with(".toml") || text.find('/') != std::string_view::npos;
}

bool IsPathArgument(std::string_view argument) {
  std::error_code ignored;
  return std::filesystem::exists(std::filesystem::path(argument), ignored) ||
         IsWrittenAsPath(argument);
}

}  // namespace mosaic
