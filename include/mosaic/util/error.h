// Errors raised for bad user input. They are caught at the CLI edge and printed on stderr; the
// message always names where (file:line:column or the preset / flag), what (field and value) and
// the rule that was broken, in the form used by Ceres Solver's option checks:
//   "study.toml:12:9: top_k = 9. Violated constraint: top_k <= experts (8)".
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mosaic {

// Where a value came from, for error messages: a file with line and column, or a label such as
// "preset mixtral-8x7b" or "--set". Line and column are 1-based; 0 means unknown.
struct SourceLocation {
  std::string origin;       // file path or label
  int line = 0;
  int column = 0;
  std::string source_line;  // the offending line's text, shown under the message when known

  // "origin:line:column" with the unknown parts left out; empty when origin is empty.
  std::string ToString() const;
};

// Bad input from the user (file contents, flags, names). Exit code 1 at the CLI.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  // An error at `where` (LocatedError, FieldError): `message` is the whole text, `body` what
  // follows the location in it, without the source line shown under it.
  InputError(const std::string& message, SourceLocation where, std::string body)
      : std::runtime_error(message), where_(std::move(where)), body_(std::move(body)) {}

  // Where LocatedError or FieldError placed the error; nullptr for one built from a message alone
  // (whatever location it names is only in its text).
  const SourceLocation* where() const { return where_ ? &*where_ : nullptr; }
  // The message after its location, without the source line: what LocatedError was given (for
  // FieldError, "field = value. Violated constraint: rule"); the whole message when unlocated.
  std::string_view body() const { return where_ ? std::string_view(body_) : what(); }

 private:
  std::optional<SourceLocation> where_;
  std::string body_;
};

// A malformed command line that the flag parser could not catch (a missing argument, a --set without
// '='). Exit code 2 at the CLI.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// Builds "<location>: <field> = <value>. Violated constraint: <rule>" followed, when the location
// has it, by the source line and a caret under the column.
InputError FieldError(const SourceLocation& where, std::string_view field, std::string_view value,
                      std::string_view rule);

// Builds "<location>: <message>" with the source line and caret as above. Both keep `where` and
// the text after it (InputError::where, InputError::body).
InputError LocatedError(const SourceLocation& where, std::string_view message);

// The same message as a usage error (exit code 2), for a parser that serves both files (where a
// broken rule is bad input) and a flag (where it is a malformed flag value). The message must
// already name the flag, as ParseLayout's "--layout tp=abc: ..." does.
UsageError AsUsageError(const InputError& error);

// Builds "<flag>: <flag> = <value>. Violated constraint: <rule>" as a usage error: the flag's
// value is malformed, out of range or not one of its fixed choices (exit code 2 at the CLI).
UsageError FlagError(std::string_view flag, std::string_view value, std::string_view rule);

}  // namespace mosaic
