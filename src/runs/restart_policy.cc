#include "mosaic/runs/restart_policy.h"

#include <algorithm>
#include <cstddef>
#include <unordered_map>

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

namespace {

// The last point of one writer's stream of points.
struct Stream {
  bool any = false;
  int64_t first_step = 0;  // the smallest step written
  int64_t last_step = 0;
  double last_wall_time_seconds = 0;
  int32_t last_source = 0;

  // Whether `p` goes back against this stream: a smaller step, or an equal one that does not
  // continue the same writer (another file, or an earlier wall time). NaN wall times compare
  // false, so CSV/JSONL rows repeating a step in one file are repeated values.
  bool GoesBack(const WrittenPoint& p) const {
    if (!any || p.step > last_step) return false;
    if (p.step < last_step) return true;
    return p.source != last_source || p.wall_time_seconds < last_wall_time_seconds;
  }
  void Add(const WrittenPoint& p) {
    first_step = any ? std::min(first_step, p.step) : p.step;
    any = true;
    last_step = p.step;
    last_wall_time_seconds = p.wall_time_seconds;
    last_source = p.source;
  }
};

struct RestartMark {
  size_t index = 0;       // of the point that went back
  int64_t from_step = 0;  // the step its stream had reached: its last point's
  int64_t first_step = 0;  // the smallest step its stream had written
};

// The points that start a restart, in write order. Points of a concurrent file form a stream of
// their own and are judged against it; the points of the other files are judged against the
// run's stream, which every point continues except a concurrent one behind it (a small writer
// beside a long one must not pull the run back, hiding the next file's resume).
std::vector<RestartMark> MarkRestarts(const std::vector<WrittenPoint>& written) {
  std::vector<RestartMark> marks;
  Stream run_stream;
  std::unordered_map<int32_t, Stream> concurrent;
  for (size_t i = 0; i < written.size(); ++i) {
    const WrittenPoint& p = written[i];
    Stream* own = p.concurrent ? &concurrent[p.source] : &run_stream;
    if (own->GoesBack(p)) marks.push_back({i, own->last_step, own->first_step});
    if (p.concurrent) own->Add(p);
    if (!p.concurrent || !run_stream.any || p.step >= run_stream.last_step) run_stream.Add(p);
  }
  return marks;
}

bool SameStream(const WrittenPoint& a, const WrittenPoint& b) {
  return a.concurrent == b.concurrent && (!a.concurrent || a.source == b.source);
}

}  // namespace

std::vector<Restart> FindRestarts(std::string_view tag, const std::vector<WrittenPoint>& written) {
  const std::vector<RestartMark> marks = MarkRestarts(written);
  std::vector<Restart> restarts;
  restarts.reserve(marks.size());
  for (size_t k = 0; k < marks.size(); ++k) {
    const WrittenPoint& at = written[marks[k].index];
    Restart restart{std::string(tag), at.source, marks[k].from_step, at.step, 0};
    // The overlap: the points of this stream that follow, up to the next restart, while their
    // steps stay at or below the step the stream had reached; those below the smallest step it
    // had written (a pass going back past the first pass's start) repeat nothing.
    const size_t end = k + 1 < marks.size() ? marks[k + 1].index : written.size();
    for (size_t i = marks[k].index; i < end; ++i) {
      if (!SameStream(written[i], at)) continue;
      if (written[i].step > restart.from_step) break;
      if (written[i].step >= marks[k].first_step) ++restart.overlapped_points;
    }
    restarts.push_back(std::move(restart));
  }
  return restarts;
}

std::vector<ScalarPoint> ApplyRestartPolicy(RestartPolicy policy,
                                            const std::vector<WrittenPoint>& written,
                                            const std::vector<PurgeMarker>& purges,
                                            std::vector<size_t>* pass_starts) {
  if (pass_starts != nullptr) pass_starts->clear();
  std::vector<ScalarPoint> kept;
  kept.reserve(written.size());
  auto by_step = [](const ScalarPoint& a, int64_t step) { return a.step < step; };
  auto step_less = [](const ScalarPoint& a, const ScalarPoint& b) { return a.step < b.step; };
  switch (policy) {
    case RestartPolicy::kFirst: {
      // The earliest-written point of each step: a stable sort by step keeps write order among
      // equal steps, so the first of each run of equal steps is the one kept. Linear when the
      // points are already in step order, O(n log n) otherwise.
      for (const WrittenPoint& p : written) kept.push_back({p.step, p.wall_time_seconds, p.value});
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
      const std::vector<RestartMark> marks = MarkRestarts(written);
      size_t next_mark = 0;
      size_t next_purge = 0;
      // Points that are not restarts but do not extend the kept series (repeated values, a
      // concurrent writer behind another) wait here and are merged in write order, the last
      // written of a step winning.
      std::vector<ScalarPoint> pending;
      auto flush = [&] {
        if (pending.empty()) return;
        std::stable_sort(pending.begin(), pending.end(), step_less);
        const auto middle = static_cast<std::ptrdiff_t>(kept.size());
        kept.insert(kept.end(), pending.begin(), pending.end());
        std::inplace_merge(kept.begin(), kept.begin() + middle, kept.end(), step_less);
        pending.clear();
        // Of equal steps (in write order after the stable merge) keep the last.
        size_t out = 0;
        for (size_t i = 0; i < kept.size(); ++i) {
          if (out > 0 && kept[out - 1].step == kept[i].step) {
            kept[out - 1] = kept[i];
          } else {
            kept[out++] = kept[i];
          }
        }
        kept.resize(out);
      };
      auto evict_from = [&](int64_t step) {
        flush();
        auto it = std::lower_bound(kept.begin(), kept.end(), step, by_step);
        kept.erase(it, kept.end());
      };
      for (size_t i = 0; i < written.size(); ++i) {
        const WrittenPoint& p = written[i];
        while (next_purge < purges.size() && purges[next_purge].sequence < p.sequence) {
          evict_from(purges[next_purge++].step);
        }
        const ScalarPoint point{p.step, p.wall_time_seconds, p.value};
        if (next_mark < marks.size() && marks[next_mark].index == i) {
          ++next_mark;
          evict_from(p.step);
          kept.push_back(point);
        } else if (pending.empty() && (kept.empty() || p.step > kept.back().step)) {
          kept.push_back(point);
        } else {
          pending.push_back(point);
        }
      }
      // Purge markers after the tag's last point still evict its later steps: a marker acts on
      // every tag, written again after it or not.
      while (next_purge < purges.size()) evict_from(purges[next_purge++].step);
      flush();
      break;
    }
    case RestartPolicy::kAll: {
      const std::vector<RestartMark> marks = MarkRestarts(written);
      size_t next_mark = 0;
      for (size_t i = 0; i < written.size(); ++i) {
        const WrittenPoint& p = written[i];
        if (next_mark < marks.size() && marks[next_mark].index == i) {
          ++next_mark;
          if (pass_starts != nullptr) pass_starts->push_back(i);
        }
        kept.push_back({p.step, p.wall_time_seconds, p.value});
      }
      break;
    }
  }
  return kept;
}

}  // namespace mosaic::runs
