#include "mosaic/runs/table_log.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <cstring>
#include <limits>
#include <filesystem>
#include <map>
#include <optional>

#include "mosaic/util/error.h"
#include "mosaic/util/text_input.h"

namespace mosaic::runs {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kMaxNotesPerFile = 5;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Why a cell is not a step.
enum class StepProblem { kNone, kNotInteger, kOutOfRange, kInexact };

// Whether the decimal number `text` ([sign] digits [. digits] [e [sign] digits]) is a whole number
// as written, before any rounding to a double: 1.5e1 and 100e-2 are, 1e-400 and
// 1.00000000000000000000000000001 are not (a double would read them as 0 and 1). Text of another
// form is left to the parser (true).
bool LiteralIsWhole(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  std::string digits;
  int64_t fraction_digits = 0;
  bool any = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    digits += text[i++];
    any = true;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      digits += text[i++];
      ++fraction_digits;
      any = true;
    }
  }
  if (!any) return true;
  int64_t exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (i == text.size()) return true;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      exponent = std::min<int64_t>(exponent * 10 + (text[i++] - '0'), int64_t{1} << 40);
    }
    if (negative) exponent = -exponent;
  }
  if (i != text.size()) return true;
  const size_t last = digits.find_last_not_of('0');
  if (last == std::string::npos) return true;  // zero
  const auto trailing_zeros = static_cast<int64_t>(digits.size() - 1 - last);
  return exponent - fraction_digits + trailing_zeros >= 0;
}

// A step written as a decimal or in exponent form ("100.0", "1e3"): a whole value whose
// magnitude is below 2^53, where every integer has a double of its own. Past 2^53 the text
// would have been rounded on reading (9007199254740993.0 reads as ...992); beyond 2^63 it is
// outside the 64-bit range. Exactly ±2^63 is either: -9223372036854775808.0 is the smallest
// 64-bit integer, but -9223372036854775809 (beyond it) reads as the same double, so it is not
// an exact step (a JSON number's literal is classified by its text instead, ParseStepText).
StepProblem StepFromDouble(double value, int64_t* step) {
  if (!std::isfinite(value) || value != std::floor(value)) return StepProblem::kNotInteger;
  if (std::fabs(value) > 0x1p63) return StepProblem::kOutOfRange;
  if (std::fabs(value) >= 0x1p53) return StepProblem::kInexact;
  *step = static_cast<int64_t>(value);
  return StepProblem::kNone;
}

// A step cell: digits are read exactly as a 64-bit integer (9007199254740993 stays itself, which
// a double cannot hold); other numbers ("100.0", "1e3") must be whole and in range.
StepProblem ParseStepText(std::string_view text, int64_t* step) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *step);
  if (ptr == end && !text.empty()) {
    if (ec == std::errc()) return StepProblem::kNone;
    if (ec == std::errc::result_out_of_range) return StepProblem::kOutOfRange;
  }
  if (!LiteralIsWhole(text)) return StepProblem::kNotInteger;
  double value = 0;
  const auto [dptr, dec] = std::from_chars(text.data(), end, value);
  if (dptr == end && !text.empty() && dec == std::errc::result_out_of_range) {
    return StepProblem::kOutOfRange;
  }
  if (!ParseNumber(text, &value)) return StepProblem::kNotInteger;
  return StepFromDouble(value, step);
}

// The same for a JSON value: integers as the parser read them, exactly.
StepProblem StepFromJson(const nlohmann::json& v, int64_t* step) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return StepProblem::kOutOfRange;
    }
    *step = static_cast<int64_t>(u);
    return StepProblem::kNone;
  }
  if (v.is_number_integer()) {
    *step = v.get<int64_t>();
    return StepProblem::kNone;
  }
  if (v.is_number_float()) return StepFromDouble(v.get<double>(), step);
  return StepProblem::kNotInteger;
}

std::string_view StepProblemText(StepProblem problem) {
  switch (problem) {
    case StepProblem::kOutOfRange: return "a step within the 64-bit integer range";
    case StepProblem::kInexact:
      return "an exact step (past 2^53 a step is read exactly only when written as an integer)";
    default: return "an integer step";
  }
}

// `text` cut to its first 40 characters, with "…" when it was longer.
std::string Shortened(std::string_view text) {
  return text.size() <= 40 ? std::string(text) : std::string(text.substr(0, 40)) + "…";
}

// The literal of the number written after the key `key`'s last name in the JSON line `line`
// ("step": 1e23 gives 1e23, not the double the parser made of it), when the line holds exactly
// one such number; nullopt otherwise.
std::optional<std::string_view> NumberLiteral(std::string_view line, std::string_view key) {
  const size_t slash = key.rfind('/');
  const std::string quoted =
      fmt::format("\"{}\"", slash == std::string_view::npos ? key : key.substr(slash + 1));
  std::string_view literal;
  int found = 0;
  for (size_t at = line.find(quoted); at != std::string_view::npos;
       at = line.find(quoted, at + 1)) {
    size_t i = at + quoted.size();
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size() || line[i] != ':') continue;
    ++i;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t end = i;
    while (end < line.size() && line[end] != '\0' &&
           std::strchr("+-0123456789.eE", line[end]) != nullptr) {
      ++end;
    }
    if (end == i) continue;
    literal = line.substr(i, end - i);
    ++found;
  }
  if (found != 1) return std::nullopt;
  return literal;
}

// How the JSON leaf `value` under the flattened key `key` was written in `line`: a number's
// literal (NumberLiteral), else the value as the parser dumps it; Shortened.
std::string NumberAsWritten(std::string_view line, std::string_view key,
                            const nlohmann::json& value) {
  if (value.is_number()) {
    if (const std::optional<std::string_view> literal = NumberLiteral(line, key)) {
      return Shortened(*literal);
    }
  }
  return Shortened(value.dump());
}

// Collects points per tag in order of first appearance.
class TagCollector {
 public:
  explicit TagCollector(TableLog* log) : log_(log) {}
  void Add(const std::string& tag, WrittenPoint point) {
    auto [it, inserted] = index_.try_emplace(tag, log_->tags.size());
    if (inserted) log_->tags.push_back({tag, {}});
    log_->tags[it->second].points.push_back(point);
  }

 private:
  TableLog* log_;
  std::map<std::string, size_t, std::less<>> index_;
};

void Note(TableLog* log, std::string message) {
  if (log->notes.size() < kMaxNotesPerFile) log->notes.push_back(std::move(message));
}

// Splits CSV text into records of fields (RFC 4180 quoting). `lines[i]` is the 1-based line where
// record i starts. Sets `*unterminated` when the text ends inside a quoted field (that record is
// dropped).
std::vector<std::vector<std::string>> SplitCsv(std::string_view text, std::vector<int>* lines,
                                               bool* unterminated) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool in_quotes = false;
  bool record_has_content = false;
  int line = 1;
  int record_line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      in_quotes = true;
      record_has_content = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      record_has_content = true;
    } else if (c == '\n') {
      if (!field.empty() && field.back() == '\r') field.pop_back();
      if (record_has_content || !field.empty()) {
        record.push_back(std::move(field));
        records.push_back(std::move(record));
        lines->push_back(record_line);
      }
      record.clear();
      field.clear();
      record_has_content = false;
      ++line;
      record_line = line;
    } else {
      field += c;
      record_has_content = true;
    }
  }
  *unterminated = in_quotes;
  if (!in_quotes && (record_has_content || !field.empty())) {
    record.push_back(std::move(field));
    records.push_back(std::move(record));
    lines->push_back(record_line);
  }
  return records;
}

std::string StepColumnError(const std::string& path, std::string_view what) {
  std::string names;
  for (std::string_view name : kStepColumns) names += (names.empty() ? "" : ", ") + std::string(name);
  return fmt::format("{}:1: no step {} (looked for {}); name one with --step-column", path, what,
                     names);
}

// Replaces the bare tokens NaN, Infinity and -Infinity that Python's json module writes (outside
// strings) by strings, so that a strict JSON parser accepts the line.
std::string QuoteNonFiniteTokens(std::string_view line) {
  std::string out;
  out.reserve(line.size() + 8);
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < line.size()) {
        out += line[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (std::string_view token : {"-Infinity", "Infinity", "NaN"}) {
      if (line.substr(i, token.size()) == token) {
        out += '"';
        out += token;
        out += '"';
        i += token.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

// JSONL lines nested deeper than this are skipped (a metrics logger nests 2-4 levels).
constexpr size_t kMaxJsonDepth = 64;

// The deepest nesting of objects and arrays in a JSON text, outside strings.
size_t NestingDepth(std::string_view line) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

void Flatten(const nlohmann::json& object, const std::string& prefix,
             std::vector<std::pair<std::string, const nlohmann::json*>>* out) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "/" + it.key();
    if (it->is_object()) {
      Flatten(*it, key, out);
    } else {
      out->emplace_back(std::move(key), &*it);
    }
  }
}

// The numeric value of a JSON leaf: numbers and the non-finite names as strings. Returns false for
// anything else; sets *missing for null.
bool JsonNumber(const nlohmann::json& v, double* value, bool* missing) {
  *missing = false;
  if (v.is_null()) {
    *missing = true;
    return false;
  }
  if (v.is_number()) {
    *value = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    for (std::string_view name : {"NaN", "nan", "Infinity", "inf", "-Infinity", "-inf"}) {
      if (s == name) return ParseNumber(s, value);
    }
  }
  return false;
}

}  // namespace

bool ParseNumber(std::string_view text, double* value) {
  text = Trim(text);
  if (text.empty()) return false;
  if (text.front() == '+') text.remove_prefix(1);
  if (EqualsIgnoreCase(text, "infinity") || EqualsIgnoreCase(text, "-infinity")) {
    *value = text.front() == '-' ? -std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::infinity();
    return true;
  }
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  if (ec == std::errc::result_out_of_range && ptr == end) {
    // An underflow (1e-400) is a number, as close to 0 as a double comes (strtod's 0 or
    // subnormal); an overflow (1e400) is none (CellProblem says why).
    const double rounded = std::strtod(std::string(text).c_str(), nullptr);
    if (std::abs(rounded) >= 1) return false;
    *value = rounded;
    return true;
  }
  return ec == std::errc() && ptr == end;
}

// Why a cell ParseNumber refused is skipped: a number past the range of a double (1e400), or text.
std::string_view CellProblem(std::string_view text) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc::result_out_of_range && ptr == text.data() + text.size()
             ? "is a number beyond the range of a double (about ±1.8e308)"
             : "is not a number";
}

namespace {

// The columns a long-format CSV is read from, by index into its header.
struct LongFormatColumns {
  int tag = -1;
  int value = -1;
  int run = -1;  // -1 when the file has no run column
};

// Notes the columns of a long-format `header` that are not read (each row is one point: its tag,
// step, wall time and value; a run column names the run; `pass` is what a restart policy makes).
void NoteUnreadLongFormatColumns(const std::vector<std::string>& header, const std::string& path,
                                 int header_line, TableLog* log) {
  std::vector<std::string_view> unread;
  for (const std::string& name : header) {
    const bool read = name == "tag" || name == "value" || name == "run" || name == "pass" ||
                      name == log->step_column || name == log->wall_time_column;
    if (!read) unread.push_back(name.empty() ? std::string_view("(unnamed)") : name);
  }
  if (!unread.empty()) {
    Note(log, fmt::format("{}:{}: a long-format file (a tag and a value column, one point a "
                          "row); {} {} not read",
                          path, header_line, fmt::join(unread, ", "),
                          unread.size() == 1 ? "is" : "are"));
  }
}

// Adds one row of a long-format CSV: the point (step, wall, value) of the tag its tag cell names.
// The run column, where there is one, must name one run throughout the file (`*run_name` and
// `*run_line` hold the first row's); throws InputError at the first row naming another.
void AddLongFormatRow(const std::vector<std::string>& cells, const std::string& path, int line,
                      const LongFormatColumns& columns, int64_t step, double wall,
                      int64_t sequence, std::string* run_name, int* run_line, TagCollector* tags,
                      TableLog* log) {
  auto cell = [&](int index) {
    return index >= 0 && index < static_cast<int>(cells.size()) ? Trim(cells[index])
                                                                : std::string_view();
  };
  // An empty run cell names no run (a long frame's rows without one), so it conflicts with none.
  if (columns.run >= 0 && !cell(columns.run).empty()) {
    const std::string_view run = cell(columns.run);
    if (*run_line == 0) {
      *run_name = run;
      *run_line = line;
    } else if (run != *run_name) {
      throw InputError(fmt::format(
          "{}:{}: run = '{}', but line {} has run = '{}': a long-format CSV in a run's folder "
          "holds one run (export each run to a file of its own, e.g. mosaic runs DIR/RUN "
          "--export csv)",
          path, line, Shortened(run), *run_line, Shortened(*run_name)));
    }
  }
  const std::string_view tag = cell(columns.tag);
  if (tag.empty()) {
    if (log->rows_without_tag++ == 0) {
      Note(log, fmt::format("{}:{}: the tag cell is empty; such rows are skipped", path, line));
    }
    return;
  }
  const std::string_view text = cell(columns.value);
  if (text.empty()) return;  // a missing value
  double value;
  if (!ParseNumber(text, &value)) {
    // Each noted with its reason, up to the file's notes (kMaxNotesPerFile); "in all" counts them.
    ++log->non_numeric_cells;
    Note(log, fmt::format("{}:{}: value = '{}' {}; cell skipped", path, line, text.substr(0, 40),
                          CellProblem(text)));
    return;
  }
  tags->Add(std::string(tag), {step, wall, value, sequence, 0});
}

}  // namespace

TableLog ReadCsvLog(std::string_view text, const std::string& path,
                    const std::string& step_column) {
  text = StripByteOrderMark(text);
  TableLog log;
  log.path = path;
  std::vector<int> lines;
  bool unterminated = false;
  std::vector<std::vector<std::string>> records = SplitCsv(text, &lines, &unterminated);
  if (records.empty()) throw InputError(fmt::format("{}:1: empty CSV file (no header)", path));
  std::vector<std::string> header;
  int step_index = -1;
  int wall_index = -1;
  // A long-format header (one point a row: mosaic's own `--export csv`, pandas frames of
  // scalars): the tag and value columns, the run and pass columns where present.
  int tag_index = -1;
  int value_index = -1;
  int run_index = -1;
  auto find = [&](std::string_view name) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  // Takes `cells` as the column names; false when they lack the step column.
  auto use_header = [&](const std::vector<std::string>& cells, bool first, int header_line) {
    header.clear();
    for (const std::string& name : cells) header.emplace_back(Trim(name));
    // Two columns of one name would be read as one tag written twice per step (a false restart).
    std::map<std::string_view, size_t> column_of;
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i].empty()) continue;
      if (const auto [it, fresh] = column_of.emplace(header[i], i); !fresh) {
        throw InputError(fmt::format("{}:{}: column '{}' appears twice in the header (columns {} "
                                     "and {}): each column is a tag of its own",
                                     path, header_line, header[i], it->second + 1, i + 1));
      }
    }
    if (!step_column.empty()) {
      step_index = find(step_column);
      if (step_index < 0 && first) {
        throw FieldError({path, 1, 0, ""}, "--step-column", step_column, "a column of the header");
      }
    } else if (first) {
      for (std::string_view name : kStepColumns) {
        if ((step_index = find(name)) >= 0) break;
      }
      if (step_index < 0) throw InputError(StepColumnError(path, "column"));
    } else {
      step_index = find(log.step_column);  // a later header keeps the step column
    }
    if (step_index < 0) return false;
    wall_index = -1;
    for (std::string_view name : kWallTimeColumns) {
      if ((wall_index = find(name)) >= 0) break;
    }
    log.step_column = header[step_index];
    if (wall_index >= 0 && log.wall_time_column.empty()) log.wall_time_column = header[wall_index];
    tag_index = find("tag");
    value_index = find("value");
    if (tag_index < 0 || value_index < 0) tag_index = value_index = -1;
    run_index = tag_index >= 0 ? find("run") : -1;
    if (tag_index >= 0) NoteUnreadLongFormatColumns(header, path, header_line, &log);
    return true;
  };
  use_header(records.front(), true, lines.front());
  // TensorBoard's CSV download holds one tag, named by the file ("run-<run>-tag-<tag>.csv", '/'
  // written '_'), not by its "Value" column: several downloads in one run are several tags.
  if (header == std::vector<std::string>{"Wall time", "Step", "Value"}) {
    const std::string stem = std::filesystem::path(path).stem().string();
    const size_t at = stem.rfind("-tag-");
    header[2] = at != std::string::npos && at + 5 < stem.size() ? stem.substr(at + 5) : stem;
  }
  // A header written again (a logger appending after a resume, maybe with new columns): a row
  // that names the step column and holds no number.
  auto is_header = [&](const std::vector<std::string>& cells) {
    bool names_step = false;
    for (const std::string& cell : cells) {
      double value;
      if (ParseNumber(cell, &value)) return false;
      if (Trim(cell) == log.step_column) names_step = true;
    }
    return names_step;
  };

  TagCollector tags(&log);
  std::string run_name;  // the run a long-format file's rows name, from its first row
  int run_line = 0;
  for (size_t row = 1; row < records.size(); ++row) {
    const std::vector<std::string>& cells = records[row];
    const int line = lines[row];
    const bool last = row + 1 == records.size();
    if (is_header(cells)) {
      const size_t before = header.size();
      use_header(cells, false, line);
      ++log.repeated_headers;
      Note(&log, fmt::format("{}:{}: header written again ({} columns, {} before); the rows after "
                             "it are read with it",
                             path, line, header.size(), before));
      continue;
    }
    if (cells.size() > header.size()) {
      ++log.rows_with_extra_cells;
      Note(&log, fmt::format("{}:{}: {} cells for {} columns; row skipped", path, line,
                             cells.size(), header.size()));
      continue;
    }
    if (static_cast<int>(cells.size()) <= step_index) {
      ++log.rows_without_step;
      Note(&log, fmt::format("{}:{}: row ends before the step column '{}'{}", path, line,
                             log.step_column, last ? " (truncated last line)" : "; row skipped"));
      continue;
    }
    int64_t step = 0;
    if (const StepProblem problem = ParseStepText(cells[step_index], &step);
        problem != StepProblem::kNone) {
      ++log.rows_without_step;
      Note(&log, fmt::format("{}:{}: {} = '{}' is not {}; row skipped", path, line,
                             log.step_column, cells[step_index], StepProblemText(problem)));
      continue;
    }
    double wall = kNaN;
    if (wall_index >= 0 && wall_index < static_cast<int>(cells.size())) {
      if (!ParseNumber(cells[wall_index], &wall)) wall = kNaN;
    }
    if (tag_index >= 0) {
      ++log.rows;
      AddLongFormatRow(cells, path, line, {tag_index, value_index, run_index}, step, wall,
                       static_cast<int64_t>(row - 1), &run_name, &run_line, &tags, &log);
      continue;
    }
    ++log.rows;
    for (size_t col = 0; col < cells.size(); ++col) {
      if (static_cast<int>(col) == step_index || static_cast<int>(col) == wall_index) continue;
      if (Trim(cells[col]).empty()) continue;
      double value;
      if (!ParseNumber(cells[col], &value)) {
        ++log.non_numeric_cells;
        Note(&log, fmt::format("{}:{}: {} = '{}' {}; cell skipped", path, line, header[col],
                               cells[col].substr(0, 40), CellProblem(cells[col])));
        continue;
      }
      tags.Add(header[col], {step, wall, value, static_cast<int64_t>(row - 1), 0});
    }
  }
  if (unterminated) {
    Note(&log, fmt::format("{}: ends inside a quoted cell; the truncated last row was dropped", path));
  }
  return log;
}

TableLog ReadJsonlLog(std::string_view text, const std::string& path,
                      const std::string& step_column) {
  text = StripByteOrderMark(text);
  TableLog log;
  log.path = path;
  TagCollector tags(&log);
  int line_number = 0;
  size_t start = 0;
  bool any_step = false;
  bool step_key_seen = false;  // on some line, valid or not
  std::vector<std::pair<std::string, const nlohmann::json*>> leaves;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool has_newline = end != std::string_view::npos;
    if (!has_newline) end = text.size();
    std::string_view line = Trim(text.substr(start, end - start));
    start = end + 1;
    ++line_number;
    if (line.empty()) continue;
    // A line nested deeper than any log writes is refused before parsing: its keys would be
    // flattened into paths as long as the line, and the flattening's recursion as deep.
    if (const size_t depth = NestingDepth(line); depth > kMaxJsonDepth) {
      Note(&log, fmt::format("{}:{}: nested {} levels deep (at most {}); line skipped", path,
                             line_number, depth, kMaxJsonDepth));
      ++log.malformed_rows;
      continue;
    }
    nlohmann::json object;
    std::string parse_error;
    try {
      object = nlohmann::json::parse(QuoteNonFiniteTokens(line));
    } catch (const nlohmann::json::exception& e) {
      parse_error = e.what();
      // "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..."
      // kept without the echo of what was read, which may be the whole line.
      if (const size_t at = parse_error.find("] "); at != std::string::npos) {
        parse_error.erase(0, at + 2);
      }
      parse_error = parse_error.substr(0, std::min(parse_error.find("; last read"), size_t{120}));
    }
    // A last line without its newline is one its writer had not finished (a live or crashed run).
    const bool truncated_tail = !has_newline && !parse_error.empty();
    if (truncated_tail) {
      // Once per file at most, and what a reader of a live run most needs to see: past the cap.
      log.notes.push_back(fmt::format("{}:{}: truncated last line dropped", path, line_number));
      continue;
    }
    if (!parse_error.empty() || !object.is_object()) {
      Note(&log, fmt::format("{}:{}: {}", path, line_number,
                             parse_error.empty()
                                 ? fmt::format("a JSON {}, not an object; line skipped",
                                               object.type_name())
                                 : fmt::format("not JSON ({}); line skipped", parse_error)));
      ++log.malformed_rows;
      continue;
    }
    leaves.clear();
    Flatten(object, "", &leaves);
    int step_leaf = -1;
    int wall_leaf = -1;
    if (!step_column.empty()) {
      for (size_t i = 0; i < leaves.size() && step_leaf < 0; ++i) {
        if (leaves[i].first == step_column) step_leaf = static_cast<int>(i);
      }
    } else {
      for (std::string_view name : kStepColumns) {
        for (size_t i = 0; i < leaves.size() && step_leaf < 0; ++i) {
          if (leaves[i].first == name) step_leaf = static_cast<int>(i);
        }
        if (step_leaf >= 0) break;
      }
    }
    for (std::string_view name : kWallTimeColumns) {
      for (size_t i = 0; i < leaves.size() && wall_leaf < 0; ++i) {
        if (leaves[i].first == name) wall_leaf = static_cast<int>(i);
      }
      if (wall_leaf >= 0) break;
    }
    int64_t step = 0;
    bool missing = false;
    if (step_leaf < 0) {
      ++log.rows_without_step;
      Note(&log, fmt::format("{}:{}: no step key; line skipped", path, line_number));
      continue;
    }
    step_key_seen = true;
    StepProblem problem = StepFromJson(*leaves[step_leaf].second, &step);
    if (leaves[step_leaf].second->is_number_float()) {
      // The parser read the number as a double, which may have rounded it (1e-400 to 0, an
      // integer literal beyond the 64-bit range to ±2^63): its text decides, as a CSV cell's.
      const std::optional<std::string_view> literal = NumberLiteral(line, leaves[step_leaf].first);
      if (literal) problem = ParseStepText(*literal, &step);
    }
    if (problem != StepProblem::kNone) {
      ++log.rows_without_step;
      Note(&log, fmt::format("{}:{}: {} = {} is not {}; line skipped", path, line_number,
                             leaves[step_leaf].first,
                             NumberAsWritten(line, leaves[step_leaf].first,
                                             *leaves[step_leaf].second),
                             StepProblemText(problem)));
      continue;
    }
    if (!any_step) {
      log.step_column = leaves[step_leaf].first;
      any_step = true;
    }
    double wall = kNaN;
    if (wall_leaf >= 0) {
      if (!JsonNumber(*leaves[wall_leaf].second, &wall, &missing)) wall = kNaN;
      if (log.wall_time_column.empty()) log.wall_time_column = leaves[wall_leaf].first;
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (static_cast<int>(i) == step_leaf || static_cast<int>(i) == wall_leaf) continue;
      double value;
      if (!JsonNumber(*leaves[i].second, &value, &missing)) {
        if (!missing) {
          ++log.non_numeric_cells;
          Note(&log, fmt::format("{}:{}: {} = {} is not a number; value skipped", path,
                                 line_number, leaves[i].first,
                                 leaves[i].second->dump().substr(0, 40)));
        }
        continue;
      }
      tags.Add(leaves[i].first, {step, wall, value, log.rows, 0});
    }
    ++log.rows;
  }
  if (!any_step && !step_key_seen) {
    if (!step_column.empty()) {
      throw FieldError({path, 1, 0, ""}, "--step-column", step_column, "a key of the JSONL objects");
    }
    throw InputError(StepColumnError(path, "key"));
  }
  return log;
}

}  // namespace mosaic::runs
