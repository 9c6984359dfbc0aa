// The bench report's HTML page in a real browser (headless Chromium): it must load, show its
// content, sort its tables, and say nothing at level warning or error on the console. Before any
// report is judged, a page with deliberate console errors proves the detection catches them, so
// a broken detector fails the test instead of passing it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "report/bench_report.h"
#include "report/chromium_console.h"
#include "report/optimize_report.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// A temp folder removed when the test passes, kept (and named) when it fails or when
// CUDAL1_KEEP_REPORT is set (to look at the pages).
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "cudal1-bench-browser-XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~TempDir() {
    if (::testing::Test::HasFailure() || std::getenv("CUDAL1_KEEP_REPORT")) std::cerr << "kept " << path << "\n";
    else fs::remove_all(path);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return "file://" + (path / name).string();
  }
};

std::string describe(const cudal1::PageLoad& p) {
  std::string s = "command: " + p.command + "\n";
  if (!p.error.empty()) s += "error: " + p.error + "\n";
  for (auto& m : p.messages) s += "[" + m.source + " " + m.level + "] " + m.text + "\n";
  for (auto& l : p.stderr_console) s += "stderr: " + l + "\n";
  return s;
}

bool said(const cudal1::PageLoad& p, const std::string& level, const std::string& text) {
  for (auto& m : p.messages)
    if (m.level == level && m.text.find(text) != std::string::npos) return true;
  return false;
}

bool stderr_said(const cudal1::PageLoad& p, const std::string& text) {
  for (auto& l : p.stderr_console)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

// Asserts a clean load: no console message at warning or error from the protocol, no console
// line at all in Chromium's log (the page logs nothing), and the expected text in the DOM.
void expect_clean(const cudal1::PageLoad& p, const std::string& must_contain) {
  ASSERT_TRUE(p.error.empty()) << describe(p);
  EXPECT_TRUE(p.loaded) << "the load event never fired\n" << describe(p);
  for (auto& m : p.messages)
    EXPECT_FALSE(cudal1::is_warning_or_error(m)) << "[" << m.source << " " << m.level << "] " << m.text;
  EXPECT_TRUE(p.stderr_console.empty()) << describe(p);
  EXPECT_NE(p.dom.find(must_contain), std::string::npos) << "not in the DOM: " << must_contain;
}

json row(int i, int level, const std::string& status, bool accepted, json speedup) {
  return {{"task", "level" + std::to_string(level) + "/" + std::to_string(i) + "_task"},
          {"level", level}, {"status", status}, {"accepted", accepted}, {"speedup", std::move(speedup)}};
}

// About 30 rows: every status, flags of each severity, claimed speedups, unavailable baselines,
// invalid numbers and hostile text.
json realistic() {
  const std::vector<std::string> failures = {"incorrect", "compile_error", "runtime_error", "timeout",
                                             "crash", "rejected", "error", "something_new"};
  json rows = json::array();
  for (int i = 0; i < 30; ++i) {
    int level = i % 3 + 1;
    bool ok = i % 4 != 3;
    std::string status = ok ? "ok" : failures[(i / 4) % failures.size()];
    double s = std::exp2((i % 11 - 4) * 0.45);
    json r = row(i, level, status, ok, {{"eager", s}, {"compile", s * 0.8},
                                        {"compile_ro", s * 0.7}, {"cuda_graph", s * 0.9},
                                        {"cudnn_autotune", s * 1.02}});
    if (!ok && i % 8 == 3) r["speedup"] = json::object();
    if (i % 5 == 0) r["claimed_speedup"] = s * 3;
    if (i % 2 == 0) r["sol_fraction"] = (i % 10) / 10.0 + 0.05;
    r["runtime_ms"] = {{"candidate", 0.1 + i * 0.01}, {"eager", (0.1 + i * 0.01) * s}};
    if (i % 6 == 1) {
      r["speedup"]["cuda_graph"] = nullptr;
      r["baseline_unavailable"] = {{"cuda_graph", "capture failed: operation not permitted when stream is capturing"}};
    }
    if (i % 7 == 2) r["flags"] = {{{"name", "timing_noisy"}, {"severity", "warn"}, {"evidence", "cv 6.1% over 40 buckets"}}};
    if (status == "rejected")
      r["flags"] = {{{"name", "decoy_kernel"}, {"severity", "block"}, {"evidence", "91% of GPU time in aten::mm"}},
                    {{"name", "reduced_precision"}, {"severity", "info"}, {"evidence", "bf16 matmul"}}};
    rows.push_back(r);
  }
  rows[4]["task"] = "level2/<script>console.error('pwned')</script>";
  rows[5]["flags"] = {{{"name", "x\"><img src=x onerror=console.error(1)>"}, {"severity", "warn"},
                       {"evidence", "</td><script>console.warn('pwned')</script>\nline 2"}}};
  rows[6]["speedup"]["eager"] = 0;
  rows[8]["speedup"]["compile"] = -2;
  rows[9]["speedup"]["cudnn_autotune"] = std::numeric_limits<double>::quiet_NaN();
  rows[10]["sol_fraction"] = 1.7;
  return {{"title", "CUDA-L1 a100.jsonl on NVIDIA H200 <b>bold?</b>"},
          {"suite", "tasks/ (62 tasks)"},
          {"kernel_set", "a100.jsonl"},
          {"provenance", {{"device_name", "NVIDIA H200"}, {"driver", "580.65"}, {"torch", "2.11.0+cu130"},
                          {"cuda", "13.0"}, {"cudal1", "0.1.0"}, {"protocol", "v3"}}},
          {"baselines", {"eager", "compile", "compile_ro", "cuda_graph", "cudnn_autotune"}},
          {"rows", rows}};
}

class BenchReportBrowser : public ::testing::Test {
 protected:
  // Once per run: find Chromium and prove the detection catches what it must.
  static void SetUpTestSuite() {
    auto found = cudal1::find_chromium();
    if (!found) {
      problem_ = "chromium is not installed. It is a required dependency: run `make setup` "
                 "(scripts/setup.sh installs it), or point CUDAL1_CHROMIUM at a Chromium binary.";
      return;
    }
    chromium_ = *found;
    TempDir dir;
    auto bad = cudal1::load_page(chromium_, dir.write("bad.html",
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>bad</title></head><body>"
        "<p id=\"here\">loaded</p><img src=\"missing.png\" alt=\"\">"
        "<script>console.error('deliberate-error'); console.warn('deliberate-warning'); console.log('plain');</script>"
        "<script>var broken = ;</script>"
        "<script>notDefinedAnywhere();</script></body></html>"));
    std::string d = describe(bad);
    if (!bad.error.empty() || !bad.loaded) problem_ = "the detection page did not load:\n" + d;
    else if (!said(bad, "error", "deliberate-error")) problem_ = "console.error not detected:\n" + d;
    else if (!said(bad, "warning", "deliberate-warning")) problem_ = "console.warn not detected:\n" + d;
    else if (!said(bad, "error", "SyntaxError")) problem_ = "a syntax error not detected:\n" + d;
    else if (!said(bad, "error", "notDefinedAnywhere")) problem_ = "an uncaught error not detected:\n" + d;
    else if (!said(bad, "error", "missing.png")) problem_ = "a failed resource load not detected:\n" + d;
    else if (said(bad, "error", "plain") || said(bad, "warning", "plain")) problem_ = "console.log taken for an error:\n" + d;
    else if (!stderr_said(bad, "deliberate-error") || !stderr_said(bad, "SyntaxError"))
      problem_ = "Chromium's log lost its CONSOLE lines:\n" + d;
    else if (bad.dom.find("<p id=\"here\">loaded</p>") == std::string::npos)
      problem_ = "the DOM was not read back:\n" + d;
  }

  void SetUp() override { ASSERT_TRUE(problem_.empty()) << problem_; }

  static inline std::string chromium_, problem_;
};

}  // namespace

TEST_F(BenchReportBrowser, RealisticReportLoadsCleanlyAndSorts) {
  TempDir dir;
  std::string url = dir.write("report.html", cudal1::bench_html(realistic()));
  // Click the rows table's eager heading once (ascending), read the column, click again.
  const std::string column =
      "(() => { const t = document.querySelector('table.rows'); const i = [...t.tHead.rows[0].cells]"
      ".findIndex(c => c.textContent === 'eager'); t.tHead.rows[0].cells[i].click();"
      " return [...t.tBodies[0].rows].map(r => r.cells[i].textContent); })()";
  auto page = cudal1::load_page(chromium_, url, {
      "document.querySelectorAll('table.rows tbody tr').length",
      "document.querySelectorAll('svg.plot').length",
      column, column,
      "document.title"});
  expect_clean(page, "<section id=\"summary\">");
  ASSERT_EQ(page.results.size(), 5u) << describe(page);
  EXPECT_EQ(page.results[0], "30");
  EXPECT_EQ(page.results[1], "7");  // five histograms, per-task bars, speed of light
  EXPECT_NE(page.dom.find("How to read this"), std::string::npos);
  EXPECT_NE(page.dom.find("level2/&lt;script&gt;console.error('pwned')&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(page.results[4], "\"CUDA-L1 a100.jsonl on NVIDIA H200 <b>bold?</b>\"");  // text, not markup

  // Ascending: numbers first in increasing order, then "n/a" / "invalid"; then descending.
  for (int pass = 0; pass < 2; ++pass) {
    json cells = json::parse(page.results[2 + pass]);
    std::vector<double> numbers;
    for (auto& c : cells) {
      std::string t = c.get<std::string>();
      if (!t.empty() && (std::isdigit(static_cast<unsigned char>(t[0])))) numbers.push_back(std::stod(t));
    }
    ASSERT_GT(numbers.size(), 20u);
    for (std::size_t k = 1; k < numbers.size(); ++k)
      EXPECT_TRUE(pass == 0 ? numbers[k - 1] <= numbers[k] : numbers[k - 1] >= numbers[k]) << cells.dump();
  }
}

TEST_F(BenchReportBrowser, EdgeCaseReportsLoadCleanly) {
  TempDir dir;
  json big = realistic();
  json rows = json::array();
  for (int i = 0; i < 2000; ++i) {
    json r = big["rows"][i % 30];
    r["task"] = r["task"].get<std::string>() + "_" + std::to_string(i);
    rows.push_back(r);
  }
  big["rows"] = rows;
  json empty = realistic();
  empty["rows"] = json::array();
  json one = realistic();
  one["rows"] = json::array({one["rows"][0]});
  json none_accepted = realistic();
  for (auto& r : none_accepted["rows"]) r["accepted"] = false;
  // Sections: summary, how, distribution, tasks, sol, flags, rows; and claims where a row claims.
  struct Case {
    std::string name;
    json input;
    const char* sections;
  };
  const std::vector<Case> cases = {{"big", big, "8"}, {"empty", empty, "7"}, {"one", one, "8"},
                                   {"none_accepted", none_accepted, "8"}, {"null", json(), "7"}};
  for (auto& [name, input, sections] : cases) {
    SCOPED_TRACE(name);
    auto page = cudal1::load_page(chromium_, dir.write(name + ".html", cudal1::bench_html(input)),
                                  {"document.querySelectorAll('section').length"});
    expect_clean(page, "<section id=\"rows\">");
    ASSERT_EQ(page.results.size(), 1u);
    EXPECT_EQ(page.results[0], sections);
  }
}

// The optimisation run's page (report/optimize_report.h) on the same terms: loads cleanly, its
// plots drawn, hostile completion text shown as text, its tasks table sortable.
TEST_F(BenchReportBrowser, OptimizeRunReportLoadsCleanly) {
  TempDir dir;
  std::vector<cudal1::RlSample> samples;
  const char* outcomes[] = {"ok", "ok", "no_code", "ok"};
  for (int task = 0; task < 2; ++task)
    for (int round = 1; round <= 3; ++round)
      for (int slot = 0; slot < 4; ++slot) {
        cudal1::RlSample x;
        x.run = "demo";
        x.task_id = task ? "level2/<img src=x onerror=alert(1)>" : "level1/23_silu";
        x.round = round;
        x.slot = slot;
        x.outcome = outcomes[slot];
        x.label = "graph+compile";
        x.completion = "<script>console.error('pwned')</script>";
        x.status = x.outcome == "ok" ? (slot == 1 ? "incorrect" : "ok") : "";
        x.accepted = x.status == "ok";
        if (x.accepted) x.speedup = 0.8 + 0.3 * round + 0.1 * slot;
        x.reward = x.accepted ? 1.0 : -0.5;
        samples.push_back(x);
      }
  json summary = {{"run", "demo <b>run</b>"}, {"policy", "rewrite"}, {"device", "cuda"},
                  {"tasks", json::array({{{"task", "level1/23_silu"}, {"rounds", 3}, {"tried", 12}, {"evaluated", 9},
                                          {"correct", 6}, {"hacks", 0}, {"best_speedup", 2.0},
                                          {"best_speedups", {{"eager", 2.0}, {"torch_compile", 1.1}}},
                                          {"best_label", "graph"}, {"stopped_early", true}},
                                         {{"task", "level2/<img src=x onerror=alert(1)>"}, {"rounds", 3},
                                          {"best_speedup", nullptr}}})}};
  for (const auto& [name, rows] : std::vector<std::pair<std::string, std::vector<cudal1::RlSample>>>{{"run", samples}, {"empty", {}}}) {
    SCOPED_TRACE(name);
    auto page = cudal1::load_page(chromium_, dir.write(name + ".html", cudal1::optimize_report_html(rows, summary)),
                                  {"document.querySelectorAll('svg.plot').length", "document.title",
                                   "document.querySelectorAll('#rounds table').length"});
    expect_clean(page, "<section id=\"rounds\">");
    ASSERT_EQ(page.results.size(), 3u) << describe(page);
    EXPECT_EQ(page.results[1], "\"cudal1 optimize: demo <b>run</b>\"");
    EXPECT_EQ(page.results[2], name == "run" ? "2" : "0");
    if (name == "run") EXPECT_EQ(page.results[0], "2");
    EXPECT_NE(page.dom.find("level2/&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  }
}
