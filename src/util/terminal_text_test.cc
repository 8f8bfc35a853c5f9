#include "mosaic/util/terminal_text.h"

#include <gtest/gtest.h>

namespace mosaic {
namespace {

TEST(TerminalText, EscapesControlCharactersOnly) {
  EXPECT_EQ(Printable("train/loss"), "train/loss");
  EXPECT_EQ(Printable("a\nb\tc\r"), "a\\nb\\tc\\r");
  EXPECT_EQ(Printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(Printable(std::string("nul\0del\x7f", 8)), "nul\\x00del\\x7f");
  EXPECT_EQ(Printable("δ/λ"), "δ/λ");
}

// Bidirectional and C1 controls are escaped as code points, bytes that are not UTF-8 one by one;
// the result is valid UTF-8 that shows as it reads.
TEST(TerminalText, EscapesBidiControlsAndBytesThatAreNotUtf8) {
  EXPECT_EQ(Printable("loss\u202e/lave"), "loss\\u{202e}/lave");
  EXPECT_EQ(Printable("a\u2066b\u200fc"), "a\\u{2066}b\\u{200f}c");
  EXPECT_EQ(Printable("c1\u0085"), "c1\\u{0085}");
  EXPECT_EQ(Printable("bad\xff\xfe"), "bad\\xff\\xfe");
  EXPECT_EQ(Printable("trunc\xe2\x82"), "trunc\\xe2\\x82");
  EXPECT_EQ(Printable("overlong\xc0\xaf"), "overlong\\xc0\\xaf");
  EXPECT_EQ(Printable("surrogate\xed\xa0\x80"), "surrogate\\xed\\xa0\\x80");
  EXPECT_EQ(Printable("€ 𝛼 损失"), "€ 𝛼 损失");
}

TEST(TerminalText, PrintableTextKeepsLinesAndTabs) {
  EXPECT_EQ(PrintableText("run \x1b[2Jx\n\tnext \u202e\n"), "run \\x1b[2Jx\n\tnext \\u{202e}\n");
}

TEST(TerminalText, DisplayWidthCountsTerminalColumns) {
  EXPECT_EQ(DisplayWidth("loss"), 4u);
  EXPECT_EQ(DisplayWidth("δ/λ"), 3u);
  EXPECT_EQ(DisplayWidth("损失"), 4u);   // two wide characters
  EXPECT_EQ(DisplayWidth("e\u0301"), 1u);  // e and a combining acute accent
  EXPECT_EQ(DisplayWidth("🔥"), 2u);
  for (const char* emoji : {"🚀", "🛑", "🫠", "⌚", "☕", "✅", "❌", "⭐", "🀄", "🃏"}) {
    EXPECT_EQ(DisplayWidth(emoji), 2u) << emoji;
  }
  EXPECT_EQ(DisplayWidth("\u302a"), 0u);  // an ideographic tone mark combines
  EXPECT_EQ(DisplayWidth("✓"), 1u);        // U+2713 is narrow
  EXPECT_EQ(PadRight("损失", 6), "损失  ");
  EXPECT_EQ(PadLeft("δ", 3), "  δ");
  EXPECT_EQ(PadRight("long", 2), "long");
}

}  // namespace
}  // namespace mosaic
