// mosaic runs LOGDIR...: ingest TensorBoard, CSV and JSONL logs; per-run table with health
// findings; tidy export; `runs compare` for the offset between two runs of one configuration.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "mosaic/report/ablation_report.h"
#include "mosaic/runs/ablation.h"
#include "mosaic/runs/compare.h"
#include "mosaic/runs/digest_json.h"
#include "mosaic/runs/export.h"
#include "mosaic/runs/health.h"
#include "mosaic/runs/run.h"
#include "mosaic/runs/run_digest.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/number_format.h"
#include "mosaic/util/parallel_for.h"
#include "mosaic/util/spellcheck.h"
#include "mosaic/util/terminal_text.h"

namespace mosaic::cli {
namespace {

using namespace mosaic::runs;

struct RunsOptions {
  std::vector<std::string> logdirs;
  std::string restarts = "first";
  std::string export_format;
  std::string output;
  std::string tags;
  std::string step_column;
  std::string tag;
  bool json = false;
  bool summary = false;
  int last_k = 10;
  int threads = 0;
  int64_t batch_mb = kDefaultBatchBytes >> 20;
};

struct CompareOptions {
  std::string run_a;
  std::string run_b;
  std::string tag;
  std::string restarts = "first";
  std::string step_column;
  bool json = false;
  std::string output;
};

struct AblationCliOptions {
  std::string ablation_dir;
  std::string baseline_dir;
  std::string offset_pair;
  std::vector<std::string> pairs;
  std::string tag;
  std::string align = "step";
  std::string restarts = "first";
  std::string step_column;
  double sigmas = 2.0;
  int noise_window = 10;
  bool json = false;
  std::string html;
  std::string output;
};

std::string ShortValue(double v) {
  if (!std::isfinite(v)) return FormatValue(v, false);
  return fmt::format("{:.6g}", v);
}

std::string OtherContent(const Run& run) {
  std::map<std::string, int64_t> counts;
  for (const SourceFile& f : run.files) {
    counts["images"] += f.events.images;
    counts["audio"] += f.events.audio;
    counts["graphs"] += f.events.graphs;
    counts["non-scalar tensors"] += f.events.tensors;
    counts["metadata-only values"] += f.events.metadata_only;
  }
  std::string text;
  for (const auto& [what, n] : counts) {
    if (n > 0) text += fmt::format("{}{} {}", text.empty() ? "" : ", ", n, what);
  }
  return text;
}

std::string FilesSummary(const Run& run) {
  // Files read by format; those that could not be read are counted apart (each is a finding).
  int events = 0, csv = 0, jsonl = 0, unreadable = 0;
  for (const SourceFile& f : run.files) {
    if (!f.loaded) {
      ++unreadable;
      continue;
    }
    switch (f.format) {
      case SourceFormat::kEvents: ++events; break;
      case SourceFormat::kCsv: ++csv; break;
      case SourceFormat::kJsonl: ++jsonl; break;
    }
  }
  std::vector<std::string> parts;
  if (events > 0) parts.push_back(fmt::format("{} event file{}", events, events == 1 ? "" : "s"));
  if (csv > 0) parts.push_back(fmt::format("{} CSV", csv));
  if (jsonl > 0) parts.push_back(fmt::format("{} JSONL", jsonl));
  if (parts.empty()) parts.push_back("no file read");
  if (unreadable > 0) parts.push_back(fmt::format("{} unreadable", unreadable));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// What a run's findings are, in a few words: "ok", "restart", "spike ×2, stall".
std::string FindingKinds(const std::vector<Finding>& findings, const std::string* tag = nullptr) {
  std::map<std::string, int> kinds;
  for (const Finding& f : findings) {
    if (tag == nullptr || f.tag == *tag) ++kinds[std::string(ToString(f.kind))];
  }
  std::string summary;
  for (const auto& [kind, n] : kinds) {
    summary += fmt::format("{}{}{}", summary.empty() ? "" : ", ", kind,
                           n > 1 ? fmt::format(" ×{}", n) : "");
  }
  return summary.empty() ? "ok" : summary;
}

// "1 point", "2 points".
std::string Plural(int64_t count, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

// One line per run: its last step, the final value of `tag` (or of its loss tag), that tag's
// points and the run's findings.
std::string RenderSummary(const std::vector<RunDigest>& digests, const std::string& tag) {
  struct Row {
    std::string run, last_step, tag, final_value, points, findings;
  };
  std::vector<Row> rows;
  rows.push_back({"run", "last step", tag.empty() ? "loss tag" : "tag", "final", "points",
                  "findings"});
  for (const RunDigest& digest : digests) {
    const Run& run = digest.run;
    Row row{Printable(run.name), "-", "-", "-", "-", FindingKinds(digest.findings)};
    int64_t last_step = 0;
    bool any = false;
    for (const SeriesDigest& s : digest.series) {
      if (s.points == 0) continue;
      last_step = any ? std::max(last_step, s.summary.last_step) : s.summary.last_step;
      any = true;
    }
    if (any) row.last_step = fmt::format("{}", last_step);
    const TimeSeries* series = tag.empty() ? run.LossSeries() : run.FindSeries(tag);
    if (series != nullptr && digest.Of(*series).points > 0) {
      row.tag = Printable(series->tag);
      row.final_value = ShortValue(digest.Of(*series).final_value);
      row.points = fmt::format("{}", digest.Of(*series).points);
    }
    rows.push_back(std::move(row));
  }
  // Widths in terminal columns (a tag or run name may hold wide or multi-byte characters).
  size_t w[5] = {0, 0, 0, 0, 0};
  for (const Row& r : rows) {
    w[0] = std::max(w[0], DisplayWidth(r.run));
    w[1] = std::max(w[1], DisplayWidth(r.last_step));
    w[2] = std::max(w[2], DisplayWidth(r.tag));
    w[3] = std::max(w[3], DisplayWidth(r.final_value));
    w[4] = std::max(w[4], DisplayWidth(r.points));
  }
  std::string out;
  for (const Row& r : rows) {
    out += fmt::format("{}  {}  {}  {}  {}  {}\n", PadRight(r.run, w[0]),
                       PadLeft(r.last_step, w[1]), PadRight(r.tag, w[2]),
                       PadLeft(r.final_value, w[3]), PadLeft(r.points, w[4]), r.findings);
  }
  return out;
}

std::string RenderText(const std::vector<RunDigest>& digests) {
  std::string out;
  for (const RunDigest& digest : digests) {
    const Run& run = digest.run;
    const std::vector<Finding>& findings = digest.findings;
    out += fmt::format("run {} ({}; restarts: {}; {} written, {} kept)\n",
                       Printable(run.name), FilesSummary(run), ToString(run.policy),
                       Plural(run.written_points, "point", "points"), digest.kept_points());
    if (!run.series.empty()) {
      // The cells first, then each column as wide as its widest cell (in terminal columns; at
      // least the widths of the usual short tags and values, a tag column of at most 60).
      std::vector<std::array<std::string, 6>> cells;
      cells.push_back({"tag", "points", "steps", "last value", "min", "findings"});
      for (size_t k = 0; k < run.series.size(); ++k) {
        const TimeSeries& s = run.series[k];
        const SeriesDigest& d = digest.series[k];
        cells.push_back({Printable(s.tag), fmt::format("{}", d.points),
                         d.points == 0
                             ? "-"
                             : fmt::format("{}–{}", d.summary.first_step, d.summary.last_step),
                         ShortValue(d.final_value), ShortValue(d.summary.min),
                         FindingKinds(findings, &s.tag)});
      }
      std::array<size_t, 5> width = {3, 8, 19, 14, 14};
      for (const auto& row : cells) {
        for (size_t c = 0; c < width.size(); ++c) {
          width[c] = std::max(width[c], DisplayWidth(row[c]));
        }
      }
      width[0] = std::min<size_t>(width[0], 60);
      for (const auto& row : cells) {
        out += fmt::format("  {} {} {} {} {}  {}\n", PadRight(row[0], width[0]),
                           PadLeft(row[1], width[1]), PadLeft(row[2], width[2]),
                           PadLeft(row[3], width[3]), PadLeft(row[4], width[4]), row[5]);
      }
    } else {
      out += "  no scalar tags\n";
    }
    if (!run.histograms.empty()) {
      out += "  histograms:\n";
      for (const HistogramSeries& h : run.histograms) {
        out += fmt::format("    {} — {} values, last at step {}: count {}, min {}, max {}, mean {}\n",
                           Printable(h.tag), h.points, h.last_step, ShortValue(h.last.count),
                           ShortValue(h.last.min), ShortValue(h.last.max),
                           ShortValue(h.last.mean()));
      }
    }
    const std::string other = OtherContent(run);
    if (!other.empty()) out += fmt::format("  also in the files (not scalars): {}\n", other);
    if (!findings.empty()) {
      out += "  findings:\n";
      for (const Finding& f : findings) {
        out += fmt::format("    {}{}: {}\n", f.tag.empty() ? "" : Printable(f.tag) + ": ",
                           ToString(f.kind), Printable(f.message));
      }
    }
    for (const RecordIssue& issue : run.record_issues) {
      if (!issue.is_error()) out += fmt::format("  note: {}\n", Printable(issue.Message()));
    }
    for (const std::string& note : run.notes) out += fmt::format("  note: {}\n", Printable(note));
    out += "\n";
  }
  return out;
}


// Tags for a message, escaped and comma-separated: the first 30 and how many more, or "none".
template <typename Tags>
std::string TagList(const Tags& tags) {
  constexpr size_t kMaxListed = 30;
  std::vector<std::string> shown;
  for (const std::string& t : tags) {
    if (shown.size() == kMaxListed) {
      shown.push_back(fmt::format("… {} more", tags.size() - kMaxListed));
      break;
    }
    shown.push_back(Printable(t));
  }
  return shown.empty() ? std::string("none") : fmt::format("{}", fmt::join(shown, ", "));
}

// Throws InputError when the summary's --tag is a tag of no run, naming the tags the runs have
// (a run without it shows "-"; with no run at all having it the table would say nothing).
void RequireSummaryTag(const std::string& tag, const std::vector<RunDigest>& digests) {
  std::set<std::string> tags;
  for (const RunDigest& digest : digests) {
    if (digest.run.FindSeries(tag) != nullptr) return;
    for (const TimeSeries& s : digest.run.series) tags.insert(s.tag);
  }
  const std::vector<std::string> known(tags.begin(), tags.end());
  throw InputError(fmt::format("--tag {}: no run has this tag{}. Tags the runs have: {}",
                               Printable(tag), Printable(DidYouMean(tag, known)), TagList(known)));
}

// Where stdout goes when it is a regular file (`mosaic runs logs >> logs/r/log.csv`), so that
// what --output may not name, stdout may not be either: the file's path (/proc/self/fd/1), or ""
// for a terminal or pipe, or where /proc cannot say.
std::string StdoutFilePath() {
  struct stat st {};
  if (fstat(STDOUT_FILENO, &st) != 0 || !S_ISREG(st.st_mode)) return "";
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::read_symlink("/proc/self/fd/1", ec);
  return ec ? "" : target.string();
}

void RunRuns(const RunsOptions& options) {
  LoadOptions load = MakeLoadOptions(options.restarts, options.tags, options.step_column);
  load.threads = options.threads;
  const std::vector<RunDirectory> directories = DiscoverRuns(options.logdirs);
  const bool to_stdout = options.output.empty();
  const std::string written = to_stdout ? StdoutFilePath() : options.output;
  const std::string flag = to_stdout ? "stdout" : "--output";
  CheckOutputIsNotInput(written, LogFiles(directories), flag);
  if (!options.export_format.empty()) {
    CheckExportOutsideLogs(written, options.logdirs, directories, flag);
  }
  // The runs are read a batch at a time (LoadRunsInBatches), each batch exported or digested
  // before the next is read: the memory held is one batch's points, whatever the directory's size.
  const int64_t batch_bytes = options.batch_mb << 20;
  ReadCheck read(options.tags);
  if (!options.export_format.empty()) {
    const ExportFormat format = ExportFormatFromString(options.export_format);
    StreamOutput(options.output, [&](const auto& write) {
      ExportWriter writer(format, load.restarts == RestartPolicy::kAll, write, load.threads);
      LoadRunsInBatches(directories, load, batch_bytes, [&](std::vector<Run>&& batch, size_t) {
        for (const Run& run : batch) read.Add(run);
        // Nothing is written before some file was read: "nothing could be read" leaves no output.
        if (read.any_read()) writer.Add(batch);
      });
      read.Require();
      writer.Finish();
    });
    return;
  }
  const std::vector<RunDigest> digests =
      ReadRunDigests(directories, load, options.last_k, {}, batch_bytes);
  for (const RunDigest& d : digests) read.Add(d.run);
  read.Require();
  if (!options.json && !options.tag.empty()) RequireSummaryTag(options.tag, digests);
  if (options.json) {
    EmitOutput(options.output, RunDigestsJson(digests));
  } else if (options.summary) {
    EmitText(options.output, RenderSummary(digests, options.tag));
  } else {
    EmitText(options.output, RenderSummary(digests, options.tag) + "\n" + RenderText(digests));
  }
}

// The runs under `path` and the tags any of them has.
struct LoadedPath {
  std::vector<Run> runs;
  std::set<std::string> tags;
};

LoadedPath LoadPath(const std::string& path, const LoadOptions& options) {
  LoadedPath loaded;
  loaded.runs = LoadRuns(DiscoverRuns(path), options);
  for (const Run& run : loaded.runs) {
    for (const std::string& t : run.Tags()) loaded.tags.insert(t);
  }
  return loaded;
}

// Throws InputError when `tag` is missing from `missing_in` (a path of `a` or `b`), naming the
// tags both sides have (or, when they share none, each side's), so that the next try succeeds.
void RequireTag(const std::string& tag, const std::string& missing_in, const LoadedPath& a,
                const std::string& path_a, const LoadedPath& b, const std::string& path_b) {
  std::vector<std::string> common;
  for (const std::string& t : a.tags) {
    if (b.tags.count(t) != 0) common.push_back(t);
  }
  const LoadedPath& missing = missing_in == path_a ? a : b;
  const std::vector<std::string> missing_tags(missing.tags.begin(), missing.tags.end());
  std::string known;
  if (!common.empty()) {
    known = fmt::format("Tags both runs have: {}", TagList(common));
  } else {
    known = fmt::format("The runs share no tag; {} has: {}; {} has: {}", Printable(path_a),
                        TagList(a.tags), Printable(path_b), TagList(b.tags));
  }
  throw InputError(fmt::format("{}: no run has the tag '{}'{}. {}", Printable(missing_in),
                               Printable(tag), Printable(DidYouMean(tag, missing_tags)), known));
}

// The single run of `loaded` (the runs under `path`) that has `tag`, which one of them has.
Run TakeOneRun(LoadedPath loaded, const std::string& path, const std::string& tag) {
  std::vector<Run> candidates;
  for (Run& run : loaded.runs) {
    if (run.FindSeries(tag) != nullptr) candidates.push_back(std::move(run));
  }
  if (candidates.size() > 1) {
    std::vector<std::string> which;
    for (const Run& r : candidates) which.push_back(r.name);
    throw InputError(fmt::format("{}: {} runs have the tag '{}' ({}); name one run directory",
                                 path, candidates.size(), tag, fmt::join(which, ", ")));
  }
  return std::move(candidates.front());
}

void RunCompare(const CompareOptions& options) {
  const LoadOptions load = MakeLoadOptions(options.restarts, "", options.step_column);
  CheckOutputIsNotInput(options.output, LogFiles(DiscoverRuns({options.run_a, options.run_b})));
  LoadedPath loaded_a = LoadPath(options.run_a, load);
  LoadedPath loaded_b = LoadPath(options.run_b, load);
  for (const std::string* path : {&options.run_a, &options.run_b}) {
    const LoadedPath& loaded = path == &options.run_a ? loaded_a : loaded_b;
    if (loaded.tags.count(options.tag) == 0) {
      RequireTag(options.tag, *path, loaded_a, options.run_a, loaded_b, options.run_b);
    }
  }
  const Run a = TakeOneRun(std::move(loaded_a), options.run_a, options.tag);
  const Run b = TakeOneRun(std::move(loaded_b), options.run_b, options.tag);
  const TimeSeries& sa = *a.FindSeries(options.tag);
  const TimeSeries& sb = *b.FindSeries(options.tag);
  const std::optional<SeriesOffset> offset = CompareSeries(sa, sb);
  if (options.json) {
    nlohmann::ordered_json j;
    j["tag"] = options.tag;
    j["run_a"] = options.run_a;
    j["run_b"] = options.run_b;
    j["restarts"] = ToString(load.restarts);
    if (offset) {
      j["common_steps"] = offset->common_steps;
      j["first_common_step"] = offset->first_common_step;
      j["last_common_step"] = offset->last_common_step;
      j["mean_difference"] = offset->mean_difference;
      j["sd_difference"] = offset->has_spread() ? nlohmann::ordered_json(offset->sd_difference)
                                                : nlohmann::ordered_json(nullptr);
      j["standard_error"] = offset->has_spread() ? nlohmann::ordered_json(offset->standard_error)
                                                 : nlohmann::ordered_json(nullptr);
      j["min_difference"] = offset->min_difference;
      j["max_difference"] = offset->max_difference;
      j["mean_relative_difference"] =
          offset->has_relative() ? nlohmann::ordered_json(offset->mean_relative_difference)
                                 : nlohmann::ordered_json(nullptr);
      j["relative_steps"] = offset->relative_steps;  // the common steps where A is not 0
      j["non_finite_steps"] = offset->non_finite_steps;  // steps of both left out
    } else {
      // No common step with finite values in both runs: the same keys, nothing measured.
      j["common_steps"] = 0;
      for (const char* key : {"first_common_step", "last_common_step", "mean_difference",
                              "sd_difference", "standard_error", "min_difference",
                              "max_difference", "mean_relative_difference"}) {
        j[key] = nullptr;
      }
      j["relative_steps"] = 0;
      j["non_finite_steps"] = nullptr;
    }
    EmitOutput(options.output, DumpJson(j) + "\n");
    return;
  }
  std::string out = fmt::format("offset of {} against {} on '{}' (restarts: {})\n", options.run_b,
                                options.run_a, Printable(options.tag), ToString(load.restarts));
  if (!offset) {
    out += "  no common steps with finite values in both runs: no offset measured\n";
  } else {
    out += fmt::format("  common steps        {} (steps {}–{}){}\n", offset->common_steps,
                       offset->first_common_step, offset->last_common_step,
                       offset->non_finite_steps == 0
                           ? ""
                           : fmt::format("; {} more left out: a non-finite value",
                                         offset->non_finite_steps));
    out += fmt::format("  mean difference     {:+.6g} (B − A)\n", offset->mean_difference);
    if (offset->has_spread()) {
      out += fmt::format("  spread              sd {:.6g}, standard error {:.3g}, range {:+.6g} to "
                         "{:+.6g}\n",
                         offset->sd_difference, offset->standard_error, offset->min_difference,
                         offset->max_difference);
    } else {
      out += "  spread              n/a (one common step: no sd or standard error)\n";
    }
    if (offset->has_relative()) {
      out += fmt::format("  relative            {:+.4f}% of A on average",
                         100 * offset->mean_relative_difference);
      if (offset->relative_steps < offset->common_steps) {
        // Steps where A is 0 have no relative difference: say over how many it is averaged.
        out += fmt::format(" (over the {} of {} common steps where A is not 0)",
                           offset->relative_steps, offset->common_steps);
      }
      out += "\n";
    } else {
      out += "  relative            n/a (A is 0 at every common step)\n";
    }
  }
  EmitText(options.output, out);  // run names and paths as the files have them
}

void RunAblationCommand(const AblationCliOptions& o) {
  AblationOptions options;
  options.tag = o.tag;
  options.offset_pair = ParseRunPair("--offset-pair", o.offset_pair);
  for (const std::string& pair : o.pairs) options.pairs.push_back(ParseRunPair("--pair", pair));
  options.alignment = AlignmentFromString(o.align);
  options.sigmas = o.sigmas;
  options.noise_window = o.noise_window;
  const std::vector<std::string> inputs = LogFiles(DiscoverRuns({o.ablation_dir, o.baseline_dir}));
  // A report to stdout redirected into a file (`> logs/r/report.txt`) is held to --output's rules.
  const std::string written = o.output.empty() ? StdoutFilePath() : o.output;
  const std::string flag = o.output.empty() ? "stdout" : "--output";
  CheckOutputIsNotInput(written, inputs, flag);
  CheckOutputIsNotInput(o.html, inputs, "--html");
  CheckHtmlIsNotOutput(o.html, o.output);
  CheckReportOutsideLogs(written, {o.ablation_dir, o.baseline_dir}, flag);
  CheckReportOutsideLogs(o.html, {o.ablation_dir, o.baseline_dir}, "--html");
  const Ablation ablation = RunAblation(o.ablation_dir, o.baseline_dir, options,
                                        MakeLoadOptions(o.restarts, "", o.step_column));
  // The text report quotes run names, tags and paths from the logs in many places: none reaches
  // the terminal with its control characters raw.
  EmitOutputWithHtml(o.output,
                     o.json ? report::RenderAblationJson(ablation)
                            : PrintableText(report::RenderAblationText(ablation)),
                     o.html, o.html.empty() ? "" : report::RenderAblationHtml(ablation));
}

}  // namespace

void AddRunsCommand(CLI::App& root) {
  auto options = std::make_shared<RunsOptions>();
  CLI::App* cmd = root.add_subcommand(
      "runs",
      "Ingest training logs (TensorBoard event files, CSV, JSONL): one table per run with tags, "
      "points, step range, last value and health findings (non-finite values, spikes, restarts, "
      "step gaps, stalls, damaged files); or a tidy export.\n\nExamples:\n"
      "  mosaic runs logs/\n"
      "  mosaic runs logs/ --restarts last --tags 'loss|grad_norm'\n"
      "  mosaic runs logs/ --export csv --output points.csv\n"
      "  mosaic runs logs/ --restarts all --export json\n"
      "  mosaic runs compare logs/nobpk_H3 base/H3 --tag eval/loss\n"
      "  mosaic runs ablation logs/ --baseline base/ --offset-pair nobpk_H3=H3 --tag eval/loss");
  cmd->add_option("logdir", options->logdirs,
                  "log directories (searched recursively) or single log files");
  cmd->add_option("--restarts", options->restarts,
                  "what to keep when a step is logged again: first (the first pass, default), "
                  "last (as TensorBoard), all (both, with a pass number)")
      ->check(CLI::IsMember({"first", "last", "all"}))
      ->default_val("first");
  CLI::Option* export_option = cmd->add_option("--export", options->export_format,
                  "write every kept point as a tidy table: csv (run,tag,step,wall_time,value) or "
                  "json")
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--tags", options->tags, "keep only tags matching this regular expression");
  cmd->add_option("--step-column", options->step_column,
                  "CSV/JSONL step column (default: the first of step, _step, global_step, "
                  "timesteps_total, training_iteration, iteration, epoch)");
  cmd->add_option("--last-k", options->last_k, "points averaged for the summary's mean (--json)")
      ->check(CLI::Range(1, 1 << 30))
      ->default_val(10);
  // The summary's options mean nothing to an export: refused beside it rather than ignored.
  cmd->add_option("--tag", options->tag,
                  "the tag whose final value the one-line-per-run summary shows (default: the "
                  "run's loss tag)")
      ->excludes(export_option);
  cmd->add_flag("--summary", options->summary,
                "print only the summary: one line per run with its last step, final value of the "
                "loss tag (or --tag), points and findings")
      ->excludes(export_option);
  cmd->add_flag("--json", options->json, "machine-readable summary with findings")
      ->excludes(export_option);
  cmd->add_option("--threads", options->threads,
                  "files read at the same time (default 0: one per hardware thread); the output "
                  "is the same for any number")
      ->check(CLI::Range(0, 4096))
      ->default_val(0);
  cmd->add_option("--batch-mb", options->batch_mb,
                  "megabytes of log files read at once; memory holds one batch's points (about "
                  "half its bytes), whatever the directory's size. A run larger than this is a "
                  "batch of its own; the output is the same for any size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->default_val(kDefaultBatchBytes >> 20);
  AddOutputOption(cmd, &options->output);

  auto compare = std::make_shared<CompareOptions>();
  CLI::App* cmp = cmd->add_subcommand(
      "compare",
      "Offset between two runs of one configuration on one tag: mean of B − A over the common "
      "steps, with its spread.\n\nExamples:\n"
      "  mosaic runs compare logs/nobpk_H3 other-cluster/H3 --tag eval/loss\n"
      "  mosaic runs compare A B --tag train/loss --json");
  cmp->add_option("run_a", compare->run_a, "the reference run (directory or file)")->required();
  cmp->add_option("run_b", compare->run_b, "the other run (directory or file)")->required();
  cmp->add_option("--tag", compare->tag, "the tag to compare")->required();
  cmp->add_option("--restarts", compare->restarts, "first (default), last or all")
      ->check(CLI::IsMember({"first", "last", "all"}))
      ->default_val("first");
  cmp->add_option("--step-column", compare->step_column, "CSV/JSONL step column");
  cmp->add_flag("--json", compare->json, "machine-readable output");
  AddOutputOption(cmp, &compare->output);
  cmp->callback([compare] { RunCompare(*compare); });

  auto ablation = std::make_shared<AblationCliOptions>();
  CLI::App* abl = cmd->add_subcommand(
      "ablation",
      "One-switch ablations against baseline runs from another cluster: the platform offset from "
      "an equivalent pair, each run's offset-corrected effect with its uncertainty and health, "
      "and per-loop diagnostics.\n\n"
      "Per run: its baseline run, the values at the compared step and at every common evaluation "
      "step, the difference, the effect once the offset (mean and standard error of run − "
      "baseline over the equivalent pair's common steps) is taken out, whether it lies inside the "
      "offset's uncertainty; the steps logged twice, non-finite values, spikes and whether the "
      "run ended early; module_diag columns per layer, branch and loop summarised per loop.\n\n"
      "Examples:\n"
      "  mosaic runs ablation logs/ --baseline base/ --offset-pair nobpk_H3=H3 --tag eval/loss\n"
      "  mosaic runs ablation logs/ --baseline base/ --offset-pair nobpk_H3=H3 --tag eval/loss \\\n"
      "      --pair nobpk_H9_mb8=H9 --pair nobpk_H12_mb8=H12 --html ablation.html\n"
      "  mosaic runs ablation logs/ --baseline base/ --offset-pair nobpk_H3=H3 --tag eval/loss "
      "--align fraction --json");
  abl->add_option("ablation_dir", ablation->ablation_dir,
                  "directory of the ablation runs (searched recursively)")
      ->required();
  abl->add_option("--baseline", ablation->baseline_dir, "directory of the baseline runs")
      ->required();
  abl->add_option("--offset-pair", ablation->offset_pair,
                  "RUN=BASE_RUN: the ablation run equivalent to the base recipe and its baseline "
                  "run; their mean difference is the platform offset")
      ->required();
  abl->add_option("--tag", ablation->tag, "the tag compared, e.g. eval/loss")->required();
  abl->add_option("--pair", ablation->pairs,
                  "RUN=BASE_RUN (repeatable): the baseline run of an ablation run; runs without one "
                  "are compared with the offset pair's baseline run");
  abl->add_option("--align", ablation->align,
                  "step: compare at common steps (a shorter run at its own final step, default); "
                  "fraction: at matched fractions of each run's schedule")
      ->check(CLI::IsMember({"step", "fraction"}))
      ->default_val("step");
  abl->add_option("--restarts", ablation->restarts, "first (default), last or all")
      ->check(CLI::IsMember({"first", "last", "all"}))
      ->default_val("first");
  abl->add_option("--sigmas", ablation->sigmas,
                  "an effect within this many times the offset's uncertainty is marked inside it")
      ->check(InRange(0, 1000, true))
      ->default_val(2.0);
  abl->add_option("--noise-window", ablation->noise_window,
                  "compared points from which a run's own noise is estimated")
      ->check(CLI::Range(3, 1 << 30))
      ->default_val(10);
  abl->add_option("--step-column", ablation->step_column, "CSV/JSONL step column");
  abl->add_flag("--json", ablation->json, "every number as JSON");
  AddOutputOption(abl, &ablation->html,
                  "also write a self-contained HTML report to FILE (whole or not at all)", "--html");
  AddOutputOption(abl, &ablation->output, "write the text or JSON to FILE (whole or not at all)");
  abl->callback([ablation] { RunAblationCommand(*ablation); });

  cmd->callback([options, cmp, abl] {
    if (cmp->parsed() || abl->parsed()) return;
    if (options->logdirs.empty()) {
      throw UsageError("LOGDIR is required (name at least one log directory)");
    }
    RunRuns(*options);
  });
}

}  // namespace mosaic::cli
