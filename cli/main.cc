// mosaic: plan, size and decide how to train sparse Mixture-of-Experts models.
//
// Exit codes (docs/spec): 0 success or an outcome, 1 user error (message on stderr), 2 usage error.
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "command.h"
#include "usage_errors.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"

namespace mosaic::cli {

namespace {

void WriteStandardOutput(std::string_view text) {
  errno = 0;
  std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!std::cout) {
    throw InputError(std::string("cannot write standard output: ") +
                     (errno != 0 ? std::strerror(errno) : "write failed"));
  }
}

}  // namespace

void EmitOutput(const std::string& output_path, std::string_view text) {
  StreamOutput(output_path, [&](const auto& write) { write(text); });
}

void EmitText(const std::string& output_path, std::string_view text) {
  EmitOutput(output_path, mosaic::PrintableText(text));
}

void EmitOutputWithHtml(const std::string& output_path, std::string_view text,
                        const std::string& html_path, std::string_view html) {
  std::optional<AtomicFileWriter> html_writer, output_writer;
  if (!html_path.empty()) html_writer.emplace(html_path);
  if (!output_path.empty()) output_writer.emplace(output_path);
  if (html_writer) html_writer->Write(html);
  if (output_writer) output_writer->Write(text);
  if (html_writer) html_writer->Commit();
  if (output_writer) {
    output_writer->Commit();
  } else {
    EmitOutput("", text);
  }
}

void StreamOutput(const std::string& output_path,
                  const std::function<void(const std::function<void(std::string_view)>&)>& produce) {
  if (output_path.empty()) {
    produce(WriteStandardOutput);
    errno = 0;
    std::cout.flush();
    if (!std::cout) {
      throw InputError(std::string("cannot write standard output: ") +
                       (errno != 0 ? std::strerror(errno) : "write failed"));
    }
    return;
  }
  AtomicFileWriter writer(output_path);
  produce([&](std::string_view piece) { writer.Write(piece); });
  writer.Commit();
}

CLI::Validator NotEmpty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) { return text.empty() ? what + " is empty" : std::string(); },
      what);
}

CLI::Option* AddOutputOption(CLI::App* cmd, std::string* output, const std::string& help,
                             const std::string& flag) {
  return cmd->add_option(flag, *output, help)->check(NotEmpty("FILE"));
}

void CheckOutputIsNotInput(const std::string& output, const std::vector<std::string>& inputs,
                           const std::string& flag) {
  if (output.empty()) return;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (input.empty() || !std::filesystem::is_regular_file(input, ec)) continue;
    if (std::filesystem::equivalent(output, input, ec) && !ec) {
      throw FieldError({}, flag, output,
                       fmt::format("not one of the command's input files ({} is one)", input));
    }
  }
}

void CheckHtmlIsNotOutput(const std::string& html, const std::string& output) {
  if (html.empty() || output.empty()) return;
  std::error_code ec_html, ec_output;
  // Absolute first: a file not yet written has no canonical form of its own, and "o.txt" and
  // "./o.txt" name it alike only once both start from the working directory.
  const std::filesystem::path a = std::filesystem::weakly_canonical(
      std::filesystem::absolute(html, ec_html), ec_html);
  const std::filesystem::path b = std::filesystem::weakly_canonical(
      std::filesystem::absolute(output, ec_output), ec_output);
  if (html == output || (!ec_html && !ec_output && a == b)) {
    throw UsageError(fmt::format("--html and --output name the same file ({} and {}): one would "
                                 "overwrite the other",
                                 html, output));
  }
}

CLI::Validator InRange(double low, double high, bool open_low, bool open_high) {
  const std::string range = fmt::format("{}{:g}, {:g}{}", open_low ? '(' : '[', low, high,
                                        open_high ? ')' : ']');
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        // Decimal only (ParseDecimal; strtod would also read 0x1p0).
        const double value = ParseDecimal(text).value_or(NAN);
        const bool ok = !std::isnan(value) && (open_low ? value > low : value >= low) &&
                        (open_high ? value < high : value <= high);
        return ok ? std::string() : fmt::format("{} is not in {}", text, range);
      },
      "in " + range);
}

namespace {

constexpr Command kCommands[] = {
    {"model", AddModelCommand},
    {"plan", AddPlanCommand},
    {"perf", AddPerfCommand},
    {"fit", AddFitCommand},
    {"runs", AddRunsCommand},
    {"decide", AddDecideCommand},
    {"codesign", AddCodesignCommand},
};

constexpr int kExitUserError = 1;
constexpr int kExitUsageError = 2;

// Subcommand help texts open with a summary paragraph followed by examples. The summary stays the
// description (shown in the parent's list); the rest becomes the footer of the subcommand's own
// --help.
void SplitHelpTexts(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    const std::string text = sub->get_description();
    const size_t split = text.find("\n\n");
    if (split != std::string::npos) {
      sub->description(text.substr(0, split));
      sub->footer(text.substr(split + 2));
    }
    SplitHelpTexts(*sub);
  }
}

}  // namespace
}  // namespace mosaic::cli

int main(int argc, char** argv) {
  using namespace mosaic::cli;
  CLI::App app{
      "mosaic: exact accounting, performance model, scaling fits and run logs for sparse "
      "Mixture-of-Experts training.\n\nExamples:\n"
      "  mosaic plan                      # the embedded FSDP-vs-EP experiment ladder\n"
      "  mosaic model deepseek-v3         # parameter and FLOP breakdown of a preset\n"
      "  mosaic SUBCOMMAND --help         # flags and examples of one subcommand\n",
      "mosaic"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mosaic 0.1.0");
  std::vector<std::string> names;
  for (const Command& command : kCommands) {
    command.add(app);
    names.emplace_back(command.name);
  }
  SplitHelpTexts(app);
  OneValuePerOccurrence(app);

  // An unknown subcommand gets a "did you mean" before CLI11's generic message.
  if (argc > 1 && argv[1][0] != '-') {
    std::string word = argv[1];
    bool known = false;
    for (const std::string& name : names) known = known || name == word;
    if (!known) {
      std::cerr << "mosaic: unknown subcommand '" << mosaic::Printable(word) << "'"
                << mosaic::DidYouMean(word, names) << "\nRun 'mosaic --help' for the list.\n";
      return kExitUsageError;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Messages echo what the user gave (names, values, file cells): control characters other
    // than newlines and tabs are escaped here, whatever the message (terminal_text.h), so that
    // none reaches the terminal raw; a message's own lines are kept.
    std::cerr << mosaic::PrintableText(UsageMessage(e, app, argc, argv));
    return kExitUsageError;
  } catch (const mosaic::UsageError& e) {
    std::cerr << mosaic::PrintableText(UsageErrorMessage(e.what(), app)) << "\n";
    return kExitUsageError;
  } catch (const mosaic::InputError& e) {
    std::cerr << "mosaic: error: " << mosaic::PrintableText(e.what()) << "\n";
    return kExitUserError;
  } catch (const mosaic::cli::QuietExit& e) {
    return e.exit_code;
  }
  return 0;
}
