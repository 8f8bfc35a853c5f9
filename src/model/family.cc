#include "mosaic/model/family.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mosaic/util/error.h"

namespace mosaic {

int64_t MarinLadderDepth(int64_t d_model) {
  const double d = static_cast<double>(d_model);
  // std::nearbyint rounds half to even under the default rounding mode, like Python's round().
  const int64_t rounded = static_cast<int64_t>(std::nearbyint(d / (64.0 + 4.0 * std::log2(d) - 9.0)));
  return rounded + rounded % 2;
}

std::vector<std::string> DeriveMarinLadder(ModelConfig& c,
                                           const std::set<std::string>& explicit_fields) {
  std::vector<std::string> lines;
  const int64_t d = c.d_model;
  const int64_t hd = c.head_dim > 0 ? c.head_dim : 128;
  if (d <= 0 || d % hd != 0) {
    throw InputError(fmt::format(
        "d_model = {}. Violated constraint: d_model is a positive multiple of head_dim ({}) in "
        "the marin-ladder family",
        d, hd));
  }
  if (d % 2 != 0) {
    throw InputError(fmt::format(
        "d_model = {}. Violated constraint: d_model is even in the marin-ladder family", d));
  }
  auto derive = [&](const char* field, int64_t& member, int64_t value, std::string how) {
    if (explicit_fields.contains(field)) {
      lines.push_back(fmt::format("{} = {} (set explicitly)", field, member));
      return;
    }
    member = value;
    lines.push_back(fmt::format("{} = {} ({})", field, value, how));
  };
  const double ratio = static_cast<double>(d) / (64.0 + 4.0 * std::log2(static_cast<double>(d)) - 9.0);
  const int64_t depth = MarinLadderDepth(d);
  const int64_t rounded = static_cast<int64_t>(std::nearbyint(ratio));
  derive("layers", c.layers, depth,
         rounded == depth
             ? fmt::format("round({} / (64 + 4·log2 {} − 9)) = round({:.2f})", d, d, ratio)
             : fmt::format("round({} / (64 + 4·log2 {} − 9)) = round({:.2f}) = {}, bumped to even",
                           d, d, ratio, rounded));
  derive("head_dim", c.head_dim, hd, "fixed at 128");
  derive("heads", c.heads, d / hd, fmt::format("d / {}", hd));
  const int64_t H = c.heads;
  derive("kv_heads_local", c.kv_heads_local, std::max<int64_t>(1, H / 4), "max(1, H // 4)");
  derive("kv_heads_global", c.kv_heads_global, std::max<int64_t>(1, H / 8), "max(1, H // 8)");
  derive("expert_width", c.expert_width, d / 2, "d / 2");
  if (c.shared_experts > 0) derive("shared_expert_width", c.shared_expert_width, d / 2, "d / 2");
  return lines;
}

}  // namespace mosaic
