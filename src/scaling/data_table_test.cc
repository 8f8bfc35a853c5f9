#include "mosaic/scaling/data_table.h"

#include <gtest/gtest.h>

namespace mosaic::scaling {
namespace {

// A CSV saved by a spreadsheet starts with a UTF-8 byte-order mark; it is not part of the first
// column's name.
TEST(DataTable, ByteOrderMarkIsNotPartOfTheFirstColumnName) {
  const DataTable table = ParseCsv("\xEF\xBB\xBFN,D,loss\n1e9,2e10,2.5\n", "runs.csv");
  ASSERT_EQ(table.names.size(), 3u);
  EXPECT_EQ(table.names[0], "N");
  EXPECT_EQ(table.Find("N"), 0);
}

}  // namespace
}  // namespace mosaic::scaling
