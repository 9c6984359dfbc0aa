// evaluator/stages.h — the stages of one evaluation, as users see them in its progress and its
// phase_seconds, and the clock that moves an evaluation from one to the next (internal to the
// evaluator).
//
// Each stage runs until the next is entered; its wall time goes into phase_seconds under its
// label, less the time another lane's timing kept this evaluation's processes stopped
// ("frozen"). Time spent waiting goes into phases of its own: for a device shared with other
// evaluations ("device_wait"), for another lane computing the same task's facts
// ("same_task_wait"), for host memory ("memory_wait").
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/device_gate.h"
#include "core/keyed_mutex.h"
#include "core/memory_budget.h"
#include "core/timing_turn.h"
#include "evaluator/result.h"

namespace cudal1 {

enum class Stage {
  lint, reference, candidate, checking, precision, timing, re_timing, idle_check,
  attribution, speed_of_light, ceilings, baselines, baseline_timing, done,
};

struct StageInfo {
  const char* label;    // the progress string, and the phase_seconds key
  DeviceGate::Mode mode;  // how the stage holds a device shared with other evaluations
  double fraction;      // how far the evaluation is when the stage begins
};

const StageInfo& stage_info(Stage stage);

class StageClock {
 public:
  using Progress = std::function<void(const std::string& stage, double fraction)>;
  // `gate` may be null (no other user of the device is known); `member`, this evaluation's
  // processes that a freezing gate may stop, may be null and must outlive the clock.
  // `turn_device`: a CUDA device whose stages also take the machine-wide turn (core/timing_turn.h):
  // shared stages shared, exclusive ones alone, so other cudal1 processes run nothing on it
  // while this one times; empty: none.
  StageClock(json& phase_seconds, std::shared_ptr<DeviceGate> gate, DeviceGate::Member* member,
             Progress progress, std::string turn_device = {});

  // Ends the stage running now and begins `stage`, holding the device as the stage needs it.
  void enter(Stage stage);
  void enter(Stage stage, double fraction);  // a stage entered again as it advances (checking)

  // One lane at a time computes a task's shared facts (its lint, its baselines). A lane that
  // finds `key` taken waits holding nothing of the device (the other may need it alone).
  KeyedMutex::Guard one_lane_per_task(const std::string& key);

  // Set when an exclusive stage gave up waiting for the machine-wide timing turn and went on
  // without it: the seconds it waited.
  std::optional<double> timing_turn_given_up() const { return turn_given_up_s_; }

  // Host memory, waited for before anything of the device is held.
  MemoryBudget::Hold reserve_memory(MemoryBudget& budget, uint64_t bytes);

 private:
  using Clock = std::chrono::steady_clock;
  void close_stage(Clock::time_point now);
  void add_seconds(const std::string& phase, Clock::time_point from, Clock::time_point to);
  Clock::time_point hold_device(Stage stage, Clock::time_point now);
  void leave_turn(Stage next);
  Clock::time_point take_timing_turn(Stage stage, Clock::time_point now);

  json& phase_seconds_;
  std::shared_ptr<DeviceGate> gate_;
  DeviceGate::Member* member_;
  Progress progress_;
  DeviceGate::Hold hold_;
  std::optional<Stage> now_;  // none before the first stage
  Clock::time_point start_ = Clock::now();
  std::chrono::nanoseconds frozen_before_{0};  // the member's frozen time when the stage began
  std::string turn_device_;
  TimingTurn turn_;
  std::optional<double> turn_given_up_s_;
};

}  // namespace cudal1
