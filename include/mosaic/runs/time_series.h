// A run's scalar series for one tag: the points kept by the restart policy, ordered by step
// (with `--restarts all`: by pass, then in write order), and the summaries the scaling fits use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mosaic::runs {

// One logged value. `wall_time_seconds` is seconds since the Unix epoch, NaN when the format has
// no time (CSV/JSONL without a time column). 24 bytes: the memory of a loaded run is these.
struct ScalarPoint {
  int64_t step = 0;
  double wall_time_seconds = 0;
  double value = 0;
};

// What a one-line report of a series shows, found in one pass (TimeSeries::Summarize).
struct SeriesSummary {
  int64_t first_step = 0;  // the smallest step; 0 for an empty series
  int64_t last_step = 0;   // the largest step; 0 for an empty series
  double min = 0;          // the smallest finite value; NaN when there is none
  int64_t non_finite = 0;  // NaN or infinite values
};

struct TimeSeries {
  std::string run;  // the run's path relative to the log directory given
  std::string tag;
  std::vector<ScalarPoint> points;
  // True when every value was stored as a float32 (simple_value, DT_FLOAT): exports then print
  // the shortest decimal that round-trips through float, e.g. 4.93373 rather than 4.9337301254.
  bool float32 = true;
  // Under `--restarts all`, where each pass after the first begins: the index in `points` of its
  // first point, increasing (a pass is a contiguous stretch of points; the first pass is 1 and
  // each restart starts the next). Empty under `first` and `last`: every point is of pass 1.
  std::vector<size_t> pass_starts;

  bool empty() const { return points.empty(); }
  int64_t FirstStep() const;  // requires !empty()
  int64_t LastStep() const;   // the largest step; requires !empty()

  // The value of the last point (largest step; under `all`, the last one written), NaN if empty.
  double FinalValue() const;
  // Mean of the last `k` finite values (fewer when the series has fewer); NaN when none.
  double MeanOfLast(int k) const;
  // Smallest finite value; NaN when there is none.
  double Min() const;
  // The value logged at `step` (the first match), or nullopt.
  std::optional<double> ValueAt(int64_t step) const;
  // Number of NaN or infinite values.
  int64_t NonFiniteCount() const;
  // The pass of points[i], from 1: one more than the passes started at or before i.
  int32_t PassOf(size_t i) const;
  // The number of points of pass 1 (they come first).
  size_t FirstPassSize() const { return pass_starts.empty() ? points.size() : pass_starts.front(); }
  // FirstStep, LastStep, Min and NonFiniteCount in one pass over the points.
  SeriesSummary Summarize() const;
};

}  // namespace mosaic::runs
