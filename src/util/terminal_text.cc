#include "mosaic/util/terminal_text.h"

#include <fmt/format.h>

#include <cstdint>

namespace mosaic {
namespace {

// The code point of the well-formed UTF-8 sequence at text[i] and its length in bytes, or a
// length of 0 when the bytes there are not one (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF).
struct Decoded {
  char32_t code_point = 0;
  size_t length = 0;
};

Decoded DecodeUtf8(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  size_t length = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, cp = lead & 0x1f, min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, cp = lead & 0x0f, min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return {};
  }
  if (i + length > text.size()) return {};
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xc0) != 0x80) return {};
    cp = (cp << 6) | (byte(k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {};
  return {cp, length};
}

bool IsHiddenControl(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// Code points a terminal shows in no column: combining marks, zero-width spaces and joiners,
// variation selectors.
constexpr char32_t kZeroWidth[][2] = {
    {0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd}, {0x0610, 0x061a}, {0x064b, 0x065f},
    {0x1ab0, 0x1aff}, {0x1dc0, 0x1dff}, {0x200b, 0x200d}, {0x20d0, 0x20ff}, {0x302a, 0x302d},
    {0x3099, 0x309a}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f}, {0xe0100, 0xe01ef}};

// East Asian Width W and F (Unicode 15, EastAsianWidth.txt): CJK, Hangul, fullwidth forms and
// the emoji shown in emoji presentation by default.
constexpr char32_t kWide[][2] = {
    {0x1100, 0x115f},   {0x231a, 0x231b},   {0x2329, 0x232a},   {0x23e9, 0x23ec},
    {0x23f0, 0x23f0},   {0x23f3, 0x23f3},   {0x25fd, 0x25fe},   {0x2614, 0x2615},
    {0x2648, 0x2653},   {0x267f, 0x267f},   {0x2693, 0x2693},   {0x26a1, 0x26a1},
    {0x26aa, 0x26ab},   {0x26bd, 0x26be},   {0x26c4, 0x26c5},   {0x26ce, 0x26ce},
    {0x26d4, 0x26d4},   {0x26ea, 0x26ea},   {0x26f2, 0x26f3},   {0x26f5, 0x26f5},
    {0x26fa, 0x26fa},   {0x26fd, 0x26fd},   {0x2705, 0x2705},   {0x270a, 0x270b},
    {0x2728, 0x2728},   {0x274c, 0x274c},   {0x274e, 0x274e},   {0x2753, 0x2755},
    {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27b0, 0x27b0},   {0x27bf, 0x27bf},
    {0x2b1b, 0x2b1c},   {0x2b50, 0x2b50},   {0x2b55, 0x2b55},   {0x2e80, 0x3029},
    {0x302e, 0x303e},   {0x3041, 0x3098},   {0x309b, 0xa4cf},   {0xa960, 0xa97f},
    {0xac00, 0xd7a3},   {0xf900, 0xfaff},   {0xfe10, 0xfe19},   {0xfe30, 0xfe6f},
    {0xff00, 0xff60},   {0xffe0, 0xffe6},   {0x16fe0, 0x16fe4}, {0x17000, 0x18cd5},
    {0x1b000, 0x1b2fb}, {0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf}, {0x1f18e, 0x1f18e},
    {0x1f191, 0x1f19a}, {0x1f200, 0x1f251}, {0x1f300, 0x1f320}, {0x1f32d, 0x1f335},
    {0x1f337, 0x1f37c}, {0x1f37e, 0x1f393}, {0x1f3a0, 0x1f3ca}, {0x1f3cf, 0x1f3d3},
    {0x1f3e0, 0x1f3f0}, {0x1f3f4, 0x1f3f4}, {0x1f3f8, 0x1f43e}, {0x1f440, 0x1f440},
    {0x1f442, 0x1f4fc}, {0x1f4ff, 0x1f53d}, {0x1f54b, 0x1f54e}, {0x1f550, 0x1f567},
    {0x1f57a, 0x1f57a}, {0x1f595, 0x1f596}, {0x1f5a4, 0x1f5a4}, {0x1f5fb, 0x1f64f},
    {0x1f680, 0x1f6c5}, {0x1f6cc, 0x1f6cc}, {0x1f6d0, 0x1f6d2}, {0x1f6d5, 0x1f6d7},
    {0x1f6dc, 0x1f6df}, {0x1f6eb, 0x1f6ec}, {0x1f6f4, 0x1f6fc}, {0x1f7e0, 0x1f7eb},
    {0x1f7f0, 0x1f7f0}, {0x1f90c, 0x1f93a}, {0x1f93c, 0x1f945}, {0x1f947, 0x1f9ff},
    {0x1fa70, 0x1fa7c}, {0x1fa80, 0x1fa88}, {0x1fa90, 0x1fabd}, {0x1fabf, 0x1fac5},
    {0x1face, 0x1fadb}, {0x1fae0, 0x1fae8}, {0x1faf0, 0x1faf8}, {0x20000, 0x2fffd},
    {0x30000, 0x3fffd}};

template <size_t N>
bool InRanges(const char32_t (&ranges)[N][2], char32_t cp) {
  // The ranges are sorted: the last one starting at or before cp is the only candidate.
  size_t lo = 0;
  size_t hi = N;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (ranges[mid][0] <= cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo > 0 && cp <= ranges[lo - 1][1];
}

size_t Columns(char32_t cp) {
  if (InRanges(kZeroWidth, cp)) return 0;
  return InRanges(kWide, cp) ? 2 : 1;
}

// Printable (keep_lines false) or PrintableText (true).
std::string Escaped(std::string_view text, bool keep_lines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
      ++i;
      continue;
    }
    if (byte < 0x80) {
      if (keep_lines && (c == '\n' || c == '\t')) {
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else {
        out += fmt::format("\\x{:02x}", byte);
      }
      ++i;
      continue;
    }
    const Decoded d = DecodeUtf8(text, i);
    if (d.length == 0) {
      out += fmt::format("\\x{:02x}", byte);
      ++i;
    } else if (IsHiddenControl(d.code_point)) {
      out += fmt::format("\\u{{{:04x}}}", static_cast<uint32_t>(d.code_point));
      i += d.length;
    } else {
      out.append(text.substr(i, d.length));
      i += d.length;
    }
  }
  return out;
}

}  // namespace

std::string Printable(std::string_view text) { return Escaped(text, false); }

std::string PrintableText(std::string_view text) { return Escaped(text, true); }

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    const Decoded d = DecodeUtf8(text, i);
    if (d.length == 0) {  // not UTF-8: one column per byte, as Printable would escape it
      ++width;
      ++i;
      continue;
    }
    width += Columns(d.code_point);
    i += d.length;
  }
  return width;
}

std::string PadRight(std::string_view text, size_t width) {
  std::string out(text);
  const size_t have = DisplayWidth(text);
  if (have < width) out.append(width - have, ' ');
  return out;
}

std::string PadLeft(std::string_view text, size_t width) {
  const size_t have = DisplayWidth(text);
  std::string out(have < width ? width - have : 0, ' ');
  out += text;
  return out;
}

}  // namespace mosaic
