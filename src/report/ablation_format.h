// Short texts shared by the ablation's text and HTML reports (not part of the public API).
#pragma once

#include <string>
#include <vector>

#include "mosaic/runs/ablation.h"

namespace mosaic::report::ablation_format {

// "+0.0123" with `decimals` decimals; "+1.0000e+308" (scientific, the same decimals) from a
// magnitude of 1e9, so that a huge logged value keeps the table's columns; "n/a" when not finite.
std::string Signed(double value, int decimals = 4);

// The decimals the report prints the compared tag's values with: `base` for values of order 1
// (a loss), more for smaller ones (one more per power of ten below 1 of the largest compared
// value, so a learning rate of 2e-4 shows as 0.00020000, not 0.0002), at most 15.
int Decimals(const runs::Ablation& ablation, int base = 4);

// `value` with `decimals` decimals (scientific from a magnitude of 1e9, as Signed); "n/a" when
// not finite.
std::string Fixed(double value, int decimals);

// The steps logged twice, merged over files: "1000–1500", "1000–1500, 8000–8400"; "" when none.
std::string StepRanges(const std::vector<runs::LoggedTwice>& logged_twice);

// One line: "logged twice 1000–1500 (first pass kept); non-finite train/grad_norm at 1500, 1852;
// stall"; "ok" for a healthy run.
std::string HealthSummary(const runs::RunHealth& health);

// Where the run was compared, briefly: "final 10000", "5000 (run's final; baseline to 10000)",
// "f 1.000: 5000 ↔ 10000".
std::string ComparedAtShort(const runs::AblationRow& row);

// Findings of one kind over several tags (a restart's stall shows in every tag written then).
struct FindingGroup {
  runs::FindingKind kind = runs::FindingKind::kStall;
  size_t tags = 0;
  std::vector<int64_t> steps;  // the union, ascending
  const runs::Finding* first = nullptr;
};

// `findings` grouped by kind, in order of first appearance.
std::vector<FindingGroup> GroupByKind(const std::vector<runs::Finding>& findings);

// "stall in 64 tags after steps 8250, 8400 (e.g. eval/loss: 1 stall ...)", or the one finding's
// "tag: kind: message".
std::string GroupText(const FindingGroup& group);

// "inside" or "outside".
std::string InsideText(const runs::AblationRow& row);

// The first metric of `kind` over the rows' diagnostics, or "".
std::string FirstMetric(const runs::Ablation& ablation, runs::DiagMetricKind kind);

}  // namespace mosaic::report::ablation_format
