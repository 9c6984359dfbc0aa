// Bench JSON written under the compile baselines' earlier names, reported under today's.
#include "report/bench_names.h"

#include <gtest/gtest.h>

#include "report/bench_report.h"

using namespace cudal1;
using json = nlohmann::json;

namespace {

json earlier_row() {
  return {{"task", "level1/1_gemm"}, {"level", 1}, {"status", "ok"}, {"accepted", true},
          {"speedup", {{"eager", 2.0}, {"compile_default", 1.6}, {"compile_reduce_overhead", 1.3}}},
          {"claimed", {{"eager", 2.1}, {"compile_default", 1.7}}},
          {"baseline_unavailable", {{"compile_reduce_overhead", "no CUDA"}}}};
}

TEST(BenchNames, AnEarlierRowsFiguresMoveToTodaysNames) {
  json row = canonical_bench_row(earlier_row());
  EXPECT_EQ(row["speedup"], (json{{"eager", 2.0}, {"compile", 1.6}, {"compile_ro", 1.3}}));
  EXPECT_EQ(row["claimed"], (json{{"eager", 2.1}, {"compile", 1.7}}));
  EXPECT_EQ(row["baseline_unavailable"], (json{{"compile_ro", "no CUDA"}}));
  EXPECT_EQ(row["task"], "level1/1_gemm");
}

TEST(BenchNames, TodaysNameWinsWhenARowHasBoth) {
  json row = earlier_row();
  row["speedup"]["compile"] = 1.9;
  EXPECT_EQ(canonical_bench_row(row)["speedup"]["compile"], 1.9);
  EXPECT_EQ(canonical_bench_row(json("not a row")), json("not a row"));  // untrusted files: left alone
}

// A report of an earlier run and a new one side by side shows both in one compile column.
TEST(BenchNames, AReportOfMixedRowsHasOneCompileColumn) {
  json today = earlier_row();
  today["task"] = "level1/2_relu";
  today["speedup"] = {{"eager", 3.0}, {"compile", 2.0}};
  json bench = {{"title", "mixed"}, {"baselines", {"eager", "compile_default", "compile"}}, {"rows", {earlier_row(), today}}};
  json canonical = canonical_bench(bench);
  EXPECT_EQ(canonical["baselines"], (json{"eager", "compile"}));
  std::string md = bench_markdown(bench);
  EXPECT_EQ(md.find("compile_default"), std::string::npos) << md;
  EXPECT_NE(md.find("compile"), std::string::npos) << md;
}

}  // namespace
