// CSV records (RFC 4180): fields separated by commas, double quotes around a field protect commas,
// quotes ("" is one quote) and line breaks; a byte order mark is dropped; a line ends at LF,
// CRLF or a lone CR; a line of blanks and commas only (an empty spreadsheet row) is skipped. Each
// field keeps its 1-based character column (counted from its record's start) and each record the
// file line it starts on, so that errors point at the cell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic {

struct CsvField {
  std::string text;
  int column = 1;  // 1-based character column of the field's first character
};

struct CsvRecord {
  int line = 0;            // 1-based file line where the record starts
  std::string line_text;   // the record's text (its lines, without the final line break)
  std::vector<CsvField> fields;
};

// The records of `text`, the header first; `origin` names the file in messages. Throws InputError
// "<origin>:<line>:<column>: unterminated quoted field" for a quote left open at the end.
std::vector<CsvRecord> ParseCsvRecords(std::string_view text, const std::string& origin);

// Where the character at `column` of a record (1-based, counted from the record's start as
// CsvField::column is) lies in the file named `origin`: its own line (a quoted field may hold line
// breaks), its column on that line and that line's text, for a caret under it. `record_line` and
// `record_text` are the record's CsvRecord::line and line_text. Column 0 (no cell) gives the
// record's first line, column 0 and the whole record text.
SourceLocation CsvLocation(const std::string& origin, int record_line,
                           std::string_view record_text, int column);

// Throws InputError at the second cell of a name the `header` record holds twice:
// "<origin>:<line>:<column>: column '<name>' appears twice (columns <i> and <j> of the header,
// 1-based). Violated constraint: column names are unique", the name escaped for the terminal
// (a reader would take one copy's cells and silently drop the other's).
void CheckUniqueColumnNames(const CsvRecord& header, const std::string& origin);

}  // namespace mosaic
