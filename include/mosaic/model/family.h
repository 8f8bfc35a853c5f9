// Model families whose shape follows from d_model by a rule. The one family so far is Marin's MoE
// ladder (seed 000, docs/accounting.md "Model family"):
//   heads H = d / head_dim (head_dim 128), KV heads H//4 on windowed layers and H//8 on global
//   layers (each at least 1), expert width and shared expert width d/2, and depth
//   L = round(d / (64 + 4·log2 d − 9)) bumped to even (L + L % 2): d768 → 8, d1024 → 12,
//   d1536 → 16, d2048 → 22 (Marin experiments/grug/moe ladder; the seed's "aspect-ratio rule").
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "mosaic/model/model_config.h"

namespace mosaic {

// The depth rule above for hidden size d > 0. Python's round (half to even) is reproduced.
int64_t MarinLadderDepth(int64_t d_model);

// Fills the fields of a "marin-ladder" config that the rule derives, except those named in
// `explicit_fields` (set by the user or the file). Returns one line per derived field saying how,
// e.g. "layers = 12 (round(1024 / (64 + 4·log2 1024 − 9)) = 11, bumped to even)".
// Throws InputError when d_model is not a positive multiple of head_dim.
std::vector<std::string> DeriveMarinLadder(ModelConfig& config,
                                           const std::set<std::string>& explicit_fields);

}  // namespace mosaic
