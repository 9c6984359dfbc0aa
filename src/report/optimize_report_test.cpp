// The optimize run's page: what best/ holds per task (the file's speedup, or none and why), and
// with --turns how many answers of a round were revisions.
#include "report/optimize_report.h"

#include <gtest/gtest.h>

using namespace cudal1;
using nlohmann::json;

namespace {

RlSample answer(int slot, int turn, bool accepted) {
  RlSample x;
  x.run = "r", x.task_id = "t", x.round = 1, x.slot = slot, x.turn = turn, x.outcome = "ok";
  x.status = accepted ? "ok" : "incorrect";
  x.accepted = accepted;
  if (accepted) x.speedup = 0.9;
  return x;
}

bool has(const std::string& page, const std::string& part) { return page.find(part) != std::string::npos; }

}  // namespace

TEST(OptimizeReport, SaysWhyBestHoldsNoFileAndCountsRevisions) {
  json summary = {{"run", "r"}, {"tasks", json::array({{{"task", "t"}, {"best_speedup", 0.9},
                                                        {"best_note", "no answer beat the reference by more than the noise (best 0.90x); the reference stands"}}})}};
  std::string page = optimize_report_html({answer(0, 0, false), answer(0, 1, true), answer(1, 0, false)}, summary);
  EXPECT_TRUE(has(page, "<td>none<br><small>no answer beat the reference by more than the noise (best 0.90x); the reference stands")) << page;
  EXPECT_TRUE(has(page, "<th>revisions (accepted)</th>")) << page;
  EXPECT_TRUE(has(page, "<td class=\"num\">1 (1)</td>")) << page;
  // One turn per slot: no revisions column.
  std::string single = optimize_report_html({answer(0, 0, true)}, summary);
  EXPECT_FALSE(has(single, "revisions")) << single;
}

TEST(OptimizeReport, ShowsTheBestFilesSpeedup) {
  json summary = {{"run", "r"}, {"tasks", json::array({{{"task", "t"}, {"best_speedup", 2.5}, {"best_file", "/run/best/t.py"},
                                                        {"best_file_speedup", 2.5}}})}};
  std::string page = optimize_report_html({answer(0, 0, true)}, summary);
  EXPECT_FALSE(has(page, "<td>none")) << page;
  EXPECT_TRUE(has(page, "<td>2.50x</td><td>-</td></tr>")) << "the best file's cell, then stopped: " << page;
}
