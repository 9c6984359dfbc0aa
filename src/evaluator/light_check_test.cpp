// light_flags: the physics check's two bounds, its margin, and the estimate set aside when eager
// itself beats it.
#include <gtest/gtest.h>

#include "evaluator/light_check.h"

using namespace cudal1;

namespace {

// A task that writes 4 MB of outputs on a device measured at 2 TB/s: 0.002 ms to write them.
TaskLightFacts facts(double sol_ms) {
  TaskLightFacts light;
  light.sol_ms = sol_ms;
  light.floor_ms = 0.002;
  light.record = {{"output_bytes", 4e6}, {"bytes_per_s", 2e12}};
  return light;
}

}  // namespace

TEST(LightCheck, ATimeUnderHalfTheOutputsWriteIsBlockingWithItsArithmetic) {
  auto flags = light_flags(0.0009, 0.5, facts(0.1));
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].id, "beyond_speed_of_light");
  EXPECT_EQ(flags[0].severity, Severity::block);
  EXPECT_NE(flags[0].evidence.find("0.0009 ms"), std::string::npos) << flags[0].evidence;
  EXPECT_NE(flags[0].evidence.find("0.002 ms"), std::string::npos) << flags[0].evidence;
  EXPECT_NE(flags[0].evidence.find("4 MB"), std::string::npos) << flags[0].evidence;
  EXPECT_NE(flags[0].evidence.find("2000 GB/s"), std::string::npos) << flags[0].evidence;
}

TEST(LightCheck, WithinTheMarginOfTheFloorIsNotFlaggedByIt) {
  // 0.0011 ms is above half of 0.002: a card's peak may beat the measured copy bandwidth.
  for (auto& f : light_flags(0.0011, 0.5, facts(0.0015))) EXPECT_NE(f.id, "beyond_speed_of_light");
}

TEST(LightCheck, BeatingTheEstimateIsAWarningOnly) {
  // An algebraic rewrite that skips the task's matmul beats its FLOPs honestly.
  auto flags = light_flags(0.01, 0.5, facts(0.1));
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].id, "below_speed_of_light_estimate");
  EXPECT_EQ(flags[0].severity, Severity::warn);
  EXPECT_TRUE(light_flags(0.06, 0.5, facts(0.1)).empty());  // within the margin
}

TEST(LightCheck, AnEstimateEagerBeatsIsNotUsed) {
  // Eager at 0.04 ms against an estimate of 0.1 ms: the ceilings do not fit this task.
  EXPECT_TRUE(light_flags(0.01, 0.04, facts(0.1)).empty());
  json record = light_record(0.01, 0.04, facts(0.1));
  EXPECT_FALSE(record["estimate_used"].get<bool>());
  EXPECT_NE(record.value("note", "").find("ceilings do not fit"), std::string::npos);
  // The floor holds whatever eager does: outputs must be written.
  auto flags = light_flags(0.0005, 0.04, facts(0.1));
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].id, "beyond_speed_of_light");
}

TEST(LightCheck, NoFiguresNoFlags) {
  EXPECT_TRUE(light_flags(0.0001, 0.5, TaskLightFacts{}).empty());
  EXPECT_TRUE(light_flags(0.0, 0.5, facts(0.1)).empty());
}
