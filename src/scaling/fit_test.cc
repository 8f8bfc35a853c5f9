// Reproduces the rows of tests/fixtures/scaling/reference_fits.csv (Chinchilla data, Epoch AI's
// Approach-3 re-analysis and ml-scalefit's squared-error fit) and checks the fast solver against
// Ceres Solver on the same objective.
#include "mosaic/scaling/fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "mosaic/scaling/data_table.h"
#include "mosaic/scaling/fit_problem.h"

namespace mosaic::scaling {
namespace {

constexpr double kObjectiveAbsTol = 5e-11;  // half a unit in the oracle's last printed digit
constexpr double kParamRelTol = 2e-3;      // parameters on a flat surface (4-5 printed digits)

std::string Fixture(const std::string& name) {
  return std::string(MOSAIC_SOURCE_DIR) + "/tests/fixtures/scaling/" + name;
}

// Epoch's 240 rows: drop the 5 highest losses, D = C/(6N).
FitData Epoch240(std::string* rule = nullptr, bool below_1e21_scaled = false) {
  DataTable t = ReadCsv(Fixture("epoch_chinchilla_svg_extracted_data.csv"));
  ApplyMappings(t, {{"N", "Model Size"}, {"C", "Training FLOP"}, {"D", "C/(6*N)"}});
  DropHighest(t, "loss", 5);
  if (below_1e21_scaled) {
    FilterRows(t, "C < 1e21");
    ApplyMappings(t, {{"N", "N/1e6"}, {"D", "D/1e9"}});
  }
  if (rule != nullptr) *rule = "drop the 5 highest losses; D = C/(6N)";
  return SelectFitData(t, FindLaw("chinchilla"));
}

TEST(ChinchillaFit, EpochGridHuberLogReproducesObjective) {
  const FitData data = Epoch240();
  ASSERT_EQ(data.size(), 240u);
  FitOptions options;
  const FitSummary s = Fit(FindLaw("chinchilla"), data, options);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  EXPECT_EQ(s.starts, 4500);
  EXPECT_NEAR(s.objective, 0.0010182740, kObjectiveAbsTol);
  EXPECT_NEAR(s.Value("E"), 1.8172, 1.8172 * kParamRelTol);
  EXPECT_NEAR(s.Value("A"), 477.84, 477.84 * kParamRelTol);
  EXPECT_NEAR(s.Value("B"), 2143.9, 2143.9 * kParamRelTol);
  EXPECT_NEAR(s.Value("alpha"), 0.3473, 0.3473 * kParamRelTol);
  EXPECT_NEAR(s.Value("beta"), 0.3672, 0.3672 * kParamRelTol);
  EXPECT_GT(s.converged_starts, 100);
  std::printf("objective %.10g E %.6g A %.6g B %.6g alpha %.6g beta %.6g converged %d cut %d "
              "failed %d iterations %ld\n",
              s.objective, s.Value("E"), s.Value("A"), s.Value("B"), s.Value("alpha"),
              s.Value("beta"), s.converged_starts, s.cut_short_starts, s.failed_starts,
              s.iterations);
}

}  // namespace
}  // namespace mosaic::scaling
