// Usage errors of the command line in mosaic's voice: the argument parser's messages rewritten as
// "mosaic SUBCOMMAND: what. Violated constraint: rule", and repeatable flags that take one value
// per occurrence.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace mosaic::cli {

// Makes every repeatable flag of `app` and its subcommands take exactly one value per occurrence
// (`--set a=1 --set b=2`), so that a positional argument after it is not swallowed
// (`mosaic model --set top_k=3 mixtral-8x7b`). Positional arguments keep their lists; the help
// shows one value ("--set TEXT") and says "(repeatable)". Flags marked with TakesList keep
// taking every following word.
void OneValuePerOccurrence(CLI::App& app);

// Marks `option` (a vector flag) as a list that takes every word after it up to the next flag
// (`--logs runs/a runs/b`), for a flag that no positional argument can follow in a valid command
// line; OneValuePerOccurrence leaves it so. Returns `option`.
CLI::Option* TakesList(CLI::Option* option);

// CLI11's `error` for the command line argv, rewritten as "mosaic SUBCOMMAND: message" and a
// second line "Run 'mosaic SUBCOMMAND --help' for its flags.", newline-terminated. Required
// arguments are named with their help, repeated single flags and missing values with the rule,
// unknown options with "did you mean".
std::string UsageMessage(const CLI::ParseError& error, CLI::App& app, int argc, char** argv);

// A mosaic::UsageError's `message` as "mosaic SUBCOMMAND: message", without repeating a
// subcommand prefix the message already has, then "Run 'mosaic SUBCOMMAND --help' for its
// flags." on a line of its own (no newline at the end), as UsageMessage ends.
std::string UsageErrorMessage(std::string_view message, CLI::App& app);

}  // namespace mosaic::cli
