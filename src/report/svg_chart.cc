#include "mosaic/report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "mosaic/util/terminal_text.h"

namespace mosaic::report {

std::string EscapeXml(std::string_view raw) {
  // Control characters (other than tab and newline), bidirectional controls and bytes that are
  // not UTF-8 are not text a page can hold (XML 1.0 forbids the C0 controls): shown escaped,
  // as the terminal shows them.
  const std::string text = PrintableText(raw);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string PaletteColor(size_t index) {
  static constexpr std::array<const char*, 10> kColors = {
      "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kColors[index % kColors.size()];
}

namespace {

constexpr int kLeft = 78, kRight = 24, kTop = 40, kBottom = 58, kLegendRow = 18;

// One axis: maps values to pixels, linear or log10.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double pixel_lo = 0, pixel_hi = 1;

  double Transform(double v) const { return log ? std::log10(v) : v; }
  double Map(double v) const {
    const double t = (Transform(v) - lo) / (hi - lo);
    return pixel_lo + t * (pixel_hi - pixel_lo);
  }
};

bool Usable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

// The range of the transformed values, padded, with a minimum span.
void Fit(Axis& axis, const std::vector<double>& values) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!Usable(v, axis.log)) continue;
    lo = std::min(lo, axis.Transform(v));
    hi = std::max(hi, axis.Transform(v));
  }
  if (!std::isfinite(lo)) {
    lo = 0;
    hi = 1;
  }
  double span = hi - lo;
  if (span <= 0) span = axis.log ? 0.5 : std::max(std::abs(hi) * 0.1, 1e-9);
  axis.lo = lo - 0.06 * span;
  axis.hi = hi + 0.06 * span;
}

std::string TickLabel(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e5 || a < 1e-3) {
    const int e = static_cast<int>(std::floor(std::log10(a)));
    const double m = v / std::pow(10.0, e);
    if (std::abs(m - std::round(m)) < 1e-9) return fmt::format("{:g}e{}", std::round(m), e);
    return fmt::format("{:.2g}e{}", m, e);
  }
  return fmt::format("{:.4g}", v);
}

// Tick values (in data units) for an axis: decades (with 2 and 5 when few) on a log axis, 1-2-5
// steps on a linear one.
std::vector<double> Ticks(const Axis& axis) {
  std::vector<double> ticks;
  if (axis.log) {
    const int first = static_cast<int>(std::ceil(axis.lo)), last = static_cast<int>(std::floor(axis.hi));
    const std::vector<double> mantissas =
        last - first >= 2 ? std::vector<double>{1} : std::vector<double>{1, 2, 5};
    for (int e = first - 1; e <= last; ++e) {
      for (double m : mantissas) {
        const double v = m * std::pow(10.0, e);
        const double t = std::log10(v);
        if (t >= axis.lo && t <= axis.hi) ticks.push_back(v);
      }
    }
    if (ticks.size() > 12) {
      std::vector<double> thinned;
      const size_t step = (ticks.size() + 9) / 10;
      for (size_t i = 0; i < ticks.size(); i += step) thinned.push_back(ticks[i]);
      ticks = thinned;
    }
    return ticks;
  }
  const double span = axis.hi - axis.lo;
  const double raw = span / 6;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  for (double v = std::ceil(axis.lo / step) * step; v <= axis.hi + 1e-12 * span; v += step) {
    ticks.push_back(std::abs(v) < 1e-12 * span ? 0 : v);
  }
  return ticks;
}

std::string Header(int width, int height, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\">\n<title>{2}</title>\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{3}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" "
      "font-weight=\"bold\">{2}</text>\n",
      width, height, EscapeXml(title), width / 2);
}

// The legend's width: right of the y axis, 640 pixels in a 720-pixel chart.
int LegendWidth(int chart_width) { return chart_width - kLeft - 2; }

// How a legend entry is drawn: a solid or dashed line, a marker, or a filled box (bars).
enum class Swatch { kLine, kDashed, kMarker, kBox };

// Entries wrap onto a new row past `width` pixels (the chart's width right of the y axis).
std::string Legend(const std::vector<std::pair<std::string, std::string>>& entries, int x, int y,
                   int width, const std::vector<Swatch>& swatches) {
  std::string out;
  int cx = x;
  int row = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& [name, color] = entries[i];
    const int w = 28 + static_cast<int>(name.size()) * 7;
    if (cx + w > x + width && cx > x) {
      cx = x;
      ++row;
    }
    const int cy = y + row * kLegendRow;
    const Swatch swatch = i < swatches.size() ? swatches[i] : Swatch::kBox;
    switch (swatch) {
      case Swatch::kLine:
      case Swatch::kDashed:
        out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                           "stroke-width=\"3\"{}/>",
                           cx, cy - 4, cx + 18, cy - 4, color,
                           swatch == Swatch::kDashed ? " stroke-dasharray=\"5,3\"" : "");
        break;
      case Swatch::kMarker:
        out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"{}\"/>", cx + 9, cy - 4,
                           color);
        break;
      case Swatch::kBox:
        out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"10\" fill=\"{}\"/>",
                           cx + 2, cy - 9, color);
        break;
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", cx + 22, cy, EscapeXml(name));
    cx += w;
  }
  return out;
}

int LegendRows(const std::vector<std::string>& names, int width) {
  int rows = 1, cx = 0;
  for (const std::string& name : names) {
    const int w = 28 + static_cast<int>(name.size()) * 7;
    if (cx + w > width && cx > 0) {
      cx = 0;
      ++rows;
    }
    cx += w;
  }
  return names.empty() ? 0 : rows;
}

// Horizontal grid lines with their tick labels, and the plot frame.
std::string YGridAndFrame(const Axis& y, int width, int plot_bottom) {
  std::string out;
  for (double t : Ticks(y)) {
    const double py = y.Map(t);
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e5e5e5\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, py, width - kRight, kLeft - 6, py + 4, TickLabel(t));
  }
  out += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", kLeft,
      kTop, width - kRight - kLeft, plot_bottom - kTop);
  return out;
}

}  // namespace

std::string RenderXyChart(const XyChart& chart) {
  std::vector<std::string> names;
  for (const XySeries& s : chart.series) names.push_back(s.name);
  const int legend_rows = LegendRows(names, LegendWidth(chart.width));
  const int plot_bottom = chart.height - kBottom - legend_rows * kLegendRow;
  Axis x{.log = chart.log_x, .pixel_lo = kLeft, .pixel_hi = double(chart.width - kRight)};
  Axis y{.log = chart.log_y, .pixel_lo = double(plot_bottom), .pixel_hi = kTop};
  std::vector<double> xs, ys;
  bool any = false;
  for (const XySeries& s : chart.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!Usable(s.x[i], x.log) || !Usable(s.y[i], y.log)) continue;
      any = true;
      xs.push_back(s.x[i]);
      ys.push_back(s.y[i]);
      if (i < s.low.size() && Usable(s.low[i], y.log)) ys.push_back(s.low[i]);
      if (i < s.high.size() && Usable(s.high[i], y.log)) ys.push_back(s.high[i]);
    }
  }
  for (const XyChart::Marker& m : chart.markers) xs.push_back(m.x);
  Fit(x, xs);
  Fit(y, ys);
  std::string out = Header(chart.width, chart.height, chart.title);
  // Grid and ticks.
  for (double t : Ticks(x)) {
    const double px = x.Map(t);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        px, kTop, plot_bottom, plot_bottom + 16, TickLabel(t));
  }
  out += YGridAndFrame(y, chart.width, plot_bottom);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     (kLeft + chart.width - kRight) / 2, plot_bottom + 36,
                     EscapeXml(chart.x_label + (chart.log_x ? " (log scale)" : "")));
  out += fmt::format(
      "<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}</text>\n",
      (kTop + plot_bottom) / 2, EscapeXml(chart.y_label + (chart.log_y ? " (log scale)" : "")));
  // Each marker's label on a line of its own, so that markers at (nearly) one x stay readable.
  int label_row = 0;
  for (const XyChart::Marker& m : chart.markers) {
    if (!Usable(m.x, x.log)) continue;
    const double px = x.Map(m.x);
    const int label_y = kTop + 14 * ++label_row;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#555\" "
        "stroke-dasharray=\"2,3\"/><text x=\"{3:.1f}\" y=\"{4}\" text-anchor=\"end\" "
        "fill=\"#555\">{5}</text>\n",
        px, kTop, plot_bottom, px - 4, label_y, EscapeXml(m.label));
  }
  if (!any) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n",
                       (kLeft + chart.width - kRight) / 2, (kTop + plot_bottom) / 2);
  }
  std::vector<std::pair<std::string, std::string>> legend;
  std::vector<Swatch> swatches;
  for (const XySeries& s : chart.series) {
    legend.emplace_back(s.name, s.color);
    swatches.push_back(!s.line ? Swatch::kMarker : s.dashed ? Swatch::kDashed : Swatch::kLine);
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (Usable(s.x[i], x.log) && Usable(s.y[i], y.log)) points.emplace_back(x.Map(s.x[i]), y.Map(s.y[i]));
    }
    const bool has_interval = !s.low.empty() && s.low.size() == s.x.size() &&
                              s.high.size() == s.x.size();
    if (has_interval && s.line) {
      std::string band;
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (Usable(s.x[i], x.log) && Usable(s.high[i], y.log)) {
          band += fmt::format("{:.1f},{:.1f} ", x.Map(s.x[i]), y.Map(s.high[i]));
        }
      }
      for (size_t i = s.x.size(); i-- > 0;) {
        if (Usable(s.x[i], x.log) && Usable(s.low[i], y.log)) {
          band += fmt::format("{:.1f},{:.1f} ", x.Map(s.x[i]), y.Map(s.low[i]));
        }
      }
      if (!band.empty()) {
        out += fmt::format("<polygon points=\"{}\" fill=\"{}\" fill-opacity=\"0.18\" stroke=\"none\"/>\n",
                           band, s.color);
      }
    }
    if (s.line && points.size() >= 2) {
      std::string path;
      for (const auto& [px, py] : points) path += fmt::format("{:.1f},{:.1f} ", px, py);
      out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n",
                         path, s.color, s.dashed ? " stroke-dasharray=\"6,4\"" : "");
    }
    if (has_interval && !s.line) {
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!Usable(s.x[i], x.log) || !Usable(s.low[i], y.log) || !Usable(s.high[i], y.log)) continue;
        const double px = x.Map(s.x[i]);
        out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                           "stroke=\"{3}\" stroke-width=\"1.5\"/>\n",
                           px, y.Map(s.low[i]), y.Map(s.high[i]), s.color);
      }
    }
    if (s.markers) {
      for (const auto& [px, py] : points) {
        out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4.5\" fill=\"{}\" "
                           "stroke=\"#fff\" stroke-width=\"1\"/>\n",
                           px, py, s.color);
      }
    }
  }
  out += Legend(legend, kLeft, plot_bottom + 52, LegendWidth(chart.width), swatches);
  out += "</svg>\n";
  return out;
}

std::string RenderBarChart(const BarChart& chart) {
  std::vector<std::string> names;
  for (const BarSeries& s : chart.series) names.push_back(s.name);
  const int legend_rows = LegendRows(names, LegendWidth(chart.width));
  const int plot_bottom = chart.height - kBottom - legend_rows * kLegendRow;
  std::vector<double> values = {0};
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    double stack = 0;
    for (const BarSeries& s : chart.series) {
      if (c < s.values.size() && s.values[c] && std::isfinite(*s.values[c])) {
        stack += *s.values[c];
        values.push_back(chart.stacked ? stack : *s.values[c]);
      }
    }
  }
  if (chart.reference) values.push_back(*chart.reference);
  Axis y{.log = false, .pixel_lo = double(plot_bottom), .pixel_hi = kTop};
  Fit(y, values);
  y.lo = 0;
  std::string out = Header(chart.width, chart.height, chart.title);
  out += YGridAndFrame(y, chart.width, plot_bottom);
  out += fmt::format(
      "<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}</text>\n",
      (kTop + plot_bottom) / 2, EscapeXml(chart.y_label));
  const size_t groups = std::max<size_t>(1, chart.categories.size());
  const double group_width = double(chart.width - kRight - kLeft) / double(groups);
  const size_t bars = chart.stacked ? 1 : std::max<size_t>(1, chart.series.size());
  const double bar_width = group_width * 0.7 / double(bars);
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    const double gx = kLeft + group_width * double(c);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       gx + group_width / 2, plot_bottom + 16, EscapeXml(chart.categories[c]));
    double stack = 0;
    bool known = false;
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const BarSeries& series = chart.series[s];
      const double bx = gx + group_width * 0.15 + (chart.stacked ? 0 : bar_width * double(s));
      if (c >= series.values.size() || !series.values[c] || !std::isfinite(*series.values[c])) {
        if (!chart.stacked) {
          out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#888\" "
                             "font-size=\"10\">n/a</text>\n",
                             bx + bar_width / 2, plot_bottom - 4);
        }
        continue;
      }
      const double v = *series.values[c];
      const double base = chart.stacked ? stack : 0;
      const double top = base + v;
      stack = top;
      known = true;
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                         "fill=\"{}\"><title>{}: {:.4g}</title></rect>\n",
                         bx, y.Map(top), bar_width, std::max(0.0, y.Map(base) - y.Map(top)),
                         series.color, EscapeXml(series.name), v);
      if (!chart.stacked && chart.value_labels > 0) {
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
                           "font-size=\"11\">{:.{}g}</text>\n",
                           bx + bar_width / 2, y.Map(top) - 4, v, chart.value_labels);
      }
    }
    if (chart.stacked && known && chart.value_labels > 0) {
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
                         "font-size=\"11\">{:.{}g}</text>\n",
                         gx + group_width / 2, y.Map(stack) - 4, stack, chart.value_labels);
    }
  }
  if (chart.reference) {
    const double py = y.Map(*chart.reference);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#c00\" "
                       "stroke-dasharray=\"6,4\"/><text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\" "
                       "fill=\"#c00\">{5}</text>\n",
                       kLeft, py, chart.width - kRight, chart.width - kRight - 4, py - 4,
                       EscapeXml(chart.reference_label));
  }
  std::vector<std::pair<std::string, std::string>> legend;
  for (const BarSeries& s : chart.series) legend.emplace_back(s.name, s.color);
  out += Legend(legend, kLeft, plot_bottom + 40, LegendWidth(chart.width), {});
  out += "</svg>\n";
  return out;
}

}  // namespace mosaic::report
