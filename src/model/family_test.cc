#include "mosaic/model/family.h"

#include <gtest/gtest.h>

#include "mosaic/util/error.h"

namespace mosaic {
namespace {

// docs/accounting.md: d768 → 8.23 → 8, d1024 → 10.78 → 11 → 12, d1536 → 15.78 → 16,
// d2048 → 20.69 → 21 → 22.
TEST(MarinLadderDepth, SeedRungs) {
  EXPECT_EQ(MarinLadderDepth(768), 8);
  EXPECT_EQ(MarinLadderDepth(1024), 12);
  EXPECT_EQ(MarinLadderDepth(1536), 16);
  EXPECT_EQ(MarinLadderDepth(2048), 22);
}

TEST(DeriveMarinLadder, DerivesUnsetFieldsOnly) {
  ModelConfig config;
  config.d_model = 1024;
  config.layers = 10;
  config.shared_experts = 2;
  const std::vector<std::string> lines = DeriveMarinLadder(config, {"layers"});
  EXPECT_EQ(config.layers, 10);
  EXPECT_EQ(config.heads, 8);
  EXPECT_EQ(config.kv_heads_local, 2);
  EXPECT_EQ(config.kv_heads_global, 1);
  EXPECT_EQ(config.expert_width, 512);
  EXPECT_EQ(config.shared_expert_width, 512);
  EXPECT_EQ(lines.front(), "layers = 10 (set explicitly)");
}

// At least one KV head on every layer: d768 has 6 heads, 6 // 8 = 0 → 1.
TEST(DeriveMarinLadder, KvHeadsAtLeastOne) {
  ModelConfig config;
  config.d_model = 768;
  DeriveMarinLadder(config, {});
  EXPECT_EQ(config.kv_heads_local, 1);
  EXPECT_EQ(config.kv_heads_global, 1);
}

TEST(DeriveMarinLadder, RejectsWidthNotMultipleOfHeadDim) {
  ModelConfig config;
  config.d_model = 1000;
  try {
    DeriveMarinLadder(config, {});
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "d_model = 1000. Violated constraint: d_model is a positive multiple of head_dim "
                 "(128) in the marin-ladder family");
  }
}

}  // namespace
}  // namespace mosaic
