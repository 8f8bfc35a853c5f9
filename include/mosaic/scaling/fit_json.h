// A fitted arm as JSON, the document `mosaic fit --json` prints and the Python package returns:
// the law, termination, objective, parameters (paper names, value space; pinned ones listed),
// bootstrap intervals, points and runs, convergence of the starts and the full recipe. Non-finite
// numbers are null.
#pragma once

#include <nlohmann/json.hpp>

#include "mosaic/scaling/fit_request.h"

namespace mosaic::scaling {

nlohmann::ordered_json FitJson(const Law& law, const FittedArm& arm);

}  // namespace mosaic::scaling
