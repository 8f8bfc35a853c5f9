// Output files are written whole or not at all: the content goes to a temporary file in the same
// directory, which is then renamed over the target (rename is atomic on POSIX file systems).
#pragma once

#include <string>
#include <string_view>

namespace mosaic {

// Writes `content` to `path` atomically. Throws InputError naming the path and the system error
// when the directory is not writable or the write fails; the target is then left untouched.
void WriteFileAtomically(const std::string& path, std::string_view content);

// Reads the whole file at `path`. Throws InputError naming the path when it cannot be read.
std::string ReadFile(const std::string& path);

}  // namespace mosaic
