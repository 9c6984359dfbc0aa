#include <gtest/gtest.h>

#include "evaluator/evaluator.h"
#include "evaluator/timing.h"

using namespace cudal1;

TEST(Timing, MedianAndQuantiles) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.25), 2);
}

TEST(Timing, ConservativeRoundingShrinksTowardOne) {
  EXPECT_DOUBLE_EQ(conservative_speedup(1.005, 1.0, 1.01), 1.0);   // within noise
  EXPECT_DOUBLE_EQ(conservative_speedup(2.0, 1.9, 2.1), 1.9);      // shrunk by half the IQR
  EXPECT_DOUBLE_EQ(conservative_speedup(0.5, 0.49, 0.51), 0.51);   // slowdowns toward 1 too
  EXPECT_DOUBLE_EQ(conservative_speedup(1.237, 1.236, 1.238), 1.22);  // floor after 0.01 shrink
}

TEST(Timing, BucketRatiosUseMedians) {
  std::vector<Bucket> b(3);
  for (int i = 0; i < 3; ++i) {
    b[i].ref_ms = {2.0, 2.0, 100.0};  // one outlier does not move the median
    b[i].cand_ms = {1.0, 1.0, 1.0};
    b[i].calls = 3;
  }
  auto e = estimate_speedup(b);
  EXPECT_DOUBLE_EQ(e.raw, 2.0);
  EXPECT_DOUBLE_EQ(e.spread, 0.0);
  EXPECT_DOUBLE_EQ(e.reported, 1.99);
}

TEST(Timing, ClockDisagreementSeesAFakedClock) {
  std::vector<Bucket> b(1);
  b[0].calls = 10;
  b[0].cand_ms = std::vector<double>(10, 0.01);  // claims 0.01 ms per call
  b[0].cand_wall_ms = 10 * 5.0 + 2.0;            // parent saw 5 ms per call
  b[0].cand_overhead_ms = 2.0;
  EXPECT_NEAR(clock_disagreement(b, true), 500.0, 1e-6);
}

TEST(Timing, ClockDisagreementForgivesWaitingForACpu) {
  std::vector<Bucket> b(1);
  b[0].calls = 4;
  b[0].cand_ms = std::vector<double>(4, 0.2);
  b[0].cand_wall_ms = 4 * 0.2 + 60.0 + 1.0;  // 60 ms on the run queue while other programs ran
  b[0].cand_overhead_ms = 1.0;
  EXPECT_GT(clock_disagreement(b, true), 50.0);
  b[0].cand_stalled_ms = 60.0;
  EXPECT_NEAR(clock_disagreement(b, true), 1.0, 1e-6);
}

TEST(Timing, HostDeviceGapCountsOnlyBeyondTheReferences) {
  std::vector<Bucket> b(1);
  b[0].ref_ms = {0.010, 0.010};
  b[0].ref_host_ms = {0.030, 0.030};
  b[0].cand_ms = {0.001, 0.001};       // events claim 1 us
  b[0].cand_host_ms = {0.500, 0.500};  // the host saw half a millisecond
  EXPECT_TRUE(host_device_gap_disagrees(b));
  // A GPU shared with another process: both sides wait for their time slice.
  b[0].ref_host_ms = {0.600, 0.600};
  EXPECT_FALSE(host_device_gap_disagrees(b));
  // Within noise: a gap under 0.05 ms is never evidence.
  b[0].ref_host_ms = {0.010, 0.010};
  b[0].cand_host_ms = {0.040, 0.040};
  EXPECT_FALSE(host_device_gap_disagrees(b));
}

TEST(Timing, UnsynchronisedWorkIsTheGapBeyondTheReferences) {
  std::vector<Bucket> b(1);
  b[0].ref_ms = {1.02, 1.02};
  b[0].ref_stream_ms = {1.0, 1.0};   // the sync's own latency: 0.02 ms
  b[0].cand_ms = {0.52, 0.52};
  b[0].cand_stream_ms = {0.02, 0.02};  // current stream done long before the device
  EXPECT_NEAR(unsynchronised_work_ms(b), 0.48, 1e-9);
}

TEST(Protocol, NonDefaultTimingOrSeedsNeverAnswerForTheDefault) {
  EvalOptions plain, quick, seeded, strict;
  quick.buckets = 3;
  seeded.seed = 42;
  strict.extra_env["CUDA_GRAPH_STRICT"] = "1";  // the task's code may read it
  EXPECT_NE(plain.protocol_key(), quick.protocol_key());
  EXPECT_NE(plain.protocol_key(), seeded.protocol_key());
  EXPECT_NE(plain.protocol_key(), strict.protocol_key());
  EXPECT_EQ(plain.protocol_key(), EvalOptions{}.protocol_key());
}

// The rule for a figure still noisy after its re-measures, with a double for the measurement:
// fresh tries until one is quiet, at most two more; the first quiet one stands, else the quietest.
TEST(Timing, NoisyFiguresAreMeasuredAgainOnFreshBuckets) {
  auto scripted = [](std::vector<double> spreads, int& calls) {
    return [spreads, &calls]() -> std::optional<double> { return spreads.at(calls++); };
  };
  int calls = 0;
  auto quiet_first = measure_until_quiet(scripted({0.05, 0.9, 0.9}, calls), 0.10, 2);
  ASSERT_TRUE(quiet_first);
  EXPECT_EQ(calls, 1);  // a quiet figure is not measured again
  EXPECT_EQ(quiet_first->chosen, 0u);

  calls = 0;
  auto quiet_second = measure_until_quiet(scripted({0.8, 0.06, 0.01}, calls), 0.10, 2);
  ASSERT_TRUE(quiet_second);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(quiet_second->chosen, 1u);
  EXPECT_EQ(quiet_second->spreads, (std::vector<double>{0.8, 0.06}));

  calls = 0;
  auto never_quiet = measure_until_quiet(scripted({0.8, 0.3, 0.5, 0.01}, calls), 0.10, 2);
  ASSERT_TRUE(never_quiet);
  EXPECT_EQ(calls, 3);  // bounded: the first try and two more
  EXPECT_EQ(never_quiet->chosen, 1u);  // the quietest stands

  calls = 0;
  int failures = 0;
  auto failed = measure_until_quiet([&]() -> std::optional<double> {
    ++failures;
    return std::nullopt;
  }, 0.10, 2);
  EXPECT_FALSE(failed);  // the candidate failed: no figure
  EXPECT_EQ(failures, 1);
}

TEST(Timing, ShrunkToOneOnlyWhenTheBucketsSaidOtherwise) {
  SpeedupEstimate e;
  e.raw = 4.43;
  e.q25 = 0.9;
  e.q75 = 8.0;
  e.reported = conservative_speedup(e.raw, e.q25, e.q75);
  EXPECT_DOUBLE_EQ(e.reported, 1.0);
  EXPECT_TRUE(shrunk_to_one(e));
  e.raw = 1.004, e.q25 = 1.0, e.q75 = 1.01;
  e.reported = conservative_speedup(e.raw, e.q25, e.q75);
  EXPECT_FALSE(shrunk_to_one(e));  // within rounding of 1.00: nothing was lost
}
