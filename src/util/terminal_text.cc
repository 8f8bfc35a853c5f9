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

size_t Columns(char32_t cp) {
  if ((cp >= 0x0300 && cp <= 0x036f) || (cp >= 0x200b && cp <= 0x200d)) return 0;
  const bool wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
                    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
                    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
                    (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
                    (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd);
  return wide ? 2 : 1;
}

}  // namespace

std::string Printable(std::string_view text) {
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
      if (c == '\n') {
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
