#include "mosaic/runs/export.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mosaic/util/error.h"
#include "mosaic/util/json_output.h"
#include "mosaic/util/parallel_for.h"
#include "mosaic/util/shortest_decimal.h"

namespace mosaic::runs {
namespace {

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string JsonString(const std::string& text) {
  return DumpJson(nlohmann::ordered_json(text), -1);
}

// The most characters any number below takes, with the room ShortestToChars needs for its fast path.
constexpr size_t kNumberRoom = 64;

char* Put(char* out, std::string_view text) {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

// FormatValue(value, float32) at `out`.
char* PutValue(char* out, double value, bool float32) {
  if (std::isnan(value)) return Put(out, "nan");
  if (std::isinf(value)) return Put(out, value > 0 ? "inf" : "-inf");
  return float32 ? ShortestToChars(out, out + kNumberRoom, static_cast<float>(value)).ptr
                 : ShortestToChars(out, out + kNumberRoom, value).ptr;
}

// FormatWallTime(seconds) at `out`, for a finite `seconds`: fixed notation, or beyond 64
// characters (no real wall time) the shortest form.
char* PutWallTime(char* out, double seconds) {
  const std::to_chars_result fixed = ShortestFixedToChars(out, out + kNumberRoom, seconds);
  return fixed.ec == std::errc() ? fixed.ptr : ShortestToChars(out, out + kNumberRoom, seconds).ptr;
}

char* PutInteger(char* out, int64_t value) { return WriteInteger(out, value); }

// Rows [begin, end) of one series: the unit formatted on one thread.
struct Block {
  const TimeSeries* series = nullptr;
  size_t prefix = 0;  // index into the prefixes of the series
  size_t begin = 0;
  size_t end = 0;
  bool first_row = false;  // holds the export's first row (JSON writes no comma before it)
};

constexpr size_t kRowsPerBlock = size_t{1} << 13;

// A block's text: a buffer reused from wave to wave (not zeroed: only the written part is read).
struct BlockText {
  std::unique_ptr<char[]> data;
  size_t capacity = 0;
  size_t size = 0;
};

// The rows of `block` as CSV or JSON text into `out`.
void FormatBlock(const Block& block, const std::string& prefix, ExportFormat format,
                 bool with_pass, BlockText* out) {
  const TimeSeries& s = *block.series;
  // A row is at most its prefix, four numbers and the JSON keys between them.
  const size_t room = (block.end - block.begin) * (prefix.size() + 4 * kNumberRoom + 64);
  if (out->capacity < room) {
    out->data.reset(new char[room]);
    out->capacity = room;
  }
  char* const start = out->data.get();
  char* p = start;
  for (size_t i = block.begin; i < block.end; ++i) {
    const ScalarPoint& point = s.points[i];
    if (format == ExportFormat::kCsv) {
      p = Put(p, prefix);
      p = PutInteger(p, point.step);
      *p++ = ',';
      if (std::isfinite(point.wall_time_seconds)) p = PutWallTime(p, point.wall_time_seconds);
      *p++ = ',';
      p = PutValue(p, point.value, s.float32);
      if (with_pass) {
        *p++ = ',';
        p = PutInteger(p, s.PassOf(i));
      }
      *p++ = '\n';
    } else {
      p = Put(p, block.first_row && i == block.begin ? "\n  " : ",\n  ");
      p = Put(p, prefix);
      p = Put(p, ", \"step\": ");
      p = PutInteger(p, point.step);
      p = Put(p, ", \"wall_time\": ");
      p = std::isfinite(point.wall_time_seconds) ? PutWallTime(p, point.wall_time_seconds)
                                                 : Put(p, "null");
      p = Put(p, ", \"value\": ");
      p = std::isfinite(point.value) ? PutValue(p, point.value, s.float32) : Put(p, "null");
      if (with_pass) {
        p = Put(p, ", \"pass\": ");
        p = PutInteger(p, s.PassOf(i));
      }
      *p++ = '}';
    }
  }
  out->size = static_cast<size_t>(p - start);
}

}  // namespace

std::string_view ToString(ExportFormat format) {
  switch (format) {
    case ExportFormat::kCsv: return "csv";
    case ExportFormat::kJson: return "json";
  }
  return "?";
}

ExportFormat ExportFormatFromString(std::string_view text) {
  if (text == "csv") return ExportFormat::kCsv;
  if (text == "json") return ExportFormat::kJson;
  throw FieldError({}, "--export", text, "one of csv, json");
}

std::string FormatValue(double value, bool float32) {
  char buffer[kNumberRoom];
  return std::string(buffer, PutValue(buffer, value, float32));
}

std::string FormatWallTime(double seconds) {
  if (!std::isfinite(seconds)) return FormatValue(seconds, false);
  char buffer[kNumberRoom];
  return std::string(buffer, PutWallTime(buffer, seconds));
}

ExportWriter::ExportWriter(ExportFormat format, bool with_pass,
                           std::function<void(std::string_view)> write, int threads)
    : format_(format), with_pass_(with_pass), write_(std::move(write)), threads_(threads) {}

void ExportWriter::Add(const std::vector<Run>& runs) {
  // Each series' row prefix ("run,tag," or the JSON object's opening), and its blocks of rows.
  std::vector<std::string> prefixes;
  std::vector<Block> blocks;
  for (const Run& run : runs) {
    const std::string run_field =
        format_ == ExportFormat::kCsv ? CsvField(run.name) : JsonString(run.name);
    for (const TimeSeries& s : run.series) {
      prefixes.push_back(format_ == ExportFormat::kCsv
                             ? run_field + "," + CsvField(s.tag) + ","
                             : "{\"run\": " + run_field + ", \"tag\": " + JsonString(s.tag));
      for (size_t begin = 0; begin < s.points.size(); begin += kRowsPerBlock) {
        blocks.push_back({&s, prefixes.size() - 1, begin,
                          std::min(begin + kRowsPerBlock, s.points.size()),
                          !any_row_ && blocks.empty()});
      }
    }
  }
  if (!started_) Start();
  // Waves of a few blocks per thread: formatted in parallel, then written in order, so that the
  // text held at once is bounded by the wave whatever the number of points.
  const int workers = ThreadCount(threads_);
  const size_t wave = static_cast<size_t>(workers) * 4;
  std::vector<BlockText> texts(std::min(wave, blocks.size()));
  for (size_t first = 0; first < blocks.size(); first += wave) {
    const size_t count = std::min(wave, blocks.size() - first);
    ParallelFor(count, workers, [&](size_t i) {
      const Block& block = blocks[first + i];
      FormatBlock(block, prefixes[block.prefix], format_, with_pass_, &texts[i]);
    });
    for (size_t i = 0; i < count; ++i) write_(std::string_view(texts[i].data.get(), texts[i].size));
  }
  any_row_ = any_row_ || !blocks.empty();
}

void ExportWriter::Start() {
  started_ = true;
  if (format_ == ExportFormat::kCsv) {
    write_(with_pass_ ? "run,tag,step,wall_time,value,pass\n" : "run,tag,step,wall_time,value\n");
  } else {
    write_("[");
  }
}

void ExportWriter::Finish() {
  if (!started_) Start();
  if (format_ == ExportFormat::kJson) write_(any_row_ ? "\n]\n" : "]\n");
}

void WriteExport(const std::vector<Run>& runs, ExportFormat format, bool with_pass,
                 const std::function<void(std::string_view)>& write, int threads) {
  ExportWriter writer(format, with_pass, write, threads);
  writer.Add(runs);
  writer.Finish();
}

std::string ExportRuns(const std::vector<Run>& runs, ExportFormat format, bool with_pass) {
  std::string out;
  WriteExport(runs, format, with_pass, [&](std::string_view piece) { out += piece; }, 1);
  return out;
}

namespace {

// The folder `output` lands in, followed through symbolic links (a dangling one too: writing
// creates its target), when its file name is one DiscoverRuns reads as a log; empty otherwise.
std::filesystem::path LogFolderOf(const std::string& output) {
  namespace fs = std::filesystem;
  if (output.empty()) return {};
  fs::path target = output;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code link_error;
    if (!fs::is_symlink(target, link_error)) break;
    const fs::path next = fs::read_symlink(target, link_error);
    if (link_error) break;
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  if (!IsLogFileName(target.filename().string())) return {};
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(fs::absolute(target, ec), ec).parent_path();
  return ec ? fs::path() : folder;
}

std::filesystem::path Canonical(const std::string& path) {
  std::error_code error;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, error);
  return error ? std::filesystem::path() : p;
}

// The first of `logdirs` (a directory) that holds `folder`, or null.
const std::string* LogDirHolding(const std::filesystem::path& folder,
                                 const std::vector<std::string>& logdirs) {
  for (const std::string& logdir : logdirs) {
    std::error_code error;
    if (!std::filesystem::is_directory(logdir, error)) continue;
    const std::filesystem::path root = Canonical(logdir);
    if (root.empty()) continue;
    const auto [end, unused] = std::mismatch(root.begin(), root.end(), folder.begin(), folder.end());
    if (end == root.end()) return &logdir;
  }
  return nullptr;
}

}  // namespace

void CheckReportOutsideLogs(const std::string& output, const std::vector<std::string>& logdirs,
                            std::string_view flag) {
  const std::filesystem::path folder = LogFolderOf(output);
  if (folder.empty()) return;
  if (const std::string* logdir = LogDirHolding(folder, logdirs)) {
    throw FieldError({}, flag, output,
                     fmt::format("outside the log directories this command reads ({} is one): "
                                 "read again, the report would be read as a log of the folder {}; "
                                 "write it elsewhere",
                                 *logdir, folder.string()));
  }
}

void CheckExportOutsideLogs(const std::string& output, const std::vector<std::string>& logdirs,
                            const std::vector<RunDirectory>& runs, std::string_view flag) {
  namespace fs = std::filesystem;
  const fs::path folder = LogFolderOf(output);
  if (folder.empty()) return;
  if (runs.size() == 1 && folder == Canonical(runs.front().directory)) return;
  if (const std::string* logdir = LogDirHolding(folder, logdirs)) {
    throw FieldError({}, flag, output,
                     fmt::format("outside the log directories this export reads ({} is one): "
                                 "read again, the {} exported run{} would be read as logs of "
                                 "the folder {}; write the export elsewhere, or one run into its "
                                 "own folder",
                                 *logdir, runs.size(), runs.size() == 1 ? "" : "s",
                                 folder.string()));
  }
  // Nor into another run's folder: one that holds event files of its own would read the export
  // as its points (a restart of that run, with another run's values). A folder of CSV files alone
  // is not taken for a run's: exports and tables share folders.
  std::error_code error;
  for (fs::directory_iterator it(folder, error), last; !error && it != last;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("events.out.tfevents") || !it->is_regular_file(error)) continue;
    throw FieldError({}, flag, output,
                     fmt::format("outside another run's folder ({} holds logs: {}): read again, "
                                 "the export would be read as that run's points; write the export "
                                 "elsewhere, or one run into its own folder",
                                 folder.string(), name));
  }
}

}  // namespace mosaic::runs
