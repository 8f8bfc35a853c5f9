#include "mosaic/report/html.h"

#include <fmt/format.h>

#include "mosaic/report/svg_chart.h"

namespace mosaic::report {

std::string HtmlTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<Cell>>& rows) {
  // A table wider than the page (long layouts) scrolls inside its own box instead of running off.
  std::string out = "<div class=\"table-scroll\"><table>\n<thead><tr>";
  for (const std::string& h : header) out += "<th>" + EscapeXml(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const std::vector<Cell>& row : rows) {
    out += "<tr>";
    for (const Cell& c : row) {
      out += c.css_class.empty() ? "<td>" : fmt::format("<td class=\"{}\">", EscapeXml(c.css_class));
      out += EscapeXml(c.text) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody>\n</table></div>\n";
  return out;
}

std::string HtmlDocument(std::string_view title, std::string_view body_html) {
  constexpr std::string_view kStyle = R"(
body { font-family: sans-serif; max-width: 1000px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
.table-scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.pass { background: #dff3df; font-weight: bold; }
td.fail { background: #f8dcdc; font-weight: bold; }
td.unknown { background: #fbf1d0; font-weight: bold; }
.verdict { border: 2px solid #333; padding: 0.8em 1em; margin: 1em 0; background: #fafafa; }
.verdict strong { font-size: 1.15em; }
.note { color: #555; font-size: 0.92em; }
figure { margin: 1em 0; }
figcaption { color: #555; font-size: 0.9em; }
.multiples { display: flex; flex-wrap: wrap; gap: 0.4em; }
.multiples figure { margin: 0; }
)";
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
      EscapeXml(title), kStyle, body_html);
}

}  // namespace mosaic::report
