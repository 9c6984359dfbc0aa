#include "report/train_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"
#include "report/bench_stats.h"
#include "report/html.h"
#include "report/page.h"
#include "report/svg.h"

namespace fs = std::filesystem;

namespace cudal1 {

using json = nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A per-step field drawn as a curve, when a stage's log has it.
struct Curve {
  const char* key;
  const char* spread;  // the field of its standard deviation, drawn as a band; or null
  const char* title;
  const char* y_label;
  bool percent;     // a fraction, labelled in percent
  bool from_zero;   // the axis reaches 0, so a drift is seen at its true size
  bool to_one;      // the axis reaches 100%: how far from all correct
};

constexpr Curve kCurves[] = {
    {"loss", nullptr, "loss", "", false, false, false},
    {"raw_reward_mean", "raw_reward_std", "raw reward, mean \xC2\xB1 std", "speedup (0 failed, -1 hack)", false, true, false},
    {"reward_mean", "reward_std", "reward after normalisation, mean \xC2\xB1 std", "", false, true, false},
    {"correct_rate", nullptr, "correct rate", "", true, true, true},
    {"kl", nullptr, "KL to the reference policy (k3)", "", false, true, false},
    {"clip_fraction", nullptr, "clip fraction", "tokens at the clip bound", true, true, false},
    {"grad_norm", nullptr, "gradient norm", "", false, true, false},
    {"lr", nullptr, "learning rate", "", false, true, false},
};

// The stage-over-stage plots: the sampling stages' outcome, end to end.
constexpr const char* kAcrossStages[] = {"correct_rate", "raw_reward_mean"};

const Curve& curve(const char* key) {
  return *std::find_if(std::begin(kCurves), std::end(kCurves), [&](const Curve& c) { return std::string(c.key) == key; });
}

std::string text(const std::string& s, std::size_t max_bytes = 200) { return escape_html_cut(s, max_bytes); }

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string format_seconds(double s) {
  if (s < 120) return format("%.1f s", s);
  long m = std::lround(s / 60);
  if (m < 120) return std::to_string(m) + " min";
  return std::to_string(m / 60) + " h " + std::to_string(m % 60) + " min";
}

bool has(const TrainLog& log, const char* key) {
  return std::any_of(log.steps.begin(), log.steps.end(), [&](const json& s) { return bench_number(s, key).has_value(); });
}

// A stage that samples answers and is rewarded (selfsup, crl), whatever its name says.
bool samples_answers(const TrainLog& log) { return has(log, "correct_rate") || has(log, "raw_reward_mean"); }

// The step number a line gives, else its place in the log.
double step_of(const TrainLog& log, std::size_t i) { return bench_number(log.steps[i], "step").value_or(double(i + 1)); }

struct FieldSummary {
  std::optional<double> first, last, mean;
};

FieldSummary summarize(const TrainLog& log, const char* key) {
  FieldSummary f;
  double sum = 0;
  int n = 0;
  for (auto& s : log.steps)
    if (auto v = bench_number(s, key)) {
      if (!f.first) f.first = v;
      f.last = v;
      sum += *v;
      ++n;
    }
  if (n) f.mean = sum / n;
  return f;
}

std::string number_cell(const std::optional<double>& v, const char* fmt) {
  return v ? "<td class=\"num\">" + format(fmt, *v) + "</td>" : "<td class=\"na\">-</td>";
}

std::string percent_cell(const std::optional<double>& v) {
  return v ? "<td class=\"num\">" + format_percent(*v) + "</td>" : "<td class=\"na\">-</td>";
}

std::string stage_label(const TrainLog& log) { return text(log.stage, 60); }

std::string summary_section(const std::vector<TrainLog>& stages) {
  std::string out = "<section id=\"stages\"><h2>Stages</h2><p class=\"note\">First and last: the first and last "
                    "logged step with the value; mean: over those steps. The raw reward is the speedup over eager when "
                    "an answer is accepted, 0 when it fails and -1 for a caught hack.</p><div class=\"wide\"><table><thead>"
                    "<tr><th rowspan=\"2\">stage</th><th rowspan=\"2\">folder</th><th rowspan=\"2\">steps</th>"
                    "<th rowspan=\"2\">time</th><th colspan=\"2\">loss</th><th colspan=\"3\">correct rate</th>"
                    "<th colspan=\"3\">raw reward mean</th><th rowspan=\"2\">mean KL</th><th rowspan=\"2\">mean clip fraction</th></tr>"
                    "<tr><th>first</th><th>last</th><th>first</th><th>last</th><th>mean</th><th>first</th><th>last</th>"
                    "<th>mean</th></tr></thead><tbody>";
  for (auto& log : stages) {
    FieldSummary loss = summarize(log, "loss"), rate = summarize(log, "correct_rate"), raw = summarize(log, "raw_reward_mean");
    std::optional<double> seconds = log.steps.empty() ? std::nullopt : bench_number(log.steps.back(), "seconds");
    out += "<tr><td>" + stage_label(log) + "</td><td>" + text(log.dir.string()) + "</td><td class=\"num\">" +
           std::to_string(log.steps.size()) + "</td>" +
           (seconds ? "<td class=\"num\">" + format_seconds(*seconds) + "</td>" : "<td class=\"na\">-</td>") +
           number_cell(loss.first, "%.4g") + number_cell(loss.last, "%.4g") + percent_cell(rate.first) +
           percent_cell(rate.last) + percent_cell(rate.mean) + number_cell(raw.first, "%.3g") +
           number_cell(raw.last, "%.3g") + number_cell(raw.mean, "%.3g") + number_cell(summarize(log, "kl").mean, "%.3g") +
           percent_cell(summarize(log, "clip_fraction").mean) + "</tr>";
  }
  return out + "</tbody></table></div></section>\n";
}

SvgAxis axis_for(const Curve& c, const std::string& x_label) {
  SvgAxis a{x_label, c.y_label, {}, c.percent};
  if (c.from_zero) a.y_include.push_back(0);
  if (c.to_one) a.y_include.push_back(1);
  return a;
}

// One stage's values of `c` as a series, shifted `offset` steps along x; a step without the
// value is a gap.
SvgSeries series_of(const TrainLog& log, std::size_t index, const Curve& c, double offset) {
  SvgSeries s{log.stage, svg_series_class(index), {}};
  for (std::size_t i = 0; i < log.steps.size(); ++i) {
    const json& step = log.steps[i];
    s.points.push_back({offset + step_of(log, i), bench_number(step, c.key).value_or(kNaN),
                        c.spread ? bench_number(step, c.spread).value_or(kNaN) : kNaN});
  }
  return s;
}

std::string stage_section(const TrainLog& log, std::size_t index) {
  std::string out = "<section id=\"stage-" + std::to_string(index + 1) + "\"><h2>Stage " + std::to_string(index + 1) +
                    ": " + stage_label(log) + "</h2><p class=\"sub\">" + text(log.dir.string()) + " &middot; " +
                    std::to_string(log.steps.size()) + (log.steps.size() == 1 ? " step" : " steps") + "</p>";
  if (log.cut_short)
    out += "<p class=\"note\">The log's last line was cut short (the stage stopped while writing it) and is left out.</p>";
  if (log.steps.empty()) return out + "<p class=\"empty\">No steps logged yet.</p></section>\n";
  out += "<div class=\"figs\">";
  for (const Curve& c : kCurves)
    if (has(log, c.key))
      out += "<figure>" + svg_lines({series_of(log, index, c, 0)}, axis_for(c, "step"), c.title) + "</figure>";
  return out + "</div></section>\n";
}

// The sampling stages one after another on one step axis, each in its own colour: does the
// correct rate rise from selfsup to crl?
std::string across_section(const std::vector<TrainLog>& stages) {
  std::vector<std::size_t> sampling;
  for (std::size_t i = 0; i < stages.size(); ++i)
    if (samples_answers(stages[i])) sampling.push_back(i);
  if (sampling.size() < 2) return "";
  std::vector<double> offsets;
  double offset = 0;
  for (std::size_t i : sampling) {
    offsets.push_back(offset);
    for (std::size_t k = 0; k < stages[i].steps.size(); ++k) offset = std::max(offset, offsets.back() + step_of(stages[i], k));
  }
  std::string out = "<section id=\"across\"><h2>Stage over stage</h2><p class=\"note\">The stages that sample answers, "
                    "end to end: a stage's steps follow the last step of the one before.</p><div class=\"figs\">";
  for (const char* key : kAcrossStages) {
    const Curve& c = curve(key);
    std::vector<SvgSeries> series;
    for (std::size_t k = 0; k < sampling.size(); ++k)
      if (has(stages[sampling[k]], key)) series.push_back(series_of(stages[sampling[k]], sampling[k], c, offsets[k]));
    if (!series.empty())
      out += "<figure>" + svg_lines(series, axis_for(c, "step, stages end to end"), c.title + std::string(" by stage")) +
             "</figure>";
  }
  return out + "</div></section>\n";
}

}  // namespace

TrainLog load_train_log(const fs::path& out_dir) {
  const fs::path path = out_dir / "train_log.jsonl";
  if (!fs::is_regular_file(path))
    throw Error(ErrorKind::input, "no training log at " + path.string(),
                "give the --out folder of a `cudal1 train` stage: it writes train_log.jsonl from its first step");
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto blank = [](const std::string& l) { return l.find_first_not_of(" \t\r") == std::string::npos; };
  std::size_t last = lines.size();
  while (last > 0 && blank(lines[last - 1])) --last;

  TrainLog log{"sft", out_dir, {}};
  for (std::size_t i = 0; i < last; ++i) {
    if (blank(lines[i])) continue;
    json j = json::parse(lines[i], nullptr, false);
    if (j.is_object()) {
      log.steps.push_back(std::move(j));
      continue;
    }
    // Steps are written a line at a time and flushed: only the last can be half written.
    if (i + 1 == last) {
      log.cut_short = true;
      break;
    }
    throw Error(ErrorKind::input, path.string() + ", line " + std::to_string(i + 1) + ": not a JSON object",
                "the log is damaged before its last line; delete that line, or train the stage again with a new --out");
  }
  for (auto& s : log.steps)
    if (std::string stage = bench_text(s, "stage"); !stage.empty()) {
      log.stage = stage;
      break;
    }
  return log;
}

std::string train_report_html(const std::vector<TrainLog>& stages) {
  std::string chain;
  std::size_t steps = 0;
  for (auto& log : stages) {
    chain += (chain.empty() ? "" : " &rarr; ") + stage_label(log);
    steps += log.steps.size();
  }
  std::string body = "<header><h1>cudal1 train</h1><p class=\"sub\">" + (chain.empty() ? "no stage" : chain) +
                     " &middot; " + std::to_string(steps) + " logged steps</p></header>\n";
  if (stages.empty()) return html_page("cudal1 train", body + "<p class=\"empty\">No stages.</p>", "train report");
  body += summary_section(stages) + across_section(stages);
  for (std::size_t i = 0; i < stages.size(); ++i) body += stage_section(stages[i], i);
  return html_page("cudal1 train", body, "train report");
}

}  // namespace cudal1
