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

// Header names are trimmed as cells are: "run, N, D, loss" names N, D and loss (it said
// "unknown column 'N' (did you mean ' N'?)").
TEST(DataTable, HeaderNamesAreTrimmedAsCellsAre) {
  const DataTable table = ParseCsv("run, N,\tD , loss\na, 1e9, 2e10, 2.5\n", "runs.csv");
  EXPECT_EQ(table.names, (std::vector<std::string>{"run", "N", "D", "loss"}));
  EXPECT_EQ(table.values[1][0], 1e9);
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

std::string SelectError(const std::string& csv, const SelectOptions& options = {}) {
  try {
    SelectFitData(ParseCsv(csv, "runs.csv"), FindLaw("chinchilla"), options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A row repeating an earlier one counts twice in the fit: refused, naming both lines. A run column
// may group runs, so one group may hold two losses at the same inputs; without a run column,
// rows at the same inputs with different losses (seeds) are distinct points.
TEST(DataTable, ARepeatedRowIsAnError) {
  EXPECT_EQ(SelectError("run,N,D,loss\na,1e8,2e9,3.1\nb,2e8,4e9,2.9\na,1e8,2e9,3.1\n"),
            "runs.csv:4:3: this row of run 'a' repeats its line 2 (the same inputs and loss). "
            "Violated constraint: each point once (a checkpoint listed twice counts twice in the "
            "fit); drop one of the two\n  a,1e8,2e9,3.1\n    ^");
  EXPECT_EQ(SelectError("N,D,loss\n1e8,2e9,3.1\n1e8,2e9,3.1\n").rfind(
                "runs.csv:3:1: this row repeats line 2 (the same inputs and loss).", 0),
            0u);
  EXPECT_EQ(SelectError("run,N,D,loss\na,1e8,2e9,3.1\na,1e8,2e9,3.2\nb,1e8,2e9,3.1\n"), "");
  EXPECT_EQ(SelectError("N,D,loss\n1e8,2e9,3.1\n1e8,2e9,3.2\n"), "");
}

// The loss cannot be one of the law's inputs (--loss-column N fitted N against itself).
TEST(DataTable, TheLossColumnIsNotALawInput) {
  SelectOptions options;
  options.loss_column = "N";
  EXPECT_EQ(SelectError("N,D,loss\n1e8,2e9,3.1\n", options),
            "runs.csv: loss column 'N' is law input N (parameters) of law chinchilla. Violated "
            "constraint: the loss is a column of its own, not one of the law's inputs");
  // Nor is a copy of it, or a column computed from it (--column got round the rule).
  for (const auto& [mapping, says] :
       {std::pair<ColumnMapping, std::string>{{"D", "loss"}, "is computed from column 'loss', as the"},
        {{"D", "loss*1e9"}, "= loss*1e9 is computed from column 'loss', as the"}}) {
    DataTable table = ParseCsv("N,loss\n1e8,3.1\n2e8,2.9\n", "runs.csv");
    ApplyMappings(table, {mapping});
    try {
      SelectFitData(table, FindLaw("chinchilla"), {});
      ADD_FAILURE() << mapping.source;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                "runs.csv: law input D (training tokens) of law chinchilla " + says +
                    " loss column 'loss' is. Violated constraint: the loss is a column of its "
                    "own, not one of the law's inputs");
    }
  }
  // A name that merely contains the loss column's is another column.
  DataTable table = ParseCsv("N,loss,losses\n1e8,3.1,1e9\n2e8,2.9,3e9\n", "runs.csv");
  ApplyMappings(table, {{"D", "losses*2"}});
  EXPECT_NO_THROW(SelectFitData(table, FindLaw("chinchilla"), {}));
}

// --where keeps rows where a condition holds: a value that is not 0 or 1 (a bare column) is
// refused, naming the row; NaN (a missing value) drops the row.
TEST(DataTable, AWhereThatIsNotAConditionIsAnError) {
  DataTable table = ParseCsv("N,D,loss\n1e8,2e9,3.1\n2e8,,2.9\n", "runs.csv");
  DataTable kept = table;
  FilterRows(kept, "D > 0");
  EXPECT_EQ(kept.rows(), 1u);
  try {
    FilterRows(table, "N");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "runs.csv:2: --where N = 1e+08. Violated constraint: a condition is 1 (keep the "
              "row) or 0 (drop it); compare a column, e.g. 'C < 1e21'");
  }
}

}  // namespace
}  // namespace mosaic::scaling
