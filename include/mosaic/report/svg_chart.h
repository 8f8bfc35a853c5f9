// Charts drawn as inline SVG for self-contained HTML reports: no scripts, no fonts or styles from
// the network. Every chart has a title, axes with their labels (units included by the caller) and
// a legend. Values that are not finite (or not > 0 on a log axis) are left out, never drawn at 0.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mosaic::report {

// A series of an x-y chart: markers, a line through the points, or both; optional vertical
// intervals per point (error bars for markers, a shaded band for lines).
struct XySeries {
  std::string name;             // legend text
  std::string color = "#1f77b4";
  std::vector<double> x, y;
  std::vector<double> low, high;  // empty, or one per point
  bool markers = true;
  bool line = false;
  bool dashed = false;
};

struct XyChart {
  std::string title;
  std::string x_label;  // e.g. "training compute C (FLOPs)"
  std::string y_label;  // e.g. "loss (nats)"
  bool log_x = false;
  bool log_y = false;
  std::vector<XySeries> series;
  // Vertical reference lines (e.g. the target budget), each with a label.
  struct Marker {
    double x = 0;
    std::string label;
  };
  std::vector<Marker> markers;
  int width = 720;
  int height = 420;
};

// The chart as an <svg> element (with role="img" and a <title> for accessibility). A chart with
// no finite point is drawn with empty axes and the text "no data".
std::string RenderXyChart(const XyChart& chart);

// Grouped horizontal-axis bar chart: one group per category, one bar per series; a stacked chart
// stacks the series instead (e.g. a memory breakdown).
struct BarSeries {
  std::string name;
  std::string color;
  std::vector<std::optional<double>> values;  // one per category; nullopt: not known
};

struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
  bool stacked = false;
  // Printed above each bar (or each stack) with this many significant digits; 0: no labels.
  int value_labels = 3;
  // A horizontal reference line (e.g. the device's memory), when set.
  std::optional<double> reference;
  std::string reference_label;
  int width = 720;
  int height = 380;
};

std::string RenderBarChart(const BarChart& chart);

// A palette of distinguishable colours (Tableau 10), cycled by index.
std::string PaletteColor(size_t index);

// Text escaped for XML/HTML element content and attribute values (& < > " '); control
// characters other than tab and newline, bidirectional controls and bytes that are not UTF-8
// are shown escaped, as PrintableText shows them (mosaic/util/terminal_text.h).
std::string EscapeXml(std::string_view text);

}  // namespace mosaic::report
