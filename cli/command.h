// The subcommand table of the command line. Each subcommand lives in its own cli/<name>_command.cc
// and only parses flags, calls the library and prints.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic::cli {

// Adds one subcommand (with its flags, help text and examples) to `root` and sets its callback.
using AddCommandFn = void (*)(CLI::App& root);

struct Command {
  const char* name;
  AddCommandFn add;
};

void AddModelCommand(CLI::App& root);
void AddPlanCommand(CLI::App& root);
void AddPerfCommand(CLI::App& root);
void AddFitCommand(CLI::App& root);
void AddRunsCommand(CLI::App& root);
void AddDecideCommand(CLI::App& root);
void AddCodesignCommand(CLI::App& root);

// Thrown by a command to end with `exit_code` without printing anything (another process of the
// same MPI job prints the error and sets the job's status: see codesign_command.cc).
struct QuietExit {
  int exit_code = 1;
};

// Writes `text` to stdout, or atomically to `output_path` when it is not empty.
void EmitOutput(const std::string& output_path, std::string_view text);

// EmitOutput of a human-readable report: the control and bidirectional characters that came from
// the inputs (run names, paths, row ids, model names) written escaped (PrintableText), so that a
// report cannot drive the terminal or reorder what it shows. JSON escapes them by itself.
void EmitText(const std::string& output_path, std::string_view text);

// EmitOutput with an HTML report beside it (--html): both files are opened before either is
// written, so a path that cannot be written leaves the other file as it was; `html_path` empty
// writes no HTML.
void EmitOutputWithHtml(const std::string& output_path, std::string_view text,
                        const std::string& html_path, std::string_view html);

// EmitOutput for a text made piece by piece (a large export): `produce` hands each piece to the
// function it is given, which writes it to stdout at once, or to `output_path`'s temporary file,
// renamed over it only once `produce` has returned (an exception leaves the target untouched).
void StreamOutput(const std::string& output_path,
                  const std::function<void(const std::function<void(std::string_view)>&)>& produce);

// Adds `--output FILE` (or another file flag, e.g. `--html`) to `cmd`. An empty FILE is a usage
// error (an omitted --output means stdout).
CLI::Option* AddOutputOption(CLI::App* cmd, std::string* output,
                             const std::string& help = "write to FILE (whole or not at all)",
                             const std::string& flag = "--output");

// A check for a flag that names something (a file, a profile): an empty value is a usage error,
// not the default it would silently stand for ("--profiles ''" is not the shipped profiles).
CLI::Validator NotEmpty(const std::string& what);

// Throws InputError when `output` is an existing file that is also one of `inputs` (the same file
// by std::filesystem::equivalent, whatever the spelling: "./a.csv", links). Inputs that are not
// existing files (preset names, "") are skipped; an empty `output` (stdout) never conflicts. The
// error names `flag`, the option that gave `output`.
void CheckOutputIsNotInput(const std::string& output, const std::vector<std::string>& inputs,
                           const std::string& flag = "--output");

// Throws UsageError when `html` and `output` (both given) name the same file, whatever the
// spelling ("a.json" and "./a.json", a link to it): one would overwrite the other.
void CheckHtmlIsNotOutput(const std::string& html, const std::string& output);

// A range check for a number flag whose message shows the bounds as written ("-3 is not in
// [0, 1e+06]"): CLI11's own ranges print the full digits of their default bounds and let NaN pass.
// NaN, and text that is not a number from end to end, are never in range.
CLI::Validator InRange(double low, double high, bool open_low = false, bool open_high = false);

}  // namespace mosaic::cli
