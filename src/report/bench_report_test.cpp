#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "core/error.h"
#include "report/bench_carried_rows.h"
#include "report/bench_claims.h"
#include "report/bench_provenance.h"
#include "report/bench_report.h"
#include "report/html.h"
#include "report/svg.h"

using cudal1::BenchLevelStats;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

json row(const std::string& task, int level, const std::string& status, bool accepted,
         json speedup = json::object()) {
  return {{"task", task}, {"level", level}, {"status", status}, {"accepted", accepted},
          {"speedup", std::move(speedup)}};
}

// Hand-checked numbers for every statistic; see the comments next to each expectation.
json fixture() {
  json rows = json::array();
  rows.push_back(row("level1/a", 1, "ok", true, {{"eager", 2.0}, {"compile", 1.0}}));
  rows.push_back(row("level1/b", 1, "ok", true, {{"eager", 0.5}, {"compile", nullptr}}));
  json c = row("level1/c", 1, "ok", true, {{"eager", 4.0}, {"compile", 3.0}});
  c["baseline_unavailable"] = {{"compile", "capture failed: graph break"}};
  rows.push_back(c);
  rows.push_back(row("level1/d", 1, "ok", true, {{"eager", 1.0}, {"compile", 0}}));
  rows.push_back(row("level1/e", 1, "incorrect", false, {{"eager", 8.0}, {"compile", 8.0}}));
  rows.push_back(row("level1/f", 1, "compile_error", false));
  rows.push_back(row("level2/g", 2, "ok", true, {{"eager", 1.01}, {"compile", 1.02}}));
  rows.push_back(row("level2/h", 2, "ok", true,
                     {{"eager", -1.0}, {"compile", std::numeric_limits<double>::quiet_NaN()}}));
  rows.push_back(row("level2/i", 2, "timeout", false));
  rows[0]["flags"] = {{{"name", "timing_noisy"}, {"severity", "warn"}, {"evidence", "cv 4%"}}};
  rows[4]["flags"] = {{{"name", "timing_noisy"}, {"severity", "warn"}, {"evidence", "cv 9%"}},
                      {{"id", "decoy_kernel"}, {"severity", "block"}, {"evidence", "90% in aten"}}};
  return {{"title", "Fixture bench"}, {"suite", "tasks/"}, {"kernel_set", "k.jsonl"},
          {"provenance", {{"device_name", "NVIDIA H200"}, {"torch", "2.11"}}},
          {"baselines", {"eager", "compile"}}, {"rows", rows}};
}

const BenchLevelStats& level(const cudal1::BenchStats& s, const std::string& name) {
  for (auto& l : s.levels)
    if (l.level == name) return l;
  throw std::runtime_error("no level " + name);
}

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(BenchStats, LevelOneAgainstHandComputedValues) {
  auto s = cudal1::bench_stats(fixture());
  ASSERT_EQ(s.baselines, (std::vector<std::string>{"eager", "compile"}));
  auto& l1 = level(s, "1");
  EXPECT_EQ(l1.tasks, 6);
  EXPECT_EQ(l1.accepted, 4);
  EXPECT_DOUBLE_EQ(l1.correct_rate, 4.0 / 6);
  EXPECT_EQ(l1.statuses.at("ok"), 4);
  EXPECT_EQ(l1.statuses.at("compile_error"), 1);

  auto& eager = l1.baselines[0];  // accepted: 2, 0.5, 4, 1; the incorrect row's 8 is left out
  EXPECT_EQ(eager.measured, 4);
  EXPECT_DOUBLE_EQ(*eager.mean, 7.5 / 4);
  EXPECT_DOUBLE_EQ(*eager.median, 1.5);              // even count: (1 + 2) / 2
  EXPECT_NEAR(*eager.geomean, std::sqrt(2.0), 1e-12); // (2 * 0.5 * 4 * 1)^(1/4)
  EXPECT_EQ(eager.above, 2);                          // 2 and 4
  EXPECT_DOUBLE_EQ(eager.share_above, 2.0 / 6);       // failures stay in the denominator

  auto& compile = l1.baselines[1];
  EXPECT_EQ(compile.measured, 1);
  EXPECT_EQ(compile.unavailable, 2);  // null, and a reason that outranks the number 3.0
  EXPECT_EQ(compile.invalid, 1);      // 0
  EXPECT_DOUBLE_EQ(*compile.mean, 1.0);
  EXPECT_DOUBLE_EQ(*compile.geomean, 1.0);
  EXPECT_EQ(compile.above, 0);
  EXPECT_DOUBLE_EQ(compile.share_above, 0.0);
}

TEST(BenchStats, ThresholdIsStrictAndInvalidNumbersAreCounted) {
  auto s = cudal1::bench_stats(fixture());
  auto& l2 = level(s, "2");
  EXPECT_EQ(l2.tasks, 3);
  EXPECT_EQ(l2.accepted, 2);
  auto& eager = l2.baselines[0];
  EXPECT_EQ(eager.measured, 1);
  EXPECT_EQ(eager.invalid, 1);  // -1
  EXPECT_EQ(eager.above, 0);    // 1.01 is not above 1.01
  auto& compile = l2.baselines[1];
  EXPECT_EQ(compile.invalid, 1);  // NaN
  EXPECT_EQ(compile.above, 1);    // 1.02
  EXPECT_DOUBLE_EQ(compile.share_above, 1.0 / 3);
}

TEST(BenchStats, AllAndEmptyLevels) {
  auto s = cudal1::bench_stats(fixture());
  ASSERT_EQ(s.levels.size(), 4u);
  EXPECT_EQ(s.levels.back().level, "all");
  auto& l3 = level(s, "3");
  EXPECT_EQ(l3.tasks, 0);
  EXPECT_DOUBLE_EQ(l3.correct_rate, 0.0);
  EXPECT_FALSE(l3.baselines[0].mean.has_value());
  EXPECT_DOUBLE_EQ(l3.baselines[0].share_above, 0.0);

  auto& all = level(s, "all");
  EXPECT_EQ(all.tasks, 9);
  EXPECT_EQ(all.accepted, 6);
  auto& eager = all.baselines[0];  // 2, 0.5, 4, 1, 1.01
  EXPECT_EQ(eager.measured, 5);
  EXPECT_DOUBLE_EQ(*eager.median, 1.01);  // odd count: the middle value
  EXPECT_NEAR(*eager.mean, 8.51 / 5, 1e-12);
  EXPECT_NEAR(*eager.geomean, std::pow(4 * 1.01, 0.2), 1e-12);
  EXPECT_DOUBLE_EQ(eager.share_above, 2.0 / 9);

  EXPECT_EQ(s.flags, 3);
  EXPECT_EQ(s.flag_counts.at("timing_noisy"), 2);
  EXPECT_EQ(s.flag_counts.at("decoy_kernel"), 1);  // "id" read as the name
  EXPECT_EQ(s.flag_blocking.at("decoy_kernel"), 1);
}

TEST(BenchStats, OddLevelsAndDerivedBaselines) {
  json rows = json::array();
  rows.push_back(row("x", 7, "ok", true, {{"cuda_graph", 2.0}, {"eager", 3.0}}));
  json no_level = row("y", 1, "ok", true, {{"eager", 5.0}, {"extra", "fast"}});
  no_level.erase("level");
  rows.push_back(no_level);
  rows.push_back(json("not an object"));
  rows.push_back(row("z", 1, "ok", true, {{"eager", std::numeric_limits<double>::infinity()}}));
  auto s = cudal1::bench_stats({{"rows", rows}});
  EXPECT_EQ(s.baselines, (std::vector<std::string>{"eager", "cuda_graph", "extra"}));
  ASSERT_EQ(s.levels.size(), 5u);  // 1, 2, 3, 7, all
  EXPECT_EQ(level(s, "7").tasks, 1);
  EXPECT_EQ(level(s, "1").tasks, 1);
  EXPECT_EQ(level(s, "1").baselines[0].invalid, 1);  // inf
  auto& all = level(s, "all");
  EXPECT_EQ(all.tasks, 4);  // the non-object row is a task that was not accepted
  EXPECT_EQ(all.accepted, 3);
  EXPECT_EQ(all.statuses.at("unknown"), 1);
  EXPECT_EQ(all.baselines[2].invalid, 1);  // "fast"
  EXPECT_EQ(all.baselines[1].unavailable, 2);
}

TEST(BenchStats, MalformedInputIsNoRows) {
  for (const json& bad : {json(), json::array({1, 2}), json("x"), json{{"rows", 3}}}) {
    auto s = cudal1::bench_stats(bad);
    EXPECT_EQ(s.levels.back().tasks, 0);
    EXPECT_NO_THROW(cudal1::bench_html(bad));
    EXPECT_NO_THROW(cudal1::bench_markdown(bad));
  }
}

TEST(BenchHtml, EscapesUntrustedText) {
  json b = fixture();
  b["title"] = "<script>alert('title')</script>";
  b["rows"][0]["task"] = "<script>alert(1)</script>";
  b["rows"][0]["flags"][0]["evidence"] = "</td><script>alert(2)</script>";
  b["rows"][0]["baseline_unavailable"] = {{"compile", "\" onmouseover=\"alert(3)"}};
  b["provenance"]["driver"] = "<img src=x onerror=alert(4)>";
  std::string html = cudal1::bench_html(b);
  EXPECT_EQ(count(html, "<script"), 1u);  // the page's own sorting script, at the end
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;/td&gt;&lt;script&gt;alert(2)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&quot; onmouseover=&quot;alert(3)"), std::string::npos);
  EXPECT_EQ(html.find("\" onmouseover"), std::string::npos);

  std::string md = cudal1::bench_markdown(b);
  EXPECT_EQ(md.find("<script"), std::string::npos);
  EXPECT_NE(md.find("&lt;script&gt;"), std::string::npos);
}

TEST(BenchHtml, SelfContainedWithEverySection) {
  std::string html = cudal1::bench_html(fixture());
  EXPECT_EQ(html.find("://"), std::string::npos);  // no URL of any kind
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  for (const char* id : {"summary", "how", "distribution", "tasks", "sol", "flags", "rows"})
    EXPECT_NE(html.find("<section id=\"" + std::string(id) + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("How to read this"), std::string::npos);
  EXPECT_NE(html.find("capture failed: graph break"), std::string::npos);  // n/a reason shown
  EXPECT_NE(html.find("90% in aten"), std::string::npos);                  // a flag's evidence
  EXPECT_NE(html.find("<td class=\"bad\">invalid</td>"), std::string::npos);
  EXPECT_NE(html.find("No row has a speed-of-light fraction."), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), 3u);  // two histograms and the per-task bars
}

TEST(BenchHtml, ZeroRowsAndNoAcceptedRows) {
  json empty = fixture();
  empty["rows"] = json::array();
  std::string html = cudal1::bench_html(empty);
  EXPECT_NE(html.find("<p class=\"empty\">No rows.</p>"), std::string::npos);
  EXPECT_NE(html.find("0 tasks, 0 accepted, 0 flags."), std::string::npos);

  json failing = fixture();
  for (auto& r : failing["rows"]) r["accepted"] = false;
  html = cudal1::bench_html(failing);
  EXPECT_NE(html.find("No accepted row has a speedup against eager."), std::string::npos);
  auto s = cudal1::bench_stats(failing);
  EXPECT_FALSE(s.levels.back().baselines[0].geomean.has_value());
  EXPECT_DOUBLE_EQ(s.levels.back().baselines[0].share_above, 0.0);
}

TEST(BenchHtml, SingleRowWithOptionalFields) {
  json r = row("level1/one", 1, "ok", true, {{"eager", 1.5}});
  r["claimed_speedup"] = 3.0;
  r["sol_fraction"] = 0.42;
  r["runtime_ms"] = {{"candidate", 0.12}, {"eager", 0.18}};
  json b = {{"rows", {r}}};
  std::string html = cudal1::bench_html(b);
  EXPECT_NE(html.find("<title>cudal1 bench</title>"), std::string::npos);  // default title
  EXPECT_NE(html.find("claimed 3.00x"), std::string::npos);                // bar tooltip
  EXPECT_NE(html.find("class=\"mark\""), std::string::npos);               // claimed tick
  EXPECT_NE(html.find("42.0% of speed of light"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">0.12</td>"), std::string::npos);
}

TEST(BenchHtml, TwoThousandRowsStaySmall) {
  json rows = json::array();
  const char* statuses[] = {"ok", "incorrect", "compile_error", "runtime_error", "timeout", "rejected", "error"};
  for (int i = 0; i < 2000; ++i) {
    std::string st = statuses[i % 7];
    json r = row("level" + std::to_string(i % 3 + 1) + "/task_" + std::to_string(i), i % 3 + 1, st,
                 st == "ok", {{"eager", 0.3 + (i % 97) * 0.05}, {"compile", 0.9 + (i % 13) * 0.02}});
    r["sol_fraction"] = (i % 100) / 100.0;
    r["claimed_speedup"] = 1.0 + i % 5;
    r["flags"] = {{{"name", "timing_noisy"}, {"severity", "warn"}, {"evidence", std::string(2000, 'e')}}};
    rows.push_back(r);
  }
  std::string html = cudal1::bench_html({{"baselines", {"eager", "compile"}}, {"rows", rows}});
  EXPECT_LT(html.size(), 2'000'000u) << "the page is " << html.size() << " bytes";
  EXPECT_EQ(count(html, "<rect"), count(html, "class=\"bin\""));  // bars drawn as paths
  EXPECT_NE(html.find("Rows (2000)"), std::string::npos);
}

TEST(BenchHtml, InvalidUtf8BecomesReplacementCharacters) {
  json b = fixture();
  b["rows"][0]["task"] = std::string("bad\xff\xfe name\x01");
  std::string html = cudal1::bench_html(b);
  EXPECT_NO_THROW((void)json(html).dump());  // dump throws on invalid UTF-8
  EXPECT_NE(html.find("bad\xEF\xBF\xBD\xEF\xBF\xBD name<"), std::string::npos);
}

TEST(BenchMarkdown, SummaryTableAndFlagCounts) {
  std::string md = cudal1::bench_markdown(fixture());
  EXPECT_EQ(md.rfind("# Fixture bench\n", 0), 0u);
  EXPECT_NE(md.find("suite tasks/; kernels k.jsonl; device NVIDIA H200; torch 2.11\n"), std::string::npos);
  EXPECT_NE(md.find("| level 1 | eager | 6 | 4/6 (66.7%) | 1.88x | 1.50x | 1.41x | 33.3% | 0 | 0 |"),
            std::string::npos);
  EXPECT_NE(md.find("| level 1 | compile | 6 | 4/6 (66.7%) | 1.00x | 1.00x | 1.00x | 0.0% | 2 | 1 |"),
            std::string::npos);
  EXPECT_NE(md.find("| level 3 | eager | 0 | - | - | - | - | - | 0 | 0 |"), std::string::npos);
  EXPECT_NE(md.find("| all | eager | 9 | 6/9 (66.7%) |"), std::string::npos);
  EXPECT_NE(md.find("Flags: 3"), std::string::npos);
  EXPECT_NE(md.find("| timing\\_noisy | 2 | 0 |"), std::string::npos);
  EXPECT_NE(md.find("| decoy\\_kernel | 1 | 1 |"), std::string::npos);
}

// A run reported before it was done: its rows not scored yet change no figure and are counted apart.
TEST(BenchMarkdown, RowsNotScoredYetAreOutsideEveryFigure) {
  json bench = fixture();
  const std::string before = cudal1::bench_markdown(bench);
  json waiting = row("level1/z", 1, "not_scored", false);
  waiting["reason"] = "the run was stopped before it started";
  waiting["flags"] = {{{"name", "timing_noisy"}, {"severity", "warn"}, {"evidence", "not counted"}}};
  bench["rows"].push_back(waiting);
  bench["rows"].push_back(row("level5/y", 5, "not_scored", false));
  cudal1::BenchStats s = cudal1::bench_stats(bench);
  EXPECT_EQ(s.not_scored, 2);
  EXPECT_EQ(level(s, "1").tasks, 6);
  EXPECT_EQ(level(s, "1").not_scored, 1);
  EXPECT_EQ(level(s, "5").tasks, 0);
  EXPECT_EQ(level(s, "5").not_scored, 1);
  EXPECT_EQ(level(s, "all").tasks, 9);
  EXPECT_EQ(s.flags, 3);
  std::string md = cudal1::bench_markdown(bench);
  EXPECT_NE(md.find("| level 1 | eager | 6 | 4/6 (66.7%) | 1.88x | 1.50x | 1.41x | 33.3% | 0 | 0 |"), std::string::npos);
  EXPECT_NE(md.find("Not scored yet, and outside every figure above: 2 rows (level 1: 1, level 5: 1). "
                    "The figures cover the 9 rows scored so far."), std::string::npos) << md;
  EXPECT_EQ(before.find("Not scored yet"), std::string::npos);
  EXPECT_NE(cudal1::bench_html(bench).find("2 more not scored yet"), std::string::npos);
}

// The set's claims against the measured speedups, by hand: level 1 eager has two claims that hold
// (one at 92.5% of it), one accepted below the 90% line and one not accepted.
TEST(BenchClaims, HoldBelowAndNotAcceptedWithTheirGeomeans) {
  json rows = json::array();
  json a = row("level1/a", 1, "ok", true, {{"eager", 2.0}, {"compile", 1.0}});
  a["claimed"] = {{"eager", 2.0}, {"compile", 1.5}};
  json b = row("level1/b", 1, "ok", true, {{"eager", 0.5}});
  b["claimed"] = {{"eager", 1.0}};
  json c = row("level1/c", 1, "ok", true, {{"eager", 3.7}});  // 92.5% of its claim
  c["claimed_speedup"] = 4.0;  // the older field: a claim against eager
  json e = row("level1/e", 1, "incorrect", false);
  e["claimed"] = {{"eager", 3.0}};
  // A row's error ends with the traceback's last frames, quoting the kernel's code: the
  // summary, which a reviewer commits, gives the first line alone.
  e["error"] = "case 2: output 0: 12 of 4096 elements outside tolerance\n\xE2\x80\xA6\n  File \"k.py\", line 9\n    secret_code()";
  json waiting = row("level1/w", 1, "not_scored", false);
  waiting["claimed"] = {{"eager", 100.0}};
  json unclaimed = row("level2/u", 2, "ok", true, {{"eager", 1.2}});
  for (auto* r : {&a, &b, &c, &e, &waiting, &unclaimed}) rows.push_back(*r);
  json bench = {{"baselines", {"eager", "compile"}}, {"rows", rows}};

  std::vector<cudal1::BenchClaimStats> claims = cudal1::bench_claims(bench);
  ASSERT_EQ(claims.size(), 4u);  // level 1 and all, eager and compile; level 2 claims nothing
  const auto& eager = claims[0];
  EXPECT_EQ(eager.level, "1");
  EXPECT_EQ(eager.baseline, "eager");
  EXPECT_EQ(eager.claims, 4);
  EXPECT_EQ(eager.hold, 2);
  EXPECT_EQ(eager.below, 1);
  EXPECT_EQ(eager.not_accepted, 1);
  EXPECT_NEAR(*eager.claimed_geomean, std::pow(2.0 * 1.0 * 4.0 * 3.0, 0.25), 1e-12);
  EXPECT_NEAR(*eager.claimed_geomean_accepted, std::pow(2.0 * 1.0 * 4.0, 1.0 / 3), 1e-12);
  EXPECT_NEAR(*eager.measured_geomean_accepted, std::pow(2.0 * 0.5 * 3.7, 1.0 / 3), 1e-12);
  const auto& compile = claims[1];
  EXPECT_EQ(compile.baseline, "compile");
  EXPECT_EQ(compile.claims, 1);
  EXPECT_EQ(compile.below, 1);
  EXPECT_EQ(claims[2].level, "all");
  EXPECT_EQ(claims[2].claims, 4);

  std::string md = cudal1::bench_markdown(bench);
  EXPECT_NE(md.find("| level 1 | eager | 4 | 2 | 1 | 1 | 2.21x | 2.00x | 1.55x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| level1/e | incorrect | case 2: output 0: 12 of 4096 elements outside tolerance |"),
            std::string::npos) << md;
  EXPECT_EQ(md.find("level1/w |"), std::string::npos) << "a row not scored is no failed claim";
  EXPECT_EQ(md.find("secret_code"), std::string::npos) << md;
  EXPECT_NE(cudal1::bench_html(bench).find("<section id=\"claims\">"), std::string::npos);
  EXPECT_EQ(cudal1::bench_html(fixture()).find("<section id=\"claims\">"), std::string::npos);
}

TEST(BenchSvg, BarsInDetailThenCompact) {
  std::vector<cudal1::SvgBar> bars = {{2.0, 4.0, "st-acc", "<a>"}, {std::nullopt, std::nullopt, "st-inc", "x"}};
  std::string small = cudal1::svg_bars(bars, cudal1::SvgScale::log2, "t");
  EXPECT_EQ(count(small, "<rect"), 2u);
  EXPECT_NE(small.find("<title>&lt;a&gt;</title>"), std::string::npos);
  EXPECT_NE(small.find("class=\"mark\""), std::string::npos);
  EXPECT_NE(small.find(">4x</text>"), std::string::npos);  // the axis reaches the claimed 4x

  bars.resize(cudal1::kSvgDetailBars + 1, bars[0]);
  std::string big = cudal1::svg_bars(bars, cudal1::SvgScale::log2, "t");
  EXPECT_EQ(count(big, "<rect"), 0u);
  EXPECT_EQ(count(big, "<path class=\"st-acc\""), 1u);  // one path per class
  EXPECT_EQ(count(big, "<title>"), 1u);                  // the plot's own
}

TEST(BenchSvg, HistogramEdgeBinsHoldOutliers) {
  std::string h = cudal1::svg_histogram({1000.0, 0.001, 1.0, 1.1}, "t");
  EXPECT_EQ(count(h, "<rect"), 3u);
  EXPECT_NE(h.find("<title>under 0.04x: 1 task</title>"), std::string::npos);
  EXPECT_NE(h.find("<title>from 26.9x: 1 task</title>"), std::string::npos);
  EXPECT_NE(h.find("<title>1.00x to 1.19x: 2 tasks</title>"), std::string::npos);
}

TEST(BenchText, Helpers) {
  EXPECT_EQ(cudal1::escape_html("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(cudal1::escape_markdown("a|b*c\nd<e>"), "a\\|b\\*c d&lt;e&gt;");
  EXPECT_EQ(cudal1::truncate_utf8("h\xC3\xA9llo", 2), "h\xE2\x80\xA6");  // never half of é
  // A row's error: what failed, then the traceback's last frames, whole lines only.
  EXPECT_EQ(cudal1::first_and_last_lines("what\nharness 1\nharness 2\ncandidate.py line 9\n", 10, 20),
            "what\n\xE2\x80\xA6\ncandidate.py line 9");
  EXPECT_EQ(cudal1::first_and_last_lines("what\nshort\n", 10, 20), "what\nshort");
  EXPECT_EQ(cudal1::first_and_last_lines("a long first line", 6, 20), "a long\xE2\x80\xA6");
  EXPECT_EQ(cudal1::first_and_last_lines("what\n\xC3\xA9\xC3\xA9\xC3\xA9", 10, 5), "what\n\xE2\x80\xA6\n\xC3\xA9\xC3\xA9");
  EXPECT_EQ(cudal1::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(cudal1::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(cudal1::format_speedup(1.234), "1.23x");
  EXPECT_EQ(cudal1::format_speedup(368.2), "368x");
  EXPECT_EQ(cudal1::svg_pow2_label(-3), "0.125x");
  EXPECT_EQ(cudal1::svg_pow2_label(-5), "1/32x");
  EXPECT_EQ(cudal1::svg_pow2_label(4), "16x");
}

// A run resumed on another card: the header counts each card's rows (most first) instead of
// naming the first row's card, and both reports say the pooled figures mix cards; one card only
// reads as before, with no note.
TEST(BenchProvenance, RowsFromTwoCardsAreCountedAndTheReportsSaySo) {
  std::vector<json> rows = {{{"device_name", "NVIDIA H100 80GB HBM3"}, {"torch", "2.11"}, {"driver", 580}},
                            {{"device_name", "NVIDIA H200"}, {"torch", "2.11"}, {"driver", 580}},
                            {{"device_name", "NVIDIA H200"}, {"torch", "2.11"}, {"cuda", nullptr}},
                            "not an object"};
  cudal1::BenchProvenance p = cudal1::pool_bench_provenance(rows);
  EXPECT_EQ(p.provenance["device_name"], "NVIDIA H200 (2 rows), NVIDIA H100 80GB HBM3 (1 row)");
  EXPECT_EQ(p.provenance["torch"], "2.11");
  EXPECT_EQ(p.provenance["driver"], "580");  // a number reads as its text
  EXPECT_FALSE(p.provenance.contains("cuda"));
  EXPECT_EQ(p.mixed, (std::vector<std::string>{"device_name"}));

  json bench = fixture();
  bench["provenance"] = p.provenance;
  bench["mixed_provenance"] = p.mixed;
  std::string md = cudal1::bench_markdown(bench), html = cudal1::bench_html(bench);
  EXPECT_NE(md.find("device NVIDIA H200 (2 rows), NVIDIA H100 80GB HBM3 (1 row)"), std::string::npos) << md;
  EXPECT_NE(md.find("more than one device"), std::string::npos) << md;
  EXPECT_NE(html.find("<p class=\"warn\">Rows were measured under more than one device"), std::string::npos);

  EXPECT_EQ(md.find("## Per card"), std::string::npos) << "the fixture's rows name no card";

  cudal1::BenchProvenance one = cudal1::pool_bench_provenance({rows[1], rows[2]});
  EXPECT_EQ(one.provenance["device_name"], "NVIDIA H200");
  EXPECT_TRUE(one.mixed.empty());
  bench["mixed_provenance"] = "not a list";  // untrusted input: read as absent
  EXPECT_EQ(cudal1::bench_markdown(bench).find("more than one"), std::string::npos);
  EXPECT_NE(cudal1::mixed_provenance_note({"device_name", "driver", "torch"}).find("more than one device, driver and torch"), std::string::npos);
}

// The speed-of-light fraction needs the card its ceilings came from: an accepted row measured on
// another card gets none and is counted; failed rows and rows without a time get none either.
TEST(BenchProvenance, SpeedOfLightOnlyForRowsOfTheCeilingsCard) {
  json rows = json::array();
  auto timed = [](const char* card, bool accepted, double ms) {
    json r = {{"accepted", accepted}, {"runtime_ms", {{"candidate", ms}}}};
    if (card) r["device_name"] = card;
    return r;
  };
  rows.push_back(timed("NVIDIA H200", true, 4.0));
  rows.push_back(timed("NVIDIA H100 80GB HBM3", true, 4.0));
  rows.push_back(timed(nullptr, true, 2.0));
  rows.push_back(timed("NVIDIA H200", false, 4.0));
  rows.push_back(timed("NVIDIA H200", true, 0.0));
  json odd = timed(nullptr, true, 2.0);  // untrusted shapes: a card that is no string, text for a time
  odd["device_name"] = 7;
  rows.push_back(odd);
  rows.push_back({{"accepted", "yes"}, {"runtime_ms", "fast"}});
  rows.push_back("not a row");
  EXPECT_EQ(cudal1::add_sol_fractions(rows, {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0}, "NVIDIA H200"), 1u);
  EXPECT_DOUBLE_EQ(rows[5]["sol_fraction"].get<double>(), 0.5);
  EXPECT_FALSE(rows[6].contains("sol_fraction"));
  EXPECT_EQ(cudal1::add_sol_fractions(rows, {1.0}, "NVIDIA H200"), 0u);  // fewer fractions than rows
  EXPECT_DOUBLE_EQ(rows[0]["sol_fraction"].get<double>(), 0.25);
  EXPECT_FALSE(rows[1].contains("sol_fraction"));
  EXPECT_DOUBLE_EQ(rows[2]["sol_fraction"].get<double>(), 0.5);
  EXPECT_FALSE(rows[3].contains("sol_fraction"));
  EXPECT_FALSE(rows[4].contains("sol_fraction"));
}

// Each card's own figures beside the pooled ones: level 1's rows a, b, c on one card (eager 2,
// 0.5, 4: geomean 1.59x) and d (1x) on the other, the rest without a card in neither.
TEST(BenchProvenance, EachCardsRowsAloneInTheirOwnTable) {
  json bench = fixture();
  for (int i : {0, 1, 2}) bench["rows"][i]["device_name"] = "NVIDIA H200";
  bench["rows"][3]["device_name"] = "NVIDIA H100 80GB HBM3";
  auto cards = cudal1::bench_by_card(bench);
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[0].first, "NVIDIA H200");  // most rows first
  EXPECT_EQ(cards[0].second["rows"].size(), 3u);
  EXPECT_EQ(cards[1].second["rows"].size(), 1u);
  std::string md = cudal1::bench_markdown(bench);
  EXPECT_NE(md.find("| NVIDIA H200 | 3 | 3 | 1.59x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| NVIDIA H100 80GB HBM3 | 1 | 1 | 1.00x |"), std::string::npos) << md;
  EXPECT_NE(cudal1::bench_html(bench).find("<h2>Per card</h2>"), std::string::npos);
  // Without the bench's baseline list, each card's table still has every baseline of the bench.
  bench.erase("baselines");
  bench["rows"][3]["speedup"] = {{"eager", 1.0}, {"other", 2.0}};
  for (auto& [card, one] : cudal1::bench_by_card(bench))
    EXPECT_EQ(one["baselines"], json({"eager", "compile", "other"})) << card;
  bench["rows"][3].erase("device_name");
  EXPECT_TRUE(cudal1::bench_by_card(bench).empty());  // one card: nothing to split
}

// A row of an earlier bench is taken again only for the same task and candidate files under the
// same protocol on the same kind of device, and only when it was scored: not_scored, evaluation
// errors and the machine's failures are scored again, and rows of an older cudal1 (no hashes, no
// protocol, no device) never match.
TEST(BenchCarriedRows, OnlyScoredRowsOfTheSameFilesProtocolAndDeviceKindAreTaken) {
  auto scored = [](const std::string& task, const std::string& status, const std::string& protocol) {
    json r = row("level1/" + task, 1, status, status == "ok", {{"eager", 1.5}});
    r["task_hash"] = "t-" + task, r["candidate_hash"] = "c-" + task;
    r["provenance"] = {{"protocol_key", protocol}, {"device", "cuda:0"}, {"device_name", "NVIDIA H200"}};
    r["from_store"] = true;
    r["sol_fraction"] = 0.4;
    return r;
  };
  json infra = scored("f", "crash", "p1");
  infra["infrastructure"] = {{"cause", "out_of_memory"}};
  json no_device = scored("g", "ok", "p1");
  no_device["provenance"].erase("device");
  json bench = {{"rows", json::array({scored("a", "ok", "p1"), scored("b", "not_scored", "p1"), scored("c", "error", "p1"),
                                      scored("d", "incorrect", "p1"), row("level1/e", 1, "ok", true), 7, infra, no_device})}};
  fs::path file = fs::temp_directory_path() / ("cudal1_carried_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << bench.dump();
  cudal1::CarriedRows carried = cudal1::read_carried_rows(file);
  EXPECT_EQ(carried.rows, 8u);
  EXPECT_EQ(carried.unusable, 6u);  // b, c, e, the number, the machine's failure, no device
  auto a = cudal1::find_carried_row(carried, "t-a", "c-a", "p1", "cuda:1");  // another GPU of the kind
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ((*a)["carried_from"], file.string());
  EXPECT_FALSE(a->contains("from_store"));
  EXPECT_FALSE(a->contains("sol_fraction"));  // the run computes its own against its ceilings
  EXPECT_EQ((*a)["speedup"]["eager"], 1.5);
  EXPECT_TRUE(cudal1::find_carried_row(carried, "t-d", "c-d", "p1", "cuda").has_value());  // a verdict, even a failing one
  EXPECT_FALSE(cudal1::find_carried_row(carried, "t-a", "c-a", "p1", "cpu").has_value());   // a GPU's figures for the CPU
  EXPECT_FALSE(cudal1::find_carried_row(carried, "t-a", "c-a", "p2", "cuda:0").has_value());  // another protocol
  EXPECT_FALSE(cudal1::find_carried_row(carried, "t-a", "c-d", "p1", "cuda:0").has_value());  // another candidate
  for (const char* t : {"b", "c", "f", "g"})
    EXPECT_FALSE(cudal1::find_carried_row(carried, std::string("t-") + t, std::string("c-") + t, "p1", "cuda:0").has_value()) << t;
  EXPECT_NE(cudal1::carried_rows_tally(carried, 1).find(": 8 rows, 2 with a verdict that can be carried, 1 taken"), std::string::npos)
      << cudal1::carried_rows_tally(carried, 1);

  std::ofstream(file) << "{\"rows\": 3}";
  try {
    cudal1::read_carried_rows(file);
    ADD_FAILURE() << "a file without a rows array was read";
  } catch (const cudal1::Error& e) {
    EXPECT_EQ(e.kind(), cudal1::ErrorKind::input);
    EXPECT_NE(e.hint().find("--json"), std::string::npos) << e.hint();
  }
  EXPECT_THROW(cudal1::read_carried_rows(file.string() + ".missing"), cudal1::Error);
  fs::remove(file);
}

TEST(BenchCarriedRows, TheReportsCountThem) {
  json bench = fixture();
  EXPECT_EQ(cudal1::carried_rows_note(bench), "");
  bench["carried_rows"] = {{"count", 0}, {"files", {"a.json"}}};
  EXPECT_EQ(cudal1::carried_rows_note(bench), "");
  bench["carried_rows"] = {{"count", 46}, {"files", {"audit-rows.json"}}};
  const std::string note = cudal1::carried_rows_note(bench);
  EXPECT_NE(note.find("46 rows were taken"), std::string::npos) << note;
  EXPECT_NE(note.find("(audit-rows.json)"), std::string::npos) << note;
  EXPECT_NE(cudal1::bench_markdown(bench).find(note), std::string::npos);
  EXPECT_NE(cudal1::bench_html(bench).find("46 rows were taken"), std::string::npos);
  bench["carried_rows"] = {{"count", "many"}};  // an untrusted file's wrong type reads as none
  EXPECT_EQ(cudal1::carried_rows_note(bench), "");
  bench["carried_rows"] = {{"count", -2}};
  EXPECT_EQ(cudal1::carried_rows_note(bench), "");
}
