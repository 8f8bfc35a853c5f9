// mosaic plan [STUDY.toml]: the experiment ladder table.
#include <memory>
#include <string>

#include "command.h"
#include "mosaic/decision/decision.h"
#include "mosaic/study/ladder.h"
#include "mosaic/study/ladder_report.h"

namespace mosaic::cli {
namespace {

struct PlanOptions {
  std::string study = std::string(kDefaultStudy);
  bool json = false;
  bool csv = false;
  std::string output;
};

void Run(const PlanOptions& options) {
  const StudyConfig study = LoadStudy(options.study);
  // The files the study names beside it (results, logs) are refused too: plan does not read
  // them, but a plan over a study's results would destroy its data.
  CheckOutputIsNotInput(options.output, StudyInputFiles(options.study, study));
  const LadderPlan plan = PlanLadder(study);
  if (options.json || options.csv) {
    EmitOutput(options.output, options.json ? RenderLadderJson(plan) : RenderLadderCsv(plan));
  } else {
    EmitText(options.output, RenderLadderText(plan));
  }
}

}  // namespace

void AddPlanCommand(CLI::App& root) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* cmd = root.add_subcommand(
      "plan",
      "Experiment ladder: per rung, depth, active params, token budget, steps, training FLOPs, "
      "racks and estimated wall-clock, for every arm of a study.\n\nExamples:\n"
      "  mosaic plan                          # the embedded FSDP-vs-EP study (seed 000)\n"
      "  mosaic plan data/studies/fsdp-vs-ep.toml --csv\n"
      "  mosaic plan my_study.toml --json --output plan.json");
  cmd->add_option("study", options->study,
                  "study TOML file or embedded study name (default: fsdp-vs-ep)");
  auto* json = cmd->add_flag("--json", options->json, "rows as JSON with exact numbers");
  cmd->add_flag("--csv", options->csv, "rows as CSV with exact numbers")->excludes(json);
  AddOutputOption(cmd, &options->output);
  cmd->callback([options] { Run(*options); });
}

}  // namespace mosaic::cli
