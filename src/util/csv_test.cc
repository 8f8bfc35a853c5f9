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
    EXPECT_EQ(std::string(e.what()).rfind("t.csv:3:9: unterminated quoted field", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace mosaic
