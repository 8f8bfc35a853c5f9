#include "mosaic/runs/run_digest.h"

#include <re2/re2.h>

#include <cassert>
#include <memory>
#include <utility>

#include "mosaic/util/parallel_for.h"
#include "run_loading.h"
#include "series_checks.h"
#include "series_stream.h"

namespace mosaic::runs {

int64_t RunDigest::kept_points() const {
  int64_t kept = 0;
  for (const SeriesDigest& s : series) kept += s.points;
  return kept;
}

const SeriesDigest& RunDigest::Of(const TimeSeries& s) const {
  const auto i = static_cast<size_t>(&s - run.series.data());
  assert(i < series.size());
  return series[i];
}

std::vector<RunDigest> DigestRuns(std::vector<Run>&& runs, int last_k, const HealthOptions& health,
                                  int threads) {
  std::vector<std::vector<Finding>> findings = CheckHealthOfRuns(runs, health, threads);
  std::vector<RunDigest> out(runs.size());
  // Every series a task of its own, so that one run of a few long series uses every core.
  std::vector<std::pair<size_t, size_t>> tasks;
  for (size_t r = 0; r < runs.size(); ++r) {
    out[r].series.resize(runs[r].series.size());
    for (size_t k = 0; k < runs[r].series.size(); ++k) tasks.emplace_back(r, k);
  }
  ParallelFor(tasks.size(), ThreadCount(threads), [&](size_t t) {
    const auto [r, k] = tasks[t];
    TimeSeries& s = runs[r].series[k];
    out[r].series[k] = {static_cast<int64_t>(s.points.size()), s.Summarize(), s.FinalValue(),
                        s.MeanOfLast(last_k)};
    std::vector<ScalarPoint>().swap(s.points);
    std::vector<size_t>().swap(s.pass_starts);
  });
  for (size_t r = 0; r < runs.size(); ++r) {
    out[r].run = std::move(runs[r]);
    out[r].findings = std::move(findings[r]);
    out[r].last_k = last_k;
  }
  return out;
}

std::vector<RunDigest> ReadRunDigests(const std::vector<RunDirectory>& directories,
                                      const LoadOptions& options, int last_k,
                                      const HealthOptions& health, int64_t batch_bytes) {
  if (last_k > detail::kMaxStreamedLastK) {
    // Each stretch of a stream would carry last_k values: the points are loaded instead.
    std::vector<RunDigest> out;
    LoadRunsInBatches(directories, options, batch_bytes, [&](std::vector<Run>&& batch, size_t) {
      for (RunDigest& d : DigestRuns(std::move(batch), last_k, health, options.threads)) {
        out.push_back(std::move(d));
      }
    });
    return out;
  }
  const std::unique_ptr<RE2> spike_tags = detail::CompileSpikeTags(health);
  const detail::SeriesStreamOptions stream{&health, spike_tags.get(), last_k};
  std::vector<RunDigest> out;
  out.reserve(directories.size());
  for (const auto& [first, end] : detail::RunBatches(directories, batch_bytes)) {
    const std::vector<RunDirectory> batch(directories.begin() + static_cast<std::ptrdiff_t>(first),
                                          directories.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<detail::LoadedRun> streamed = detail::LoadRunsWith(batch, options, &stream);
    std::vector<RunDigest> digests(batch.size());
    std::vector<char> digested(batch.size(), 0);
    ParallelFor(batch.size(), ThreadCount(options.threads), [&](size_t r) {
      detail::LoadedRun& loaded = streamed[r];
      if (!loaded.StreamsSuffice()) return;
      digested[r] = 1;
      RunDigest& d = digests[r];
      d.findings = detail::RunFindings(loaded.run);
      for (size_t k = 0; k < loaded.streams.size(); ++k) {
        d.series.push_back(loaded.streams[k]->Digest());
        loaded.streams[k]->Report(loaded.run.series[k].tag, &d.findings);
      }
      d.run = std::move(loaded.run);
      d.last_k = last_k;
    });
    std::vector<size_t> with_points;
    for (size_t r = 0; r < batch.size(); ++r) {
      if (digested[r] == 0) with_points.push_back(r);
    }
    streamed.clear();
    if (!with_points.empty()) {
      std::vector<RunDirectory> again;
      for (size_t r : with_points) again.push_back(batch[r]);
      std::vector<RunDigest> loaded = DigestRuns(LoadRuns(again, options), last_k, health,
                                                 options.threads);
      for (size_t i = 0; i < with_points.size(); ++i) digests[with_points[i]] = std::move(loaded[i]);
    }
    for (RunDigest& d : digests) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace mosaic::runs
