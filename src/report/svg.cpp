#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "report/html.h"

namespace cudal1 {
namespace {

// Coordinates with one decimal, trailing ".0" dropped: big plots are mostly numbers.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

// No xmlns: inside HTML the parser puts <svg> in the SVG namespace, and the page stays free of
// URLs.
std::string open_svg(double w, double h, const std::string& title) {
  std::string t = escape_html(title);
  return "<svg class=\"plot\" viewBox=\"0 0 " + num(w) + " " + num(h) + "\" role=\"img\" aria-label=\"" +
         t + "\"><title>" + t + "</title>";
}

std::string line(const char* cls, double x1, double y1, double x2, double y2) {
  return "<line class=\"" + std::string(cls) + "\" x1=\"" + num(x1) + "\" y1=\"" + num(y1) +
         "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\"/>";
}

std::string text(double x, double y, const char* anchor, const std::string& s) {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\">" +
         escape_html(s) + "</text>";
}

std::string rect(const std::string& cls, double x, double y, double w, double h,
                 const std::string& tooltip) {
  return "<rect class=\"" + cls + "\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" +
         num(w) + "\" height=\"" + num(h) + "\"><title>" + escape_html(tooltip) +
         "</title></rect>";
}

// The vertical extent of a bar plot, in plot units (log2 of the speedup, or the fraction).
struct Range {
  double lo, hi;
};

Range bar_range(const std::vector<SvgBar>& bars, SvgScale scale) {
  if (scale == SvgScale::fraction) return {0, 1};
  double lo = 0, hi = 0;  // 1x is always on the plot
  auto see = [&](std::optional<double> v) {
    if (!v || !(*v > 0) || !std::isfinite(*v)) return;
    double l = std::clamp(std::log2(*v), -10.0, 10.0);
    lo = std::min(lo, l), hi = std::max(hi, l);
  };
  for (auto& b : bars) see(b.value), see(b.marker);
  lo = std::min(std::floor(lo), -1.0), hi = std::max(std::ceil(hi), 1.0);
  return {lo, hi};
}

}  // namespace

std::string svg_pow2_label(int k) {
  if (k >= 0) return std::to_string(1LL << std::min(k, 60)) + "x";
  static const char* kSmall[] = {"0.5x", "0.25x", "0.125x"};
  if (k >= -3) return kSmall[-k - 1];
  return "1/" + std::to_string(1LL << std::min(-k, 60)) + "x";
}

std::string svg_bars(std::vector<SvgBar> bars, SvgScale scale, const std::string& title) {
  const bool log = scale == SvgScale::log2;
  auto drawable = [&](std::optional<double>& v) {
    if (v && (!std::isfinite(*v) || (log && *v <= 0))) v.reset();  // NaN would also break the sort
  };
  for (auto& b : bars) drawable(b.value), drawable(b.marker);
  // Equal values, and the unmeasured tail, grouped by class: runs of one colour, not stripes.
  std::stable_sort(bars.begin(), bars.end(), [](const SvgBar& a, const SvgBar& b) {
    if (a.value.has_value() != b.value.has_value()) return a.value.has_value();
    if (a.value && *a.value != *b.value) return *a.value > *b.value;
    return a.css_class < b.css_class;
  });
  const double W = 960, H = 280, L = 52, R = 8, T = 10, B = 22;
  const double pw = W - L - R, ph = H - T - B;
  const Range r = bar_range(bars, scale);
  auto pos = [&](double v) {
    double u = log ? (v > 0 ? std::log2(v) : r.lo) : v;
    if (!std::isfinite(u)) u = u > 0 ? r.hi : r.lo;
    return T + (r.hi - std::clamp(u, r.lo, r.hi)) / (r.hi - r.lo) * ph;
  };
  const double base = pos(log ? 1.0 : 0.0);

  std::string out = open_svg(W, H, title);
  if (log) {
    int step = r.hi - r.lo > 12 ? 2 : 1;
    for (int k = static_cast<int>(r.lo); k <= static_cast<int>(r.hi); k += step) {
      double y = pos(std::ldexp(1.0, k));
      out += line(k == 0 ? "unit" : "grid", L, y, W - R, y);
      out += text(L - 4, y + 4, "end", svg_pow2_label(k));
    }
  } else {
    for (int q = 0; q <= 4; ++q) {
      double y = pos(q / 4.0);
      out += line("grid", L, y, W - R, y);
      out += text(L - 4, y + 4, "end", std::to_string(q * 25) + "%");
    }
  }

  const std::size_t n = bars.size();
  const bool detail = n <= kSvgDetailBars;
  const double step = n ? pw / n : pw;
  // Narrow bars touch, and overlap a little so anti-aliased seams do not show as pale stripes.
  const double bw = step >= 4 ? step * 0.8 : step + std::min(0.5, step);
  std::map<std::string, std::string> paths;  // class -> path data, when not in detail
  std::string marks;
  for (std::size_t i = 0; i < n; ++i) {
    const SvgBar& b = bars[i];
    double x = L + i * step + (step - bw) / 2;
    double y0, h;
    if (b.value) {
      double y = pos(*b.value);
      y0 = std::min(y, base), h = std::max(std::abs(y - base), 1.0);
    } else {
      y0 = T + ph + 4, h = 8;  // under the axis: a task with nothing to draw
    }
    if (detail) out += rect(b.css_class, x, y0, bw, h, b.label);
    else paths[b.css_class] += "M" + num(x) + " " + num(y0) + "h" + num(bw) + "v" + num(h) + "h" + num(-bw) + "z";
    if (b.marker) marks += "M" + num(x - 1) + " " + num(pos(*b.marker)) + "h" + num(bw + 2);
  }
  for (auto& [cls, d] : paths) out += "<path class=\"" + cls + "\" d=\"" + d + "\"/>";
  if (!marks.empty()) out += "<path class=\"mark\" d=\"" + marks + "\"/>";
  out += line("axis", L, base, W - R, base);
  out += line("axis", L, T, L, T + ph);
  return out + "</svg>";
}

std::string svg_histogram(const std::vector<double>& values, const std::string& title) {
  const double w = 0.25, edge = 5;  // bins of 2^0.25 = 1.19x, from 1/32x to 32x
  const double W = 480, H = 200, L = 36, R = 8, T = 10, B = 30;
  const double pw = W - L - R, ph = H - T - B;
  std::vector<double> logs;
  for (double v : values)
    if (v > 0 && std::isfinite(v)) logs.push_back(std::log2(v));
  double lo = -1, hi = 1;
  for (double l : logs) lo = std::min(lo, std::floor(l / w) * w), hi = std::max(hi, (std::floor(l / w) + 1) * w);
  lo = std::max(lo, -edge), hi = std::min(hi, edge);
  const int nb = static_cast<int>(std::lround((hi - lo) / w));
  std::vector<int> counts(nb, 0);
  for (double l : logs) ++counts[std::clamp(static_cast<int>(std::floor((l - lo) / w)), 0, nb - 1)];
  const int most = std::max(1, *std::max_element(counts.begin(), counts.end()));
  const double bw = pw / nb;
  auto xpos = [&](double l) { return L + (l - lo) / w * bw; };

  std::string out = open_svg(W, H, title);
  std::vector<int> ticks{0, most};
  if (most >= 4) ticks.push_back(most / 2);
  for (int c : ticks) {
    double y = T + ph - static_cast<double>(c) / most * ph;
    out += line("grid", L, y, W - R, y);
    out += text(L - 4, y + 4, "end", std::to_string(c));
  }
  for (int i = 0; i < nb; ++i) {
    if (!counts[i]) continue;
    double h = static_cast<double>(counts[i]) / most * ph;
    std::string from = format_speedup(std::exp2(lo + i * w)), to = format_speedup(std::exp2(lo + (i + 1) * w));
    std::string tip = i == 0 && lo <= -edge       ? "under " + to  // the edge bins hold the outliers
                      : i == nb - 1 && hi >= edge ? "from " + from
                                                  : from + " to " + to;
    tip += ": " + std::to_string(counts[i]) + (counts[i] == 1 ? " task" : " tasks");
    out += rect("bin", xpos(lo + i * w) + 0.5, T + ph - h, bw - 1, h, tip);
  }
  int tick = hi - lo > 8 ? 2 : 1;
  for (int k = static_cast<int>(std::ceil(lo)); k <= static_cast<int>(std::floor(hi)); k += tick) {
    out += line(k == 0 ? "unit" : "grid", xpos(k), T, xpos(k), T + ph);
    out += text(xpos(k), T + ph + 16, "middle", svg_pow2_label(k));
  }
  out += line("axis", L, T + ph, W - R, T + ph);
  return out + "</svg>";
}

}  // namespace cudal1
