#include "mosaic/scaling/multistart.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "mosaic/util/parallel_for.h"

namespace mosaic::scaling {

size_t StartGrid::size() const {
  size_t n = 1;
  for (const auto& v : values) n *= v.size();
  return values.empty() ? 1 : n;
}

void StartGrid::Start(size_t index, double* x) const {
  for (size_t j = values.size(); j-- > 0;) {
    const size_t m = values[j].size();
    x[j] = values[j][index % m];
    index /= m;
  }
}

std::string StartGrid::Describe(const FitProblem& problem) const {
  if (values.empty()) return "1 start: every parameter pinned";
  std::vector<std::string> parts;
  for (size_t j = 0; j < values.size(); ++j) {
    const LawParam& p = problem.law().params[problem.free_param(static_cast<int>(j))];
    parts.push_back(fmt::format("{}{} in {{{}}}", p.kind == ParamKind::kLogScale ? "log " : "",
                                p.name, fmt::join(values[j], ", ")));
  }
  return fmt::format("{} starts: {}", size(), fmt::join(parts, "; "));
}

StartGrid DefaultGrid(const FitProblem& problem) {
  StartGrid grid;
  for (int j = 0; j < problem.num_free(); ++j) {
    grid.values.push_back(problem.law().params[problem.free_param(j)].grid);
  }
  return grid;
}

std::vector<Objective> ContinuationStages(const Objective& objective, bool continuation) {
  std::vector<Objective> out;
  if (continuation && objective.loss == LossKind::kHuber) {
    for (double d = 1; d > objective.delta * 1.5; d /= 10) {
      Objective stage = objective;
      stage.delta = d;
      out.push_back(stage);
    }
  }
  out.push_back(objective);
  return out;
}

MultiStartResult RunMultiStart(const FitProblem& problem, const StartGrid& grid,
                               const MultiStartOptions& options) {
  const size_t total = grid.size();
  const size_t blocks = std::min(total, kStartBlocks);
  MultiStartResult result;
  result.starts.resize(total);
  std::vector<SolverResult> best(blocks);
  std::vector<size_t> best_index(blocks, 0);
  const std::vector<Objective> objectives =
      ContinuationStages(problem.objective(), options.continuation);
  std::vector<FitProblem> stages;
  for (size_t i = 0; i + 1 < objectives.size(); ++i) {
    stages.push_back(problem.WithObjective(objectives[i]));
  }
  // Intermediate stages only need to bring the start near the next stage's basin.
  SolverOptions loose = options.solver;
  loose.function_tolerance = 1e-8;
  loose.parameter_tolerance = 1e-5;
  auto work = [&](size_t block) {
    const size_t begin = total * block / blocks;
    const size_t end = total * (block + 1) / blocks;
    BasinMemo memo;
    std::vector<std::vector<double>> paths(stages.size() + 1);
    double x0[kMaxLawParams];
    best[block].objective = INFINITY;
    for (size_t s = begin; s < end; ++s) {
      grid.Start(s, x0);
      BasinMemo* m = options.cut_short ? &memo : nullptr;
      SolverResult r;
      int stage = 0;
      int iterations = 0;
      for (; stage <= static_cast<int>(stages.size()); ++stage) {
        const FitProblem& p = stage < static_cast<int>(stages.size()) ? stages[stage] : problem;
        paths[stage].clear();
        memo.stage = stage;
        const bool final_stage = stage == static_cast<int>(stages.size());
        memo.certify_margin = final_stage ? options.certify_margin : INFINITY;
        r = Minimize(p, x0, final_stage ? options.solver : loose, m, nullptr,
                     m ? &paths[stage] : nullptr);
        iterations += r.iterations;
        if (r.basin >= 0 || r.termination == Termination::kFailure) break;
        std::copy(r.x.begin(), r.x.end(), x0);
      }
      if (r.termination != Termination::kFailure && r.basin < 0) {
        // A full run: evaluate the requested objective at its end (stages may have stopped early).
        r.objective = problem.Evaluate(r.x.data(), nullptr, nullptr);
      }
      StartOutcome& o = result.starts[s];
      o.objective = r.objective;
      o.iterations = iterations;
      o.termination = r.termination;
      o.cut_short = r.basin >= 0;
      if (r.termination != Termination::kFailure) {
        if (!o.cut_short) {
          o.certified_objective = r.objective;
        } else if (stage == static_cast<int>(stages.size())) {
          o.certified_objective = r.cut_objective;
        }
      }
      if (options.cut_short && r.termination == Termination::kConverged) {
        const int minimum = r.basin >= 0 ? r.basin : memo.AddMinimum(r.x, r.objective);
        const int reached = std::min(stage, static_cast<int>(stages.size()));
        for (int k = 0; k <= reached; ++k) memo.Add(paths[k], problem.num_free(), minimum, k);
      }
      if (r.objective < best[block].objective) {
        best[block] = std::move(r);
        best_index[block] = s;
      }
    }
  };
  ParallelFor(blocks, options.threads, work);
  size_t winner = 0;
  for (size_t t = 1; t < blocks; ++t) {
    if (best[t].objective < best[winner].objective) winner = t;
  }
  result.best = std::move(best[winner]);
  result.best_start = best_index[winner];
  for (const StartOutcome& o : result.starts) result.total_iterations += o.iterations;
  return result;
}

}  // namespace mosaic::scaling
