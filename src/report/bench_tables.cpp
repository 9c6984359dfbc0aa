// The tables of the bench report's HTML page: summary, flags, rows.
#include <cstdio>
#include <map>
#include <set>

#include "report/bench_claims.h"
#include "report/bench_provenance.h"
#include "report/bench_page.h"
#include "report/html.h"

namespace cudal1::bench_page {

using json = nlohmann::json;

namespace {

// Evidence can be a whole traceback; the page keeps its start, the store keeps the rest.
constexpr std::size_t kEvidenceBytes = 400;

std::string td(const std::string& html, const char* cls = nullptr) {
  return cls ? "<td class=\"" + std::string(cls) + "\">" + html + "</td>" : "<td>" + html + "</td>";
}

std::string th_row(const std::vector<std::string>& headings) {
  std::string out = "<thead><tr>";
  for (auto& h : headings) out += "<th>" + escape_html(h) + "</th>";
  return out + "</tr></thead>";
}

std::string ms(const json& row, const char* key) {
  auto v = bench_has(row, "runtime_ms") ? bench_positive(row.at("runtime_ms"), key) : std::nullopt;
  if (!v) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", *v);
  return buf;
}

std::string optional_stat(const std::optional<double>& v) {
  return v ? format_speedup(*v) : "&ndash;";
}

}  // namespace

const std::vector<StatusClass>& status_classes() {
  static const std::vector<StatusClass> k = {
      {"st-acc", "accepted"},          {"st-ok", "ok, not accepted"},
      {"st-inc", "incorrect"},         {"st-ce", "compile_error"},
      {"st-re", "runtime_error"},      {"st-to", "timeout"},
      {"st-cr", "crash"},              {"st-rej", "rejected"},
      {"st-err", "error"},             {"st-oth", "other status"}};
  return k;
}

const char* status_class(const json& row) {
  if (bench_accepted(row)) return "st-acc";
  static const std::map<std::string, const char*> k = {
      {"ok", "st-ok"},       {"incorrect", "st-inc"}, {"compile_error", "st-ce"},
      {"runtime_error", "st-re"}, {"timeout", "st-to"}, {"crash", "st-cr"},
      {"rejected", "st-rej"}, {"error", "st-err"}};
  auto it = k.find(bench_status(row));
  return it == k.end() ? "st-oth" : it->second;
}

std::string text(const std::string& s, std::size_t max_bytes) { return escape_html_cut(s, max_bytes); }

std::string speedup_cell(const json& row, const std::string& baseline) {
  BenchSpeedup sp = bench_speedup(row, baseline);
  if (sp.kind == BenchSpeedupKind::unavailable) {
    if (sp.reason.empty()) return td("n/a", "na");
    return "<td class=\"na\" title=\"" + text(sp.reason, 300) + "\">n/a</td>";
  }
  if (sp.kind == BenchSpeedupKind::invalid) return td("invalid", "bad");
  if (!bench_accepted(row))
    return "<td class=\"num muted\" title=\"not accepted: not in the statistics\">" +
           format_speedup(sp.value) + "</td>";
  return td(format_speedup(sp.value), "num");
}

std::string claims_section(const json& bench) {
  std::vector<BenchClaimStats> claims = bench_claims(bench);
  if (claims.empty()) return "";
  std::string out = "<section id=\"claims\"><h2>The kernel set's claims</h2><p>" + escape_html(bench_claims_rule()) +
                    "</p><table class=\"summary\">";
  std::vector<std::string> headings = {"level", "baseline"};
  headings.insert(headings.end(), bench_claims_headings().begin(), bench_claims_headings().end());
  out += th_row(headings);
  out += "<tbody>";
  std::string last_level;
  for (auto& c : claims) {
    out += c.level != last_level ? "<tr class=\"grp\">" : "<tr>";
    last_level = c.level;
    out += td(escape_html(bench_group_name(c.level))) + td(text(c.baseline, 80));
    out += td(std::to_string(c.claims), "num") + td(std::to_string(c.hold), "num");
    out += td(std::to_string(c.below), "num") + td(std::to_string(c.not_accepted), "num");
    out += td(optional_stat(c.claimed_geomean), "num") + td(optional_stat(c.claimed_geomean_accepted), "num");
    out += td(optional_stat(c.measured_geomean_accepted), "num") + "</tr>";
  }
  return out + "</tbody></table></section>";
}

std::string per_card_section(const json& bench) {
  std::vector<BenchCardFigures> cards = bench_card_figures(bench);
  if (cards.empty()) return "";
  std::string out = "<section id=\"cards\"><h2>Per card</h2><p>" + escape_html(bench_card_figures_rule()) +
                    "</p><table class=\"summary\">";
  std::vector<std::string> headings = {"card", "tasks", "correct"};
  for (auto& [baseline, g] : cards.front().geomeans) headings.push_back(baseline);
  headings.push_back("claims hold");
  out += th_row(headings) + "<tbody>";
  for (auto& c : cards) {
    out += "<tr>" + td(text(c.card, 120)) + td(std::to_string(c.tasks), "num") + td(std::to_string(c.accepted), "num");
    for (auto& [baseline, g] : c.geomeans) out += td(optional_stat(g), "num");
    out += td(c.claims_hold.empty() ? "&ndash;" : escape_html(c.claims_hold), "num") + "</tr>";
  }
  return out + "</tbody></table></section>";
}

std::string summary_section(const BenchStats& s) {
  std::string out = "<section id=\"summary\"><h2>Summary</h2><table class=\"summary\">";
  out += th_row({"level", "baseline", "tasks", "correct", "measured", "n/a", "invalid", "mean",
                 "median", "geomean", "share >1.01x"});
  out += "<tbody>";
  for (auto& l : s.levels) {
    std::string level = bench_group_name(l.level);
    std::string correct = l.tasks ? std::to_string(l.accepted) + "/" + std::to_string(l.tasks) +
                                         " (" + format_percent(l.correct_rate) + ")"
                                   : "&ndash;";
    bool first = true;
    for (auto& b : l.baselines) {
      out += first ? "<tr class=\"grp\">" : "<tr>";
      out += td(escape_html(level)) + td(text(b.baseline, 80)) + td(std::to_string(l.tasks), "num");
      out += td(correct, "num") + td(std::to_string(b.measured), "num");
      out += td(std::to_string(b.unavailable), "num") + td(std::to_string(b.invalid), "num");
      out += td(optional_stat(b.mean), "num") + td(optional_stat(b.median), "num");
      out += td(optional_stat(b.geomean), "num");
      out += td(l.tasks ? format_percent(b.share_above) : "&ndash;", "num") + "</tr>";
      first = false;
    }
    if (l.baselines.empty())
      out += "<tr class=\"grp\">" + td(escape_html(level)) + td("(no baseline)") +
             td(std::to_string(l.tasks), "num") + td(correct, "num") + "</tr>";
  }
  out += "</tbody></table>";

  // Statuses per level: how the tasks that are not accepted failed.
  std::set<std::string> seen;
  for (auto& l : s.levels)
    for (auto& [st, n] : l.statuses) seen.insert(st);
  if (!seen.empty()) {
    out += "<table class=\"statuses\"><thead><tr><th>level</th>";
    for (auto& st : seen) out += "<th>" + text(st, 40) + "</th>";
    out += "</tr></thead><tbody>";
    for (auto& l : s.levels) {
      out += "<tr>" + td(escape_html(bench_group_name(l.level)));
      for (auto& st : seen) {
        auto it = l.statuses.find(st);
        out += td(it == l.statuses.end() ? "0" : std::to_string(it->second), "num");
      }
      out += "</tr>";
    }
    out += "</tbody></table>";
  }
  return out + "</section>";
}

std::string flags_section(const json& bench) {
  std::string body;
  int n = 0;
  for (auto& row : bench_rows(bench)) {
    std::string task = text(bench_text(row, "task", "?"));
    for (auto& f : bench_flags(row)) {
      const char* sev = f.severity == "block" ? "sev-block" : f.severity == "warn" ? "sev-warn" : "sev-other";
      body += "<tr>" + td(task) + td(text(f.name, 80)) + td(text(f.severity, 20), sev) +
              td(text(f.evidence, kEvidenceBytes), "evidence") + "</tr>";
      ++n;
    }
  }
  std::string out = "<section id=\"flags\"><h2>Flags (" + std::to_string(n) + ")</h2>";
  if (!n) return out + "<p class=\"empty\">No row carries a flag.</p></section>";
  out += "<p class=\"note\">Every flag of every row. Evidence is cut at " +
         std::to_string(kEvidenceBytes) + " bytes.</p>";
  out += "<div class=\"wide\"><table class=\"sortable\">" + th_row({"task", "flag", "severity", "evidence"});
  return out + "<tbody>" + body + "</tbody></table></div></section>";
}

std::string rows_section(const json& bench, const std::vector<std::string>& baselines) {
  const json& rows = bench_rows(bench);
  std::string out = "<section id=\"rows\"><h2>Rows (" + std::to_string(rows.size()) + ")</h2>";
  if (rows.empty()) return out + "<p class=\"empty\">No rows.</p></section>";
  std::vector<std::string> headings = {"task", "level", "status", "accepted"};
  for (auto& b : baselines) headings.push_back(b);
  for (const char* h : {"claimed", "SOL", "candidate ms", "eager ms", "flags", "from", "note"}) headings.push_back(h);
  out += "<p class=\"note\">Click a column heading to sort. Grey speedups belong to rows that are "
         "not accepted and are left out of the statistics. \"from\": store for a row answered from the store, "
         "run for one measured by this run.</p>";
  out += "<div class=\"wide\"><table class=\"sortable rows\">" + th_row(headings) + "<tbody>";
  for (auto& row : rows) {
    auto level = bench_level(row);
    out += "<tr>" + td(text(bench_text(row, "task", "?")));
    out += td(level ? std::to_string(*level) : "", "num");
    out += "<td><span class=\"dot " + std::string(status_class(row)) + "\"></span>" +
           text(bench_status(row), 40) + "</td>";
    out += td(bench_accepted(row) ? "yes" : "no");
    for (auto& b : baselines) out += speedup_cell(row, b);
    auto claimed = bench_positive(row, "claimed_speedup");
    if (claimed) out += td(format_speedup(*claimed), "num");
    else out += bench_has(row, "claimed_speedup") ? td("invalid", "bad") : td("");
    auto sol = bench_number(row, "sol_fraction");
    if (sol) out += td(format_percent(*sol), "num");
    else out += bench_has(row, "sol_fraction") ? td("invalid", "bad") : td("");
    out += td(ms(row, "candidate"), "num") + td(ms(row, "eager"), "num");
    std::string names;
    for (auto& f : bench_flags(row)) names += (names.empty() ? "" : ", ") + truncate_utf8(f.name, 60);
    out += td(text(names, 300));
    // Where the figure came from (a resumed run's rows were measured before it, a carried row by
    // an earlier run on another machine), and why noise shrank it.
    const json* stored = row.is_object() && row.contains("from_store") ? &row["from_store"] : nullptr;
    if (std::string file = bench_text(row, "carried_from"); !file.empty()) out += "<td title=\"" + text(file, 300) + "\">file</td>";
    else out += td(stored && stored->is_boolean() ? (stored->get<bool>() ? "store" : "run") : "");
    out += td(text(bench_text(row, "note"), 300)) + "</tr>";
  }
  return out + "</tbody></table></div></section>";
}

}  // namespace cudal1::bench_page
