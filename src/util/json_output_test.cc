#include "mosaic/util/json_output.h"

#include <gtest/gtest.h>

#include <string>

namespace mosaic {
namespace {

TEST(DumpJson, ReplacesInvalidUtf8) {
  // "café" in Latin-1: 0xE9 is not UTF-8 on its own.
  const nlohmann::ordered_json j = {{"tag", std::string("caf\xE9")}};
  const std::string text = DumpJson(j, -1);
  EXPECT_EQ(text, "{\"tag\":\"caf\xEF\xBF\xBD\"}");  // U+FFFD
  EXPECT_EQ(nlohmann::json::parse(text)["tag"], "caf\xEF\xBF\xBD");
}

TEST(DumpJson, KeepsValidUtf8AndIndents) {
  const nlohmann::ordered_json j = {{"tag", "café"}, {"n", 1}};
  EXPECT_EQ(DumpJson(j), "{\n  \"tag\": \"café\",\n  \"n\": 1\n}");
  EXPECT_EQ(DumpJson(j, -1), "{\"tag\":\"café\",\"n\":1}");
}

}  // namespace
}  // namespace mosaic
