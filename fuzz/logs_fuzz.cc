// libFuzzer target for the CSV and JSONL training-log readers with their options: the step
// column (detected, or named), the `--tags` filter (RE2) and each `--restarts` policy applied to
// every kept tag's points (runs/table_log.h, runs/run.h, runs/restart_policy.h), as LoadRun reads
// a CSV or JSONL file.
// Input (fuzz_input.h): section 0 is the log; section 1's first line the --tags pattern (none when
// absent) and its second line the --step-column (detect when absent). Selector bit 0: CSV (0) or
// JSONL (1); bits 1-2: restart policy first, last, all.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "mosaic/runs/restart_policy.h"
#include "mosaic/runs/run.h"
#include "mosaic/runs/table_log.h"

#include <re2/re2.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mosaic;
  using namespace mosaic::runs;
  const fuzz::FuzzInput input = fuzz::SplitFuzzInput(data, size);
  const std::vector<std::string_view> options = input.Lines(1);
  const bool jsonl = input.selector & 1;
  const RestartPolicy policy = std::array{RestartPolicy::kFirst, RestartPolicy::kLast,
                                          RestartPolicy::kAll}[((input.selector >> 1) & 3) % 3];
  std::shared_ptr<const re2::RE2> tags;
  if (!options.empty()) {
    try {
      tags = CompileTagFilter(std::string(options[0]));
    } catch (const UsageError&) {  // a pattern RE2 refuses: a malformed --tags
      return 0;
    }
  }
  const std::string step_column = options.size() > 1 ? std::string(options[1]) : "";
  fuzz::ExpectOnlyInputErrors([&] {
    const TableLog log = jsonl ? ReadJsonlLog(input.Section(0), "fuzz.jsonl", step_column)
                               : ReadCsvLog(input.Section(0), "fuzz.csv", step_column);
    for (const TagPoints& tag : log.tags) {
      if (tags && !re2::RE2::PartialMatch(tag.tag, *tags)) continue;
      (void)FindRestarts(tag.tag, tag.points);
      (void)ApplyRestartPolicy(policy, tag.points, {});
    }
  });
  return 0;
}
