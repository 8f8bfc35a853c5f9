// Metric logs as tables: CSV files (seed 004's wide module_diag.csv, W&B history exports with
// `_step`, Ray Tune progress.csv, plain metrics CSVs with `epoch`) and JSONL files (one object per
// line, nested objects flattened with '/'). Every column other than the step and the wall-time
// column becomes a tag; a CSV whose header has a `tag` and a `value` column is long-format
// instead (one point a row, as mosaic's own `runs --export csv` writes and pandas frames of
// scalars are saved): each row is a point of the tag its tag cell names, a `run` column must name
// one run throughout, and other columns (`pass`) are not read.
//
// Rules (docs/logs.md): the step column is the one named by the caller, else the first of
// kStepColumns present. Empty cells (and JSON null) are missing values; cells that are not numbers
// (list-valued cells, booleans, words) are skipped and counted, never guessed; "nan", "inf",
// "-inf", "NaN", "Infinity" are non-finite values. A row whose step is not an integer is skipped
// and counted. A truncated last line is dropped without error (noted). A CSV header written again
// mid-file (a logger appending after a resume, perhaps with new columns) is recognised as a row
// that names the step column and holds no number: the rows after it are read with its columns.
// Every skipped line is noted with its own reason ("path:line: ..."; the first few per file).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mosaic/runs/restart_policy.h"

namespace mosaic::runs {

// Step column names searched in this order ("Step": TensorBoard's CSV download, whose header is
// "Wall time,Step,Value").
inline constexpr std::array<std::string_view, 8> kStepColumns = {
    "step",      "_step", "global_step", "timesteps_total", "training_iteration", "iteration",
    "epoch",     "Step"};

// Wall-time column names (seconds since the Unix epoch), searched in this order.
inline constexpr std::array<std::string_view, 4> kWallTimeColumns = {"_timestamp", "timestamp",
                                                                     "wall_time", "Wall time"};

struct TagPoints {
  std::string tag;
  std::vector<WrittenPoint> points;  // in row order; `sequence` is the row index, `source` 0
};

struct TableLog {
  std::string path;
  std::string step_column;
  std::string wall_time_column;  // empty when there is none (wall times are then NaN)
  std::vector<TagPoints> tags;   // in order of first appearance
  int64_t rows = 0;              // data rows read
  int64_t rows_without_step = 0;  // rows that parsed but have no integer step
  int64_t rows_with_extra_cells = 0;  // CSV rows with more cells than their header has columns
  int64_t repeated_headers = 0;       // CSV header lines written again (each starts a column set)
  int64_t malformed_rows = 0;     // JSONL lines that are not JSON objects (a truncated tail aside)
  int64_t non_numeric_cells = 0;
  int64_t rows_without_tag = 0;   // long-format rows whose tag cell is empty
  // "path:line: ..." for skipped rows and cells (each with its reason), truncated tails; the
  // first five of a file
  std::vector<std::string> notes;
};

// Steps are read as exact 64-bit integers; a whole number written as a decimal or with an
// exponent ("100.0", "1e3") only below 2^53, where a double holds it exactly. A row whose step is
// not an integer, lies outside the 64-bit range or is such a decimal past 2^53 is skipped and
// noted with that reason (the first kMaxNotesPerFile notes of a file, the rest counted).
//
// Parses CSV `text` read from `path`. `step_column` empty = detect. Throws InputError
// "path:1: no step column (looked for step, _step, ...); name one with --step-column" when there
// is none, or "path:1: --step-column = x. Violated constraint: a column of the header" when the
// named column is absent.
TableLog ReadCsvLog(std::string_view text, const std::string& path,
                    const std::string& step_column = "");

// Parses JSONL `text` read from `path`, with the same rules. Lines that are not JSON (with the
// parser's reason), JSON values other than objects, lines nested more than 64 levels deep and
// lines whose step is missing or not an exact integer step are skipped and noted with their line
// number and reason (a last line without its newline, which its writer had not finished, only
// with a note).
// Throws InputError when no line has a step key.
TableLog ReadJsonlLog(std::string_view text, const std::string& path,
                      const std::string& step_column = "");

// Parses a whole cell as a number ("1.5", "-3", "1e-4", "nan", "inf", "Infinity"; an underflow
// such as 1e-400 as the 0 or subnormal it rounds to); false for anything else, including empty
// cells, trailing garbage and a number past a double's range (1e400).
bool ParseNumber(std::string_view text, double* value);

}  // namespace mosaic::runs
