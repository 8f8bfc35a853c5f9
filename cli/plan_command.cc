// mosaic plan [STUDY.toml]: the experiment ladder table.
#include "command.h"

namespace mosaic::cli {
void AddPlanCommand(CLI::App& root) { (void)root; }
}  // namespace mosaic::cli
