// StageClock: the labels users see, where each stage's time goes, and how stages hold a device
// other evaluations share.
#include <gtest/gtest.h>


#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/timing_turn_testing.h"
#include "evaluator/stages.h"

using namespace cudal1;
using namespace std::chrono_literals;

TEST(Stages, LabelsAreTheProgressStringsUsersSee) {
  EXPECT_STREQ(stage_info(Stage::re_timing).label, "re-timing");
  EXPECT_STREQ(stage_info(Stage::idle_check).label, "idle check");
  EXPECT_STREQ(stage_info(Stage::baseline_timing).label, "baseline timing");
  for (Stage s : {Stage::timing, Stage::re_timing, Stage::baseline_timing})
    EXPECT_EQ(stage_info(s).mode, DeviceGate::Mode::exclusive) << stage_info(s).label;
  EXPECT_EQ(stage_info(Stage::attribution).mode, DeviceGate::Mode::shared);
}

TEST(Stages, EachStagesTimeGoesUnderItsLabelAndProgressIsReported) {
  json phases = json::object();
  std::vector<std::pair<std::string, double>> reported;
  StageClock clock(phases, nullptr, nullptr,
                   [&](const std::string& s, double f) { reported.emplace_back(s, f); });
  clock.enter(Stage::reference);
  std::this_thread::sleep_for(20ms);
  clock.enter(Stage::checking, 0.3);
  clock.enter(Stage::done);
  EXPECT_GE(phases.value("reference", 0.0), 0.015) << phases.dump();
  EXPECT_TRUE(phases.contains("checking"));
  EXPECT_FALSE(phases.contains("done")) << "the evaluation is over: no time is spent in it";
  ASSERT_EQ(reported.size(), 3u);
  EXPECT_EQ(reported[1], std::make_pair(std::string("checking"), 0.3));
  EXPECT_EQ(reported[2], std::make_pair(std::string("done"), 1.0));
}

// While one evaluation times, another's shared stage waits for the device: device_wait.
TEST(Stages, TimingHoldsASharedDeviceAloneAndOthersWaitForIt) {
  auto gate = std::make_shared<DeviceGate>();
  json timer_phases = json::object(), other_phases = json::object();
  std::atomic<bool> timed{false};
  StageClock timer(timer_phases, gate, nullptr, nullptr);
  timer.enter(Stage::timing);
  std::thread other([&] {
    StageClock clock(other_phases, gate, nullptr, nullptr);
    clock.enter(Stage::checking);
    EXPECT_TRUE(timed) << "a shared stage began while another evaluation was timing";
    clock.enter(Stage::done);
  });
  std::this_thread::sleep_for(50ms);
  timed = true;
  timer.enter(Stage::done);
  other.join();
  EXPECT_GT(other_phases.value("device_wait", 0.0), 0.0) << other_phases.dump();
}

// A lane that finds the task's facts being computed waits holding nothing of the device.
TEST(Stages, ALaneWaitingForTheSameTasksFactsHoldsNoDevice) {
  auto gate = std::make_shared<DeviceGate>();
  json first_phases = json::object(), second_phases = json::object();
  StageClock first(first_phases, gate, nullptr, nullptr);
  StageClock second(second_phases, gate, nullptr, nullptr);
  KeyedMutex::Guard computing = first.one_lane_per_task("lint|task");
  first.enter(Stage::lint);
  second.enter(Stage::reference);  // a shared hold, given up while it waits below
  std::thread waiter([&] {
    KeyedMutex::Guard g = second.one_lane_per_task("lint|task");
    second.enter(Stage::lint);
  });
  std::this_thread::sleep_for(30ms);
  first.enter(Stage::timing);  // exclusive: only possible if the waiting lane let go
  std::this_thread::sleep_for(20ms);
  first.enter(Stage::done);
  computing = KeyedMutex::Guard();
  waiter.join();
  second.enter(Stage::done);
  // It gave up its shared hold (else the timing above would never have begun) and waited at
  // least the timing's 20 ms.
  EXPECT_GE(second_phases.value("same_task_wait", 0.0), 0.015) << second_phases.dump();
}

// On CUDA, every stage holds the machine's turn, which other cudal1 processes (which know nothing
// of this one's gate) honour: checking stages shared, timing stages alone.
TEST(Stages, TimingOnCudaHoldsTheMachinesTurnForTheDevice) {
  using Kind = TimingTurn::Kind;
  auto dir = std::filesystem::temp_directory_path() / ("cudal1_stage_turns_" + std::to_string(getpid()));
  setenv("CUDAL1_TIMING_LOCKS", dir.c_str(), 1);
  json phases = json::object();
  StageClock clock(phases, nullptr, nullptr, nullptr, "cuda:0");
  clock.enter(Stage::checking);
  EXPECT_TRUE(TimingTurn::take("cuda:0", 0ms, Kind::shared).held()) << "checks beside checks";
  EXPECT_FALSE(TimingTurn::take("cuda:0", 50ms).held()) << "another process timed during our checks";
  clock.enter(Stage::timing);
  EXPECT_FALSE(TimingTurn::take("cuda:0", 50ms, Kind::shared).held()) << "another process checked while we timed";
  EXPECT_TRUE(phases.contains("timing_turn_wait")) << phases.dump();
  clock.enter(Stage::idle_check);
  EXPECT_TRUE(TimingTurn::take("cuda:0", 0ms, Kind::shared).held()) << "the timing's turn outlived the timing";
  EXPECT_FALSE(clock.timing_turn_given_up());
  clock.enter(Stage::attribution);
  {
    std::atomic<bool> other_timed{false};
    std::thread other([&] {  // another process comes to time during our attribution
      TimingTurn t = TimingTurn::take("cuda:0", 5s);
      other_timed = t.held();
      std::this_thread::sleep_for(100ms);
    });
    test_support::wait_for_turnstile_holder("cuda:0");  // it waits there for our shared turn
    clock.enter(Stage::re_timing);      // ours ends there, and our timing waits for the other's
    other.join();
    EXPECT_TRUE(other_timed) << "our shared stage ended, yet its turn was kept";
  }
  EXPECT_FALSE(clock.timing_turn_given_up()) << "it waited for the other's turn to end";
  EXPECT_GE(phases.value("timing_turn_wait", 0.0), 0.05) << phases.dump();
  clock.enter(Stage::done);
  unsetenv("CUDAL1_TIMING_LOCKS");
  std::filesystem::remove_all(dir);
}
