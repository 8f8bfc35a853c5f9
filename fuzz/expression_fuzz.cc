// libFuzzer target for user-written laws (`fit --law-expr` with `--param` and `--pin`):
// ParseExpressionParams, MakeExpressionLaw against a set of data columns, and the evaluator at a
// few points (muparser; scaling/expression_law.h).
// Input (fuzz_input.h): section 0 is the expression, section 1 the --param text, each line of
// section 2 a data column (N, D, C and loss when there is none), each line of section 3 a pinned
// parameter name.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "mosaic/scaling/expression_law.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mosaic;
  using namespace mosaic::scaling;
  const fuzz::FuzzInput input = fuzz::SplitFuzzInput(data, size);
  std::vector<ExpressionParam> params;
  fuzz::ExpectOnlyInputErrors([&] { params = ParseExpressionParams(input.Section(1)); });
  std::vector<std::string> columns;
  for (std::string_view line : input.Lines(2)) columns.emplace_back(line);
  if (columns.empty()) columns = {"N", "D", "C", "loss"};
  std::vector<std::string> pinned;
  for (std::string_view line : input.Lines(3)) pinned.emplace_back(line);
  fuzz::ExpectOnlyInputErrors([&] {
    const ExpressionLaw law =
        MakeExpressionLaw(std::string(input.Section(0)), params, columns, pinned);
    ExpressionEvaluator evaluate(law);
    std::vector<double> x(law.inputs.size()), theta(law.params.size());
    for (double value : {1.0, 0.0, -1.0, 3.2e10, 1e300}) {
      for (double& v : x) v = value;
      for (size_t i = 0; i < theta.size(); ++i) {
        theta[i] = law.params[i].starts.empty() ? value : law.params[i].starts.front();
      }
      (void)evaluate(x.data(), theta.data());
    }
  });
  return 0;
}
