// The bench report's HTML page: header and plots (the page around them: report/page.h); the
// tables are in bench_tables.cpp.
#include <algorithm>
#include <set>

#include "report/bench_carried_rows.h"
#include "report/bench_names.h"
#include "report/bench_page.h"
#include "report/bench_provenance.h"
#include "report/bench_report.h"
#include "report/html.h"
#include "report/page.h"
#include "report/svg.h"

namespace cudal1 {

using json = nlohmann::json;
using bench_page::text;

namespace {

constexpr const char* kHowToRead = R"html(
<section id="how"><h2>How to read this</h2><dl class="prov">
<dt>speedup</dt><dd>t_baseline / t_candidate for one task: above 1x the candidate is faster than that baseline.</dd>
<dt>tasks</dt><dd>rows of the level (levels 1&ndash;3 are always listed; &ldquo;all&rdquo; is every row).</dd>
<dt>correct</dt><dd>accepted rows / tasks. Only accepted rows enter the speedup statistics.</dd>
<dt>n/a</dt><dd>accepted rows where this baseline is not available (no number, or a reason given); left out of mean, median and geomean.</dd>
<dt>invalid</dt><dd>accepted rows whose speedup is 0, negative, not finite or not a number; left out and counted.</dd>
<dt>measured</dt><dd>the remaining accepted rows: mean, median (mean of the two middle values for an even count) and geometric mean (exp of the mean log) are over these.</dd>
<dt>share &gt;1.01x</dt><dd>measured rows faster than 1.01x, divided by <em>all</em> tasks of the level: a failed, unaccepted, n/a or invalid row counts as not faster.</dd>
</dl></section>
)html";

std::string header(const json& bench, const BenchStats& s) {
  std::string out = "<header><h1>" + text(bench_text(bench, "title", "cudal1 bench"), 300) + "</h1>";
  std::string sub;
  if (auto v = bench_text(bench, "suite"); !v.empty()) sub += "suite: " + text(v, 300);
  if (auto v = bench_text(bench, "kernel_set"); !v.empty())
    sub += (sub.empty() ? "" : " &middot; ") + std::string("kernels: ") + text(v, 300);
  if (!sub.empty()) out += "<p class=\"sub\">" + sub + "</p>";
  const json& prov = bench.is_object() && bench.contains("provenance") ? bench.at("provenance") : json();
  if (prov.is_object() && !prov.empty()) {
    const std::vector<std::string>& known = bench_provenance_keys();
    std::vector<std::string> keys = known;
    for (auto& [k, v] : prov.items())
      if (std::find(known.begin(), known.end(), k) == known.end()) keys.push_back(k);
    out += "<dl class=\"prov\">";
    for (auto& k : keys)
      if (auto v = bench_text(prov, k.c_str()); !v.empty())
        out += "<dt>" + text(k, 60) + "</dt><dd>" + text(v, 300) + "</dd>";
    out += "</dl>";
  }
  if (std::string note = mixed_provenance_note(mixed_provenance(bench)); !note.empty())
    out += "<p class=\"warn\">" + text(note, 600) + "</p>";
  if (std::string note = carried_rows_note(bench); !note.empty()) out += "<p>" + text(note, 600) + "</p>";
  const BenchLevelStats& all = s.levels.back();
  out += "<p>" + std::to_string(all.tasks) + " tasks, " + std::to_string(all.accepted) +
         " accepted, " + std::to_string(s.flags) + " flags.";
  if (s.not_scored)
    out += " " + std::to_string(s.not_scored) + " more not scored yet: left out of every figure.";
  out += "</p></header>";
  return out;
}

std::string legend(const std::set<std::string>& used, bool marker) {
  std::string out = "<div class=\"legend\">";
  for (auto& c : bench_page::status_classes())
    if (used.count(c.css))
      out += "<span><span class=\"dot " + std::string(c.css) + "\"></span>" + c.legend + "</span>";
  if (marker) out += "<span><span class=\"dot mark-key\"></span>claimed speedup</span>";
  return out + "</div>";
}

std::string distribution_section(const json& bench, const std::vector<std::string>& baselines) {
  std::string out = "<section id=\"distribution\"><h2>Speedup distribution</h2>"
                    "<p class=\"note\">Accepted rows with a measured speedup, log scale, bins of "
                    "2<sup>1/4</sup> = 1.19x; the dashed line is 1x.</p><div class=\"figs\">";
  if (baselines.empty()) out += "<p class=\"empty\">No baseline.</p>";
  for (auto& b : baselines) {
    std::vector<double> values;
    for (auto& row : bench_rows(bench)) {
      BenchSpeedup sp = bench_speedup(row, b);
      if (bench_accepted(row) && sp.kind == BenchSpeedupKind::measured) values.push_back(sp.value);
    }
    out += "<figure>";
    if (values.empty()) out += "<p class=\"empty\">No accepted row has a speedup against " + text(b, 80) + ".</p>";
    else out += svg_histogram(values, "Speedup against " + truncate_utf8(b, 80));
    out += "<figcaption>against " + text(b, 80) + ": " + std::to_string(values.size()) +
           " rows</figcaption></figure>";
  }
  return out + "</div></section>";
}

std::string tasks_section(const json& bench, const std::string& primary) {
  if (primary.empty())
    return "<section id=\"tasks\"><h2>Per-task speedup</h2><p class=\"empty\">No baseline to plot.</p></section>";
  std::string out = "<section id=\"tasks\"><h2>Per-task speedup against " + text(primary, 80) + "</h2>";
  std::vector<SvgBar> bars;
  std::set<std::string> used;
  bool marker = false;
  int unmeasured = 0;
  for (auto& row : bench_rows(bench)) {
    SvgBar bar;
    BenchSpeedup sp = bench_speedup(row, primary);
    if (sp.kind == BenchSpeedupKind::measured) bar.value = sp.value;
    else ++unmeasured;
    bar.marker = bench_positive(row, "claimed_speedup");
    marker = marker || bar.marker.has_value();
    bar.css_class = bench_page::status_class(row);
    used.insert(bar.css_class);
    bar.label = truncate_utf8(bench_text(row, "task", "?"), 200) + ": " + truncate_utf8(bench_status(row), 40) +
                (bar.value ? ", " + format_speedup(*bar.value) : ", no speedup") +
                (bar.marker ? ", claimed " + format_speedup(*bar.marker) : "");
    bars.push_back(std::move(bar));
  }
  if (bars.empty()) return out + "<p class=\"empty\">No rows.</p></section>";
  out += "<p class=\"note\">One bar per task, sorted, log scale, growing up or down from 1x; colour "
         "is the status, and only accepted (green) bars enter the statistics. " +
         std::to_string(unmeasured) + " tasks without a valid speedup are the ticks under the "
         "axis on the right.</p>";
  std::string title = "Per-task speedup against " + truncate_utf8(primary, 80);
  out += legend(used, marker) + "<figure>" + svg_bars(std::move(bars), SvgScale::log2, title) + "</figure>";
  return out + "</section>";
}

std::string sol_section(const json& bench) {
  std::string out = "<section id=\"sol\"><h2>Speed-of-light fraction</h2>";
  std::vector<SvgBar> bars;
  std::set<std::string> used;
  int clamped = 0;
  for (auto& row : bench_rows(bench)) {
    auto sol = bench_number(row, "sol_fraction");
    if (!sol) continue;
    clamped += *sol < 0 || *sol > 1;
    SvgBar bar{*sol, std::nullopt, bench_page::status_class(row), ""};
    bar.label = truncate_utf8(bench_text(row, "task", "?"), 200) + ": " + format_percent(*sol) + " of speed of light";
    used.insert(bar.css_class);
    bars.push_back(std::move(bar));
  }
  if (bars.empty()) return out + "<p class=\"empty\">No row has a speed-of-light fraction.</p></section>";
  out += "<p class=\"note\">Speed-of-light time (the least the task's FLOPs and bytes allow on "
         "this device) over the measured time, per task, sorted; 100% is the device's limit. " +
         std::to_string(bars.size()) + " rows";
  if (clamped) out += "; " + std::to_string(clamped) + " outside 0&ndash;100% are drawn at the edge";
  out += ".</p>" + legend(used, false) + "<figure>" +
         svg_bars(std::move(bars), SvgScale::fraction, "Speed-of-light fraction per task") + "</figure>";
  return out + "</section>";
}

}  // namespace

std::string bench_html(const json& written) {
  const json bench = canonical_bench(written);
  BenchStats s = bench_stats(bench);
  std::string primary = s.baselines.empty() ? "" : s.baselines.front();
  if (std::find(s.baselines.begin(), s.baselines.end(), "eager") != s.baselines.end()) primary = "eager";

  std::string body = header(bench, s) + "\n" + bench_page::summary_section(s) + "\n" + bench_page::per_card_section(bench) + "\n" +
                     bench_page::claims_section(bench) +
                     "\n" + kHowToRead;
  body += distribution_section(bench, s.baselines) + "\n";
  body += tasks_section(bench, primary) + "\n";
  body += sol_section(bench) + "\n" + bench_page::flags_section(bench) + "\n";
  body += bench_page::rows_section(bench, s.baselines) + "\n";
  return html_page(text(bench_text(bench, "title", "cudal1 bench"), 300), body, "bench report");
}

}  // namespace cudal1
