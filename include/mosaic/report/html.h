// Self-contained HTML pages for reports: one file with its styles inline, no scripts, nothing
// fetched from the network; charts come from svg_chart.h as inline SVG.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mosaic::report {

// A table cell: text (escaped when rendered) and an optional CSS class ("pass", "fail",
// "unknown", "num").
struct Cell {
  std::string text;
  std::string css_class;
  Cell(std::string t = "", std::string c = "") : text(std::move(t)), css_class(std::move(c)) {}
  Cell(const char* t) : text(t) {}
};

// <table> with a header row and body rows; every cell's text is escaped.
std::string HtmlTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<Cell>>& rows);

// A whole page: <!DOCTYPE html>, a <title>, the report's stylesheet, and `body_html` (trusted
// markup built by the caller from escaped text and rendered charts). Table cells take the classes
// "num", "pass", "fail" and "unknown"; a <div class="multiples"> lays out small charts side by side.
std::string HtmlDocument(std::string_view title, std::string_view body_html);

}  // namespace mosaic::report
