// The offset between two runs of one configuration (seed 004: the platform offset between two
// clusters, measured with the run equivalent to the base recipe): over the steps both runs logged
// with finite values, the differences d_i = b_i − a_i, their mean, sample standard deviation and
// standard error of the mean (sd / sqrt(n)), and the mean relative difference d_i / a_i.
#pragma once

#include <cstdint>
#include <optional>

#include "mosaic/runs/time_series.h"

namespace mosaic::runs {

struct SeriesOffset {
  int64_t common_steps = 0;
  int64_t first_common_step = 0;
  int64_t last_common_step = 0;
  double mean_difference = 0;       // mean of b − a, in the tag's unit
  double sd_difference = 0;         // sample standard deviation (0 when one step: see has_spread)
  double standard_error = 0;        // sd / sqrt(n) (0 when one step)
  double min_difference = 0;
  double max_difference = 0;
  double mean_relative_difference = 0;  // mean of (b − a) / a over steps with a != 0
  int64_t relative_steps = 0;           // common steps with a != 0 (0: no relative difference)
  int64_t non_finite_steps = 0;  // steps in both runs left out: a non-finite value in either

  // Whether the spread (sd, standard error) is measured: it takes two common steps or more.
  bool has_spread() const { return common_steps > 1; }
  // Whether a relative difference is measured: some common step has a nonzero value in `a`.
  bool has_relative() const { return relative_steps > 0; }
};

// The offset of `b` against `a`; nullopt when they share no step with finite values.
std::optional<SeriesOffset> CompareSeries(const TimeSeries& a, const TimeSeries& b);

}  // namespace mosaic::runs
