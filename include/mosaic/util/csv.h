// CSV records (RFC 4180): fields separated by commas, double quotes around a field protect commas,
// quotes ("" is one quote) and line breaks; a byte order mark is dropped; a line ends at LF,
// CRLF or a lone CR; a line of blanks and commas only (an empty spreadsheet row) is skipped. Each
// field keeps its 1-based character column (counted from its record's start) and each record the
// file line it starts on, so that errors point at the cell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

}  // namespace mosaic
