// Tidy exports of loaded runs: one row per kept point.
//   CSV:  header `run,tag,step,wall_time,value` (plus `,pass` with `--restarts all`); non-finite
//         values written nan / inf / -inf; wall_time empty where the format has none; fields with
//         a comma, quote or newline quoted (RFC 4180).
//   JSON: an array of objects with the same keys; non-finite values and missing wall times null.
// Values stored as float32 are written as the shortest decimal that round-trips through float
// (4.93373, not 4.933730125427246); others as the shortest that round-trips through double. Wall
// times always in fixed notation, the shortest that round-trips (1700000000, not 1.7e+09, so that
// they sort as numbers and as text alike).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/runs/run.h"

namespace mosaic::runs {

enum class ExportFormat { kCsv, kJson };
std::string_view ToString(ExportFormat format);
// Throws InputError "--export = X. Violated constraint: one of csv, json".
ExportFormat ExportFormatFromString(std::string_view text);

// The decimal text of `value` as described above; "nan", "inf", "-inf" for non-finite values.
std::string FormatValue(double value, bool float32);

// The decimal text of a wall time in seconds: fixed notation, the shortest that round-trips
// through double; as FormatValue for non-finite values.
std::string FormatWallTime(double seconds);

// The export of `runs`, handed to `write` piece by piece in order (the pieces joined are the
// export's text). `with_pass` adds the pass column/key. Rows are formatted in blocks of 8192 on
// `threads` threads (0: one per hardware thread), a few blocks per thread at a time, each wave
// written before the next is formatted: the text held at once is bounded by the wave (about
// 2 MB per thread), not by the number of points, and the text does not depend on `threads`. An
// exception from `write` stops the export and propagates.
void WriteExport(const std::vector<Run>& runs, ExportFormat format, bool with_pass,
                 const std::function<void(std::string_view)>& write, int threads = 1);

// WriteExport over runs given a batch at a time (LoadRunsInBatches): the text written is that of
// WriteExport over all the batches' runs in order. The header (CSV) or the opening bracket (JSON)
// is written with the first Add, or by Finish when there was none, so that nothing is written
// before the first batch is read; Finish writes the JSON closing bracket and must be called once,
// last. An exception from `write` propagates.
class ExportWriter {
 public:
  ExportWriter(ExportFormat format, bool with_pass, std::function<void(std::string_view)> write,
               int threads = 1);
  void Add(const std::vector<Run>& runs);
  void Finish();

 private:
  void Start();

  ExportFormat format_;
  bool with_pass_;
  std::function<void(std::string_view)> write_;
  int threads_;
  bool started_ = false;
  bool any_row_ = false;
};

// Refuses an export written where it would be read back as logs: `output` (a file name DiscoverRuns
// reads) under one of `logdirs`, unless the export is of one run (`runs`) into that run's own
// folder, which reads back as the same points (a restart). Any other such export would put several
// runs, or another run's points, in one run's logs: read again, that folder is refused (a long
// CSV of several runs) or holds points that are not its own. Refuses as well an `output` in a
// folder that holds event files of its own (another run's folder), but for the exported run's own.
// `output` is followed through symbolic links (a dangling one too: the export would create its
// target). Throws InputError on `flag` ("--output", or "stdout" for a redirected stdout) naming
// the log directory or the log file found there. An empty `output` (stdout to no file) passes.
void CheckExportOutsideLogs(const std::string& output, const std::vector<std::string>& logdirs,
                            const std::vector<RunDirectory>& runs,
                            std::string_view flag = "--output");

// Refuses a report (`runs ablation --output`) written where it would be read back as logs:
// `output`, followed through symbolic links, a file name DiscoverRuns reads, in a folder under one
// of `logdirs` (read again, that run would hold an unreadable file or another run's points).
// Throws InputError on `flag` naming the log directory. An empty `output` passes.
void CheckReportOutsideLogs(const std::string& output, const std::vector<std::string>& logdirs,
                            std::string_view flag = "--output");

// The whole export of `runs` as one string (WriteExport on one thread).
std::string ExportRuns(const std::vector<Run>& runs, ExportFormat format, bool with_pass);

}  // namespace mosaic::runs
