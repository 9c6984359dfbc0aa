// The bench report's Markdown summary: what a pull request or a notes file quotes.
#include "report/bench_carried_rows.h"
#include "report/bench_names.h"
#include "report/bench_claims.h"
#include "report/bench_provenance.h"
#include "report/bench_report.h"
#include "report/html.h"

namespace cudal1 {

using json = nlohmann::json;

namespace {

std::string md(const std::string& s, std::size_t max_bytes = 200) {
  return escape_markdown(truncate_utf8(s, max_bytes));
}

std::string stat(const std::optional<double>& v) { return v ? format_speedup(*v) : "-"; }

// The set's own claims beside what was measured (report/bench_claims.h defines each column).
std::string claims_table(const json& bench) {
  std::vector<BenchClaimStats> claims = bench_claims(bench);
  if (claims.empty()) return "";
  std::string out = "\n## The kernel set's claims\n\n" + bench_claims_rule() + "\n\n| level | baseline |";
  std::string rule = "| --- | --- |";
  for (auto& h : bench_claims_headings()) out += " " + h + " |", rule += " ---: |";
  out += "\n" + rule + "\n";
  for (auto& c : claims)
    out += "| " + bench_group_name(c.level) + " | " + md(c.baseline, 80) + " | " + std::to_string(c.claims) + " | " +
           std::to_string(c.hold) + " | " + std::to_string(c.below) + " | " + std::to_string(c.not_accepted) + " | " +
           stat(c.claimed_geomean) + " | " + stat(c.claimed_geomean_accepted) + " | " +
           stat(c.measured_geomean_accepted) + " |\n";
  return out;
}

// Rows from several cards: each card's own figures, which the tables above pool.
std::string per_card_table(const json& bench) {
  std::vector<BenchCardFigures> cards = bench_card_figures(bench);
  if (cards.empty()) return "";
  std::string out = std::string("\n## Per card\n\n") + bench_card_figures_rule() + "\n\n| card | tasks | correct |";
  std::string rule = "| --- | ---: | ---: |";
  for (auto& [baseline, g] : cards.front().geomeans) out += " " + md(baseline, 80) + " |", rule += " ---: |";
  out += " claims hold |\n" + rule + " ---: |\n";
  for (auto& c : cards) {
    out += "| " + md(c.card, 120) + " | " + std::to_string(c.tasks) + " | " + std::to_string(c.accepted) + " |";
    for (auto& [baseline, g] : c.geomeans) out += " " + stat(g) + " |";
    out += " " + (c.claims_hold.empty() ? std::string("-") : c.claims_hold) + " |\n";
  }
  return out;
}

// Every scored row that was not accepted, with the reason: the first blocking flag, else the
// error's first line (what failed; the lines after it quote the kernel's code, which a summary
// shared about someone else's kernels must not).
std::string not_accepted_table(const json& bench) {
  std::string out;
  for (auto& row : bench_rows(bench)) {
    if (bench_not_scored(row) || bench_accepted(row)) continue;
    std::string error = bench_text(row, "error");
    std::string why = error.substr(0, error.find('\n'));
    for (auto& f : bench_flags(row))
      if (f.severity == "block") {
        why = f.name + ": " + f.evidence;
        break;
      }
    out += "| " + md(bench_text(row, "task"), 120) + " | " + md(bench_status(row), 40) + " | " + md(why, 240) + " |\n";
  }
  if (out.empty()) return "";
  return "\n## Not accepted, and why\n\n| task | status | why |\n| --- | --- | --- |\n" + out;
}

}  // namespace

std::string bench_markdown(const json& written) {
  const json bench = canonical_bench(written);
  BenchStats s = bench_stats(bench);
  std::string out = "# " + md(bench_text(bench, "title", "cudal1 bench"), 300) + "\n\n";

  std::vector<std::string> parts;
  if (auto v = bench_text(bench, "suite"); !v.empty()) parts.push_back("suite " + md(v));
  if (auto v = bench_text(bench, "kernel_set"); !v.empty()) parts.push_back("kernels " + md(v));
  const json& prov = bench.is_object() && bench.contains("provenance") ? bench.at("provenance") : json();
  for (const std::string& k : bench_provenance_keys())
    if (auto v = bench_text(prov, k.c_str()); !v.empty()) parts.push_back((k == "device_name" ? "device" : k) + " " + md(v));
  if (!parts.empty()) {
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
    out += "\n\n";
  }
  if (std::string note = mixed_provenance_note(mixed_provenance(bench)); !note.empty()) out += "**" + md(note, 600) + "**\n\n";
  if (std::string note = carried_rows_note(bench); !note.empty()) out += md(note, 600) + "\n\n";

  out += "| level | baseline | tasks | correct | mean | median | geomean | share >1.01x | n/a | invalid |\n";
  out += "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (auto& l : s.levels) {
    std::string level = bench_group_name(l.level);
    std::string correct = l.tasks ? std::to_string(l.accepted) + "/" + std::to_string(l.tasks) +
                                        " (" + format_percent(l.correct_rate) + ")" : "-";
    for (auto& b : l.baselines)
      out += "| " + level + " | " + md(b.baseline, 80) + " | " + std::to_string(l.tasks) + " | " +
             correct + " | " + stat(b.mean) + " | " + stat(b.median) + " | " + stat(b.geomean) +
             " | " + (l.tasks ? format_percent(b.share_above) : "-") + " | " +
             std::to_string(b.unavailable) + " | " + std::to_string(b.invalid) + " |\n";
    if (l.baselines.empty())
      out += "| " + level + " | - | " + std::to_string(l.tasks) + " | " + correct + " | | | | | | |\n";
  }
  out += "\nStatistics are over accepted rows with a valid speedup; share >1.01x is over all tasks "
         "of the level (failed rows count as not faster); n/a: baseline not available.\n";
  if (s.not_scored) {
    out += "\nNot scored yet, and outside every figure above: " + std::to_string(s.not_scored) + " rows (";
    bool first = true;
    for (auto& l : s.levels)
      if (l.level != "all" && l.not_scored) {
        out += std::string(first ? "" : ", ") + bench_group_name(l.level) + ": " + std::to_string(l.not_scored);
        first = false;
      }
    out += "). The figures cover the " + std::to_string(s.levels.back().tasks) + " rows scored so far.\n";
  }
  out += per_card_table(bench);
  out += claims_table(bench);

  out += "\n## Flags\n\nFlags: " + std::to_string(s.flags);
  if (s.flags) {
    out += "\n\n| flag | count | blocking |\n| --- | ---: | ---: |\n";
    for (auto& [name, n] : s.flag_counts) {
      auto it = s.flag_blocking.find(name);
      out += "| " + md(name, 80) + " | " + std::to_string(n) + " | " +
             std::to_string(it == s.flag_blocking.end() ? 0 : it->second) + " |\n";
    }
  } else {
    out += "\n";
  }
  return out + not_accepted_table(bench);
}

}  // namespace cudal1
