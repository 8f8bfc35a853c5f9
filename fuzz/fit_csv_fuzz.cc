// libFuzzer target for a fit's data: the CSV (ParseCsv), `--column NAME=EXPRESSION` mappings,
// `--drop-highest-loss`, the `--where` filter and the selection of a built-in law's inputs, loss,
// run and weight columns (scaling/data_table.h), as `mosaic fit` prepares them before fitting.
// Input (fuzz_input.h): section 0 is the CSV, each line of section 1 a --column, section 2's first
// line the --where condition. Selector: the law (built-in laws in order) and, in bits 5-6, how
// many highest-loss rows to drop.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/law.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mosaic;
  using namespace mosaic::scaling;
  const fuzz::FuzzInput input = fuzz::SplitFuzzInput(data, size);
  const std::vector<Law>& laws = BuiltinLaws();
  const Law& law = laws[(input.selector & 31) % laws.size()];
  const int drop = (input.selector >> 5) & 3;
  fuzz::ExpectOnlyInputErrors([&] {
    DataTable table = ParseCsv(input.Section(0), "fuzz.csv");
    std::vector<ColumnMapping> mappings;
    for (std::string_view line : input.Lines(1)) mappings.push_back(ParseColumnMapping(line));
    ApplyMappings(table, mappings);
    if (drop > 0) DropHighest(table, "loss", drop);
    const std::vector<std::string_view> where = input.Lines(2);
    if (!where.empty()) FilterRows(table, where[0]);
    (void)SelectFitData(table, law);
  });
  return 0;
}
