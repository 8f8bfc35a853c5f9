// Renderings of a Decision (decision/decision.h): the text report for the terminal, JSON with
// every number, and a self-contained HTML page with inline SVG charts (loss against compute per
// arm with fits, intervals and the target; tokens/s and MFU per arm; dropped share; memory per
// GPU; the criteria; the verdict).
#pragma once

#include <string>

#include "mosaic/decision/decision.h"

namespace mosaic::report {

// Ladder table, per-arm fits, projection to the target, noise, throughput, and per throughput
// source the criteria table (PASS / FAIL / UNKNOWN with reasons, what would settle each unknown)
// and the verdict.
std::string RenderDecisionText(const Decision& decision);

// {"study", "results", "fits", "target", "noise", "scenarios": [{"throughput", "criteria",
// "verdict"}], ...}; non-finite numbers are null.
std::string RenderDecisionJson(const Decision& decision);

// One HTML page, no scripts, no network access.
std::string RenderDecisionHtml(const Decision& decision);

}  // namespace mosaic::report
