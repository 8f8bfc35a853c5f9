#include "mosaic/runs/run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <re2/re2.h>
#include <sys/mman.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "mosaic/runs/table_log.h"
#include "mosaic/util/atomic_file.h"
#include "mosaic/util/error.h"
#include "mosaic/util/parallel_for.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"
#include "run_loading.h"

namespace mosaic::runs {
namespace fs = std::filesystem;

namespace {

// TensorBoard writers name their files events.out.tfevents.<time>.<host>[...]; other names that
// merely contain "tfevents" (a manifest, a notes file) are not event files.
bool IsEventFile(const std::string& name) { return name.starts_with("events.out.tfevents"); }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "a FIFO, not a regular file" and the like, for a directory entry of `type`.
std::string NotARegularFile(fs::file_type type) {
  std::string_view kind = "not a regular file";
  switch (type) {
    case fs::file_type::fifo: kind = "a FIFO"; break;
    case fs::file_type::socket: kind = "a socket"; break;
    case fs::file_type::block: kind = "a block device"; break;
    case fs::file_type::character: kind = "a character device"; break;
    default: return std::string(kind);
  }
  return fmt::format("{}, not a regular file", kind);
}

bool IsTableFile(const std::string& name) {
  return EndsWith(name, ".csv") || EndsWith(name, ".jsonl");
}

}  // namespace

bool IsLogFileName(const std::string& name) { return IsEventFile(name) || IsTableFile(name); }

namespace {

// The format of a log file by its name (IsEventFile or IsTableFile holds for it).
SourceFormat FormatOfLog(const std::string& name) {
  if (IsEventFile(name)) return SourceFormat::kEvents;
  return EndsWith(name, ".csv") ? SourceFormat::kCsv : SourceFormat::kJsonl;
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

// One tag's points in write order (pass 1), with what the restart policy needs on the side: the
// first point of each source file and, under `last`, where purge markers fell. When the steps
// only ever increase (the common case), the points are already the series and are moved into it.
// In a streamed load, the points of a tag a file keeps before it streams them.
constexpr size_t kPointsBeforeStream = 64;

struct TagAccumulator {
  bool keep = true;
  bool float32 = true;
  bool increasing = true;  // every step larger than the one before it
  std::vector<ScalarPoint> points;
  // In a streamed load (LoadRunsWith with a stream), the points digested instead of kept.
  std::unique_ptr<detail::SeriesStream> stream;
  std::vector<std::pair<size_t, int32_t>> sources;  // (first point index, source) per change
  std::vector<std::pair<int64_t, size_t>> purges;   // (purge step, points written before it)
  std::string_view tag;                   // the table's key
  TagAccumulator* next_seen = nullptr;    // the tag that followed this one last time

  // A point of a streamed load: kept as is while the file has few of this tag (a file of
  // hundreds of tags logged once costs no stream per tag), then streamed.
  void StreamPoint(const ScalarPoint& p, const detail::SeriesStreamOptions& options) {
    if (stream == nullptr) {
      if (points.size() < kPointsBeforeStream) {
        points.push_back(p);
        return;
      }
      stream = std::make_unique<detail::SeriesStream>(options);
      for (const ScalarPoint& q : points) stream->Add(q, tag);
      std::vector<ScalarPoint>().swap(points);
    }
    stream->Add(p, tag);
  }

  void Add(int64_t step, double wall_time_seconds, double value, int32_t source) {
    if (!points.empty() && step <= points.back().step) increasing = false;
    if (sources.empty() || sources.back().second != source) sources.emplace_back(points.size(), source);
    points.push_back({step, wall_time_seconds, value});
  }

  // Appends the points of `file` (one source file's accumulator of this tag), moving them when
  // this accumulator has none yet. In a streamed load (`streamed` not null), appends the file's
  // stream, or a stream of the few points it kept instead (StreamPoint).
  void Append(TagAccumulator&& file, int32_t source, const detail::SeriesStreamOptions* streamed) {
    float32 = float32 && file.float32;
    if (streamed != nullptr) {  // the stream knows whether its steps only increase
      if (file.stream == nullptr) {
        if (file.points.empty()) return;
        if (stream == nullptr) stream = std::make_unique<detail::SeriesStream>(*streamed);
        for (const ScalarPoint& p : file.points) stream->Add(p, tag);
        std::vector<ScalarPoint>().swap(file.points);
      } else if (stream == nullptr) {
        stream = std::move(file.stream);
      } else {
        stream->Append(std::move(*file.stream), tag);
        file.stream.reset();
      }
      return;
    }
    if (file.points.empty()) return;
    if (sources.empty() || sources.back().second != source) sources.emplace_back(points.size(), source);
    if (points.empty()) {
      increasing = file.increasing;
      points = std::move(file.points);
    } else {
      increasing = increasing && file.increasing && file.points.front().step > points.back().step;
      points.insert(points.end(), file.points.begin(), file.points.end());
    }
    std::vector<ScalarPoint>().swap(file.points);
  }
};

struct HistogramAccumulator {
  bool keep = true;
  HistogramSeries series;
  std::string_view tag;
  HistogramAccumulator* next_seen = nullptr;
};

// Hashes std::string and std::string_view alike (lookups by a view of the record need no copy).
struct TagHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// a == b, without a library call for tags of 8 to 16 bytes (most of them): their first and last
// 8 bytes, which overlap or meet, cover the whole tag.
inline bool SameTag(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  if (n < 8 || n > 16) return a == b;
  uint64_t a_head, b_head, a_tail, b_tail;
  std::memcpy(&a_head, a.data(), 8);
  std::memcpy(&b_head, b.data(), 8);
  std::memcpy(&a_tail, a.data() + n - 8, 8);
  std::memcpy(&b_tail, b.data() + n - 8, 8);
  return ((a_head ^ b_head) | (a_tail ^ b_tail)) == 0;
}

// Accumulators by tag: a hash index for the lookup of every point, a std::map for the output in
// tag order. The map's nodes never move, so the index holds pointers to them.
template <typename Accumulator>
class TagTable {
 public:
  explicit TagTable(const LoadOptions& options) : options_(options) {}

  Accumulator& operator[](std::string_view tag) {
    auto it = index_.find(tag);
    if (it != index_.end()) return *it->second;
    auto [node, inserted] = by_tag_.try_emplace(std::string(tag));
    Accumulator& added = node->second;
    added.tag = node->first;
    if (options_.tags) added.keep = RE2::PartialMatch(node->first, *options_.tags);
    index_.emplace(node->first, &added);
    return added;
  }

  // The accumulator of `tag` when the tags of a file come round in a fixed order (a step logs
  // loss, grad_norm, lr, ...): the tag that followed `previous` last time is compared first, and
  // the hash index is consulted only when it differs.
  Accumulator& Next(Accumulator* previous, std::string_view tag) {
    Accumulator* guess = previous != nullptr ? previous->next_seen : first_seen_;
    if (guess != nullptr && SameTag(guess->tag, tag)) return *guess;
    Accumulator& found = (*this)[tag];
    (previous != nullptr ? previous->next_seen : first_seen_) = &found;
    return found;
  }

  std::map<std::string, Accumulator, std::less<>>& by_tag() { return by_tag_; }

 private:
  const LoadOptions& options_;
  std::map<std::string, Accumulator, std::less<>> by_tag_;
  std::unordered_map<std::string, Accumulator*, TagHash, std::equal_to<>> index_;
  Accumulator* first_seen_ = nullptr;
};

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
  std::vector<RunDirectory> runs;
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    // It exists but cannot be examined (a symlink loop, a parent without permission).
    runs.push_back({".", logdir, {}, {},
                    fmt::format("{}: cannot list this folder ({}); its logs were not read", logdir,
                                ec.message())});
    return runs;
  }
  if (ec || !fs::exists(status)) {
    throw InputError(fmt::format("{}: no such file or directory", Printable(logdir)));
  }
  if (fs::is_regular_file(status)) {
    const std::string name = fs::path(logdir).filename().string();
    RunDirectory run{name, fs::path(logdir).parent_path().string(), {}, {}, {}};
    if (IsEventFile(name)) {
      run.event_files.push_back(logdir);
    } else if (IsTableFile(name)) {
      run.table_files.push_back(logdir);
    } else {
      throw InputError(fmt::format(
          "{}: not an event file (events.out.tfevents.*), .csv or .jsonl file",
          Printable(logdir)));
    }
    runs.push_back(std::move(run));
    return runs;
  }
  if (!fs::is_directory(status)) {
    // A FIFO, socket or device given by name: never opened (a FIFO would wait for a writer).
    throw InputError(fmt::format("{}: {}; give a log folder or a log file", logdir,
                                 NotARegularFile(status.type())));
  }
  std::map<std::string, RunDirectory> by_directory;
  auto run_at = [&](const fs::path& directory) -> RunDirectory& {
    std::string relative =
        fs::path(directory).lexically_relative(logdir).lexically_normal().string();
    if (relative.empty()) relative = ".";
    if (EndsWith(relative, "/")) relative.pop_back();
    RunDirectory& run = by_directory[relative];
    run.name = relative;
    run.directory = directory.string();
    return run;
  };
  auto add = [&](const fs::path& file) {
    const std::string name = file.filename().string();
    const bool event = IsEventFile(name);
    if (!event && !IsTableFile(name)) return;
    RunDirectory& run = run_at(file.parent_path());
    (event ? run.event_files : run.table_files).push_back(file.string());
  };
  // A folder that cannot be listed (no permission, a symlink loop) is reported as a run of its
  // own rather than skipped: its logs, if it has any, were not read.
  auto unreadable = [&](const fs::path& path, const std::error_code& error) {
    RunDirectory& run = run_at(path);
    run.unreadable = fmt::format("{}: cannot list this folder ({}); its logs were not read",
                                 path.string(), error.message());
  };
  // An entry named as a log that is not a regular file to read (RunDirectory::unusable_files).
  auto unusable = [&](const fs::path& path, std::string_view what) {
    const std::string name = path.filename().string();
    if (!IsEventFile(name) && !IsTableFile(name)) return;
    run_at(path.parent_path())
        .unusable_files.push_back(
            {path.string(), fmt::format("{}: {}; not read", path.string(), what)});
  };
  // Symlinks to directories are followed, each real directory once: links back up the tree
  // (a/up -> ..) would otherwise make the walk revisit it without end.
  std::set<fs::path> visited;
  visited.insert(fs::weakly_canonical(logdir, ec));
  std::vector<fs::path> pending{fs::path(logdir)};
  while (!pending.empty()) {
    const fs::path directory = std::move(pending.back());
    pending.pop_back();
    fs::directory_iterator it(directory, ec);
    if (ec) {
      unreadable(directory, ec);
      continue;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code type_ec;
      const fs::file_status entry_status = it->status(type_ec);  // follows symlinks
      if (entry_status.type() == fs::file_type::not_found) {
        unusable(it->path(), "a symbolic link to a file that does not exist");
        continue;
      }
      if (type_ec) {
        unreadable(it->path(), type_ec);
        continue;
      }
      if (fs::is_directory(entry_status)) {
        std::error_code canonical_ec;
        const fs::path real = fs::canonical(it->path(), canonical_ec);
        if (!canonical_ec && visited.insert(real).second) pending.push_back(it->path());
        continue;
      }
      if (fs::is_regular_file(entry_status)) {
        add(it->path());
      } else {
        unusable(it->path(), NotARegularFile(entry_status.type()));
      }
    }
    if (ec) unreadable(directory, ec);
  }
  if (by_directory.empty()) {
    throw InputError(fmt::format(
        "{}: no event files (events.out.tfevents.*), .csv or .jsonl files found",
        Printable(logdir)));
  }
  for (auto& [name, run] : by_directory) {
    SortEventFiles(&run.event_files);
    std::sort(run.table_files.begin(), run.table_files.end());
    runs.push_back(std::move(run));
  }
  return runs;
}

namespace {

// The label of one log directory argument: its last path component ("runs" for "runs/", the
// current directory's name for ".").
std::string LogdirLabel(const std::string& logdir) {
  fs::path path = fs::path(logdir).lexically_normal();
  std::string name = path.filename().string();
  if (name.empty() && path.has_parent_path()) name = path.parent_path().filename().string();
  if (name.empty() || name == "." || name == "..") {
    std::error_code ec;
    const fs::path absolute = fs::weakly_canonical(fs::absolute(logdir, ec), ec);
    name = absolute.filename().string();
  }
  return name.empty() ? std::string("/") : name;
}

std::string NormalizedPath(const std::string& logdir) {
  std::string path = fs::path(logdir).lexically_normal().string();
  while (path.size() > 1 && EndsWith(path, "/")) path.pop_back();
  return path;
}

}  // namespace

std::vector<RunDirectory> DiscoverRuns(const std::vector<std::string>& logdirs) {
  std::vector<std::vector<RunDirectory>> found;
  // Every argument that cannot be read is reported, not only the first.
  std::vector<std::string> errors;
  for (const std::string& logdir : logdirs) {
    try {
      found.push_back(DiscoverRuns(logdir));
    } catch (const InputError& error) {
      errors.emplace_back(error.what());
    }
  }
  if (errors.size() == 1) throw InputError(errors.front());
  if (!errors.empty()) {
    throw InputError(fmt::format("{} of the {} log paths cannot be read:\n  {}", errors.size(),
                                 logdirs.size(), fmt::join(errors, "\n  ")));
  }
  if (logdirs.size() == 1) return std::move(found.front());

  std::vector<std::string> labels;
  std::map<std::string, int> label_count;
  for (const std::string& logdir : logdirs) {
    labels.push_back(LogdirLabel(logdir));
    ++label_count[labels.back()];
  }
  std::map<std::string, int> seen;
  for (size_t i = 0; i < logdirs.size(); ++i) {
    if (label_count[labels[i]] > 1) labels[i] = NormalizedPath(logdirs[i]);
    const int occurrence = ++seen[labels[i]];
    if (occurrence > 1) labels[i] += fmt::format("#{}", occurrence);
  }
  std::vector<RunDirectory> runs;
  for (size_t i = 0; i < logdirs.size(); ++i) {
    std::error_code ec;
    const bool file_argument = fs::is_regular_file(logdirs[i], ec);
    for (RunDirectory& run : found[i]) {
      run.name = file_argument || run.name == "." ? labels[i] : labels[i] + "/" + run.name;
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

std::vector<std::string> LogFiles(const std::vector<RunDirectory>& runs) {
  std::vector<std::string> files;
  for (const RunDirectory& run : runs) {
    files.insert(files.end(), run.event_files.begin(), run.event_files.end());
    files.insert(files.end(), run.table_files.begin(), run.table_files.end());
  }
  return files;
}

namespace {

// A --tags pattern as messages quote it: shortened past 80 characters.
std::string ShownPattern(const std::string& pattern) {
  constexpr size_t kShown = 80;
  return pattern.size() <= kShown
             ? pattern
             : fmt::format("{}… ({} characters)", pattern.substr(0, kShown), pattern.size());
}

}  // namespace

std::shared_ptr<const re2::RE2> CompileTagFilter(const std::string& pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  auto compiled = std::make_shared<const RE2>(pattern, options);
  if (compiled->ok()) return compiled;
  throw FlagError("--tags", ShownPattern(pattern),
                  fmt::format("a valid regular expression (RE2 syntax: {})", compiled->error()));
}

LoadOptions MakeLoadOptions(std::string_view restarts, const std::string& tags,
                            const std::string& step_column) {
  LoadOptions options;
  options.restarts = RestartPolicyFromString(restarts);
  if (!tags.empty()) options.tags = CompileTagFilter(tags);
  options.step_column = step_column;
  options.threads = 0;  // files read on every core; the result is the same
  return options;
}

ReadCheck::ReadCheck(std::string tag_filter) : tag_filter_(std::move(tag_filter)) {}

void ReadCheck::Add(const Run& run) {
  any_run_ = true;
  if (!run.series.empty() || !run.histograms.empty()) any_tag_ = true;
  if (run.AnyFileRead()) any_read_ = true;
  if (any_read_) return;
  if (!run.unreadable.empty()) reasons_.push_back(Printable(run.unreadable));
  for (const SourceFile& f : run.files) reasons_.push_back(Printable(f.skip_reason));
}

void ReadCheck::Require() const {
  if (any_read_) {
    if (!tag_filter_.empty() && !any_tag_) {
      throw FieldError({}, "--tags", Printable(ShownPattern(tag_filter_)),
                       "a pattern that matches some tag of the runs read (it matches none; "
                       "without --tags, `mosaic runs` lists them)");
    }
    return;
  }
  if (!any_run_) throw InputError("nothing could be read: no run found");
  throw InputError(fmt::format("nothing could be read:\n  {}", fmt::join(reasons_, "\n  ")));
}

bool Run::AnyFileRead() const {
  for (const SourceFile& file : files) {
    if (file.loaded) return true;
  }
  return false;
}

const TimeSeries* Run::FindSeries(std::string_view tag) const {
  for (const TimeSeries& s : series) {
    if (s.tag == tag) return &s;
  }
  return nullptr;
}

const TimeSeries* Run::LossSeries() const {
  for (std::string_view name : {"loss", "train/loss", "train_loss", "Loss/train"}) {
    if (const TimeSeries* s = FindSeries(name)) return s;
  }
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const TimeSeries* any_loss = nullptr;
  for (const TimeSeries& s : series) {
    const std::string tag = lower(s.tag);
    if (tag.find("loss") == std::string::npos) continue;
    const bool evaluation = tag.find("val") != std::string::npos ||
                            tag.find("eval") != std::string::npos ||
                            tag.find("test") != std::string::npos;
    if (!evaluation) return &s;
    if (any_loss == nullptr) any_loss = &s;
  }
  return any_loss;
}

std::vector<std::string> Run::Tags() const {
  std::vector<std::string> tags;
  for (const TimeSeries& s : series) tags.push_back(s.tag);
  return tags;
}

namespace {

// Accumulators reserve room for a file's points once this many have been read, from the share of
// the file read so far.
constexpr int64_t kPointsBeforeEstimate = int64_t{1} << 14;
// No TFRecord holding a scalar is smaller than this (12-byte header, 4-byte footer, a tag byte):
// the estimate never reserves more points than the file could hold.
constexpr int64_t kMinScalarRecordBytes = 20;

// Asks for transparent huge pages over the whole 2 MiB pages inside [data, data + bytes) (where
// the kernel grants them on request, transparent_hugepage = madvise): a large series is then
// faulted in 2 MiB at a time rather than 4 KiB, which is most of the cost of first touching it.
// Only a hint: nothing changes where it is refused.
void AdviseHugePages(const void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHugePageBytes = uintptr_t{2} << 20;
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const uintptr_t end = (start + bytes) & ~(kHugePageBytes - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

// One event file, or one part of it, read on its own (possibly on another thread than its run's
// other files): its tags' points and histograms, its purge markers, statistics and damaged spots.
// Merged into its run in file order, which makes the result independent of the order files were
// read in.
struct EventFileContents {
  explicit EventFileContents(const LoadOptions& options) : scalars(options), histograms(options) {}

  // A SessionLog.START under `last`: its step and, for each tag with points in this file so far,
  // how many there were.
  struct Purge {
    int64_t step = 0;
    std::vector<std::pair<std::string_view, size_t>> points_before;
  };

  SourceFile file;
  std::vector<RecordIssue> issues;
  TagTable<TagAccumulator> scalars;
  TagTable<HistogramAccumulator> histograms;
  std::vector<Purge> purges;
  // Of a part: the offset of its first record (-1 when no record starts in it), the offset after
  // its last, and the tags it saw declared as non-scalar plugins.
  int64_t first_record_bytes = 0;
  int64_t next_record_bytes = 0;
  std::set<std::string, std::less<>> non_scalar_plugin_tags;
};

// Where one task reads an event file of `file_bytes` (as planned; 0 when unknown): the records
// starting in `range` (the first at or after its begin, found by FindIntactRecord), with room
// reserved for the points of `reserve_for_bytes`.
struct FilePart {
  RecordRange range;
  int64_t reserve_for_bytes = 0;
  int64_t file_bytes = 0;
};

// `stream`: digest the points (SeriesStream) instead of keeping them, or null.
void ReadEventFile(const std::string& path, const LoadOptions& options, const FilePart& part,
                   const detail::SeriesStreamOptions* stream, EventFileContents* out) {
  out->file = {path, SourceFormat::kEvents, {}, 0, true, {}};
  const int64_t file_bytes = part.file_bytes;
  std::optional<EventFileReader> opened;
  try {
    RecordRange range = part.range;
    if (range.begin_bytes > 0) {
      const std::unique_ptr<ByteSource> source = OpenFileSource(path, range.begin_bytes);
      range.begin_bytes = FindIntactRecord(*source, range.begin_bytes,
                                           range.stop_bytes < 0 ? INT64_MAX : range.stop_bytes,
                                           source->SizeBytes());
      out->first_record_bytes = range.begin_bytes;
      if (range.begin_bytes < 0) return;
    }
    opened.emplace(path, true, range);
  } catch (const InputError& e) {
    out->file.loaded = false;
    out->file.skip_reason = e.what();
    return;
  }
  EventFileReader& reader = *opened;
  const int64_t begin = out->first_record_bytes;
  TagAccumulator* previous = nullptr;
  HistogramAccumulator* previous_histogram = nullptr;
  int64_t points = 0;
  EventItem item;
  while (reader.Next(&item)) {
    switch (item.kind) {
      case EventItemKind::kScalar: {
        TagAccumulator& acc = out->scalars.Next(previous, item.tag);
        previous = &acc;
        if (!acc.keep) break;
        acc.float32 = acc.float32 && item.float32;
        if (stream != nullptr) {
          acc.StreamPoint({item.step, item.wall_time_seconds, item.value}, *stream);
          break;
        }
        if (!acc.points.empty() && item.step <= acc.points.back().step) acc.increasing = false;
        acc.points.push_back({item.step, item.wall_time_seconds, item.value});
        if (++points == kPointsBeforeEstimate && file_bytes > 0 &&
            reader.next_offset_bytes() > begin) {
          // Room for the rest of the part (or file) at the rate seen so far (5% over), so that the
          // series are not copied as they grow; pages never written are never touched.
          const double scale = static_cast<double>(part.reserve_for_bytes) /
                               static_cast<double>(reader.next_offset_bytes() - begin);
          const auto most = static_cast<size_t>(file_bytes / kMinScalarRecordBytes);
          for (auto& [tag, a] : out->scalars.by_tag()) {
            if (a.points.empty()) continue;
            a.points.reserve(std::min(
                most, static_cast<size_t>(static_cast<double>(a.points.size()) * scale * 1.05) + 64));
            AdviseHugePages(a.points.data(), a.points.capacity() * sizeof(ScalarPoint));
          }
        }
        break;
      }
      case EventItemKind::kHistogram: {
        HistogramAccumulator& acc = out->histograms.Next(previous_histogram, item.tag);
        previous_histogram = &acc;
        if (!acc.keep) break;
        ++acc.series.points;
        acc.series.last_step = item.step;
        acc.series.last = item.histogram;
        break;
      }
      case EventItemKind::kPurge: {
        // Only `last` acts on purge markers; each tag notes how many of its points precede it.
        if (options.restarts != RestartPolicy::kLast) break;
        EventFileContents::Purge purge{item.step, {}};
        for (auto& [tag, acc] : out->scalars.by_tag()) {
          if (!acc.points.empty()) purge.points_before.emplace_back(acc.tag, acc.points.size());
        }
        out->purges.push_back(std::move(purge));
        break;
      }
    }
  }
  out->file.events = reader.stats();
  out->issues = reader.issues();
  out->next_record_bytes = reader.next_offset_bytes();
  out->non_scalar_plugin_tags = reader.non_scalar_plugin_tags();
}

// The parts of one event file, read on their own, in file order (one part: the whole file).
using EventFileParts = std::vector<std::unique_ptr<EventFileContents>>;

// Whether `parts` (read from the nominal ranges starting at `begins`) are the file read whole:
// every part intact (no damage, no issue, readable), each part's first record where the part
// before it stopped (so that every part started on a true record boundary, by induction from
// offset 0), a part where no record starts lying wholly inside the record that crossed into it,
// the last part read to the end, and no tag declared non-scalar in a part seen in a later part
// (whose reader could not know).
bool PartsJoin(const EventFileParts& parts, const std::vector<int64_t>& begins,
               int64_t file_bytes) {
  int64_t expected = 0;  // where the next record of the file starts
  for (size_t i = 0; i < parts.size(); ++i) {
    const EventFileContents& part = *parts[i];
    if (!part.file.loaded || !part.issues.empty()) return false;
    const int64_t stop = i + 1 < parts.size() ? begins[i + 1] : file_bytes;
    if (part.first_record_bytes < 0) {
      if (expected < stop) return false;
      continue;
    }
    if (part.first_record_bytes != expected) return false;
    expected = part.next_record_bytes;
    for (size_t j = i + 1; j < parts.size(); ++j) {
      for (const std::string& tag : part.non_scalar_plugin_tags) {
        if (parts[j]->scalars.by_tag().contains(tag)) return false;
      }
    }
  }
  return expected >= file_bytes;
}

// The statistics of a file read in parts, added up into the first part's (whose first record is
// the file's).
void AddUpStatistics(EventFileParts& parts) {
  EventFileStats& total = parts.front()->file.events;
  for (size_t i = 1; i < parts.size(); ++i) {
    const EventFileStats& part = parts[i]->file.events;
    if (part.records == 0) continue;
    total.records += part.records;
    total.scalars += part.scalars;
    total.histograms += part.histograms;
    total.images += part.images;
    total.audio += part.audio;
    total.tensors += part.tensors;
    total.metadata_only += part.metadata_only;
    total.graphs += part.graphs;
    for (const auto& [encoding, count] : part.scalar_encodings) {
      total.scalar_encodings[encoding] += count;
    }
    total.last_wall_time_seconds = std::max(total.last_wall_time_seconds, part.last_wall_time_seconds);
  }
}

// A CSV or JSONL file read on its own: the parsed log, or why it could not be used.
struct TableFileContents {
  SourceFile file;
  std::optional<TableLog> log;
};

void ReadTableFile(const std::string& path, const LoadOptions& options, TableFileContents* out) {
  const SourceFormat format = FormatOfLog(fs::path(path).filename().string());
  out->file = {path, format, {}, 0, true, {}};
  try {
    const std::string text = ReadTextFile(path);
    if (StripByteOrderMark(text).find_first_not_of(" \t\r\n") == std::string_view::npos) {
      // Nothing written yet (or only a byte-order mark or blank lines): a file its logger has
      // just created, as an event file without a record is, not an unreadable one.
      out->log = TableLog{};
      out->log->path = path;
      out->log->notes.push_back(
          fmt::format("{}: no complete record (an empty or just-created file)", path));
      return;
    }
    out->log = format == SourceFormat::kCsv ? ReadCsvLog(text, path, options.step_column)
                                            : ReadJsonlLog(text, path, options.step_column);
    out->file.rows = out->log->rows;
  } catch (const InputError& e) {
    out->file.loaded = false;
    out->file.skip_reason = e.what();
    out->log.reset();
  }
}

// The files of one run, read.
struct RunContents {
  std::vector<EventFileParts> event_files;
  std::vector<TableFileContents> table_files;
};

// Merges the files of `directory` (read into `contents`, in file order) into a run and applies
// the restart policy; `stream`: the files were read with streams of these options (LoadedRun
// says whether the streams can stand for the points), or null.
detail::LoadedRun AssembleRun(const RunDirectory& directory, const LoadOptions& options,
                              RunContents contents, const detail::SeriesStreamOptions* stream) {
  const bool streamed = stream != nullptr;
  detail::LoadedRun loaded;
  Run& run = loaded.run;
  run.name = directory.name;
  run.directory = directory.directory;
  run.policy = options.restarts;
  run.unreadable = directory.unreadable;
  TagTable<TagAccumulator> scalars(options);
  TagTable<HistogramAccumulator> histograms(options);

  double previous_first_wall = 0;
  std::string previous_file;
  for (EventFileParts& parts : contents.event_files) {
    EventFileContents& read = *parts.front();
    const auto source = static_cast<int32_t>(run.files.size());
    if (!read.file.loaded) {
      run.files.push_back(std::move(read.file));
      continue;
    }
    for (std::unique_ptr<EventFileContents>& part : parts) {
      if (streamed && !part->purges.empty()) loaded.needs_points = true;
      // Purge markers first: each counts, for every tag of the run, the points before this part
      // plus the part's own before the marker.
      for (const EventFileContents::Purge& purge : part->purges) {
        for (const auto& [file_tag, n] : purge.points_before) scalars[file_tag];
        for (auto& [tag, acc] : scalars.by_tag()) {
          size_t before = acc.points.size();
          for (const auto& [file_tag, n] : purge.points_before) {
            if (file_tag == tag) before += n;
          }
          if (before > 0) acc.purges.emplace_back(purge.step, before);
        }
      }
      for (auto& [tag, file_acc] : part->scalars.by_tag()) {
        TagAccumulator& acc = scalars[tag];
        if (!acc.keep) continue;
        acc.Append(std::move(file_acc), source, stream);
      }
      for (auto& [tag, file_acc] : part->histograms.by_tag()) {
        HistogramAccumulator& acc = histograms[tag];
        if (!acc.keep || file_acc.series.points == 0) continue;
        acc.series.points += file_acc.series.points;
        acc.series.last_step = file_acc.series.last_step;
        acc.series.last = file_acc.series.last;
      }
      if (part.get() != &read) part.reset();
    }
    SourceFile file = std::move(read.file);
    const std::string& path = file.path;
    // No record and no damage: a file its writer has only just created. A damaged file says so
    // through its record issues instead.
    if (file.events.records == 0 && read.issues.empty()) {
      run.notes.push_back(fmt::format("{}: no complete record (an empty or just-created file)", path));
    }
    run.record_issues.insert(run.record_issues.end(), read.issues.begin(), read.issues.end());
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
    parts.clear();
  }

  for (TableFileContents& read : contents.table_files) {
    const auto source = static_cast<int32_t>(run.files.size());
    SourceFile file = std::move(read.file);
    const std::string& path = file.path;
    if (read.log) {
      if (streamed) loaded.needs_points = true;
      const TableLog& log = *read.log;
      for (const TagPoints& tag : log.tags) {
        TagAccumulator& acc = scalars[tag.tag];
        if (!acc.keep) continue;
        acc.float32 = false;
        acc.points.reserve(acc.points.size() + tag.points.size());
        for (const WrittenPoint& p : tag.points) {
          acc.Add(p.step, p.wall_time_seconds, p.value, source);
        }
      }
      run.notes.insert(run.notes.end(), log.notes.begin(), log.notes.end());
      if (log.non_numeric_cells > 0) {
        // Each count is the file's total for its reason, the lines noted one by one included.
        run.notes.push_back(fmt::format("{}: {} non-numeric {} skipped in all", path,
                                        log.non_numeric_cells,
                                        log.non_numeric_cells == 1 ? "cell" : "cells"));
      }
      if (log.malformed_rows > 0) {
        run.notes.push_back(fmt::format("{}: {} {} (not JSON, or a JSON value other than an "
                                        "object) skipped in all",
                                        path, log.malformed_rows,
                                        log.malformed_rows == 1 ? "line that is not a JSON object"
                                                                : "lines that are not JSON objects"));
      }
      if (log.rows_with_extra_cells > 0) {
        run.notes.push_back(fmt::format("{}: {} {} with more cells than the header has columns "
                                        "skipped in all",
                                        path, log.rows_with_extra_cells,
                                        log.rows_with_extra_cells == 1 ? "row" : "rows"));
      }
      if (log.rows_without_tag > 0) {
        run.notes.push_back(fmt::format("{}: {} {} with an empty tag cell skipped in all", path,
                                        log.rows_without_tag,
                                        log.rows_without_tag == 1 ? "row" : "rows"));
      }
      if (log.rows_without_step > 0) {
        run.notes.push_back(fmt::format("{}: {} {} without an integer step skipped in all", path,
                                        log.rows_without_step,
                                        log.rows_without_step == 1 ? "row" : "rows"));
      }
    }
    run.files.push_back(std::move(file));
  }
  for (const RunDirectory::UnusableFile& entry : directory.unusable_files) {
    run.files.push_back({entry.path, FormatOfLog(fs::path(entry.path).filename().string()), {}, 0,
                         false, entry.reason});
  }

  // Event files with scalars whose wall-time ranges overlap were written at the same time (two
  // ranks into one directory): concurrent writers, each judged against its own points. A file
  // without scalars (a profiler's "profile-empty" marker, a graph) interleaves no series.
  std::vector<bool> concurrent(run.files.size(), false);
  for (size_t j = 0; j < run.files.size(); ++j) {
    const EventFileStats& b = run.files[j].events;
    if (run.files[j].format != SourceFormat::kEvents || b.scalars == 0) continue;
    for (size_t i = 0; i < j; ++i) {
      const EventFileStats& a = run.files[i].events;
      if (run.files[i].format != SourceFormat::kEvents || a.scalars == 0) continue;
      if (a.first_wall_time_seconds < b.last_wall_time_seconds &&
          b.first_wall_time_seconds < a.last_wall_time_seconds) {
        concurrent[i] = concurrent[j] = true;
        run.concurrent_files.push_back({static_cast<int32_t>(i), static_cast<int32_t>(j)});
      }
    }
  }

  for (auto& [tag, acc] : scalars.by_tag()) {
    if (streamed) {
      if (!acc.keep || acc.stream == nullptr || acc.stream->count() == 0) continue;
      run.written_points += acc.stream->count();
      TimeSeries series;
      series.run = run.name;
      series.tag = tag;
      series.float32 = acc.float32;
      run.series.push_back(std::move(series));
      loaded.streams.push_back(std::move(acc.stream));
      continue;
    }
    if (!acc.keep || acc.points.empty()) continue;
    run.written_points += static_cast<int64_t>(acc.points.size());
    TimeSeries series;
    series.run = run.name;
    series.tag = tag;
    series.float32 = acc.float32;
    if (acc.increasing && acc.purges.empty()) {
      // No step went back and no purge: every policy keeps every point, in pass 1.
      series.points = std::move(acc.points);
    } else {
      // Odd sequence numbers for points, even ones for purges: a purge noted after i points
      // precedes point i.
      std::vector<WrittenPoint> written(acc.points.size());
      size_t next_source = 0;
      int32_t source = 0;
      for (size_t i = 0; i < acc.points.size(); ++i) {
        while (next_source < acc.sources.size() && acc.sources[next_source].first == i) {
          source = acc.sources[next_source++].second;
        }
        const ScalarPoint& p = acc.points[i];
        written[i] = {p.step, p.wall_time_seconds, p.value, 2 * static_cast<int64_t>(i) + 1, source,
                      concurrent[source]};
      }
      std::vector<PurgeMarker> purges;
      purges.reserve(acc.purges.size());
      for (const auto& [step, before] : acc.purges) {
        purges.push_back({step, 2 * static_cast<int64_t>(before), 0});
      }
      std::vector<ScalarPoint>().swap(acc.points);
      std::vector<Restart> restarts = FindRestarts(tag, written);
      run.restarts.insert(run.restarts.end(), restarts.begin(), restarts.end());
      series.points = ApplyRestartPolicy(options.restarts, written, purges, &series.pass_starts);
    }
    run.series.push_back(std::move(series));
  }
  for (auto& [tag, acc] : histograms.by_tag()) {
    if (!acc.keep) continue;
    acc.series.tag = tag;
    run.histograms.push_back(acc.series);
  }
  return loaded;
}

}  // namespace

Run LoadRun(const RunDirectory& directory, const LoadOptions& options) {
  return std::move(LoadRuns({directory}, options).front());
}

std::vector<Run> LoadRuns(const std::vector<RunDirectory>& directories,
                          const LoadOptions& options) {
  std::vector<detail::LoadedRun> loaded = detail::LoadRunsWith(directories, options, nullptr);
  std::vector<Run> runs;
  runs.reserve(loaded.size());
  for (detail::LoadedRun& r : loaded) runs.push_back(std::move(r.run));
  return runs;
}

namespace detail {

std::vector<LoadedRun> LoadRunsWith(const std::vector<RunDirectory>& directories,
                                    const LoadOptions& options, const SeriesStreamOptions* stream) {
  const int threads = ThreadCount(options.threads);
  // Every file of every run is a task, and an event file large against the share of one thread
  // (and at least twice options.min_part_bytes) is read in parts, one task each, so that one
  // large file still uses every core. The largest tasks are started first, so that one does not start last and
  // keep a thread busy after the others are done.
  struct FileTask {
    size_t run;
    size_t file;  // events first, then tables
    int64_t bytes;
    std::vector<int64_t> begins;  // of its parts (event files)
  };
  std::vector<FileTask> files;
  int64_t total_bytes = 0;
  for (size_t r = 0; r < directories.size(); ++r) {
    const RunDirectory& d = directories[r];
    for (size_t f = 0; f < d.event_files.size() + d.table_files.size(); ++f) {
      const std::string& path = f < d.event_files.size() ? d.event_files[f]
                                                         : d.table_files[f - d.event_files.size()];
      std::error_code ec;
      const auto bytes = static_cast<int64_t>(fs::file_size(path, ec));
      files.push_back({r, f, ec ? 0 : bytes, {0}});
      total_bytes += files.back().bytes;
    }
  }
  const int64_t part_bytes = std::max<int64_t>({options.min_part_bytes, total_bytes / threads, 1});
  std::vector<RunContents> contents(directories.size());
  for (size_t r = 0; r < directories.size(); ++r) {
    contents[r].event_files.resize(directories[r].event_files.size());
    contents[r].table_files.resize(directories[r].table_files.size());
  }
  struct Task {
    size_t file;
    size_t part;
    int64_t bytes;
  };
  std::vector<Task> tasks;
  for (size_t i = 0; i < files.size(); ++i) {
    FileTask& file = files[i];
    const bool events = file.file < directories[file.run].event_files.size();
    const int64_t parts =
        events ? std::clamp<int64_t>(file.bytes / part_bytes, 1, threads) : 1;
    for (int64_t k = 1; k < parts; ++k) file.begins.push_back(file.bytes * k / parts);
    for (size_t k = 0; k < file.begins.size(); ++k) {
      const int64_t end = k + 1 < file.begins.size() ? file.begins[k + 1] : file.bytes;
      tasks.push_back({i, k, end - file.begins[k]});
      if (events) {
        contents[file.run].event_files[file.file].push_back(
            std::make_unique<EventFileContents>(options));
      }
    }
  }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const Task& a, const Task& b) { return a.bytes > b.bytes; });
  ParallelFor(tasks.size(), threads, [&](size_t i) {
    const Task& task = tasks[i];
    const FileTask& file = files[task.file];
    const RunDirectory& d = directories[file.run];
    RunContents& c = contents[file.run];
    const size_t events = d.event_files.size();
    if (file.file < events) {
      const bool last = task.part + 1 == file.begins.size();
      FilePart part{{file.begins[task.part], last ? -1 : file.begins[task.part + 1]},
                    task.part == 0 ? file.bytes : task.bytes, file.bytes};
      ReadEventFile(d.event_files[file.file], options, part, stream,
                    c.event_files[file.file][task.part].get());
    } else {
      ReadTableFile(d.table_files[file.file - events], options,
                    &c.table_files[file.file - events]);
    }
  });
  // Files read in parts: joined, or where the parts do not join (damage, a plugin declared in an
  // earlier part, a file changed while read), read again whole.
  std::vector<size_t> split;
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].begins.size() > 1) split.push_back(i);
  }
  ParallelFor(split.size(), threads, [&](size_t i) {
    const FileTask& file = files[split[i]];
    EventFileParts& parts = contents[file.run].event_files[file.file];
    if (PartsJoin(parts, file.begins, file.bytes)) {
      AddUpStatistics(parts);
      parts.front()->file.parts = static_cast<int>(parts.size());
      return;
    }
    parts.clear();
    parts.push_back(std::make_unique<EventFileContents>(options));
    ReadEventFile(directories[file.run].event_files[file.file], options,
                  {{}, file.bytes, file.bytes}, stream, parts.front().get());
  });
  std::vector<LoadedRun> runs(directories.size());
  ParallelFor(directories.size(), threads, [&](size_t r) {
    runs[r] = AssembleRun(directories[r], options, std::move(contents[r]), stream);
  });
  return runs;
}

std::vector<std::pair<size_t, size_t>> RunBatches(const std::vector<RunDirectory>& directories,
                                                  int64_t batch_bytes) {
  auto run_bytes = [](const RunDirectory& d) {
    int64_t bytes = 0;
    for (const auto* files : {&d.event_files, &d.table_files}) {
      for (const std::string& path : *files) {
        std::error_code ec;
        const auto size = fs::file_size(path, ec);
        if (!ec) bytes += static_cast<int64_t>(size);
      }
    }
    return bytes;
  };
  std::vector<std::pair<size_t, size_t>> batches;
  size_t first = 0;
  while (first < directories.size()) {
    size_t end = first + 1;
    int64_t bytes = run_bytes(directories[first]);
    while (end < directories.size()) {
      const int64_t next = run_bytes(directories[end]);
      if (batch_bytes < 1 || bytes + next > batch_bytes) break;
      bytes += next;
      ++end;
    }
    batches.emplace_back(first, end);
    first = end;
  }
  return batches;
}

}  // namespace detail

void LoadRunsInBatches(const std::vector<RunDirectory>& directories, const LoadOptions& options,
                       int64_t batch_bytes,
                       const std::function<void(std::vector<Run>&& batch, size_t first)>& consume) {
  for (const auto& [first, end] : detail::RunBatches(directories, batch_bytes)) {
    const std::vector<RunDirectory> batch(directories.begin() + static_cast<std::ptrdiff_t>(first),
                                          directories.begin() + static_cast<std::ptrdiff_t>(end));
    consume(LoadRuns(batch, options), first);
  }
}

}  // namespace mosaic::runs
