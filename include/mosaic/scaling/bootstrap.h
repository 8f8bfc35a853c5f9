// Bootstrap by run (Efron & Tibshirani 1993, ch. 6; the cluster bootstrap): each resample draws
// as many runs as the data has, with replacement, and keeps every point of a drawn run (once per
// draw), so that the checkpoints of one run stay together. Each resample is refitted by the
// solver warm-started from the full fit (one start, the full objective). Intervals are
// percentile intervals with linear interpolation between order statistics (numpy's default).
// Deterministic: resample b uses its own generator seeded from (seed, b), whatever the threads,
// and draws from the runs in a canonical order (CanonicalRunOrder), so that the same data in any
// row order gives the same resamples and intervals. Two arms are resampled independently: give
// each its own seed stream (StreamSeed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/scaling/fit.h"

namespace mosaic::scaling {

struct BootstrapOptions {
  int resamples = 1000;
  uint64_t seed = 0;
  double confidence = 0.95;  // of the two-sided percentile intervals
  int threads = 2;
  // Optional: one key per run of the data (indexed like FitData::run), all distinct. Resamples
  // then draw runs in the order of their keys rather than CanonicalRunOrder, so two bootstraps
  // over data with the same keys and the same seed draw the same keys in every resample: a
  // paired bootstrap (two arms run at the same rungs, each resample drawing the same rungs of
  // both; Efron & Tibshirani 1993, ch. 9). Empty: CanonicalRunOrder.
  std::vector<int64_t> run_keys;

  // Throws InputError for a confidence outside (0, 1), or resamples below
  // MinBootstrapResamples(confidence).
  void Validate() const;
};

// The fewest resamples whose percentile interval at `confidence` (in (0, 1)) has at least one
// resample beyond each end: B · (1 − confidence) / 2 >= 1, so B = ceil(2 / (1 − confidence)),
// 40 at 95%. With fewer, both ends are the extreme resamples and the "interval" is the range of a
// handful of refits, which need not hold the point estimate (Efron & Tibshirani 1993, §13.3 and
// §19.3, recommend 1000 or more for percentile intervals).
int MinBootstrapResamples(double confidence);

// The rule of that minimum as messages state it: "bootstrap >= 40 at confidence 0.95 (...)",
// `name` being what the user set (a file's field, or the flag "--bootstrap").
std::string BootstrapMinimumRule(double confidence, std::string_view name = "bootstrap");

struct Interval {
  double low = 0;
  double high = 0;
};

struct BootstrapResult {
  std::vector<std::vector<double>> theta;  // full θ per resample that converged
  std::vector<int> resample;               // the index (0-based draw) of each θ's resample
  int resamples = 0;
  int failed = 0;                          // resamples whose refit did not converge (dropped)
  // Resamples whose distinct points cannot identify the law (CheckDesign; dropped: their
  // refit stays where it starts, the full fit, and would narrow every interval).
  int underdetermined = 0;
  double confidence = 0.95;
  std::vector<Interval> params;            // per law parameter, value space
  // A free parameter whose interval has zero width (no resample moved it: the data do not
  // determine it), and underdetermined resamples left out, one sentence each.
  std::vector<std::string> cautions;
};

// The seed of an independent stream `stream` derived from `seed` (stream 0 is `seed` itself):
// the base arm of a comparison uses stream 0, the compared arm stream 1.
uint64_t StreamSeed(uint64_t seed, uint64_t stream);

// The runs of `data` sorted by their points (each run's rows of inputs, loss and weight, sorted,
// compared lexicographically); identical runs keep their order and are interchangeable.
std::vector<int> CanonicalRunOrder(const FitData& data);

// The two-sided percentile interval of `values` at `confidence` (values are copied and sorted).
Interval PercentileInterval(std::vector<double> values, double confidence);

// Percentile bootstrap by run (Efron & Tibshirani 1993, ch. 13): each resample draws as many
// runs, with replacement, as `data` has runs with a point of weight > 0 (points of weight 0, and
// runs of those alone, are in no resample), and refits from `full_fit`'s optimum. Throws
// InputError for options that fail BootstrapOptions::Validate; run_keys that are not one distinct
// key per run; when the weighted points are no
// more than the free parameters (the fit passes through each, so every resample refits to the
// same values); when every refitted resample drew each run once (the data itself: the others
// cannot determine the law); and when fewer resamples than MinBootstrapResamples(confidence) remain once the
// underdetermined and unconverged ones are left out (the message suggests a count whose refitted
// share, taken two standard errors below the share seen, stays above the minimum by three
// binomial standard deviations).
BootstrapResult Bootstrap(const Law& law, const FitData& data, const FitOptions& fit_options,
                          const FitSummary& full_fit, const BootstrapOptions& options);

}  // namespace mosaic::scaling
