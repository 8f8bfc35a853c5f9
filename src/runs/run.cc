#include "mosaic/runs/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>

#include "mosaic/runs/table_log.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"

namespace mosaic::runs {
namespace fs = std::filesystem;

namespace {

bool IsEventFile(const std::string& name) { return name.find("tfevents") != std::string::npos; }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsTableFile(const std::string& name) {
  return EndsWith(name, ".csv") || EndsWith(name, ".jsonl");
}

void SortEventFiles(std::vector<std::string>* files) {
  std::sort(files->begin(), files->end(), [](const std::string& a, const std::string& b) {
    const std::string na = fs::path(a).filename().string();
    const std::string nb = fs::path(b).filename().string();
    const int64_t ta = EventFileStartSeconds(na);
    const int64_t tb = EventFileStartSeconds(nb);
    if (ta != tb) return ta < tb;
    return na < nb;
  });
}

struct TagAccumulator {
  bool keep = true;
  bool float32 = true;
  std::vector<WrittenPoint> points;
};

struct HistogramAccumulator {
  bool keep = true;
  HistogramSeries series;
};

template <typename Accumulator>
Accumulator& Lookup(std::map<std::string, Accumulator, std::less<>>& map, std::string_view tag,
                    const LoadOptions& options) {
  auto it = map.find(tag);
  if (it != map.end()) return it->second;
  Accumulator& added = map[std::string(tag)];
  if (options.tags) {
    added.keep = std::regex_search(std::string(tag), *options.tags);
  }
  return added;
}

}  // namespace

std::string_view ToString(SourceFormat format) {
  switch (format) {
    case SourceFormat::kEvents: return "events";
    case SourceFormat::kCsv: return "csv";
    case SourceFormat::kJsonl: return "jsonl";
  }
  return "?";
}

int64_t EventFileStartSeconds(std::string_view file_name) {
  constexpr std::string_view kMarker = "tfevents.";
  const size_t at = file_name.find(kMarker);
  if (at == std::string_view::npos) return -1;
  const char* begin = file_name.data() + at + kMarker.size();
  const char* end = file_name.data() + file_name.size();
  int64_t seconds = -1;
  auto [ptr, ec] = std::from_chars(begin, end, seconds);
  if (ec != std::errc() || ptr == begin) return -1;
  return seconds;
}

std::vector<RunDirectory> DiscoverRuns(const std::string& logdir) {
  std::error_code ec;
  const fs::file_status status = fs::status(logdir, ec);
  if (ec || !fs::exists(status)) {
    throw InputError(fmt::format("{}: no such file or directory", logdir));
  }
  std::vector<RunDirectory> runs;
  if (fs::is_regular_file(status)) {
    const std::string name = fs::path(logdir).filename().string();
    RunDirectory run{name, fs::path(logdir).parent_path().string(), {}, {}};
    if (IsEventFile(name)) {
      run.event_files.push_back(logdir);
    } else if (IsTableFile(name)) {
      run.table_files.push_back(logdir);
    } else {
      throw InputError(fmt::format(
          "{}: not an event file (events.out.tfevents.*), .csv or .jsonl file", logdir));
    }
    runs.push_back(std::move(run));
    return runs;
  }
  std::map<std::string, RunDirectory> by_directory;
  auto add = [&](const fs::path& file) {
    const std::string name = file.filename().string();
    const bool event = IsEventFile(name);
    if (!event && !IsTableFile(name)) return;
    const fs::path parent = file.parent_path();
    std::string relative = fs::path(parent).lexically_relative(logdir).lexically_normal().string();
    if (relative.empty()) relative = ".";
    if (EndsWith(relative, "/")) relative.pop_back();
    RunDirectory& run = by_directory[relative];
    run.name = relative;
    run.directory = parent.string();
    (event ? run.event_files : run.table_files).push_back(file.string());
  };
  fs::recursive_directory_iterator it(
      logdir, fs::directory_options::follow_directory_symlink |
                  fs::directory_options::skip_permission_denied,
      ec);
  if (ec) throw InputError(fmt::format("cannot list {}: {}", logdir, ec.message()));
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw InputError(fmt::format("cannot list {}: {}", logdir, ec.message()));
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) add(it->path());
  }
  if (by_directory.empty()) {
    throw InputError(fmt::format(
        "{}: no event files (events.out.tfevents.*), .csv or .jsonl files found", logdir));
  }
  for (auto& [name, run] : by_directory) {
    SortEventFiles(&run.event_files);
    std::sort(run.table_files.begin(), run.table_files.end());
    runs.push_back(std::move(run));
  }
  return runs;
}

std::shared_ptr<const std::regex> CompileTagFilter(const std::string& pattern) {
  try {
    return std::make_shared<const std::regex>(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw FieldError({}, "--tags", pattern, fmt::format("a valid regular expression ({})", e.what()));
  }
}

const TimeSeries* Run::FindSeries(std::string_view tag) const {
  for (const TimeSeries& s : series) {
    if (s.tag == tag) return &s;
  }
  return nullptr;
}

std::vector<std::string> Run::Tags() const {
  std::vector<std::string> tags;
  for (const TimeSeries& s : series) tags.push_back(s.tag);
  return tags;
}

Run LoadRun(const RunDirectory& directory, const LoadOptions& options) {
  Run run;
  run.name = directory.name;
  run.directory = directory.directory;
  run.policy = options.restarts;
  std::map<std::string, TagAccumulator, std::less<>> scalars;
  std::map<std::string, HistogramAccumulator, std::less<>> histograms;
  std::vector<PurgeMarker> purges;
  int64_t sequence = 0;

  double previous_first_wall = 0;
  std::string previous_file;
  for (const std::string& path : directory.event_files) {
    const auto source = static_cast<int32_t>(run.files.size());
    EventFileReader reader(path);
    EventItem item;
    while (reader.Next(&item)) {
      switch (item.kind) {
        case EventItemKind::kScalar: {
          TagAccumulator& acc = Lookup(scalars, item.tag, options);
          if (!acc.keep) break;
          acc.float32 = acc.float32 && item.float32;
          acc.points.push_back(
              {item.step, item.wall_time_seconds, item.value, sequence++, source});
          break;
        }
        case EventItemKind::kHistogram: {
          HistogramAccumulator& acc = Lookup(histograms, item.tag, options);
          if (!acc.keep) break;
          ++acc.series.points;
          acc.series.last_step = item.step;
          acc.series.last = item.histogram;
          break;
        }
        case EventItemKind::kPurge:
          purges.push_back({item.step, sequence++, source});
          break;
      }
    }
    SourceFile file{path, SourceFormat::kEvents, reader.stats(), 0, true};
    const std::vector<RecordIssue> issues = reader.issues();
    run.record_issues.insert(run.record_issues.end(), issues.begin(), issues.end());
    const double first_wall = file.events.first_wall_time_seconds;
    if (first_wall > 0 && previous_first_wall > first_wall) {
      run.notes.push_back(fmt::format(
          "{} starts (wall time {:.3f}) before {} ({:.3f}) although its name sorts after it; "
          "files are read in name order",
          path, first_wall, previous_file, previous_first_wall));
    }
    if (first_wall > 0) {
      previous_first_wall = first_wall;
      previous_file = path;
    }
    run.files.push_back(std::move(file));
  }

  for (const std::string& path : directory.table_files) {
    const auto source = static_cast<int32_t>(run.files.size());
    const SourceFormat format = EndsWith(path, ".csv") ? SourceFormat::kCsv : SourceFormat::kJsonl;
    SourceFile file{path, format, {}, 0, true};
    const std::string text = ReadFile(path);
    try {
      TableLog log = format == SourceFormat::kCsv ? ReadCsvLog(text, path, options.step_column)
                                                  : ReadJsonlLog(text, path, options.step_column);
      file.rows = log.rows;
      int64_t max_sequence = 0;
      for (TagPoints& tag : log.tags) {
        TagAccumulator& acc = Lookup(scalars, tag.tag, options);
        if (!acc.keep) continue;
        acc.float32 = false;
        for (WrittenPoint& p : tag.points) {
          max_sequence = std::max(max_sequence, p.sequence);
          p.sequence += sequence;
          p.source = source;
          acc.points.push_back(p);
        }
      }
      sequence += max_sequence + 1;
      run.notes.insert(run.notes.end(), log.notes.begin(), log.notes.end());
      if (log.non_numeric_cells > 0) {
        run.notes.push_back(fmt::format("{}: {} non-numeric cells skipped", path,
                                        log.non_numeric_cells));
      }
      if (log.rows_without_step > 0) {
        run.notes.push_back(fmt::format("{}: {} rows without an integer step skipped", path,
                                        log.rows_without_step));
      }
    } catch (const InputError& e) {
      file.loaded = false;
      run.notes.push_back(std::string("file skipped: ") + e.what());
    }
    run.files.push_back(std::move(file));
  }

  for (auto& [tag, acc] : scalars) {
    if (!acc.keep || acc.points.empty()) continue;
    run.written_points += static_cast<int64_t>(acc.points.size());
    std::vector<Restart> restarts = FindRestarts(tag, acc.points);
    run.restarts.insert(run.restarts.end(), restarts.begin(), restarts.end());
    TimeSeries series;
    series.run = run.name;
    series.tag = tag;
    series.float32 = acc.float32;
    series.points = ApplyRestartPolicy(options.restarts, acc.points, purges);
    std::vector<WrittenPoint>().swap(acc.points);
    run.series.push_back(std::move(series));
  }
  for (auto& [tag, acc] : histograms) {
    if (!acc.keep) continue;
    acc.series.tag = tag;
    run.histograms.push_back(acc.series);
  }
  return run;
}

}  // namespace mosaic::runs
