// Tabular input of a fit: a CSV file (RFC 4180 quoting, header row) read as named columns, then
// mapped onto the law's input names, filtered, and turned into FitData.
//   --column N=Model Size      copy a column under a new name
//   --column D=C/(6*N)         derive a column from an expression (muparser syntax) over columns
//                              whose names are identifiers; mappings apply in order
//   --where "C < 1e21"         keep rows where the expression is non-zero
// Every value keeps its file line and column so that errors point at the cell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mosaic/scaling/fit_data.h"
#include "mosaic/scaling/law.h"

namespace mosaic::scaling {

struct DataTable {
  std::string origin;                          // file path, for messages
  std::vector<std::string> names;              // column names
  std::vector<std::string> derivations;        // "" for file columns, else the expression
  // [column] the columns of the file (or DataFrame) a --column mapping computed it from; empty
  // (or missing past its end) for a column of the file itself, which is its own source
  // (ColumnSources).
  std::vector<std::vector<std::string>> sources;
  std::vector<std::vector<std::string>> text;  // [column][row] cell text ("" for derived)
  std::vector<std::vector<double>> values;     // [column][row], NaN where not a number
  std::vector<std::vector<int>> cell_column;   // [column][row] 1-based character column (0: derived)
  std::vector<int> line;                       // [row] 1-based file line
  std::vector<std::string> line_text;          // [row] the line, for carets
  // A DataFrame rather than a file: `line` holds each row's 0-based position, messages name it
  // "<origin> row <position>", and an empty cell is a missing value (NaN), not ''.
  bool lines_are_rows = false;

  size_t rows() const { return line.size(); }
  // Index of the column called `name`, or −1.
  int Find(std::string_view name) const;
  // Index of `name`; throws InputError "<origin>: unknown column 'x' (did you mean ...)" naming
  // `purpose` (e.g. "law input N") and the available columns.
  int Require(std::string_view name, std::string_view purpose) const;
  // Keeps the rows whose flag is true, in order.
  void KeepRows(const std::vector<bool>& keep);
  // Where the cell at `column`, `row` came from, for messages: its file line and character
  // column (with the line's text for a caret), or "<origin> row <position>" for a DataFrame.
  SourceLocation CellWhere(int column, size_t row) const;
};

// A cell's number: the whole cell (spaces around it and a leading '+' allowed) as a decimal or
// exponent literal, "nan" or "inf"; a literal past a double's range as strtod rounds it (±inf,
// 0), so that a rule such as "> 0 and finite" names it. NaN for an empty cell or other text.
double ParseCellNumber(std::string_view text);

// Parses CSV text; origin labels messages. Throws InputError for a row whose field count differs
// from the header's, an unterminated quote, or an empty file.
DataTable ParseCsv(std::string_view text, const std::string& origin);
// ParseCsv of the file at `path` (its path labels messages); InputError when it cannot be read.
DataTable ReadCsv(const std::string& path);

// The file columns `column` of `table` is computed from, through every --column mapping that
// led to it: {its own name} for a column of the file.
std::vector<std::string> ColumnSources(const DataTable& table, int column);

struct ColumnMapping {
  std::string target;  // new column name
  std::string source;  // a column name, or an expression
};

// Parses "TARGET=SOURCE"; throws UsageError (a malformed --column) for a missing '=' or an empty
// side.
ColumnMapping ParseColumnMapping(std::string_view text);

// Throws UsageError "<label>: '=' at position P assigns in an expression ...; compare with '=='"
// when `expression` holds a '=' that is not part of '==', '<=', '>=' or '!=': muparser reads it
// as an assignment to a variable, which --where 'loss = 1' would make true for every row.
void RefuseAssignment(std::string_view expression, std::string_view label);

// Applies the mappings in order (a source naming a column copies it, otherwise it is evaluated
// as an expression). Throws UsageError for a syntax error (a malformed --column) and InputError
// for an unknown variable, with a did-you-mean over the columns.
void ApplyMappings(DataTable& table, const std::vector<ColumnMapping>& mappings);

// Keeps the rows where `condition` (muparser, e.g. "C < 1e21 && N > 1e8") is true (1); a row
// where it is NaN (a missing value) is dropped. Throws InputError naming the row's file and line
// and the value when the condition gives anything but 0, 1 or NaN (a bare column, "C", is a
// value, not a condition); UsageError for a condition that does not parse (a malformed --where).
void FilterRows(DataTable& table, std::string_view condition);

// Drops the `count` rows with the highest value of column `column` (Epoch's subset rule for the
// Chinchilla data: the 5 highest losses). Ties go to the earlier row. A cell without a number
// (empty or not numeric) ranks below every number: it is dropped only when fewer than `count`
// rows hold numbers, and otherwise left for the fit's own check to name.
void DropHighest(DataTable& table, std::string_view column, int count);

inline constexpr const char* kDefaultRunColumn = "run";
inline constexpr const char* kDefaultWeightColumn = "weight";

struct SelectOptions {
  std::string loss_column = "loss";
  // Optional under their default names (each row is its own run, every weight 1, when the
  // column is absent); a column named otherwise was asked for, and must exist.
  std::string run_column = kDefaultRunColumn;
  std::string weight_column = kDefaultWeightColumn;
};

// FitData for `law`: one column per law input (by name), the loss, and the optional run and
// weight columns. Throws InputError naming file:line:column, the field, value and rule for a
// missing, non-numeric, non-finite or out-of-domain value (N <= 0, S outside [0, 1), loss <= 0)
// or an empty run name.
FitData SelectFitData(const DataTable& table, const Law& law, const SelectOptions& options = {});

}  // namespace mosaic::scaling
