// mosaic codesign SPACE.toml: the architecture and layout to train on a cluster for a budget, and
// how the FLOPs-only answer differs; `mpirun -n N mosaic codesign` shards the sweep.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "mosaic/codesign/distributed.h"
#include "mosaic/report/codesign_report.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/terminal_text.h"

namespace mosaic::cli {
namespace {

struct CodesignCliOptions {
  std::string space;
  int threads = 2;
  size_t top = 10;
  bool json = false;
  bool csv = false;
  bool quiet = false;
  std::string html;
  std::string output;
};

// Under mpirun every rank reads and checks the same inputs, so an error there is usually the same
// on each: the lowest rank that met one prints it (naming itself when it is not rank 0, as when a
// file is missing on one node only) and ends with the error's status; the others end at once,
// silently and with status 0, so that mpirun does not abort the job (and the printing rank with
// it, before it has printed) on their status: the job's status is the printing rank's.
// Collective: every rank calls it once.
void AgreeOnError(const MpiSession& session, const std::exception_ptr& error) {
  const int failing = LowestFailingRank(session, error != nullptr);
  if (failing < 0) return;
  if (session.rank() != failing) throw QuietExit{0};
  if (failing == 0) std::rethrow_exception(error);
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("rank {} of {}: {}", failing, session.size(), e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("rank {} of {}: {}", failing, session.size(), e.what()));
  }
}

void Run(const CodesignCliOptions& o) {
  const MpiSession session;
  SpaceConfig space;
  std::exception_ptr error;
  try {
    space = LoadSpace(o.space);
    const std::vector<std::string> inputs = {o.space, space.base, space.hardware,
                                             space.law.origin};
    CheckOutputIsNotInput(o.output, inputs);
    CheckOutputIsNotInput(o.html, inputs, "--html");
    CheckHtmlIsNotOutput(o.html, o.output);
  } catch (...) {
    error = std::current_exception();
  }
  AgreeOnError(session, error);
  CodesignOptions options;
  options.threads = o.threads;
  // Progress of sweeps longer than a second: on a terminal one line rewritten in place; into a
  // file or pipe (a batch job's log) a line every 30 s from the tenth second, and the last. Under
  // MPI, rank 0's share (the ranks' shares are the same size to one architecture).
  if (!o.quiet && session.rank() == 0) {
    const auto start = std::chrono::steady_clock::now();
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    const std::string what =
        session.size() == 1
            ? std::string("architectures")
            : fmt::format("architectures of rank 0's share ({} ranks)", session.size());
    options.progress = [start, terminal, what, shown = false, last = 0.0](size_t done,
                                                                          size_t total) mutable {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double first = terminal ? 1.0 : 10.0;
      if (elapsed < first && (done < total || !shown)) return;
      if (!terminal && done < total && shown && elapsed - last < 30.0) return;
      shown = true;
      last = elapsed;
      const double rate = elapsed > 0 ? double(done) / elapsed : 0;
      const double left = rate > 0 ? double(total - done) / rate : 0;
      std::fprintf(stderr, "%s%zu/%zu %s, %.0f/s, %.0f s left%s", terminal ? "\r" : "", done,
                   total, what.c_str(), rate, left,
                   !terminal ? "\n" : done < total ? "   " : "   \n");
      std::fflush(stderr);
    };
  }
  const std::optional<CodesignResult> result = RunCodesignDistributed(space, options, session);
  if (!result) return;  // not rank 0
  EmitOutputWithHtml(o.output,
                     o.json  ? report::RenderCodesignJson(*result)
                     : o.csv ? report::RenderCodesignCsv(*result)
                             : PrintableText(report::RenderCodesignText(*result, o.top)),
                     o.html, o.html.empty() ? "" : report::RenderCodesignHtml(*result, o.top));
}

}  // namespace

void AddCodesignCommand(CLI::App& root) {
  auto o = std::make_shared<CodesignCliOptions>();
  CLI::App* cmd = root.add_subcommand(
      "codesign",
      "Architecture and parallel layout together (MOSAIC): for every architecture of a space, the "
      "fastest layout that fits the cluster, the tokens it trains in the budget and its predicted "
      "loss, against the same architectures under a pure model-FLOPs budget.\n\nExamples:\n"
      "  mosaic codesign gb200-nvl72-sparsity          # an embedded example space\n"
      "  mosaic codesign my_space.toml --html codesign.html --threads 8\n"
      "  mpirun -n 4 mosaic codesign my_space.toml --json --output codesign.json");
  cmd->add_option("space", o->space, "space TOML file or embedded space name")->required();
  cmd->add_option("--threads", o->threads, "threads per process")
      ->check(CLI::Range(1, 1024))
      ->default_val(2);
  cmd->add_option("--top", o->top, "architectures listed in the ranking")
      ->check(CLI::Range(1, 1 << 30))
      ->default_val(10);
  auto* json = cmd->add_flag("--json", o->json, "every number as JSON");
  cmd->add_flag("--csv", o->csv, "one CSV row per architecture")->excludes(json);
  cmd->add_flag("--quiet", o->quiet, "no progress line on stderr");
  AddOutputOption(cmd, &o->html, "also write the HTML report to FILE (whole or not at all)",
                  "--html");
  AddOutputOption(cmd, &o->output);
  cmd->callback([o] { Run(*o); });
}

}  // namespace mosaic::cli
