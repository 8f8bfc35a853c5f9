// mosaic decide [STUDY.toml]: the decision report of a study (default: the embedded FSDP-vs-EP
// study on its real results).
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "mosaic/decision/decision.h"
#include "mosaic/report/decision_report.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/terminal_text.h"

namespace mosaic::cli {
namespace {

struct DecideOptions {
  std::string study = std::string(kDefaultStudy);
  bool json = false;
  std::string html;
  std::string output;
  int threads = 2;
};

void Run(const DecideOptions& o) {
  mosaic::DecideOptions options;
  options.threads = o.threads;
  const StudyConfig study = LoadStudy(o.study);
  const std::vector<std::string> inputs = StudyInputFiles(o.study, study);
  CheckOutputIsNotInput(o.output, inputs);
  CheckOutputIsNotInput(o.html, inputs, "--html");
  CheckHtmlIsNotOutput(o.html, o.output);
  const Decision decision = Decide(study, options);
  EmitOutputWithHtml(o.output,
                     o.json ? report::RenderDecisionJson(decision)
                            : PrintableText(report::RenderDecisionText(decision)),
                     o.html, o.html.empty() ? "" : report::RenderDecisionHtml(decision));
}

}  // namespace

void AddDecideCommand(CLI::App& root) {
  auto o = std::make_shared<DecideOptions>();
  CLI::App* cmd = root.add_subcommand(
      "decide",
      "The decision report of a study: each arm's ladder results, per-arm scaling-law fits with "
      "bootstrap intervals, the projection to the target, throughput (measured and from the "
      "performance model), the rule's criteria (PASS / FAIL / UNKNOWN with what would settle "
      "each) and the verdict.\n\nExamples:\n"
      "  mosaic decide                      # the embedded FSDP-vs-EP study on its real results\n"
      "  mosaic decide --html decision.html # the same, with a self-contained HTML report\n"
      "  mosaic decide my_study.toml --json --output decision.json");
  cmd->add_option("study", o->study,
                  "study TOML file with [results] and [rule], or an embedded study name "
                  "(default: fsdp-vs-ep)");
  cmd->add_flag("--json", o->json, "every number of the report as JSON");
  AddOutputOption(cmd, &o->html, "also write the HTML report to FILE (whole or not at all)",
                  "--html");
  cmd->add_option("--threads", o->threads, "threads for the bootstrap")
      ->check(CLI::Range(1, 1024))
      ->default_val(2);
  AddOutputOption(cmd, &o->output, "write the text or JSON to FILE (whole or not at all)");
  cmd->callback([o] { Run(*o); });
}

}  // namespace mosaic::cli
