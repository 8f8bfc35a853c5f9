// The machine-readable summary of runs (`mosaic runs --json`, the Python package's
// summarize_runs): per run its files (format, whether loaded and why not, event-record counts by
// kind, scalar encodings, wall-time span), per tag its points, first and last step, final value,
// mean of the last k finite values, minimum and non-finite count (non-finite figures as null),
// the restarts found, the health findings (a run-level one has a null tag), the record issues and
// the notes.
#pragma once

#include <string>
#include <vector>

#include "mosaic/runs/run_digest.h"

namespace mosaic::runs {

// The JSON array (one object per digest, in order, keys in the order above), with a final
// newline.
std::string RunDigestsJson(const std::vector<RunDigest>& digests);

}  // namespace mosaic::runs
