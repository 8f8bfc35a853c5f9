// Paths written inside an input file (a study's results CSV, a space's base model or fit JSON, a
// study's model file), and reading them from disk or from the embedded presets.
#pragma once

#include <string>
#include <string_view>

namespace mosaic {

// Where `path`, written inside the file `origin`, points. An absolute path is returned as given. A
// relative one is taken beside `origin` when a file is there (on disk, or among the embedded data
// files when `origin` is an embedded preset, "data/<folder>/<name>.toml"); otherwise, when
// `origin` is a symbolic link to a file in another folder, beside that file (its canonical path)
// when a file is there; otherwise as given when that names a file relative to the working
// directory; otherwise beside `origin`, so that the error on reading it names the place it was
// expected. The result is lexically normalised.
std::string ResolveBeside(const std::string& path, const std::string& origin);

// Whether `path`, as ResolveBeside returns it, names a file: a regular file on disk, or an
// embedded data file ("data/<folder>/<name>").
bool InputFileExists(const std::string& path);

// The rule an input file named inside `origin` breaks when InputFileExists(resolved) is false,
// for FieldError: "a file; none at <resolved>" ("a file; <resolved> is a directory" when it is
// one), then every place ResolveBeside looks, in its order: "(a relative path is looked for beside
// <origin>[, then beside its link target <canonical origin>], then from the working directory)",
// the link target only when `origin` is a symbolic link to a file in another folder.
std::string MissingInputFileRule(const std::string& resolved, const std::string& origin);

// The text of `path` (without a leading UTF-8 byte-order mark, text_input.h): the file on disk,
// else the embedded data file when `path` starts with "data/". Throws InputError naming the path
// when neither exists or the file cannot be read.
std::string ReadInputOrEmbedded(const std::string& path);

// ReadInputOrEmbedded for a file named inside an embedded preset (`origin_embedded`): its
// embedded data file is read even where the working directory holds a file of that name (a
// preset's results cannot be swapped by the directory it runs in); otherwise ReadInputOrEmbedded.
std::string ReadInputBeside(const std::string& path, bool origin_embedded);

// Whether an argument that is a preset name or a file path (`--hardware h100` or `my_gpu.toml`,
// a model, a study, a space) is a path: it exists on disk (a file, or a directory, which reading
// then reports as one), ends in ".toml", or has a directory part. A preset name has none of
// these, so that a missing file or a directory is reported as such, not as an unknown name.
bool IsPathArgument(std::string_view argument);

// Whether a name written inside a file (a study's model, a target's device) is written as a file
// path rather than a preset name: it ends in ".toml" or has a directory part. Unlike
// IsPathArgument it does not look at the disk, whose working directory is not the file's.
bool IsWrittenAsPath(std::string_view text);

}  // namespace mosaic
