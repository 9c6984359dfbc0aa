// report/svg.h — the inline SVG plots of the bench report, drawn as text: no script, no external
// fonts or files. Colours come from CSS classes the page's stylesheet defines, so a plot's
// `css_class` must be one of the page's own names, never input text. Labels are escaped here.
#pragma once

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

// The axis label of 2^k: "1x", "4x", "0.5x", "1/16x".
std::string svg_pow2_label(int k);

}  // namespace cudal1
