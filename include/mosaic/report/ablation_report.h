// Renderings of an Ablation (runs/ablation.h): the text report for the terminal, JSON with every
// number, and a self-contained HTML page with inline SVG charts (each ablation's curve against its
// baseline with the platform offset taken out, the effects with their uncertainty and the offset's
// band, the effect table with run health, and the per-loop diagnostics as small multiples).
#pragma once

#include <string>

#include "mosaic/runs/ablation.h"

namespace mosaic::report {

// The platform offset; one row per ablation run (baseline, where it was compared, values,
// difference, offset-corrected effect ± uncertainty, whether it lies inside the offset's
// uncertainty, and its health); the health of every run in detail; the corrected effect at every
// compared step; per run the per-loop diagnostics and the ablations side by side per loop.
std::string RenderAblationText(const runs::Ablation& ablation);

// {"tag", "alignment", "offset", "runs": [{"run", "base_run", "compared_at", "effect",
// "uncertainty", "points", "health", "diagnostics"}], "baseline_health", "notes"}; non-finite
// numbers are null.
std::string RenderAblationJson(const runs::Ablation& ablation);

// One HTML page, no scripts, no network access.
std::string RenderAblationHtml(const runs::Ablation& ablation);

}  // namespace mosaic::report
