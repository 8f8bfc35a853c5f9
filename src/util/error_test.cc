#include "mosaic/util/error.h"

#include <gtest/gtest.h>

#include <string>

namespace mosaic {
namespace {

// A located error keeps its location and the text after it, so that a caller can place the rule
// elsewhere without reading the message back.
TEST(Error, ALocatedErrorKeepsItsPlaceAndBody) {
  const SourceLocation at{"study.toml", 23, 17, "top_k = 1000"};
  const InputError field = FieldError(at, "top_k", "1000", "1 <= top_k <= experts (8)");
  EXPECT_EQ(std::string(field.what()),
            "study.toml:23:17: top_k = 1000. Violated constraint: 1 <= top_k <= experts (8)\n"
            "  top_k = 1000\n" +
                std::string(2 + 16, ' ') + "^");  // under column 17, past the 2-space indent
  ASSERT_NE(field.where(), nullptr);
  EXPECT_EQ(field.where()->ToString(), "study.toml:23:17");
  EXPECT_EQ(field.body(), "top_k = 1000. Violated constraint: 1 <= top_k <= experts (8)");
  const InputError located = LocatedError({"preset x", 0, 0, ""}, "layers is missing");
  EXPECT_EQ(std::string(located.what()), "preset x: layers is missing");
  EXPECT_EQ(located.body(), "layers is missing");
  // Built from a message alone: no place, the whole message as its body.
  const InputError plain("study.toml:3:1: written by hand");
  EXPECT_EQ(plain.where(), nullptr);
  EXPECT_EQ(plain.body(), "study.toml:3:1: written by hand");
  // A copy (as a rethrow makes) keeps both.
  const InputError copy = field;
  ASSERT_NE(copy.where(), nullptr);
  EXPECT_EQ(copy.where()->line, 23);
  EXPECT_EQ(copy.body(), field.body());
}

}  // namespace
}  // namespace mosaic
