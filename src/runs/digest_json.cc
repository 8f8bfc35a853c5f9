#include "mosaic/runs/digest_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "mosaic/util/json_output.h"

namespace mosaic::runs {

namespace {

// A finite number, or null (JSON has no NaN or infinity).
nlohmann::ordered_json NumberOrNull(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::string RunDigestsJson(const std::vector<RunDigest>& digests) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const RunDigest& digest : digests) {
    const Run& run = digest.run;
    nlohmann::ordered_json j;
    j["run"] = run.name;
    j["directory"] = run.directory;
    j["restarts"] = ToString(run.policy);
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const SourceFile& f : run.files) {
      nlohmann::ordered_json jf = {{"path", f.path}, {"format", ToString(f.format)},
                                   {"loaded", f.loaded}};
      if (!f.loaded) jf["skip_reason"] = f.skip_reason;
      if (f.format == SourceFormat::kEvents) {
        const EventFileStats& e = f.events;
        jf["records"] = e.records;
        jf["scalars"] = e.scalars;
        jf["histograms"] = e.histograms;
        jf["images"] = e.images;
        jf["audio"] = e.audio;
        jf["tensors"] = e.tensors;  // non-scalar tensors, and scalars of non-scalar plugins
        jf["metadata_only"] = e.metadata_only;
        jf["graphs"] = e.graphs;
        nlohmann::ordered_json enc = nlohmann::ordered_json::object();
        for (const auto& [encoding, n] : e.scalar_encodings) {
          enc[std::string(ToString(encoding))] = n;
        }
        jf["scalar_encodings"] = enc;
        jf["file_version"] = e.file_version;
        const double no_record = std::nan("");  // a file of no record has no wall time
        jf["first_wall_time"] = NumberOrNull(e.records > 0 ? e.first_wall_time_seconds : no_record);
        jf["last_wall_time"] = NumberOrNull(e.records > 0 ? e.last_wall_time_seconds : no_record);
      } else {
        jf["rows"] = f.rows;
      }
      files.push_back(jf);
    }
    j["files"] = files;
    nlohmann::ordered_json tags = nlohmann::ordered_json::array();
    for (size_t k = 0; k < run.series.size(); ++k) {
      const SeriesDigest& d = digest.series[k];
      tags.push_back({{"tag", run.series[k].tag},
                      {"points", d.points},
                      {"first_step", d.summary.first_step},
                      {"last_step", d.summary.last_step},
                      {"final", NumberOrNull(d.final_value)},
                      {"mean_last_k", NumberOrNull(d.mean_last_k)},
                      {"k", digest.last_k},
                      // the finite values the mean covers: fewer than k in a short series
                      {"mean_last_k_points",
                       std::min<int64_t>(digest.last_k, d.points - d.summary.non_finite)},
                      {"min", NumberOrNull(d.summary.min)},
                      {"non_finite", d.summary.non_finite}});
    }
    j["tags"] = tags;
    nlohmann::ordered_json restarts = nlohmann::ordered_json::array();
    for (const Restart& r : run.restarts) {
      restarts.push_back({{"file", run.files[r.source].path},
                          {"tag", r.tag},
                          {"from_step", r.from_step},
                          {"back_to_step", r.back_to_step},
                          {"overlapped_points", r.overlapped_points}});
    }
    j["restarts_found"] = restarts;
    nlohmann::ordered_json findings = nlohmann::ordered_json::array();
    for (const Finding& f : digest.findings) {
      // A run-level finding (damage, an unreadable file or folder, concurrent writers) has no tag.
      findings.push_back({{"kind", ToString(f.kind)},
                          {"tag", f.tag.empty() ? nlohmann::ordered_json(nullptr)
                                                : nlohmann::ordered_json(f.tag)},
                          {"steps", f.steps},
                          {"message", f.message}});
    }
    j["findings"] = findings;
    nlohmann::ordered_json issues = nlohmann::ordered_json::array();
    for (const RecordIssue& issue : run.record_issues) {
      issues.push_back({{"file", issue.path},
                        {"offset_bytes", issue.offset_bytes},
                        {"kind", ToString(issue.kind)},
                        {"error", issue.is_error()},
                        {"message", issue.Message()}});
    }
    j["record_issues"] = issues;
    j["notes"] = run.notes;
    all.push_back(j);
  }
  return DumpJson(all) + "\n";
}

}  // namespace mosaic::runs
