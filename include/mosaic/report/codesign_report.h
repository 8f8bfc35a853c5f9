// Renderings of a co-design result (codesign/codesign.h): text for the terminal, JSON with every
// number, CSV with one row per architecture, and a self-contained HTML page (loss against
// sparsity and against expert count under both budgets with the optima marked, the ranking, the
// rejected architectures).
#pragma once

#include <string>

#include "mosaic/codesign/codesign.h"

namespace mosaic::report {

// The space, the budgets, the optimum and `top` runner-ups (layout, MFU, memory, dropped share,
// tokens, loss), the FLOPs-only optimum, the best loss per sparsity under both budgets, the
// finding, and the rejected architectures counted by reason with examples.
std::string RenderCodesignText(const CodesignResult& result, size_t top = 10);

// Every number: budgets, every architecture with its layout and both losses, curves, optima.
std::string RenderCodesignJson(const CodesignResult& result);

// One header line and one row per architecture (feasible or not, with the rejecting rule).
std::string RenderCodesignCsv(const CodesignResult& result);

// One HTML page, no scripts, no network access.
std::string RenderCodesignHtml(const CodesignResult& result, size_t top = 10);

}  // namespace mosaic::report
