#include "mosaic/report/codesign_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "mosaic/codesign/codesign.h"
#include "mosaic/codesign/space.h"

namespace mosaic::report {
namespace {

const std::string kSpace = R"(name = "tiny"
base = "marin-ladder"
[cluster]
hardware = "h100"
gpus = 8
[budget]
days = 1
reference_mfu = 0.5
[axes]
d_model = [768]
experts = [8]
top_k = [2]
[law]
name = "sparse"
params = { E = 1.5, A = 400, B = 400, alpha = 0.3, beta = 0.3, gamma = 0.5 }
[search]
batch_seqs = 64
seq_len = 1024
)";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// An architecture of d768 with `experts` and `top_k`, rejected for `kind` by `rule`.
ArchitectureResult Rejected(int64_t experts, int64_t top_k, ArchRejection kind,
                            const std::string& rule) {
  ArchitectureResult r;
  r.arch.d_model = 768;
  r.arch.experts = experts;
  r.arch.top_k = top_k;
  r.rejected = kind;
  r.rule = rule;
  return r;
}

// An architecture that is not a valid model (rejected by accounting) has no parameter counts, so
// its CSV row leaves active_params, total_params and sparsity empty rather than writing zeros.
TEST(RenderCodesignCsv, AnInvalidModelHasEmptyParameterCells) {
  const SpaceConfig space = LoadSpaceFromToml(kSpace, "space.toml");
  const std::vector<std::string> lines = Lines(RenderCodesignCsv(
      Summarize(space, {Rejected(8, 16, ArchRejection::kModel, "top_k <= experts")})));
  ASSERT_EQ(lines.size(), 2u);
  const std::string prefix = lines[1].substr(0, lines[1].find(",false,model,"));
  ASSERT_NE(prefix.size(), lines[1].size()) << lines[1];
  EXPECT_TRUE(prefix.ends_with(",,,")) << lines[1];
  EXPECT_EQ(lines[1].substr(lines[1].find(",768,")),
            ",768,0,8,16,0,0,0,,,,false,model,,,,,,,,,,\"top_k <= experts\"");
  EXPECT_TRUE(lines[1].ends_with(",\"top_k <= experts\"")) << lines[1];
}

// Nothing fits and the space gives no reference MFU: there is no FLOPs-only budget, which the JSON
// writes as null (it wrote 0) and the per-expert table names (it said "less than one batch").
TEST(RenderCodesign, NoFlopsOnlyBudgetIsNullAndNamed) {
  std::string text = kSpace;
  text.erase(text.find("reference_mfu = 0.5\n"), std::string("reference_mfu = 0.5\n").size());
  const SpaceConfig space = LoadSpaceFromToml(text, "space.toml");
  const CodesignResult result =
      Summarize(space, {Rejected(8, 2, ArchRejection::kMemory, "no layout fits")});
  const nlohmann::json j = nlohmann::json::parse(RenderCodesignJson(result));
  EXPECT_TRUE(j["budget"]["flops_budget"].is_null()) << j["budget"];
  EXPECT_TRUE(j["budget"]["reference_mfu"].is_null()) << j["budget"];
  EXPECT_NE(RenderCodesignText(result).find("(no FLOPs-only budget)"), std::string::npos);
}

}  // namespace
}  // namespace mosaic::report
