// Baseline figures from paired buckets, and their JSON round trip (no Python).
#include <gtest/gtest.h>

#include "baselines/baselines.h"

using namespace cudal1;
using json = nlohmann::json;

TEST(Baselines, RatioIsTheMedianOfBucketRatios) {
  // eager ms, baseline ms per bucket: ratios 0.5, 0.25, 1.0 -> median 0.5
  BaselineFigure f = baseline_figure("cuda_graph", json::parse("[[2.0, 1.0], [4.0, 1.0], [1.0, 1.0]]"));
  ASSERT_TRUE(f.ratio.has_value());
  EXPECT_DOUBLE_EQ(*f.ratio, 0.5);
  EXPECT_DOUBLE_EQ(f.eager_ms, 2.0);
  EXPECT_DOUBLE_EQ(f.baseline_ms, 1.0);
  // quartiles of {0.25, 0.5, 1.0}: 0.375 and 0.75, over the median 0.5
  EXPECT_DOUBLE_EQ(f.spread, 0.75);
}

TEST(Baselines, BucketsWithoutATimeAreSkippedAndNoneLeftIsUnavailable) {
  BaselineFigure some = baseline_figure("compile", json::parse("[[0.0, 1.0], [2.0, 1.0], [2.0, -1.0]]"));
  ASSERT_TRUE(some.ratio.has_value());
  EXPECT_DOUBLE_EQ(*some.ratio, 0.5);
  BaselineFigure none = baseline_figure("compile", json::parse("[[0.0, 1.0]]"));
  EXPECT_FALSE(none.ratio.has_value());
  EXPECT_FALSE(none.unavailable.empty());
}

TEST(Baselines, SetRoundTripsThroughJson) {
  BaselineSet s;
  s.env = {{"device_name", "NVIDIA H200"}, {"torch", "2.11.0"}};
  s.figures.push_back(baseline_figure("cuda_graph", json::parse("[[2.0, 1.0]]")));
  s.figures.push_back({"compile", std::nullopt, 0, 0, 0, "torch 1.13 has no torch.compile"});
  BaselineSet back = BaselineSet::from_json(s.to_json());
  ASSERT_NE(back.find("cuda_graph"), nullptr);
  EXPECT_DOUBLE_EQ(*back.find("cuda_graph")->ratio, 0.5);
  ASSERT_NE(back.find("compile"), nullptr);
  EXPECT_FALSE(back.find("compile")->ratio.has_value());
  EXPECT_EQ(back.find("compile")->unavailable, "torch 1.13 has no torch.compile");
  EXPECT_EQ(back.env["device_name"], "NVIDIA H200");
  EXPECT_EQ(back.find("cudnn_autotune"), nullptr);
}

// Figures cached when the compile baselines were compile_default and compile_reduce_overhead
// are found, and read, under today's names.
TEST(Baselines, FiguresCachedUnderTheEarlierNamesAreReadUnderTodays) {
  json env = {{"device_name", "NVIDIA H100"}, {"torch", "2.11.0"}};
  TimingSettings ts = timing_settings(true);
  EXPECT_EQ(baselines_cache_key("t", env, {"compile", "compile_ro", "cuda_graph"}, ts),
            baselines_cache_key("t", env, {"compile_default", "compile_reduce_overhead", "cuda_graph"}, ts));
  EXPECT_NE(baselines_cache_key("t", env, {"compile"}, ts), baselines_cache_key("t", env, {"compile_ro"}, ts));
  json cached = json::parse(R"({"figures": {"compile_default": {"ratio": 0.5, "eager_ms": 2, "baseline_ms": 1},
                                             "compile_reduce_overhead": {"unavailable": "no CUDA"}}})");
  BaselineSet s = BaselineSet::from_json(cached);
  ASSERT_NE(s.find("compile"), nullptr);
  EXPECT_DOUBLE_EQ(*s.find("compile")->ratio, 0.5);
  ASSERT_NE(s.find("compile_ro"), nullptr);
  EXPECT_EQ(s.find("compile_ro")->unavailable, "no CUDA");
  EXPECT_EQ(s.find("compile_default"), nullptr);
}
