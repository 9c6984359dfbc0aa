#include "report/page.h"

#include "report/html.h"

namespace cudal1 {

namespace {

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0 auto;max-width:1180px;padding:0 16px 40px}
h1{font-size:22px;margin:20px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.sub,.note,figcaption{color:#555}.empty{color:#777;font-style:italic}
dl.prov{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:8px 0}dt{color:#666}dd{margin:0}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f5f5f5}.wide{overflow-x:auto}table.rows td{white-space:nowrap}table.sortable th{cursor:pointer}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.grp td{border-top:2px solid #bbb}td.na,td.muted{color:#999}td.bad{color:#b2182b}td.evidence{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-word;max-width:640px}
td.sev-block{color:#b2182b;font-weight:600}td.sev-warn{color:#a6761d}p.warn{color:#a6761d;font-weight:600}
.figs{display:flex;flex-wrap:wrap;gap:12px}.figs figure{margin:0;flex:1 1 460px;max-width:560px}figure{margin:8px 0}
svg.plot{width:100%;height:auto;font-size:11px;fill:#333}.grid{stroke:#e6e6e6}.unit{stroke:#444;stroke-dasharray:4 3}.axis{stroke:#333}
.mark{stroke:#000;stroke-width:2;fill:none}.bin{fill:#4a78b0}
.ptitle{font-size:12px;font-weight:600}path.line{fill:none;stroke-width:1.6;stroke-linejoin:round}path.band{stroke:none;fill-opacity:.2}circle.pt{stroke:none}
.series0{stroke:#4e79a7;fill:#4e79a7}.series1{stroke:#f28e2b;fill:#f28e2b}.series2{stroke:#59a14f;fill:#59a14f}
.series3{stroke:#e15759;fill:#e15759}.series4{stroke:#b07aa1;fill:#b07aa1}.series5{stroke:#9c755f;fill:#9c755f}
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

}  // namespace

std::string html_page(const std::string& title_html, const std::string& body_html, const char* footer) {
  std::string csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
                    "form-action 'none'; script-src " + csp_sha256(kScript);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                    "<meta http-equiv=\"Content-Security-Policy\" content=\"" + csp + "\">"
                    "<title>" + title_html + "</title>"
                    "<link rel=\"icon\" href=\"data:,\"><style>" + kStyle + "</style></head><body>\n";
  out += body_html;
#ifdef CUDAL1_VERSION
  out += std::string("<footer>cudal1 " CUDAL1_VERSION " ") + footer + "</footer>";
#endif
  return out + "<script>" + kScript + "</script></body></html>\n";
}

}  // namespace cudal1
