// report/svg.h — the inline SVG plots of the reports, drawn as text: no script, no external
// fonts or files. Colours come from CSS classes the page's stylesheet defines, so a plot's
// `css_class` must be one of the page's own names, never input text. Labels are escaped here.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace cudal1 {

// One task in a per-task bar plot.
struct SvgBar {
  std::optional<double> value;   // none (or not drawable): a tick under the axis
  std::optional<double> marker;  // a black tick across the bar (the claimed speedup)
  std::string css_class;         // the fill
  std::string label;             // tooltip text
};

enum class SvgScale {
  log2,      // speedups: bars grow up or down from 1x, gridlines at powers of two
  fraction,  // 0..1 (speed-of-light fraction): bars grow from 0, values outside are clamped
};

// Bars sorted by value (largest first, ties by class; unmeasured last). Past `kSvgDetailBars`
// bars, each class is drawn as one path and tooltips are left out, to keep big pages small.
constexpr std::size_t kSvgDetailBars = 300;
std::string svg_bars(std::vector<SvgBar> bars, SvgScale scale, const std::string& title);

// Histogram of log2(values) (values > 0) in bins of a quarter power of two; values past 1/32x or
// 32x fall into the edge bins.
std::string svg_histogram(const std::vector<double>& values, const std::string& title);

// One curve of a line chart. Points are drawn in order of x; a point whose y is NaN (a value a
// log line did not have) breaks the line there, and a point left alone between gaps is drawn as a
// dot, so a one-point series still shows.
struct SvgPoint {
  double x = 0, y = 0;
  double spread = std::numeric_limits<double>::quiet_NaN();  // finite: a band from y - spread to y + spread
};
struct SvgSeries {
  std::string label;      // legend text
  std::string css_class;  // the colour: one of svg_series_class()'s names
  std::vector<SvgPoint> points;
};

struct SvgAxis {
  std::string x_label, y_label;
  // Values the y range reaches whatever the data (0 for a loss that should be seen against 0, 0
  // and 1 for a rate); the range is widened to nice tick values either way.
  std::vector<double> y_include;
  bool y_percent = false;  // tick labels as percentages of 1
};

// Series over a shared x axis, linear scales with ticks at 1, 2, 2.5 or 5 times a power of ten,
// the title above the plot and a legend when there is more than one series. Past
// `kSvgDetailPoints` points a series has no per-point tooltips, to keep long runs' pages small.
constexpr std::size_t kSvgDetailPoints = 60;
std::string svg_lines(const std::vector<SvgSeries>& series, const SvgAxis& axis, const std::string& title);

// The stylesheet's series colours, `i` modulo their number: the same i gives the same colour on
// every plot of a page.
std::string svg_series_class(std::size_t i);

// The axis label of 2^k: "1x", "4x", "0.5x", "1/16x".
std::string svg_pow2_label(int k);

}  // namespace cudal1
