// Sentences shared by the decision's text and HTML reports (not part of the public API).
#pragma once

#include <string>

#include "mosaic/decision/decision.h"

namespace mosaic::report::decision_format {

// "sensitivity, not used to decide: fitted on every rung each arm ran (fsdp-chunk1 on d768, ep64
// on d768, d1024): 1.689×"; "" when not computed.
std::string SensitivityText(const Decision& d);

// "the projected effective-compute gain +17.7% is outside the noise (6.7%)", with ", but its
// 95% interval reaches inside it (low end -10.2%)" when the interval's low end is within the
// noise; "" without noise or a projection.
std::string NoiseComparisonText(const Decision& d);

// "tokens/s ratio ep64 / fsdp-chunk1 = 1.360; wall-clock advantage 1.601× [0.406, 2.238]" for
// one throughput scenario (the interval when the bootstrap gave one); "" without a ratio.
std::string ThroughputRatioText(const Decision& d, const Scenario& s);

}  // namespace mosaic::report::decision_format
