// The bench report's HTML page: head (style, script, CSP), header, the plots; the tables are in
// bench_tables.cpp.
#include <algorithm>
#include <set>

#include "report/bench_page.h"
#include "report/bench_report.h"
#include "report/html.h"
#include "report/svg.h"

namespace cudal1 {

using json = nlohmann::json;
using bench_page::text;

namespace {

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0 auto;max-width:1180px;padding:0 16px 40px}
h1{font-size:22px;margin:20px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.sub,.note,figcaption{color:#555}.empty{color:#777;font-style:italic}
dl.prov{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:8px 0}dt{color:#666}dd{margin:0}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f5f5f5}.wide{overflow-x:auto}table.rows td{white-space:nowrap}table.sortable th{cursor:pointer}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.grp td{border-top:2px solid #bbb}td.na,td.muted{color:#999}td.bad{color:#b2182b}td.evidence{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-word;max-width:640px}
td.sev-block{color:#b2182b;font-weight:600}td.sev-warn{color:#a6761d}
.figs{display:flex;flex-wrap:wrap;gap:12px}.figs figure{margin:0;flex:1 1 460px;max-width:560px}figure{margin:8px 0}
svg.plot{width:100%;height:auto;font-size:11px;fill:#333}.grid{stroke:#e6e6e6}.unit{stroke:#444;stroke-dasharray:4 3}.axis{stroke:#333}
.mark{stroke:#000;stroke-width:2;fill:none}.bin{fill:#4a78b0}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:13px;margin:4px 0}.dot{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.dot.mark-key{background:#000;height:3px;vertical-align:3px}
.st-acc{fill:#1b9e77;background:#1b9e77}.st-ok{fill:#80cdc1;background:#80cdc1}.st-inc{fill:#d95f02;background:#d95f02}
.st-ce{fill:#7570b3;background:#7570b3}.st-re{fill:#e7298a;background:#e7298a}.st-to{fill:#a6761d;background:#a6761d}
.st-cr{fill:#555;background:#555}.st-rej{fill:#b2182b;background:#b2182b}.st-err{fill:#999;background:#999}.st-oth{fill:#ccc;background:#ccc}
footer{margin-top:32px;color:#888;font-size:12px}
)css";

// Click a heading to sort its table: numbers (a leading number, so "1.23x" and "41.7%") before
// text, ascending then descending.
constexpr const char* kScript = R"js(
for (const th of document.querySelectorAll("table.sortable th")) {
  th.title = "click to sort";
  th.addEventListener("click", () => {
    const body = th.closest("table").tBodies[0], i = th.cellIndex;
    const dir = th.dataset.dir === "asc" ? -1 : 1;
    th.dataset.dir = dir === 1 ? "asc" : "desc";
    const key = (r) => { const t = r.cells[i].textContent, n = parseFloat(t); return Number.isNaN(n) ? [1, t] : [0, n]; };
    const rows = Array.from(body.rows, (r) => [key(r), r]);
    rows.sort((a, b) => a[0][0] - b[0][0] || (a[0][1] < b[0][1] ? -dir : a[0][1] > b[0][1] ? dir : 0));
    for (const [, r] of rows) body.appendChild(r);
  });
}
)js";

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
    const std::vector<std::string> known = {"device_name", "driver", "torch", "cuda", "cudal1", "protocol"};
    std::vector<std::string> keys = known;
    for (auto& [k, v] : prov.items())
      if (std::find(known.begin(), known.end(), k) == known.end()) keys.push_back(k);
    out += "<dl class=\"prov\">";
    for (auto& k : keys)
      if (auto v = bench_text(prov, k.c_str()); !v.empty())
        out += "<dt>" + text(k, 60) + "</dt><dd>" + text(v, 300) + "</dd>";
    out += "</dl>";
  }
  const BenchLevelStats& all = s.levels.back();
  out += "<p>" + std::to_string(all.tasks) + " tasks, " + std::to_string(all.accepted) +
         " accepted, " + std::to_string(s.flags) + " flags.</p></header>";
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

std::string bench_html(const json& bench) {
  BenchStats s = bench_stats(bench);
  std::string primary = s.baselines.empty() ? "" : s.baselines.front();
  if (std::find(s.baselines.begin(), s.baselines.end(), "eager") != s.baselines.end()) primary = "eager";

  // The policy allows the page's own style and script only: an input string that slipped past
  // escaping still could not run or fetch anything.
  std::string csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
                    "form-action 'none'; script-src " + csp_sha256(kScript);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                    "<meta http-equiv=\"Content-Security-Policy\" content=\"" + csp + "\">"
                    "<title>" + text(bench_text(bench, "title", "cudal1 bench"), 300) + "</title>"
                    "<link rel=\"icon\" href=\"data:,\"><style>" + kStyle + "</style></head><body>\n";
  out += header(bench, s) + "\n" + bench_page::summary_section(s) + "\n" + kHowToRead;
  out += distribution_section(bench, s.baselines) + "\n";
  out += tasks_section(bench, primary) + "\n";
  out += sol_section(bench) + "\n" + bench_page::flags_section(bench) + "\n";
  out += bench_page::rows_section(bench, s.baselines) + "\n";
#ifdef CUDAL1_VERSION
  out += "<footer>cudal1 " CUDAL1_VERSION " bench report</footer>";
#endif
  return out + "<script>" + kScript + "</script></body></html>\n";
}

}  // namespace cudal1
