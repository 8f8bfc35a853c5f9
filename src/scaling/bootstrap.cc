#include "mosaic/scaling/bootstrap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "location.h"
#include "mosaic/scaling/fit_problem.h"
#include "mosaic/util/error.h"
#include "mosaic/util/parallel_for.h"

namespace mosaic::scaling {

int MinBootstrapResamples(double confidence) {
  return static_cast<int>(std::ceil(2 / (1 - confidence) - 1e-9));
}

std::string BootstrapMinimumRule(double confidence, std::string_view name) {
  return fmt::format("{} >= {} at confidence {:g} (ceil(2 / (1 - confidence)): a "
                     "percentile interval needs a resample beyond each of its ends)",
                     name, MinBootstrapResamples(confidence), confidence);
}

void BootstrapOptions::Validate() const {
  if (!(confidence > 0 && confidence < 1)) {
    throw FieldError(At("--confidence"), "confidence", fmt::format("{}", confidence),
                     "0 < confidence < 1");
  }
  if (resamples < MinBootstrapResamples(confidence)) {
    throw FieldError(At("--bootstrap"), "bootstrap", fmt::format("{}", resamples),
                     BootstrapMinimumRule(confidence));
  }
}

Interval PercentileInterval(std::vector<double> values, double confidence) {
  if (values.empty()) return {NAN, NAN};
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    const double fraction = pos - static_cast<double>(lo);
    // Equal neighbours, or a position on a value, need no interpolation: infinite values (a
    // multiplier the base never reaches) stay infinite instead of becoming inf − inf = NaN.
    if (fraction == 0 || values[hi] == values[lo]) return values[lo];
    return values[lo] + fraction * (values[hi] - values[lo]);
  };
  const double tail = (1 - confidence) / 2;
  return {at(tail), at(1 - tail)};
}

namespace {

// SplitMix64 (Steele, Lea & Flood 2014): a portable generator, so resamples are identical on
// every standard library.
uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

// A resample's outcome.
constexpr char kFailed = 0, kFitted = 1, kUnderdetermined = 2;

uint64_t StreamSeed(uint64_t seed, uint64_t stream) {
  if (stream == 0) return seed;
  uint64_t state = seed ^ (stream * 0xd1b54a32d192ed03ull);
  return SplitMix(state);
}

std::vector<int> CanonicalRunOrder(const FitData& data) {
  const int runs = data.num_runs();
  // Each run's points as rows of (inputs..., loss, weight), sorted; runs compare by these rows.
  std::vector<std::vector<std::vector<double>>> rows(runs);
  for (size_t i = 0; i < data.size(); ++i) {
    std::vector<double> row;
    for (const std::vector<double>& input : data.inputs) row.push_back(input[i]);
    row.push_back(data.loss[i]);
    row.push_back(data.weight[i]);
    rows[data.run[i]].push_back(std::move(row));
  }
  for (auto& r : rows) std::sort(r.begin(), r.end());
  std::vector<int> order(runs);
  for (int r = 0; r < runs; ++r) order[r] = r;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return rows[a] < rows[b]; });
  return order;
}

namespace {

// The fewest resamples n whose refitted count stays at `minimum` or more three binomial standard
// deviations below its mean, n·p − 3·sqrt(n·p·(1 − p)) >= minimum, for p the refitted share seen
// (usable / drawn) less two of its own standard errors: the share another seed draws may be lower.
int SuggestedResamples(int minimum, int usable, int drawn) {
  const double seen = static_cast<double>(usable) / drawn;
  const double p = std::max(seen / 4, seen - 2 * std::sqrt(seen * (1 - seen) / drawn));
  int n = static_cast<int>(std::ceil(minimum / p));
  while (n * p - 3 * std::sqrt(n * p * (1 - p)) < minimum) n += std::max(1, n / 100);
  return n;
}

}  // namespace

BootstrapResult Bootstrap(const Law& law, const FitData& data, const FitOptions& fit_options,
                          const FitSummary& full_fit, const BootstrapOptions& options) {
  options.Validate();
  if (!options.run_keys.empty()) {
    std::vector<int64_t> sorted = options.run_keys;
    std::sort(sorted.begin(), sorted.end());
    if (sorted.size() != data.run_names.size() ||
        std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      throw InputError(fmt::format("bootstrap run keys: {} keys for {} runs. Violated constraint: "
                                   "one distinct key per run",
                                   sorted.size(), data.run_names.size()));
    }
  }
  // Points of weight 0 are in no fit: the resamples draw among the runs with a weighted point, as
  // many as there are (drawing empty runs too would shrink each resample by a random amount).
  if (std::any_of(data.weight.begin(), data.weight.end(), [](double w) { return !(w > 0); })) {
    std::vector<size_t> weighted;
    for (size_t i = 0; i < data.size(); ++i) {
      if (data.weight[i] > 0) weighted.push_back(i);
    }
    // The subset numbers its runs in order of first appearance (FitData::Subset): so do the keys.
    BootstrapOptions subset_options = options;
    if (!options.run_keys.empty()) {
      subset_options.run_keys.clear();
      std::vector<char> kept(data.run_names.size(), 0);
      for (size_t i : weighted) {
        if (!kept[data.run[i]]) subset_options.run_keys.push_back(options.run_keys[data.run[i]]);
        kept[data.run[i]] = 1;
      }
    }
    return Bootstrap(law, data.Subset(weighted), fit_options, full_fit, subset_options);
  }
  const std::vector<std::optional<double>> pinned = PinnedTheta(law, fit_options.pins);
  const FitProblem problem(law, data, fit_options.objective, pinned);
  // With no more points than free parameters the fit passes through every point: each resample
  // that determines the law holds them all and refits to the same values, whatever its weights,
  // so the intervals would have zero width and say nothing of the uncertainty.
  if (static_cast<int>(data.size()) <= problem.num_free()) {
    throw FieldError(
        At("--bootstrap"), "bootstrap", fmt::format("{}", options.resamples),
        fmt::format("more weighted points than free parameters ({} points, {} free): the fit "
                    "passes through every point, so every resample that determines the law "
                    "refits to the same values and the bootstrap measures no spread; add runs "
                    "or pin parameters",
                    data.size(), problem.num_free()));
  }
  std::vector<double> x0(problem.num_free());
  problem.Restrict(full_fit.theta.data(), x0.data());
  const int runs = data.num_runs();
  std::vector<std::vector<size_t>> points_of_run(runs);
  for (size_t i = 0; i < data.size(); ++i) points_of_run[data.run[i]].push_back(i);
  // Draws index runs in a canonical order (by their points' values, or by the keys given), so
  // that the resamples, and every interval, are the same whatever the order of the rows in the
  // file.
  std::vector<int> canonical = CanonicalRunOrder(data);
  if (!options.run_keys.empty()) {
    std::stable_sort(canonical.begin(), canonical.end(),
                     [&](int a, int b) { return options.run_keys[a] < options.run_keys[b]; });
  }

  std::vector<std::vector<double>> theta(options.resamples);
  std::vector<char> ok(options.resamples, kFailed);
  // Whether a resample drew each run exactly once: it is the data itself and refits to the fit.
  std::vector<char> whole(options.resamples, 0);
  ParallelFor(static_cast<size_t>(options.resamples), options.threads, [&](size_t b) {
    uint64_t state = options.seed * 0x2545f4914f6cdd1dull + static_cast<uint64_t>(b) + 1;
    std::vector<double> weights(data.size(), 0.0);
    std::vector<char> seen(runs, 0);
    int distinct_runs = 0;
    for (int draw = 0; draw < runs; ++draw) {
      const int run = canonical[SplitMix(state) % static_cast<uint64_t>(runs)];
      distinct_runs += seen[run] ? 0 : 1;
      seen[run] = 1;
      for (size_t i : points_of_run[run]) weights[i] += problem.weights()[i];
    }
    whole[b] = distinct_runs == runs;
    // A resample whose distinct points cannot identify the law (too few of them, or too few
    // values of a term's inputs) refits to wherever it starts: left out, counted.
    std::vector<size_t> drawn;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (weights[i] > 0) drawn.push_back(i);
    }
    try {
      CheckDesign(law, data.Subset(drawn), pinned);
    } catch (const InputError&) {
      ok[b] = kUnderdetermined;
      return;
    }
    const SolverResult r =
        Minimize(problem, x0.data(), fit_options.multistart.solver, nullptr, weights.data());
    if (r.termination != Termination::kConverged) return;
    theta[b].resize(law.params.size());
    problem.Expand(r.x.data(), theta[b].data());
    ok[b] = kFitted;
  });

  BootstrapResult result;
  result.resamples = options.resamples;
  result.confidence = options.confidence;
  for (int b = 0; b < options.resamples; ++b) {
    if (ok[b] == kFitted) {
      result.theta.push_back(std::move(theta[b]));
      result.resample.push_back(b);
    } else if (ok[b] == kUnderdetermined) {
      ++result.underdetermined;
    } else {
      ++result.failed;
    }
  }
  // Dropped resamples leave fewer refits: below the confidence's minimum, the "interval" would be
  // the range of a handful of them, which BootstrapOptions::Validate refuses up front.
  const int usable = static_cast<int>(result.theta.size());
  const int minimum = MinBootstrapResamples(options.confidence);
  // Every refitted resample is the data itself (the others cannot determine the law: 2 runs of 2
  // points for 3 parameters): no count of resamples gives an interval wider than zero.
  int whole_refits = 0;
  for (int b = 0; b < options.resamples; ++b) whole_refits += ok[b] == kFitted && whole[b];
  if (usable > 0 && whole_refits == usable) {
    throw FieldError(
        At("--bootstrap"), "bootstrap", fmt::format("{}", options.resamples),
        fmt::format("a resample that determines the law and differs from the data; of {} runs, "
                    "only a resample drawing each run once determines the law's {} free "
                    "parameters, and it refits to the fit itself, so the bootstrap measures no "
                    "spread ({} of {} resamples drew too few distinct points); add runs or pin "
                    "parameters",
                    runs, problem.num_free(), result.underdetermined, options.resamples));
  }
  if (usable < minimum) {
    const std::string remedy =
        usable > 0 ? fmt::format("raise --bootstrap to {} or more, or add runs",
                                 SuggestedResamples(minimum, usable, options.resamples))
                   : "add runs or pin parameters";
    throw FieldError(
        At("--bootstrap"), "bootstrap", fmt::format("{}", options.resamples),
        fmt::format("at least {} refitted resamples at confidence {:g} (a percentile interval "
                    "needs one beyond each of its ends); {} of the {} were refitted ({} drew too "
                    "few distinct points to determine the law's {} free parameters, {} did not "
                    "converge): {}",
                    minimum, options.confidence, usable, options.resamples,
                    result.underdetermined, problem.num_free(), result.failed, remedy));
  }
  // r runs drawn r times with replacement give C(2r − 1, r) distinct resamples (multisets): with
  // 2 runs 3, with 4 runs 35. A percentile interval at confidence c needs one distinct value
  // beyond each end, 2 / (1 − c) of them (40 at 95%); fewer, and its ends are a few refits'.
  double distinct = 1;
  for (int k = 1; k <= runs; ++k) distinct = distinct * (runs + k - 1) / k;
  const double needed = 2 / (1 - options.confidence);
  if (distinct < needed) {
    result.cautions.push_back(fmt::format(
        "{} runs give only {:.0f} distinct resamples, fewer than the {:.0f} a {:g}% interval "
        "needs to resolve its ends: the intervals are the spread of a few refits and can miss "
        "the true values; more runs make them meaningful",
        runs, distinct, std::ceil(needed), 100 * options.confidence));
  }
  if (result.underdetermined > 0) {
    result.cautions.push_back(fmt::format(
        "{} of {} resamples drew too few distinct points to determine the {} free parameters and "
        "were left out (a resample of {} runs repeats some): the intervals rest on the other {}; "
        "more runs or pinned parameters make them firmer",
        result.underdetermined, options.resamples, problem.num_free(), runs,
        static_cast<int>(result.theta.size())));
  }
  for (size_t j = 0; j < law.params.size(); ++j) {
    std::vector<double> values;
    for (const auto& th : result.theta) values.push_back(law.ToValue(static_cast<int>(j), th[j]));
    result.params.push_back(PercentileInterval(std::move(values), options.confidence));
    const Interval& i = result.params.back();
    if (!full_fit.params[j].pinned && result.theta.size() >= 2 && std::isfinite(i.low) &&
        i.high - i.low <= 1e-9 * std::max(std::abs(i.low), std::abs(i.high))) {
      result.cautions.push_back(fmt::format(
          "the {:g}% interval of {} has zero width: no resample moved it, so the data do not "
          "determine it",
          100 * options.confidence, law.params[j].name));
    }
  }
  return result;
}

}  // namespace mosaic::scaling
