// Text from user files (tags, column names, paths) shown on a terminal: control characters, such
// as a newline inside a tag or an ANSI escape sequence (ESC [ ...), would break the layout or
// drive the terminal, and Unicode's bidirectional controls would reorder what is shown (U+202E
// prints the rest of a line right to left), so text output shows them escaped. JSON output
// escapes them by itself.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mosaic {

// `text` with every C0 control character and DEL written as an escape: \n, \r, \t, and \xHH for
// the others (ESC is \x1b); C1 controls (U+0080-U+009F) and the bidirectional controls (U+061C,
// U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) as \u{XXXX}; bytes that are not UTF-8 (a stray
// continuation byte, a truncated or overlong sequence, a surrogate) as \xHH each. Other text,
// UTF-8 included, is kept: the result is valid UTF-8.
std::string Printable(std::string_view text);

// The same for a whole rendered text (a report of many lines): newlines and tabs are kept, every
// other character Printable escapes is escaped. For output assembled from user strings (run
// names, paths, tags) in many places, so that none reaches the terminal raw.
std::string PrintableText(std::string_view text);

// The columns a terminal gives valid UTF-8 `text` (as Printable returns it): one per code point,
// two for East Asian wide and fullwidth characters and emoji in emoji presentation (Unicode's
// East Asian Width W and F, EastAsianWidth.txt), none for combining marks, zero-width spaces
// and joiners and variation selectors. A byte that is not UTF-8 counts one column.
size_t DisplayWidth(std::string_view text);

// `text` padded with spaces to `width` display columns (DisplayWidth), on the right (left-aligned
// text) or on the left (right-aligned); text already as wide is returned as it is.
std::string PadRight(std::string_view text, size_t width);
std::string PadLeft(std::string_view text, size_t width);

}  // namespace mosaic
