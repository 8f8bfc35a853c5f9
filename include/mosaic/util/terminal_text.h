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

// The columns a terminal gives valid UTF-8 `text` (as Printable returns it): one per code point,
// two for East Asian wide and fullwidth characters and emoji (Unicode's East Asian Width W and
// F: U+1100-U+115F, U+2E80-U+A4CF, U+AC00-U+D7A3, U+F900-U+FAFF, U+FE30-U+FE4F,
// U+FF00-U+FF60, U+FFE0-U+FFE6, U+1F300-U+1F64F, U+1F900-U+1F9FF, U+20000-U+3FFFD), none for
// combining marks (U+0300-U+036F) and the zero-width joiner and space (U+200B-U+200D).
size_t DisplayWidth(std::string_view text);

// `text` padded with spaces to `width` display columns (DisplayWidth), on the right (left-aligned
// text) or on the left (right-aligned); text already as wide is returned as it is.
std::string PadRight(std::string_view text, size_t width);
std::string PadLeft(std::string_view text, size_t width);

}  // namespace mosaic
