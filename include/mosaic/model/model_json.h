// A model's accounting as JSON, the document `mosaic model --json` prints and the Python package
// returns: exact parameter counts by convention and by component, forward and training FLOPs per
// token under the full-square (key "physical", its former name), causal and Levanter-table
// conventions (model/flops.h), Kaplan's 6·N.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "mosaic/model/flops.h"
#include "mosaic/model/model_loader.h"
#include "mosaic/model/param_count.h"

namespace mosaic {

// Kaplan-style 6·N FLOPs per token with N = active_params_no_embedding; a looped model applies
// the trunk's `loops` times and its multi-token-prediction modules (components "mtp_*") once.
// Throws InputError when the product leaves the 64-bit range.
int64_t SixNFlopsPerToken(const ModelConfig& config, const ParamCount& params);

// {"name", "origin", "source", "total_params", "active_params", ..., "components": [...],
// "seq_len", "flops": {"physical": {...}, "causal": {...}, "levanter_table": {...}},
// "six_n_flops_per_token", ["tokens", "six_n_train_flops"], "notes", "derivation",
// "overrides"}. Integers exact. `tokens` > 0 adds "train_flops" (= 3 × forward × tokens) to
// each convention, and the tokens and their 6·N·D FLOPs. "notes": UnusedFieldNotes. `seq_len`
// is the attention span of the FLOP counts.
nlohmann::ordered_json ModelJson(const ModelSpec& spec, int64_t seq_len, double tokens);

}  // namespace mosaic
