#include "mosaic/scaling/projection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic::scaling {
namespace {

std::string ErrorOf(const Law& law, const InputPoint& point) {
  const std::vector<double> theta(law.params.size(), 0.0);
  try {
    ResolveInputs(law, theta, point, 6, "predict");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// A bad budget is named as given, not as the N or D derived from it.
// Spaces around names and values are read as --layout reads them; a malformed item is a usage
// error quoting the whole flag.
TEST(ParseInputPoint, SpacesAroundNamesAndValuesAreIgnored) {
  const InputPoint p = ParseInputPoint(" N = 70e9 ,D=1.4e12 ");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].first, "N");
  EXPECT_EQ(p[0].second, 70e9);
  EXPECT_EQ(p[1].first, "D");
  EXPECT_EQ(p[1].second, 1.4e12);
  EXPECT_THROW(ParseInputPoint("N=70e9,"), UsageError);
  EXPECT_THROW(ParseInputPoint("N=7 0e9"), UsageError);
}

TEST(ResolveInputs, ABadBudgetIsNamedAsGiven) {
  const Law& chinchilla = FindLaw("chinchilla");
  EXPECT_EQ(ErrorOf(chinchilla, {{"C", 0}}),
            "predict: C = 0. Violated constraint: C > 0 and finite (training FLOPs)");
  EXPECT_EQ(ErrorOf(chinchilla, {{"C", NAN}, {"N", 1e9}}).rfind("predict: C = nan.", 0), 0u);
  // C with one of N, D gives the other, for any law in N and D.
  const Law& sparse = FindLaw("sparse");
  const std::vector<double> x =
      ResolveInputs(sparse, std::vector<double>(sparse.params.size(), 0.0),
                    {{"C", 6e20}, {"N", 1e9}, {"S", 0.5}}, 6, "predict");
  EXPECT_DOUBLE_EQ(x[sparse.InputIndex("D")], 1e11);
  // C alone is the chinchilla law's compute-optimal point only: another law is told so, not
  // about a frontier it was not asked for.
  EXPECT_EQ(ErrorOf(sparse, {{"C", 1e21}, {"S", 0.5}}),
            "predict: C = 1e+21 alone. Violated constraint: C alone needs the compute-optimal N "
            "and D, which are derived for the chinchilla law only; with law sparse give C with one "
            "of N, D (C = 6·N·D gives the other)");
}

}  // namespace
}  // namespace mosaic::scaling
