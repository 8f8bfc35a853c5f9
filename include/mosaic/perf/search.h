// Layout search: every divisor-valid combination of tp, pp, vpp, cp, dp, fsdp, ep, etp and
// moe_chunk for a cluster, each with micro-batches 1, 2, 4, … up to what memory allows and the
// three recompute policies, evaluated by the step model and ranked by tokens/s per GPU. Rejected
// combinations are counted by reason (does not divide, exceeds a domain, out of memory) with a few
// examples each. Evaluation is allocation-free per layout, so a search for one model on one
// cluster runs in well under a second (bench/perf_bench.cc).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "mosaic/perf/step_model.h"

namespace mosaic {

struct SearchOptions {
  int64_t top = 10;             // candidates kept in full, best first
  int64_t max_cp = 8;           // context-parallel degrees tried: 1, 2, 4, … up to this
  int64_t max_vpp = 8;          // virtual stages tried: 1, 2, 4, … up to this
  int64_t examples_per_reason = 3;
};

struct SearchCandidate {
  Layout layout;
  StepEstimate estimate;
};

struct Rejection {
  Layout layout;
  LayoutViolation violation;
};

struct SearchResult {
  std::vector<SearchCandidate> best;            // the `top` fastest feasible, best first
  std::vector<double> feasible_tokens_per_s;    // every feasible layout's tokens/s, descending
  int64_t evaluated = 0;                        // layouts looked at (valid or not)
  std::array<int64_t, 3> rejected{};            // by RejectKind
  std::vector<Rejection> examples;              // a few per reason

  int64_t feasible() const { return static_cast<int64_t>(feasible_tokens_per_s.size()); }
  // 1-based rank a layout with `tokens_per_s` would take among the feasible ones.
  int64_t RankOf(double tokens_per_s) const;
};

SearchResult SearchLayouts(const ModelShape& model, const Cluster& cluster, const PerfJob& job,
                           const SharedPerfParams& shared, const PerfProfile& profile,
                           const DropParams& drop, const SearchOptions& options = {});

}  // namespace mosaic
