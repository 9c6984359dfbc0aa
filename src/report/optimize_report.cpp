#include "report/optimize_report.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/format.h"
#include "report/html.h"
#include "report/page.h"
#include "report/svg.h"

namespace cudal1 {

using json = nlohmann::json;

namespace {

std::string text(const std::string& s, std::size_t max_bytes = 200) { return escape_html_cut(s, max_bytes); }

std::string field(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::string speed_cell(const std::optional<double>& v) {
  return v && *v > 0 ? "<td class=\"num\">" + format_speedup(*v) + "</td>" : "<td class=\"na\">-</td>";
}

std::string tasks_table(const json& tasks) {
  std::set<std::string> baselines;
  for (auto& t : tasks)
    if (t.contains("best_speedups") && t["best_speedups"].is_object())
      for (auto& [k, v] : t["best_speedups"].items()) if (k != "eager") baselines.insert(k);
  std::string out = "<section id=\"tasks\"><h2>Tasks</h2><div class=\"wide\"><table class=\"sortable\"><thead><tr>"
                    "<th>task</th><th>rounds</th><th>tried</th><th>evaluated</th><th>correct</th><th>hacks</th><th>best vs eager</th>";
  for (auto& b : baselines) out += "<th>vs " + text(b, 60) + "</th>";
  out += "<th>best (label)</th><th>best file</th><th>stopped</th></tr></thead><tbody>";
  for (auto& t : tasks) {
    out += "<tr><td>" + text(field(t, "task")) + "</td>";
    for (const char* k : {"rounds", "tried", "evaluated", "correct", "hacks"})
      out += "<td class=\"num\">" + std::to_string(int(number(t, k).value_or(0))) + "</td>";
    out += speed_cell(number(t, "best_speedup"));
    for (auto& b : baselines) out += speed_cell(t.contains("best_speedups") ? number(t["best_speedups"], b.c_str()) : std::nullopt);
    out += "<td>" + text(field(t, "best_label"), 120) + "</td>";
    // best/ holds a file only for an answer that beat the reference by more than the noise.
    std::string note = field(t, "best_note");
    out += "<td>" + (t.contains("best_file") ? format_speedup(number(t, "best_file_speedup").value_or(0)) : std::string("none")) +
           (note.empty() ? "" : "<br><small>" + text(note, 200) + "</small>") + "</td><td>" +
           (t.value("stopped_early", false) ? "early" : "-") + "</td></tr>";
  }
  return out + "</tbody></table></div></section>\n";
}

// One task's rounds, from its samples in order.
std::string rounds_table(const std::string& task, const std::vector<const RlSample*>& rows) {
  struct Round {
    int answers = 0, accepted = 0, revisions = 0, revised_accepted = 0;
    double reward = 0;
    std::optional<double> best;
    std::map<std::string, int> outcomes;
  };
  std::map<int, Round> rounds;
  bool turns = false;  // optimize --turns: some answers revise earlier ones
  for (auto* x : rows) {
    Round& r = rounds[x->round];
    ++r.answers;
    if (x->turn > 0) {
      turns = true;
      ++r.revisions;
      r.revised_accepted += x->accepted;
    }
    r.accepted += x->accepted;
    r.reward += x->reward;
    if (x->speedup && (!r.best || *x->speedup > *r.best)) r.best = x->speedup;
    if (x->outcome != "ok") ++r.outcomes[x->outcome];
    else if (!x->status.empty() && !x->accepted) ++r.outcomes[x->status];
    else if (x->status.empty()) ++r.outcomes["evaluation failed"];  // its error says why
  }
  std::string out = "<h3>" + text(task) + "</h3><table><thead><tr><th>round</th><th>answers</th><th>accepted</th>" +
                    std::string(turns ? "<th>revisions (accepted)</th>" : "") +
                    "<th>best of round</th><th>best so far</th><th>mean reward</th><th>not accepted</th></tr></thead><tbody>";
  std::optional<double> so_far;
  for (auto& [n, r] : rounds) {
    if (r.best && (!so_far || *r.best > *so_far)) so_far = r.best;
    std::string failed;
    for (auto& [k, c] : r.outcomes) failed += (failed.empty() ? "" : ", ") + text(k, 40) + " " + std::to_string(c);
    char mean[32];
    std::snprintf(mean, sizeof mean, "%+.2f", r.reward / std::max(1, r.answers));
    out += "<tr><td class=\"num\">" + std::to_string(n) + "</td><td class=\"num\">" + std::to_string(r.answers) +
           "</td><td class=\"num\">" + std::to_string(r.accepted) + "</td>" +
           (turns ? "<td class=\"num\">" + std::to_string(r.revisions) + " (" + std::to_string(r.revised_accepted) + ")</td>" : "") +
           speed_cell(r.best) + speed_cell(so_far) +
           "<td class=\"num\">" + mean + "</td><td>" + (failed.empty() ? "-" : failed) + "</td></tr>";
  }
  return out + "</tbody></table>";
}

// The judge's verdicts (summary "judgements", judge/judge.h), when the run had a judge.
std::string judge_section(const json& summary) {
  if (!summary.is_object() || !summary.contains("judgements") || !summary["judgements"].is_array()) return "";
  const json& judge = summary.value("judge", json::object());
  std::string out = "<section id=\"judge\"><h2>The judge</h2><p class=\"note\">A second opinion from " +
                    text(field(judge, "model"), 120) + " (" + text(field(judge, "mode"), 20) +
                    " mode) on suspicious accepted answers.</p>";
  if (summary["judgements"].empty()) return out + "<p class=\"empty\">No answer was suspicious.</p></section>\n";
  out += "<div class=\"wide\"><table><thead><tr><th>task</th><th>label</th><th>verdict</th><th>reason</th><th>why asked</th>"
         "<th>nearest known hacks</th></tr></thead><tbody>";
  for (auto& j : summary["judgements"]) {
    std::string nearest;
    for (auto& n : j.value("nearest", json::array()))
      nearest += (nearest.empty() ? "" : ", ") + text(field(n, "family"), 40) + " " + format_fixed(n.value("similarity", 0.0), 2);
    out += "<tr><td>" + text(field(j, "task")) + "</td><td>" + text(field(j, "label"), 120) + "</td><td>" +
           text(field(j, "verdict"), 20) + "</td><td>" + text(field(j, "reason"), 400) + "</td><td>" +
           text(field(j, "suspicion"), 200) + "</td><td>" + (nearest.empty() ? "-" : nearest) + "</td></tr>";
  }
  return out + "</tbody></table></div></section>\n";
}

}  // namespace

std::string optimize_report_html(const std::vector<RlSample>& samples, const json& summary) {
  std::string run = field(summary, "run");
  std::string title = "cudal1 optimize" + std::string(run.empty() ? "" : ": " + truncate_utf8(run, 200));
  json tasks = summary.is_object() && summary.contains("tasks") && summary["tasks"].is_array() ? summary["tasks"] : json::array();
  std::string body = "<header><h1>" + escape_html(title) + "</h1><p class=\"sub\">policy " + text(field(summary, "policy")) +
                     " &middot; device " + text(field(summary, "device")) + " &middot; " + std::to_string(samples.size()) +
                     " answers over " + std::to_string(tasks.size()) + " tasks</p></header>\n";
  body += tasks_table(tasks);
  body += judge_section(summary);

  std::vector<SvgBar> bars;
  std::vector<double> accepted;
  for (auto& t : tasks) bars.push_back({number(t, "best_speedup"), std::nullopt, "st-acc", field(t, "task")});
  for (auto& x : samples)
    if (x.accepted && x.speedup) accepted.push_back(*x.speedup);
  body += "<section id=\"plots\"><h2>Speedups against eager</h2><p class=\"note\">Log scale; the dashed line is 1x. "
          "Left: each task's best accepted answer. Right: every accepted answer.</p><div class=\"figs\"><figure>" +
          svg_bars(bars, SvgScale::log2, "best per task") + "</figure><figure>" +
          (accepted.empty() ? std::string("<p class=\"empty\">No accepted answer has a speedup.</p>")
                            : svg_histogram(accepted, "accepted answers")) +
          "</figure></div></section>\n";

  std::map<std::string, std::vector<const RlSample*>> by_task;
  std::vector<std::string> order;
  for (auto& x : samples) {
    if (!by_task.count(x.task_id)) order.push_back(x.task_id);
    by_task[x.task_id].push_back(&x);
  }
  body += "<section id=\"rounds\"><h2>Rounds</h2>";
  if (order.empty()) body += "<p class=\"empty\">No answers yet.</p>";
  for (auto& t : order) body += rounds_table(t, by_task[t]);
  body += "</section>\n";
  return html_page(escape_html(title), body, "optimize report");
}

}  // namespace cudal1
