// The shortest decimal text that reads back as the same floating-point value, byte for byte what
// std::to_chars writes (C++17 [charconv.to.chars]: the plain form, fixed or scientific, whichever
// is shorter, fixed on a tie; or the fixed form), about three times faster: the shortest digits
// come from the Dragonbox algorithm (Jeon 2020, "Dragonbox: A New Floating-Point Binary-to-
// Decimal Conversion Algorithm", as shipped in the fmt library, fmt::detail::dragonbox) instead of
// libstdc++'s Ryu, and they are laid out here. Exports of millions of points spend most of their
// time in this conversion.
//
// Where the standard asks for more than the shortest digits (a fixed form of an integer beyond the
// type's exact range, 2^53 for double and 2^24 for float, is written with its exact digits), and
// for non-finite values, the functions call std::to_chars itself.
#pragma once

#include <charconv>
#include <cstdint>

namespace mosaic {

// std::to_chars(first, last, value): the shortest round-trip text, e.g. 0.1 -> "0.1",
// 1e-07 -> "1e-07", 123456.0 -> "123456", -0.0 -> "-0". On a range too small for the text, the
// result of std::to_chars (errc::value_too_large, ptr == last).
std::to_chars_result ShortestToChars(char* first, char* last, double value);
std::to_chars_result ShortestToChars(char* first, char* last, float value);

// std::to_chars(first, last, value, std::chars_format::fixed): the shortest round-trip digits in
// fixed notation, e.g. 1700000000.0 -> "1700000000", 1700000000.25 -> "1700000000.25",
// 1e-07 -> "0.0000001".
std::to_chars_result ShortestFixedToChars(char* first, char* last, double value);

// The decimal digits of `value` at `out` (at most 20 characters), as std::to_chars writes them;
// returns the end of the text.
char* WriteInteger(char* out, int64_t value);

}  // namespace mosaic
