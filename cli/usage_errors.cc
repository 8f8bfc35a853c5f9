#include "usage_errors.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "mosaic/util/spellcheck.h"

namespace mosaic::cli {

namespace {

// The long option names of `app` (e.g. "--json").
std::vector<std::string> LongOptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

// For an unexpected argument, the closest option of the subcommand named in argv (or of the root).
std::string SuggestOption(CLI::App& app, int argc, char** argv) {
  CLI::App* scope = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.starts_with("-")) continue;
    try {
      scope = scope->get_subcommand(word);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
  }
  const std::vector<std::string> names = LongOptionNames(*scope);
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (!word.starts_with("--")) continue;
    word = word.substr(0, word.find('='));
    if (std::find(names.begin(), names.end(), word) != names.end()) continue;
    const std::string hint = mosaic::DidYouMean(word, names);
    if (!hint.empty()) return "unknown option '" + word + "'" + hint;
  }
  return "";
}

// The deepest subcommand the command line reached ("runs compare"), or null for the root.
CLI::App* ParsedSubcommand(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->parsed()) {
      CLI::App* deeper = ParsedSubcommand(*sub);
      return deeper != nullptr ? deeper : sub;
    }
  }
  return nullptr;
}

// "mosaic runs compare" for a subcommand, "mosaic" for the root.
std::string CommandPath(const CLI::App* sub) {
  std::string path;
  for (const CLI::App* a = sub; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) {
    path = a->get_name() + (path.empty() ? "" : " ") + path;
  }
  return path.empty() ? "mosaic" : "mosaic " + path;
}

// How an option is named in messages: "--gpus", or "LOGDIR" for a positional argument.
std::string DisplayName(const CLI::Option& option) {
  if (option.nonpositional()) return option.get_name(false, false);
  std::string name = option.get_name();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return name;
}

// The option of `scope` that CLI11 names `name` in a message ("--gpus", "logdir"), or null.
const CLI::Option* FindOption(const CLI::App& scope, std::string_view name) {
  for (const CLI::Option* option : scope.get_options()) {
    if (option->get_name() == name || option->get_name(false, true) == name ||
        option->check_name(std::string(name))) {
      return option;
    }
  }
  return nullptr;
}

// " (what it is)" from the option's help, or "".
std::string HelpOf(const CLI::Option* option) {
  if (option == nullptr || option->get_description().empty()) return "";
  return " (" + option->get_description() + ")";
}

}  // namespace

// A repeatable option takes one value per occurrence (`--set a=1 --set b=2`): CLI11 lets a vector
// option take every following word, which swallows the positional argument after it
// (`mosaic model --set top_k=3 mixtral-8x7b`). Positional arguments keep their lists. The help
// then shows one value ("--set TEXT") and says the flag is repeatable.
namespace {
std::set<const CLI::Option*>& ListFlags() {
  static std::set<const CLI::Option*> flags;
  return flags;
}
}  // namespace

CLI::Option* TakesList(CLI::Option* option) {
  ListFlags().insert(option);
  return option;
}

void OneValuePerOccurrence(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (ListFlags().count(option) != 0) continue;
    if (option->nonpositional() && option->get_items_expected_max() > 1) {
      option->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
      option->allow_extra_args(false);
      if (option->get_description().find("repeatable") == std::string::npos) {
        option->description(option->get_description() + " (repeatable)");
      }
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    OneValuePerOccurrence(*sub);
  }
}

// For an option whose value is range-checked: what the value must be written as when `value` is
// not a number of the option's type ("an integer", "a number"), or "" when it is one (the range
// is then what it broke). CLI11 reports "2x" for an INT or FLOAT option as out of its range.
std::string NotANumberRule(const CLI::Option* option, const std::string& value) {
  if (option == nullptr) return "";
  const std::string type = option->get_type_name();
  const char* begin = value.data();
  const char* end = begin + value.size();
  if (type.starts_with("INT") || type.starts_with("UINT")) {
    int64_t parsed = 0;
    const auto [ptr, ec] = std::from_chars(begin, end, parsed);
    // An integer too large for int64 is still an integer: the range names its bound.
    const bool integer = ptr == end && ptr != begin &&
                         (ec == std::errc() || ec == std::errc::result_out_of_range);
    return integer ? "" : "an integer";
  }
  if (type.starts_with("FLOAT")) {
    double parsed = 0;
    const auto [ptr, ec] = std::from_chars(begin, end, parsed);
    const bool number = ptr == end && ptr != begin &&
                        (ec == std::errc() || ec == std::errc::result_out_of_range);
    return number ? "" : "a number";
  }
  return "";
}

// CLI11's message rewritten in mosaic's voice: "mosaic SUBCOMMAND: what. Violated constraint:
// rule", or "mosaic SUBCOMMAND: X is required (what X is)", followed by where to find the flags.
std::string UsageMessage(const CLI::ParseError& error, CLI::App& app, int argc, char** argv) {
  const CLI::App* sub = ParsedSubcommand(app);
  const CLI::App& scope = sub != nullptr ? *sub : app;
  const std::string command = CommandPath(sub);
  const std::string what = error.what();
  // CLI11 opens most messages with the option's name: "--gpus: ...".
  const size_t colon = what.find(": ");
  const std::string name = colon == std::string::npos ? "" : what.substr(0, colon);
  const std::string rest = colon == std::string::npos ? what : what.substr(colon + 2);
  const CLI::Option* option = name.empty() ? nullptr : FindOption(scope, name);
  const std::string shown = option != nullptr ? DisplayName(*option) : name;
  std::string message;
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    if (sub == nullptr) {
      std::string list;
      for (const CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) {
        list += (list.empty() ? "" : ", ") + s->get_name();
      }
      message = "name a subcommand (" + list + ")";
    } else {
      // The first required argument left out, with its help.
      for (const CLI::Option* o : scope.get_options()) {
        if (o->get_required() && o->count() == 0) {
          message = DisplayName(*o) + " is required" + HelpOf(o);
          break;
        }
      }
      if (message.empty()) message = what;
    }
  } else if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    if (rest.starts_with("At Most ")) {
      const size_t received = rest.rfind(' ');
      message = fmt::format("{} is given {} times. Violated constraint: {} is given at most once",
                            shown, rest.substr(received + 1), shown);
    } else if (rest.find(" missing") != std::string::npos || rest.starts_with("At least ")) {
      message = shown + " needs a value" + HelpOf(option);
    } else {
      message = what;
    }
  } else if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    const std::string hint = SuggestOption(app, argc, argv);
    if (!hint.empty()) {
      message = hint;
    } else {
      const bool several = what.find("arguments were") != std::string::npos;
      message = !several && rest.starts_with("-")
                    ? fmt::format("unknown option '{}'", rest)
                    : fmt::format("unexpected argument{} '{}'", several ? "s" : "", rest);
    }
  } else if (dynamic_cast<const CLI::ValidationError*>(&error) != nullptr ||
             dynamic_cast<const CLI::ConversionError*>(&error) != nullptr) {
    // "VALUE is not in [lo, hi]" (InRange), "Value V not in range A to B" (CLI::Range),
    // "The value V is not an allowed value for NAME", "Could not convert: NAME = V".
    std::string value, rule;
    if (const size_t at = rest.find(" is not in "); at != std::string::npos && !name.empty()) {
      value = rest.substr(0, at);
      rule = fmt::format("{} in {}", shown, rest.substr(at + 11));
    } else if (rest.starts_with("Value ") && rest.find(" not in range ") != std::string::npos) {
      const size_t at = rest.find(" not in range ");
      value = rest.substr(6, at - 6);
      const std::string range = rest.substr(at + 14);
      const size_t to = range.find(" to ");
      rule = to == std::string::npos
                 ? shown + " in " + range
                 : fmt::format("{} <= {} <= {}", range.substr(0, to), shown, range.substr(to + 4));
    } else if (what.starts_with("The value ") && what.find(" is not an allowed value for ") !=
                                                     std::string::npos) {
      const size_t at = what.find(" is not an allowed value for ");
      const std::string flag = what.substr(at + 29);
      const CLI::Option* o = FindOption(scope, flag);
      message = fmt::format("{} = {}. Violated constraint: {}{}", o ? DisplayName(*o) : flag,
                            what.substr(10, at - 10), "a value of its type", HelpOf(o));
    } else if (what.starts_with("Could not convert: ")) {
      const std::string body = what.substr(19);
      const size_t eq = body.find(" = ");
      const std::string flag = body.substr(0, eq);
      const CLI::Option* o = FindOption(scope, flag);
      message = fmt::format("{} = {}. Violated constraint: a value of its type{}",
                            o ? DisplayName(*o) : flag,
                            eq == std::string::npos ? "" : body.substr(eq + 3), HelpOf(o));
    } else if (!name.empty()) {
      value = "";
      rule = rest;
    }
    if (const std::string kind = NotANumberRule(option, value); !value.empty() && !kind.empty()) {
      rule = fmt::format("{} is {}, {}", shown, kind, rule);
    }
    if (message.empty()) {
      message = value.empty() ? fmt::format("{}: {}", shown.empty() ? name : shown, rule)
                              : fmt::format("{} = {}. Violated constraint: {}", shown, value, rule);
    }
  } else {
    message = what;
  }
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return fmt::format("{}: {}\nRun '{} --help' for {}.\n", command, message, command,
                     sub != nullptr ? "its flags" : "the subcommands");
}

// A UsageError's message in the same voice: "mosaic SUBCOMMAND: message" (a message that already
// names the subcommand, "perf: ..." or "mosaic perf: ...", is not prefixed twice).
std::string UsageErrorMessage(std::string_view message, CLI::App& app) {
  const CLI::App* sub = ParsedSubcommand(app);
  const std::string command = CommandPath(sub);
  if (message.starts_with("mosaic ")) message.remove_prefix(7);
  if (sub != nullptr) {
    const std::string path = command.substr(7) + ": ";
    if (message.starts_with(path)) message.remove_prefix(path.size());
    const std::string own = sub->get_name() + ": ";
    if (message.starts_with(own)) message.remove_prefix(own.size());
  }
  // Every usage error ends as CLI11's own do (UsageMessage): where the flags are listed.
  return fmt::format("{}: {}\nRun '{} --help' for {}.", command, message, command,
                     sub != nullptr ? "its flags" : "the subcommands");
}

}  // namespace mosaic::cli
