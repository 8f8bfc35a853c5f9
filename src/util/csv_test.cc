// CSV records: quoting, line breaks inside quotes, CRLF, BOM, blank lines, columns for carets.
#include "mosaic/util/csv.h"

#include <gtest/gtest.h>

#include "mosaic/util/error.h"

namespace mosaic {
namespace {

TEST(Csv, QuotesProtectCommasQuotesAndLineBreaks) {
  const std::vector<CsvRecord> r = ParseCsvRecords(
      "\xEF\xBB\xBFid,note\r\n\r\nA,\"x, \"\"y\"\"\nz\"\r\nB,\n", "t.csv");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].line, 1);
  EXPECT_EQ(r[0].fields[0].text, "id");  // the byte order mark is dropped
  EXPECT_EQ(r[1].line, 3);               // the blank line 2 is skipped
  ASSERT_EQ(r[1].fields.size(), 2u);
  EXPECT_EQ(r[1].fields[1].text, "x, \"y\"\nz");
  EXPECT_EQ(r[1].fields[1].column, 3);
  EXPECT_EQ(r[2].line, 5);  // the quoted line break counts
  ASSERT_EQ(r[2].fields.size(), 2u);
  EXPECT_EQ(r[2].fields[1].text, "");
  EXPECT_EQ(r[2].line_text, "B,");
}

// A spreadsheet's empty row (commas only) and a line of blanks hold no record; old Mac files end
// lines with a lone CR.
TEST(Csv, EmptyRowsAreSkippedAndALoneCrEndsALine) {
  const std::vector<CsvRecord> r = ParseCsvRecords("a,b\r,,\r  \t\r1,2\r", "mac.csv");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].line, 4);
  EXPECT_EQ(r[1].fields[0].text, "1");
  EXPECT_EQ(r[1].fields[1].text, "2");
}

TEST(Csv, UnterminatedQuoteNamesWhereItOpened) {
  try {
    ParseCsvRecords("id,note\nA,\"open\n", "t.csv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("t.csv:2:3: unterminated quoted field", 0), 0u)
        << e.what();
  }
  // A stray quote after a quoted field that spans lines: the line and column of that quote, not
  // the record's first line with a column counted across its lines.
  try {
    ParseCsvRecords("id,note\nA,\"two\nlines\",x\"y\nB,z\n", "t.csv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("t.csv:3:9: a quote inside an unquoted field", 0), 0u)
        << e.what();
  }
}

// A quote inside an unquoted cell is an error of its own line and column, not a quoted field
// that swallows the lines up to the next quote (reported where that one fails to close).
TEST(Csv, AQuoteOnlyOpensOrClosesAField) {
  const std::string text = "id,precision,note\nM6,f\"p8,x\nM9,bf16,\"a, b\"\nM10,bf16,\"c\"\n";
  try {
    ParseCsvRecords(text, "q.csv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("q.csv:2:5: a quote inside an unquoted field. Violated "
                                          "constraint: a field holding a quote is quoted whole, "
                                          "its quotes doubled",
                                          0),
              0u)
        << e.what();
  }
  try {
    ParseCsvRecords("id,note\nA,\"x\"y\n", "q.csv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("q.csv:2:6: text after a quoted field's closing quote",
                                          0),
              0u)
        << e.what();
  }
  // A stray quote that opens a field joins the lines up to the next quote: the error names the
  // line and column it opened at.
  try {
    ParseCsvRecords("id,note\nA,\"stray\nB,x\nC,\"quoted\"\n", "q.csv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("q.csv:4:4: text after a quoted field's closing quote "
                                          "(the field opened at line 2, column 3, and spans lines "
                                          "2-4: a stray quote there joins them)",
                                          0),
              0u)
        << e.what();
  }
  // Quoted whole, a field holds its doubled quotes; an empty quoted field is empty.
  const std::vector<CsvRecord> r = ParseCsvRecords("id,note\nA,\"f\"\"p8\"\nB,\"\"\n", "q.csv");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].fields[1].text, "f\"p8");
  EXPECT_EQ(r[2].fields[1].text, "");
}

// A cell after a quoted line break is on the record's second line: CsvLocation gives that line,
// the cell's column on it and its text (a caret under the record's first line would point at
// another cell).
TEST(Csv, LocationOfACellAfterAQuotedLineBreak) {
  const std::vector<CsvRecord> r =
      ParseCsvRecords("id,note,n\r\nA,\"two\r\nlines\",x\r\n", "t.csv");
  ASSERT_EQ(r.size(), 2u);
  const CsvField& n = r[1].fields[2];
  ASSERT_EQ(n.text, "x");
  const SourceLocation at = CsvLocation("t.csv", r[1].line, r[1].line_text, n.column);
  EXPECT_EQ(at.ToString(), "t.csv:3:8");
  EXPECT_EQ(at.source_line, "lines\",x");
  const SourceLocation first = CsvLocation("t.csv", r[1].line, r[1].line_text, 1);
  EXPECT_EQ(first.ToString(), "t.csv:2:1");
  EXPECT_EQ(first.source_line, "A,\"two");
  EXPECT_EQ(CsvLocation("t.csv", r[1].line, r[1].line_text, 0).source_line, r[1].line_text);
}

TEST(Csv, ColumnNamesAreUnique) {
  const std::vector<CsvRecord> r = ParseCsvRecords("a,b,a\n1,2,3\n", "t.csv");
  EXPECT_NO_THROW(CheckUniqueColumnNames(r[1], "t.csv"));
  try {
    CheckUniqueColumnNames(r[0], "t.csv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("t.csv:1:5: column 'a' appears twice (columns 1 and 3 "
                                          "of the header, 1-based). Violated constraint: column "
                                          "names are unique",
                                          0),
              0u)
        << e.what();
  }
}

}  // namespace
}  // namespace mosaic
