#include "mosaic/util/spellcheck.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mosaic {
namespace {

TEST(EditDistance, CountsSingleEdits) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("plan", "plan"), 0);
  EXPECT_EQ(EditDistance("plan", "pln"), 1);
  EXPECT_EQ(EditDistance("plan", "plant"), 1);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(ClosestMatch, SuggestsNearNamesOnly) {
  const std::vector<std::string> names = {"model", "plan", "perf", "runs"};
  EXPECT_EQ(ClosestMatch("modle", names), "model");
  EXPECT_EQ(ClosestMatch("pln", names), "plan");
  EXPECT_EQ(ClosestMatch("zzzzzzzz", names), std::nullopt);
  EXPECT_EQ(DidYouMean("mdoel", names), " (did you mean 'model'?)");
  EXPECT_EQ(DidYouMean("xyzxyzxyz", names), "");
  // A name sharing no character with the word is no suggestion, however short both are.
  const std::vector<std::string> columns = {"C", "D", "loss"};
  EXPECT_EQ(ClosestMatch("N", columns), std::nullopt);
  EXPECT_EQ(ClosestMatch("d", columns), "D");
  EXPECT_EQ(ClosestMatch("ep", std::vector<std::string>{"tp", "cp"}), "tp");
}

TEST(ClosestMatch, PrefersTheSameNameInOtherCase) {
  // "runA" is one edit from "runb" and comes first; "runB" differs only in case.
  const std::vector<std::string> runs = {"runA", "runB", "runb-long"};
  EXPECT_EQ(ClosestMatch("runb", runs), "runB");
  EXPECT_EQ(ClosestMatch("RUNA", runs), "runA");
}

}  // namespace
}  // namespace mosaic
