// Runs: discovery of the runs under a log directory and loading of one run's files into time
// series, with the restart policy applied and every restart and damaged spot reported.
//
// A run is a directory that directly holds event files (events.out.tfevents.*), *.csv or *.jsonl
// files; sub-directories are runs of their own (TensorBoard's convention: add_scalars and hparams
// write sub-directories). Within a run, event files are ordered by the start time in their name
// (events.out.tfevents.<unix seconds>.<host>...; then by name) and checked against their first
// wall_time; CSV and JSONL files follow, ordered by name. That is the write order the restart
// policy (restart_policy.h) works through.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/runs/event.h"
#include "mosaic/runs/event_file.h"
#include "mosaic/runs/restart_policy.h"
#include "mosaic/runs/tfrecord_reader.h"
#include "mosaic/runs/time_series.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace mosaic::runs {

enum class SourceFormat { kEvents, kCsv, kJsonl };
std::string_view ToString(SourceFormat format);

// A run directory before loading.
struct RunDirectory {
  std::string name;       // path relative to the log directory given ("." for the directory itself)
  std::string directory;  // path as it can be opened
  std::vector<std::string> event_files;  // in write order
  std::vector<std::string> table_files;  // CSV and JSONL, by name
  // Why the directory (or a path below it that is not a run of its own) could not be listed,
  // e.g. "logs/a: cannot list this folder (Permission denied); its logs were not read"; empty
  // when it could. Such a directory is a run of its own with no files.
  std::string unreadable;
  // Entries named as logs that are not files to read: a symbolic link to nothing, a FIFO, a
  // socket or a device (opening a FIFO would wait for a writer). Each is reported as an
  // unreadable file of the run, with `reason` e.g. "logs/a/train.csv: a FIFO, not a regular
  // file; not read".
  struct UnusableFile {
    std::string path;
    std::string reason;
  };
  std::vector<UnusableFile> unusable_files;
};

// Finds the runs under `logdir` (recursively), sorted by name. `logdir` may also be a single
// file, which is then a run of its own. A folder (or an entry) that cannot be listed or examined
// is a run of its own with `unreadable` set, so that it is reported rather than skipped. Throws
// InputError when `logdir` does not exist, is neither a folder nor a regular file (a FIFO, a
// socket, a device: never opened), or holds no event, CSV or JSONL file and no unreadable
// folder.
std::vector<RunDirectory> DiscoverRuns(const std::string& logdir);

// Whether DiscoverRuns reads a file of this name (no folder) as a log: an event file
// (events.out.tfevents.*), a .csv or a .jsonl file.
bool IsLogFileName(const std::string& name);

// Discovers the runs of several log directories (the arguments of `mosaic runs`) and names them
// uniquely and stably. With one log directory, names are as DiscoverRuns gives them. With more,
// each name is prefixed with a label of its log directory: the directory's (or file's) base name,
// or, where two arguments share a base name, the argument's normalized path, with "#2", "#3", ...
// appended to a label given twice; a run at the log directory itself (or a file given as the
// argument) is named by the label alone. Runs keep the order of the arguments, then by name.
// Throws InputError as DiscoverRuns does for one argument; for several that fail, one error
// listing each ("2 of the 3 log paths cannot be read:" and a line per path).
std::vector<RunDirectory> DiscoverRuns(const std::vector<std::string>& logdirs);

// Every log file of `runs`: each run's event files, then its CSV and JSONL files.
std::vector<std::string> LogFiles(const std::vector<RunDirectory>& runs);

// The start time written in an event file's name (events.out.tfevents.<seconds>.<...>), or -1.
int64_t EventFileStartSeconds(std::string_view file_name);

struct SourceFile {
  std::string path;
  SourceFormat format = SourceFormat::kEvents;
  EventFileStats events;  // event files only
  int64_t rows = 0;       // CSV/JSONL data rows
  bool loaded = true;     // false when the file was skipped
  std::string skip_reason;  // why it was skipped ("<file>:<line>: ..."), reported as a finding
  int parts = 1;          // the parts an event file was read in, each on its own thread
};

// Histogram values of one tag, summarised.
struct HistogramSeries {
  std::string tag;
  int64_t points = 0;
  int64_t last_step = 0;
  HistogramSummary last;  // count, min, max, mean of the last histogram written
};

struct LoadOptions {
  RestartPolicy restarts = RestartPolicy::kFirst;
  // Keep only tags in which this regular expression (RE2) finds a match; null keeps all.
  std::shared_ptr<const re2::RE2> tags;
  // The CSV/JSONL step column; empty = detect (table_log.h).
  std::string step_column;
  // Threads that read files at the same time (a run's files in LoadRun, every run's in LoadRuns);
  // 0 = one per hardware thread. The result does not depend on it: files are read on their own
  // and merged in write order.
  int threads = 1;
  // An event file larger than the share of one thread, and than twice this, is read in parts of at
  // least this many bytes on several threads: each part's reader finds the first intact record
  // in it (tfrecord_reader.h FindIntactRecord) and reads up to the next part's; the parts are
  // joined when each starts where the one before it stopped and none is damaged, and otherwise
  // the file is read again whole, so that the result is always that of one reader.
  int64_t min_part_bytes = int64_t{16} << 20;
};

// The options of `mosaic runs` and the Python package's readers: `restarts` ("first", "last",
// "all"), the `tags` filter ("" keeps every tag; compiled by CompileTagFilter), the CSV/JSONL
// `step_column` ("" detects it), files read on every core. Throws InputError for an unknown
// policy, UsageError (a malformed --tags) for a pattern RE2 refuses.
LoadOptions MakeLoadOptions(std::string_view restarts, const std::string& tags,
                            const std::string& step_column);

// Compiles `--tags` with RE2 (github.com/google/re2/wiki/Syntax): matching takes time linear in
// the tag and compiling is bounded in memory, whatever the pattern. Throws UsageError naming the
// flag, the pattern (shortened when long) and RE2's complaint (syntax, pattern too large).
std::shared_ptr<const re2::RE2> CompileTagFilter(const std::string& pattern);

// Two files of a run (indexes into Run::files, first < second) whose wall-time ranges overlap.
struct ConcurrentFiles {
  int32_t first = 0;
  int32_t second = 0;
};

struct Run {
  std::string name;
  std::string directory;
  RestartPolicy policy = RestartPolicy::kFirst;
  std::vector<SourceFile> files;
  std::vector<TimeSeries> series;           // sorted by tag
  std::vector<HistogramSeries> histograms;  // sorted by tag
  std::vector<Restart> restarts;            // by tag, then write order; source indexes `files`
  std::vector<RecordIssue> record_issues;   // damaged spots of event files, by file and offset
  std::vector<std::string> notes;           // skipped files, rows, cells; file order warnings
  // Event files written at the same time (overlapping wall-time ranges): concurrent writers,
  // whose points are judged against their own file's only (restart_policy.h).
  std::vector<ConcurrentFiles> concurrent_files;
  std::string unreadable;  // RunDirectory::unreadable

  // True when at least one file of the run could be read.
  bool AnyFileRead() const;

  const TimeSeries* FindSeries(std::string_view tag) const;
  // The run's training loss series, or null: the first present of "loss", "train/loss",
  // "train_loss", "Loss/train", then the first tag (in tag order) naming "loss" in any case and
  // not an evaluation ("val", "eval", "test"), then the first naming "loss" at all.
  const TimeSeries* LossSeries() const;
  std::vector<std::string> Tags() const;
  // Points written under every tag, before the restart policy.
  int64_t written_points = 0;
};

// Whether any file of a set of runs could be read: reading goes on past a file that cannot be
// (each run says why in its files), but a set of which nothing could be read is an error. Add
// every run, then Require.
class ReadCheck {
 public:
  // `tag_filter`: the --tags pattern the runs were read with ("" for none).
  explicit ReadCheck(std::string tag_filter = "");
  void Add(const Run& run);
  bool any_read() const { return any_read_; }
  // Throws InputError "nothing could be read:" with every reason (one per line) when no run had
  // a file read, or "no run found" when none was added; and FieldError naming --tags when files
  // were read but the tag filter kept no tag of any run.
  void Require() const;

 private:
  std::string tag_filter_;
  bool any_tag_ = false;
  bool any_read_ = false;
  bool any_run_ = false;
  std::vector<std::string> reasons_;
};

// Reads every file of `directory` and applies `options`. Files that cannot be opened, read or
// parsed are skipped with their reason in SourceFile::skip_reason (reported as findings, the other
// files still read); damaged records are reported in record_issues. Never throws for a file.
Run LoadRun(const RunDirectory& directory, const LoadOptions& options);

// LoadRun for each of `directories`, in their order, with the files of all runs read on
// `options.threads` threads (largest files first), then the runs assembled on as many. Identical,
// run for run, to calling LoadRun on each with one thread.
std::vector<Run> LoadRuns(const std::vector<RunDirectory>& directories, const LoadOptions& options);

// A lab's directory may hold more points than memory: LoadRuns over consecutive batches of
// `directories` whose log files total at most `batch_bytes` (a run larger than that is a batch of
// its own), each batch handed to `consume` with the index in `directories` of its first run and
// freed before the next is read. The memory held is that of one batch's points, not the whole
// directory's; each run is the one LoadRuns would give (runs are read on their own). Batches come
// in order, none empty (batch_bytes < 1 makes each run a batch); an exception from `consume`
// stops the loading and propagates.
void LoadRunsInBatches(const std::vector<RunDirectory>& directories, const LoadOptions& options,
                       int64_t batch_bytes,
                       const std::function<void(std::vector<Run>&& batch, size_t first)>& consume);

// The log bytes LoadRunsInBatches holds at once by default (the points kept of them take about
// half as much memory: 24 bytes a point, about 50 bytes a scalar record).
inline constexpr int64_t kDefaultBatchBytes = int64_t{1} << 30;

}  // namespace mosaic::runs
