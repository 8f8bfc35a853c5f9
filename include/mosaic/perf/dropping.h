// Token dropping under a capacity limit (docs/perf_model.md, "Token dropping").
//
// A capacity group pools `experts_pooled` experts (1 for Megatron's per-expert capacity on an EP
// rank and for Marin's fixed all-to-all cells; E/C for Marin's FSDP moe_chunk = C) and receives on
// average λ = experts_pooled·k·T/E assignments from T tokens. Its capacity is C = ceil(cf·λ); the
// dropped share is E[(X − C)+] / λ.
//
// Independent routing gives X ~ Poisson(λ). Real routing has two more effects, both fitted:
//  - within-sequence correlation (Dirichlet-multinomial): the variance of X is inflated by
//    (L + A)/(1 + A) for sequences of L tokens in the group and a concentration A;
//  - uneven expert popularity: expert e's mean is λ·w_e with w_e log-normal of mean 1 and log-sd
//    σ (pooled over n experts: log-variance ln(1 + (e^{σ²} − 1)/n)).
// Conditional on w the count is Poisson (exact sum) when there is no inflation and λ·w < 100, else
// normal with that mean and inflated variance; w is integrated by the trapezoid rule over ±8 sd.
// When the group knows the model's E experts and top-k (DropGroup::experts, top_k), both effects
// take their finite-population bounds:
//  - a token's k distinct experts fall in the group's n as a hypergeometric count, so the
//    routing variance is the mean times (1 − n/E)(E − k)/(E − 1) instead of the mean;
//  - popularity is a weight of mean 1 that cannot pass E/k (an expert chosen by every token), so
//    its variance is at most E/k − 1, and the mean of n of the E weights, which sum to E, varies
//    by the without-replacement factor (E − n)/(E − 1).
// So one expert, top-k = E, or a group pooling every expert drops exactly the load above the
// capacity: nothing at cf >= 1, 1 − ceil(cf·λ)/λ below.
// Calibrated on the Marin capacity sweep of the hero shape (d6144, 128 experts top-4, EP64, one rack,
// batch 1024 × 4096): ~10% dropped at cf 1.0, 5.40% at 1.125, 3.26% at 1.25, 1.57% at 1.5.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mosaic {

struct DropParams {
  double concentration = 0;     // A of the Dirichlet-multinomial; 0 = no correlation term
  bool correlated = false;      // false = independent routing (no variance inflation)
  double popularity_sigma = 0;  // σ, log-sd of expert popularity; 0 = uniform experts
};

struct DropGroup {
  double assignments_mean = 0;  // λ, mean assignments per group
  double capacity_factor = 1;   // cf; capacity = ceil(cf·λ)
  int64_t seq_len_tokens = 1;   // L, the length of the sequences routed in the group
  int64_t experts_pooled = 1;   // experts sharing the group's capacity
  int64_t experts = 0;          // E of the model; 0 = unknown (no finite-population bounds)
  int64_t top_k = 0;            // k of the model; 0 = unknown
};

// The expected share of assignments dropped (0..1). Requires λ > 0 and cf > 0.
double DroppedFraction(const DropGroup& group, const DropParams& params);

// One measured point of a capacity sweep.
struct DropMeasurement {
  DropGroup group;
  double dropped_fraction = 0;
};

// The Marin hero capacity sweep (PR 7981): λ = 4·65,536/128 = 2,048 per (shard, expert) cell,
// L = 4,096, E = 128, k = 4.
std::vector<DropMeasurement> MarinCapacitySweep();

struct DropFit {
  DropParams params;
  std::vector<double> predicted;  // per measurement, in order
  double rms_relative_error = 0;  // sqrt(mean((pred/meas − 1)²))
  std::string solver_report;      // Ceres's brief report
};

// Fits A and σ (Ceres, residuals pred/meas − 1) to `points`.
DropFit FitDropParams(std::span<const DropMeasurement> points);

// The shipped fit (data/perf/dropping.toml).
DropParams DefaultDropParams();

}  // namespace mosaic
