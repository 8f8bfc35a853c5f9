#include "mosaic/scaling/data_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mosaic/scaling/law.h"
#include "mosaic/util/error.h"

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

// A number past a double's range is read as rounded (±inf, or 0 below it), so that the input's
// own rule names it ("D > 0 and finite"), not "D is a number".
TEST(DataTable, NumbersPastADoublesRangeAreRounded) {
  const DataTable table = ParseCsv("N,D,loss\n1e400,-1e400,1e-400\n", "runs.csv");
  EXPECT_EQ(table.values[0][0], INFINITY);
  EXPECT_EQ(table.values[1][0], -INFINITY);
  EXPECT_EQ(table.values[2][0], 0.0);
}

// --drop-highest-loss over a column with empty cells (NaN): the highest numbers go, the empty
// cells rank below every number, and the order is a valid one for the sort.
TEST(DataTable, DropHighestRanksEmptyCellsBelowEveryNumber) {
  const DataTable table =
      ParseCsv("run,loss\na,3.0\nb,\nc,5.0\nd,1.0\ne,\nf,4.0\n", "runs.csv");
  DataTable two = table;
  DropHighest(two, "loss", 2);  // 5.0 (c) and 4.0 (f)
  ASSERT_EQ(two.rows(), 4u);
  const int run = two.Find("run");
  std::vector<std::string> kept;
  for (size_t r = 0; r < two.rows(); ++r) kept.push_back(two.text[run][r]);
  EXPECT_EQ(kept, (std::vector<std::string>{"a", "b", "d", "e"}));
  DataTable five = table;
  DropHighest(five, "loss", 5);  // the four numbers, then the earlier empty cell (b)
  ASSERT_EQ(five.rows(), 1u);
  EXPECT_EQ(five.text[five.Find("run")][0], "e");
}

// A row without a run name would be resampled with every other unnamed row as one run.
TEST(DataTable, EmptyRunNameIsAnError) {
  const DataTable table =
      ParseCsv("run,N,D,loss\na,1e8,2e9,3.1\n,2e8,4e9,2.9\n", "runs.csv");
  try {
    SelectFitData(table, FindLaw("chinchilla"));
    FAIL() << "an empty run name was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("runs.csv:3:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a run name (not empty)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mosaic::scaling
