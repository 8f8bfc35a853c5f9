// Files from the repository's data/ folder (model presets, hardware, studies), compiled into the
// library by cmake/embed_data.cmake so that the tool needs no installed data directory.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic {

struct EmbeddedFile {
  std::string_view path;     // relative to data/, e.g. "models/mixtral-8x7b.toml"
  std::string_view content;  // the file's bytes
};

// Every embedded file, sorted by path.
std::span<const EmbeddedFile> EmbeddedFiles();

// The content of the embedded file at `path` (relative to data/), or nullopt if there is none.
std::optional<std::string_view> FindEmbeddedFile(std::string_view path);

// Names of the embedded "<folder>/<name>.toml" files of one folder (e.g. "models"), sorted.
std::vector<std::string> EmbeddedTomlNames(std::string_view folder);

}  // namespace mosaic
