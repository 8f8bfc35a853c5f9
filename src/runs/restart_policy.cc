#include "mosaic/runs/restart_policy.h"

#include <algorithm>

#include "mosaic/util/error.h"

namespace mosaic::runs {

std::string_view ToString(RestartPolicy policy) {
  switch (policy) {
    case RestartPolicy::kFirst: return "first";
    case RestartPolicy::kLast: return "last";
    case RestartPolicy::kAll: return "all";
  }
  return "?";
}

RestartPolicy RestartPolicyFromString(std::string_view text) {
  if (text == "first") return RestartPolicy::kFirst;
  if (text == "last") return RestartPolicy::kLast;
  if (text == "all") return RestartPolicy::kAll;
  throw FieldError({}, "--restarts", text, "one of first, last, all");
}

std::vector<Restart> FindRestarts(std::string_view tag, const std::vector<WrittenPoint>& written) {
  std::vector<Restart> restarts;
  bool any = false;
  int64_t last_step = 0;
  int64_t max_step = 0;
  bool open = false;  // whether the last restart's overlap is still being counted
  for (const WrittenPoint& p : written) {
    if (any && p.step <= last_step) {
      restarts.push_back({std::string(tag), p.source, max_step, p.step, 0});
      open = true;
    }
    if (open) {
      if (p.step <= restarts.back().from_step) {
        ++restarts.back().overlapped_points;
      } else {
        open = false;
      }
    }
    any = true;
    last_step = p.step;
    max_step = std::max(max_step, p.step);
  }
  return restarts;
}

std::vector<ScalarPoint> ApplyRestartPolicy(RestartPolicy policy,
                                            const std::vector<WrittenPoint>& written,
                                            const std::vector<PurgeMarker>& purges) {
  std::vector<ScalarPoint> kept;
  kept.reserve(written.size());
  auto by_step = [](const ScalarPoint& a, int64_t step) { return a.step < step; };
  switch (policy) {
    case RestartPolicy::kFirst: {
      // The earliest-written point of each step: a stable sort by step keeps write order among
      // equal steps, so the first of each run of equal steps is the one kept. Linear when the
      // points are already in step order, O(n log n) otherwise.
      for (const WrittenPoint& p : written) kept.push_back({p.step, p.wall_time_seconds, p.value, 1});
      auto step_less = [](const ScalarPoint& a, const ScalarPoint& b) { return a.step < b.step; };
      if (!std::is_sorted(kept.begin(), kept.end(), step_less)) {
        std::stable_sort(kept.begin(), kept.end(), step_less);
      }
      kept.erase(std::unique(kept.begin(), kept.end(),
                             [](const ScalarPoint& a, const ScalarPoint& b) {
                               return a.step == b.step;
                             }),
                 kept.end());
      break;
    }
    case RestartPolicy::kLast: {
      size_t next_purge = 0;
      auto evict_from = [&](int64_t step) {
        auto it = std::lower_bound(kept.begin(), kept.end(), step, by_step);
        kept.erase(it, kept.end());
      };
      for (const WrittenPoint& p : written) {
        while (next_purge < purges.size() && purges[next_purge].sequence < p.sequence) {
          evict_from(purges[next_purge++].step);
        }
        if (!kept.empty() && p.step <= kept.back().step) evict_from(p.step);
        kept.push_back({p.step, p.wall_time_seconds, p.value, 1});
      }
      break;
    }
    case RestartPolicy::kAll: {
      int32_t pass = 1;
      bool any = false;
      int64_t last_step = 0;
      for (const WrittenPoint& p : written) {
        if (any && p.step <= last_step) ++pass;
        kept.push_back({p.step, p.wall_time_seconds, p.value, pass});
        any = true;
        last_step = p.step;
      }
      break;
    }
  }
  return kept;
}

}  // namespace mosaic::runs
