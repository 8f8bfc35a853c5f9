// mosaic: plan, size and decide how to train sparse Mixture-of-Experts models.
//
// Exit codes (docs/spec): 0 success or an outcome, 1 user error (message on stderr), 2 usage error.
#include <iostream>
#include <string>
#include <vector>

#include "command.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"
#include "mosaic/util/spellcheck.h"

namespace mosaic::cli {

void EmitOutput(const std::string& output_path, std::string_view text) {
  if (output_path.empty()) {
    std::cout << text << std::flush;
  } else {
    WriteFileAtomically(output_path, text);
  }
}

namespace {

constexpr Command kCommands[] = {
    {"model", AddModelCommand},
    {"plan", AddPlanCommand},
    {"perf", AddPerfCommand},
    {"fit", AddFitCommand},
    {"runs", AddRunsCommand},
};

constexpr int kExitUserError = 1;
constexpr int kExitUsageError = 2;

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

  // An unknown subcommand gets a "did you mean" before CLI11's generic message.
  if (argc > 1 && argv[1][0] != '-') {
    std::string word = argv[1];
    bool known = false;
    for (const std::string& name : names) known = known || name == word;
    if (!known) {
      std::cerr << "mosaic: unknown subcommand '" << word << "'"
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
    app.exit(e);
    return kExitUsageError;
  } catch (const mosaic::InputError& e) {
    std::cerr << "mosaic: error: " << e.what() << "\n";
    return kExitUserError;
  }
  return 0;
}
