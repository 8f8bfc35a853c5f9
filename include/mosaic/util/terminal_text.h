// Text from user files (tags, column names, paths) shown on a terminal: control characters, such
// as a newline inside a tag or an ANSI escape sequence (ESC [ ...), would break the layout or
// drive the terminal, so text output shows them escaped. JSON output escapes them by itself.
#pragma once

#include <string>
#include <string_view>

namespace mosaic {

// `text` with every C0 control character and DEL written as an escape: \n, \r, \t, and \xHH for
// the others (ESC is \x1b). Other bytes, UTF-8 included, are kept.
std::string Printable(std::string_view text);

}  // namespace mosaic
