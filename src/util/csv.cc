#include "mosaic/util/csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "mosaic/util/error.h"
#include "mosaic/util/terminal_text.h"
#include "mosaic/util/text_input.h"

namespace mosaic {

std::vector<CsvRecord> ParseCsvRecords(std::string_view text, const std::string& origin) {
  text = StripByteOrderMark(text);
  std::vector<CsvRecord> records;
  size_t pos = 0;
  int line_number = 0;
  while (pos < text.size()) {
    const size_t line_start = pos;
    CsvRecord record;
    record.line = ++line_number;
    std::string current;
    int current_column = 1;
    bool quoted = false;
    // Where the open quote is (line, column), and where the current physical line starts.
    int quote_line = 0, quote_column = 0;
    size_t physical_line_start = line_start;
    bool field_was_quoted = false;  // the current field's quoted part has closed
    // A quote in the wrong place (RFC 4180, section 2): it opens a field or is doubled inside a
    // quoted one, and a closed quoted field ends at its comma or line break.
    const auto misplaced = [&](std::string_view what) {
      // The character before `pos`, counted from the record's start, on its own line.
      const size_t line_end = std::min(text.find('\n', pos - 1), text.size());
      const SourceLocation where =
          CsvLocation(origin, record.line, text.substr(line_start, line_end - line_start),
                      static_cast<int>(pos - line_start));
      throw LocatedError(where, fmt::format("{}. Violated constraint: a field holding a quote is "
                                            "quoted whole, its quotes doubled (\"f\"\"p8\")",
                                            what));
    };
    while (pos < text.size()) {
      const char c = text[pos];
      if (quoted) {
        if (c == '"' && pos + 1 < text.size() && text[pos + 1] == '"') {
          current += '"';
          pos += 2;
          continue;
        }
        if (c == '"') {
          quoted = false;
          field_was_quoted = true;
        } else {
          if (c == '\n') {
            ++line_number;
            physical_line_start = pos + 1;
          }
          current += c;
        }
        ++pos;
        continue;
      }
      ++pos;
      if (field_was_quoted && c != ',' && c != '\n' && c != '\r') {
        // A quoted field that spans lines is most often a stray quote that opened it: name it.
        misplaced(quote_line == line_number
                      ? std::string("text after a quoted field's closing quote")
                      : fmt::format("text after a quoted field's closing quote (the field opened "
                                    "at line {}, column {}, and spans lines {}-{}: a stray quote "
                                    "there joins them)",
                                    quote_line, quote_column, quote_line, line_number));
      }
      if (c == '"') {
        if (!current.empty()) misplaced("a quote inside an unquoted field");
        quoted = true;
        quote_line = line_number;
        quote_column = static_cast<int>(pos - physical_line_start);
      } else if (c == ',') {
        record.fields.push_back({std::move(current), current_column});
        current.clear();
        current_column = static_cast<int>(pos - line_start) + 1;
        field_was_quoted = false;
      } else if (c == '\n') {
        break;
      } else if (c == '\r') {
        // CRLF ends a record at its LF; a lone CR (old Mac files) ends it here.
        if (pos >= text.size() || text[pos] != '\n') break;
      } else {
        current += c;
      }
    }
    if (quoted) {
      SourceLocation where;
      where.origin = origin;
      where.line = quote_line;
      where.column = quote_column;
      throw LocatedError(where, "unterminated quoted field (the quote opened here is never "
                                "closed)");
    }
    record.fields.push_back({std::move(current), current_column});
    record.line_text = std::string(text.substr(line_start, pos - line_start));
    while (!record.line_text.empty() &&
           (record.line_text.back() == '\n' || record.line_text.back() == '\r')) {
      record.line_text.pop_back();
    }
    // A blank line, or one of blanks and commas only (a spreadsheet's empty row), holds no record.
    const bool blank = std::ranges::all_of(record.fields, [](const CsvField& f) {
      return f.text.find_first_not_of(" \t") == std::string::npos;
    });
    if (blank) continue;
    records.push_back(std::move(record));
  }
  return records;
}

SourceLocation CsvLocation(const std::string& origin, int record_line,
                           std::string_view record_text, int column) {
  SourceLocation where;
  where.origin = origin;
  where.line = record_line;
  where.column = column;
  if (column <= 0) {
    where.column = 0;
    where.source_line = std::string(record_text);
    return where;
  }
  // The record's physical lines up to the cell: its line is the one after the last line break
  // before it, its column counted from that line's start.
  const size_t offset = std::min(static_cast<size_t>(column - 1), record_text.size());
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (record_text[i] == '\n') {
      ++where.line;
      line_start = i + 1;
    }
  }
  size_t line_end = record_text.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = record_text.size();
  std::string_view line = record_text.substr(line_start, line_end - line_start);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  where.column = static_cast<int>(offset - line_start) + 1;
  where.source_line = std::string(line);
  return where;
}

void CheckUniqueColumnNames(const CsvRecord& header, const std::string& origin) {
  std::map<std::string_view, size_t> first;  // name → its first column index
  for (size_t c = 0; c < header.fields.size(); ++c) {
    const CsvField& field = header.fields[c];
    if (const auto [it, fresh] = first.emplace(field.text, c); !fresh) {
      throw LocatedError(
          CsvLocation(origin, header.line, header.line_text, field.column),
          fmt::format("column '{}' appears twice (columns {} and {} of the header, 1-based). "
                      "Violated constraint: column names are unique",
                      Printable(field.text), it->second + 1, c + 1));
    }
  }
}

}  // namespace mosaic
