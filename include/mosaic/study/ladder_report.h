// Renderings of a LadderPlan: the seed-000 style table with its conventions and per-arm
// differences (text), and the same rows with exact numbers as JSON or CSV.
#pragma once

#include <string>

#include "mosaic/study/ladder.h"

namespace mosaic {

// The reference arm's ladder as the seed prints it (markdown table: size, layers, active params,
// token budget, racks, step budget, train FLOPs, est. time), followed by the conventions used, the
// physical-vs-table FLOP comparison, the eval cadence, and what differs per arm.
std::string RenderLadderText(const LadderPlan& plan);

// {"study": {...}, "rows": [{"arm", "d_model", "layers", "active_params", ...}, ...]}; integers
// exact, doubles round-trip.
std::string RenderLadderJson(const LadderPlan& plan);

// One header line and one line per row, the same fields as the JSON rows.
std::string RenderLadderCsv(const LadderPlan& plan);

}  // namespace mosaic
