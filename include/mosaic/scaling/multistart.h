// Multi-start minimisation over a Cartesian grid of starting points (Hoffmann et al. 2022,
// Approach 3: α, β ∈ {0, 0.5, …, 2}, e ∈ {−1, −0.5, …, 1}, a, b ∈ {0, 5, …, 25}: 4500 starts),
// run in parallel. Starts are split into kStartBlocks contiguous blocks, whatever the thread count;
// each block keeps its own memo of minima (solver.h) so that later starts of the block entering a
// known basin stop early, and the threads take blocks in turn. The result is the same to the bit
// for every thread count and every timing.
//
// Counting the starts that reach the best objective honestly: a start cut short in an early
// continuation stage is reported with its basin's minimum but certifies nothing; in the final
// stage a path is only cut where its objective is already within `certify_margin` of the known
// minimum, so its own end is bounded by that value (StartOutcome::certified_objective).
#pragma once

#include <string>
#include <vector>

#include "mosaic/scaling/fit_problem.h"
#include "mosaic/scaling/solver.h"

namespace mosaic::scaling {

// values[j]: the start values of free coordinate j (θ space). Start s enumerates the product
// with the last coordinate varying fastest.
struct StartGrid {
  std::vector<std::vector<double>> values;

  size_t size() const;
  void Start(size_t index, double* x) const;
  // "E: log in {-1, -0.5, 0, 0.5, 1}; A: log in {0, 5, ..., 25}; ..." (θ space, law names).
  std::string Describe(const FitProblem& problem) const;
};

// The law's default grid restricted to the problem's free parameters.
StartGrid DefaultGrid(const FitProblem& problem);

// Continuation on the Huber threshold: each start is first solved with δ = 1 (close to least
// squares on the residuals, where Newton steps are good from far away), then δ = 0.1, 0.01, …
// down to the objective's δ, each stage warm-started from the last. The final stage is the
// objective itself, so the minima are minima of the requested objective; the stages only change
// which basin a far start drains into, as any globalisation does.
// The number of blocks the start grid is split into (fewer when the grid has fewer starts). More
// blocks use more threads but cut fewer starts short: the 4500-start Approach-3 fit of
// bench/fit_bench.cc needs 698 ms of CPU in one block and 891 ms in 32.
inline constexpr size_t kStartBlocks = 32;

struct MultiStartOptions {
  int threads = 2;
  bool cut_short = true;      // use the basin memo
  bool continuation = true;   // δ continuation for Huber objectives
  double certify_margin = 1e-7;  // final-stage cut-off: F <= minimum + margin (see above)
  SolverOptions solver;
};

// The stage objectives for `objective` (a single stage unless Huber with continuation).
std::vector<Objective> ContinuationStages(const Objective& objective, bool continuation);

struct StartOutcome {
  double objective = 0;  // the end of the start's run, or the memo's minimum when cut short
  int iterations = 0;
  Termination termination = Termination::kFailure;
  bool cut_short = false;
  // An upper bound on the requested objective at the end the start would have reached by
  // itself: its objective when run to the end; F at the cut when cut short in the final stage
  // (descent only decreases F); +inf when cut short in an earlier stage (nothing is certified).
  double certified_objective = INFINITY;
};

struct MultiStartResult {
  std::vector<StartOutcome> starts;  // in grid order
  SolverResult best;                 // the lowest objective (earliest start on ties)
  size_t best_start = 0;
  long total_iterations = 0;
};

MultiStartResult RunMultiStart(const FitProblem& problem, const StartGrid& grid,
                               const MultiStartOptions& options);

}  // namespace mosaic::scaling
