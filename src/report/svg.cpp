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

std::string text(double x, double y, const char* anchor, const std::string& s, const char* cls = nullptr) {
  return std::string("<text") + (cls ? " class=\"" + std::string(cls) + "\"" : "") + " x=\"" + num(x) +
         "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\">" + escape_html(s) + "</text>";
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
    lo = std::min(lo, l);
    hi = std::max(hi, l);
  };
  for (auto& b : bars) see(b.value), see(b.marker);
  lo = std::min(std::floor(lo), -1.0);
  hi = std::max(std::ceil(hi), 1.0);
  return {lo, hi};
}

// A linear axis from lo to hi in steps of `step`, lo and hi multiples of it.
struct Ticks {
  double lo, hi, step;
};

// About `target` intervals of 1, 2, 2.5 or 5 times a power of ten that cover [lo, hi]; a range
// of one value is widened around it, so a one-point series sits inside the plot, not on its edge.
Ticks nice_ticks(double lo, double hi, int target, bool integral) {
  if (!(lo <= hi)) {
    lo = 0;
    hi = 1;
  }
  if (hi - lo <= 1e-12 * std::max(1.0, std::abs(hi))) {
    double pad = integral ? 1 : lo != 0 ? std::abs(lo) * 0.1 : 1;
    lo -= pad;
    hi += pad;
  }
  double raw = (hi - lo) / target, mag = std::pow(10, std::floor(std::log10(raw))), step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw * (1 - 1e-9)) {
      step = m * mag;
      break;
    }
  if (integral) step = std::max(step, 1.0);  // no "2.5" between optimiser steps
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step, step};
}

// With as many decimals as the step needs, so neighbouring ticks never read the same.
std::string tick_label(double v, double step, bool percent) {
  if (percent) {
    v *= 100;
    step *= 100;
  }
  if (std::abs(v) < step * 1e-6) v = 0;
  char buf[48];
  if (std::abs(v) >= 1e6 || step < 1e-3) {  // a learning rate's 0.000025 reads better as 2.5e-05
    std::snprintf(buf, sizeof buf, "%.3g", v);
  } else {
    int d = 0;
    for (double p = step; d < 9 && std::abs(p - std::round(p)) > 1e-6 * std::max(1.0, p); p *= 10) ++d;
    std::snprintf(buf, sizeof buf, "%.*f", d, v);
  }
  return std::string(buf) + (percent ? "%" : "");
}

std::string value_label(double v, bool percent) {
  char buf[48];
  std::snprintf(buf, sizeof buf, percent ? "%.2f%%" : "%.4g", percent ? v * 100 : v);
  return buf;
}

// Calls `run(a, b)` for each maximal run of points a..b (inclusive) that `keep` accepts: the
// pieces a line or a band is drawn in, between the gaps.
template <class Keep, class Run>
void for_each_run(const std::vector<SvgPoint>& pts, Keep keep, Run run) {
  for (std::size_t a = 0; a < pts.size(); ++a) {
    if (!keep(pts[a])) continue;
    std::size_t b = a;
    while (b + 1 < pts.size() && keep(pts[b + 1])) ++b;
    run(a, b);
    a = b;
  }
}

}  // namespace

std::string svg_series_class(std::size_t i) { return "series" + std::to_string(i % 6); }

std::string svg_lines(const std::vector<SvgSeries>& series, const SvgAxis& axis, const std::string& title) {
  auto finite = [](double v) { return std::isfinite(v); };
  // Each series' points with an x, in order of x; those without a y stay, as the gaps.
  std::vector<std::vector<SvgPoint>> sorted;
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  bool integral = true, any = false;
  for (double v : axis.y_include)
    if (finite(v)) {
      ylo = std::min(ylo, v);
      yhi = std::max(yhi, v);
    }
  for (auto& s : series) {
    auto& pts = sorted.emplace_back();
    for (auto& p : s.points) {
      if (!finite(p.x)) continue;
      pts.push_back(p);
      xlo = std::min(xlo, p.x);
      xhi = std::max(xhi, p.x);
      integral = integral && p.x == std::round(p.x);
      if (!finite(p.y)) continue;
      any = true;
      double sp = finite(p.spread) ? std::abs(p.spread) : 0;
      ylo = std::min(ylo, p.y - sp);
      yhi = std::max(yhi, p.y + sp);
    }
    std::stable_sort(pts.begin(), pts.end(), [](const SvgPoint& a, const SvgPoint& b) { return a.x < b.x; });
  }

  // The legend flows in rows under the title; its width is estimated, as the page's font is not known.
  const double W = 560, R = 10, L = 58, B = 36, kChar = 6.2, kSwatch = 22, kGap = 14;
  std::vector<std::pair<double, double>> key_at;  // per series: where its legend entry starts
  std::vector<std::string> keys;
  double kx = L, ky = 32;
  if (series.size() > 1)
    for (auto& s : series) {
      keys.push_back(truncate_utf8(s.label, 48));
      double w = kSwatch + keys.back().size() * kChar;
      if (kx > L && kx + w > W - R) {
        kx = L;
        ky += 15;
      }
      key_at.push_back({kx, ky});
      kx += w + kGap;
    }
  const double T = (series.size() > 1 ? ky : 14) + 12, H = T + 170 + B;
  const double pw = W - L - R, ph = H - T - B;
  const Ticks xt = nice_ticks(xlo, xhi, 6, integral), yt = nice_ticks(ylo, yhi, 4, false);
  auto px = [&](double x) { return L + (x - xt.lo) / (xt.hi - xt.lo) * pw; };
  auto py = [&](double y) { return T + (yt.hi - y) / (yt.hi - yt.lo) * ph; };

  std::string out = open_svg(W, H, title) + text(L, 14, "start", title, "ptitle");
  for (std::size_t i = 0; i < key_at.size(); ++i) {
    auto [x, y] = key_at[i];
    out += "<path class=\"line " + series[i].css_class + "\" d=\"M" + num(x) + " " + num(y - 4) + "h16\"/>";
    out += text(x + kSwatch - 2, y, "start", keys[i]);
  }
  for (int k = 0; yt.lo + k * yt.step <= yt.hi + yt.step * 1e-6; ++k) {
    double v = yt.lo + k * yt.step, y = py(v);
    const bool zero_inside = std::abs(v) < yt.step * 1e-6 && k > 0 && v < yt.hi - yt.step * 0.5;
    out += line(zero_inside ? "unit" : "grid", L, y, W - R, y);
    out += text(L - 4, y + 4, "end", tick_label(v, yt.step, axis.y_percent));
  }
  for (int k = 0; xt.lo + k * xt.step <= xt.hi + xt.step * 1e-6; ++k) {
    double v = xt.lo + k * xt.step, x = px(v);
    out += line("grid", x, T, x, T + ph);
    out += text(x, T + ph + 15, "middle", tick_label(v, xt.step, false));
  }
  if (!axis.x_label.empty()) out += text(L + pw / 2, H - 4, "middle", axis.x_label);
  if (!axis.y_label.empty()) {
    double cy = T + ph / 2;
    out += "<g transform=\"rotate(-90 12 " + num(cy) + ")\">" + text(12, cy, "middle", axis.y_label) + "</g>";
  }
  if (!any) out += text(L + pw / 2, T + ph / 2, "middle", "no values", "empty");

  // Bands first, so every line is drawn over every band.
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& pts = sorted[i];
    std::string d;
    for_each_run(pts, [](const SvgPoint& p) { return std::isfinite(p.y) && std::isfinite(p.spread); },
                 [&](std::size_t a, std::size_t b) {
                   // A lone point's band has no length along x: drawn as wide as its dot, so it is seen.
                   const double half = a == b ? 3 : 0;
                   auto edge = [&](std::size_t k, double sign, double dx) {
                     return num(px(pts[k].x) + dx) + " " + num(py(pts[k].y + sign * std::abs(pts[k].spread)));
                   };
                   d += "M" + edge(a, 1, -half);
                   for (std::size_t k = a; k <= b; ++k) d += "L" + edge(k, 1, k == b ? half : 0);
                   for (std::size_t k = b + 1; k-- > a;) d += "L" + edge(k, -1, k == b ? half : 0);
                   if (half > 0) d += "L" + edge(a, -1, -half);
                   d += "Z";
                 });
    if (!d.empty()) out += "<path class=\"band " + series[i].css_class + "\" d=\"" + d + "\"/>";
  }
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& pts = sorted[i];
    const std::string& cls = series[i].css_class;
    const bool detail = pts.size() <= kSvgDetailPoints;
    const std::string x_name = axis.x_label.empty() ? "x" : axis.x_label;
    std::string d, dots;
    auto dot = [&](const SvgPoint& p, const char* r) {
      std::string tip = series[i].label + ", " + x_name + " " + value_label(p.x, false) + ": " + value_label(p.y, axis.y_percent);
      if (std::isfinite(p.spread)) tip += " \xC2\xB1 " + value_label(std::abs(p.spread), axis.y_percent);
      dots += "<circle class=\"pt " + cls + "\" cx=\"" + num(px(p.x)) + "\" cy=\"" + num(py(p.y)) + "\" r=\"" + r +
              "\"><title>" + escape_html(truncate_utf8(tip, 200)) + "</title></circle>";
    };
    for_each_run(pts, [](const SvgPoint& p) { return std::isfinite(p.y); }, [&](std::size_t a, std::size_t b) {
      for (std::size_t k = a; k <= b; ++k) d += (k == a ? "M" : "L") + num(px(pts[k].x)) + " " + num(py(pts[k].y));
      if (a == b) dot(pts[a], "3");
      else if (detail)
        for (std::size_t k = a; k <= b; ++k) dot(pts[k], "2");
    });
    if (!d.empty()) out += "<path class=\"line " + cls + "\" d=\"" + d + "\"/>";
    out += dots;
  }
  out += line("axis", L, T + ph, W - R, T + ph);
  out += line("axis", L, T, L, T + ph);
  return out + "</svg>";
}

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
      y0 = std::min(y, base);
      h = std::max(std::abs(y - base), 1.0);
    } else {
      y0 = T + ph + 4;
      h = 8;  // under the axis: a task with nothing to draw
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
  for (double l : logs) {
    lo = std::min(lo, std::floor(l / w) * w);
    hi = std::max(hi, (std::floor(l / w) + 1) * w);
  }
  lo = std::max(lo, -edge);
  hi = std::min(hi, edge);
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
