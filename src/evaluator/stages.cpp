#include "evaluator/stages.h"

#include <optional>

namespace cudal1 {

namespace {

using Mode = DeviceGate::Mode;

// Speed figures need the device alone; attribution compares kernels' shares of the candidate's
// own GPU time, which another process's work does not shift much.
constexpr StageInfo kStages[] = {
    {"lint", Mode::shared, 0.0},          {"reference", Mode::shared, 0.0},
    {"candidate", Mode::shared, 0.1},     {"checking", Mode::shared, 0.2},
    {"precision", Mode::shared, 0.45},    {"timing", Mode::exclusive, 0.5},
    {"re-timing", Mode::exclusive, 0.8},  {"idle check", Mode::shared, 0.8},
    {"attribution", Mode::shared, 0.9},   {"speed of light", Mode::shared, 0.93},
    {"ceilings", Mode::exclusive, 0.94},  {"baselines", Mode::shared, 0.95},
    {"baseline timing", Mode::exclusive, 0.97}, {"done", Mode::shared, 1.0},
};
static_assert(std::size(kStages) == std::size_t(Stage::done) + 1);

}  // namespace

const StageInfo& stage_info(Stage stage) { return kStages[std::size_t(stage)]; }

// Long enough for another process's timing stage (its buckets, a re-measure, a fresh re-timing),
// short enough that a process holding the file forever costs others no more than this.
constexpr auto kTimingTurnPatience = std::chrono::seconds(300);

StageClock::StageClock(json& phase_seconds, std::shared_ptr<DeviceGate> gate,
                       DeviceGate::Member* member, Progress progress, std::string turn_device)
    : phase_seconds_(phase_seconds), gate_(std::move(gate)), member_(member),
      progress_(std::move(progress)), turn_device_(std::move(turn_device)) {}

// Checking stages hold the machine's turn shared, timing stages exclusive (core/timing_turn.h).
// Every stage boundary gives it back first (leave_turn), so a lane waiting for its gate, or a
// timer of another process waiting at the turnstile, is never kept waiting by a turn whose stage
// has ended; only timing going on to more timing keeps it.
void StageClock::leave_turn(Stage next) {
  if (turn_.exclusive() && stage_info(next).mode == Mode::exclusive && next != Stage::done) return;
  turn_.release();
}

StageClock::Clock::time_point StageClock::take_timing_turn(Stage stage, Clock::time_point now) {
  if (turn_device_.empty() || stage == Stage::done || turn_.held()) return now;
  const bool exclusive = stage_info(stage).mode == Mode::exclusive;
  // A freezing gate stops this process's other lanes mid-stage while one times: a frozen lane's
  // shared turn would then keep its own process's timer waiting. Its checks go without.
  if (!exclusive && gate_ && gate_->freezes()) return now;
  turn_ = TimingTurn::take(turn_device_, kTimingTurnPatience,
                           exclusive ? TimingTurn::Kind::exclusive : TimingTurn::Kind::shared);
  if (!turn_.held() && exclusive) turn_given_up_s_ = turn_.waited_s();
  auto after = Clock::now();
  add_seconds("timing_turn_wait", now, after);
  return after;
}

void StageClock::add_seconds(const std::string& phase, Clock::time_point from,
                             Clock::time_point to) {
  double seconds = std::chrono::duration<double>(to - from).count();
  phase_seconds_[phase] = phase_seconds_.value(phase, 0.0) + seconds;
}

// Another lane's timing may have kept this evaluation's processes stopped meanwhile: that time
// is a phase of its own, not the stage's.
void StageClock::close_stage(Clock::time_point now) {
  if (!now_) return;
  auto frozen = member_ ? member_->frozen_for() : std::chrono::nanoseconds(0);
  add_seconds(stage_info(*now_).label, start_ + (frozen - frozen_before_), now);
  if (frozen > frozen_before_) add_seconds("frozen", now - (frozen - frozen_before_), now);
  frozen_before_ = frozen;
}

StageClock::Clock::time_point StageClock::hold_device(Stage stage, Clock::time_point now) {
  Mode mode = stage_info(stage).mode;
  if (stage == Stage::done) {
    hold_.release();
    return now;
  }
  bool held_as = hold_.held() && hold_.mode() == mode;
  if (held_as && mode == Mode::shared) {
    // Between two shared stages: an evaluation waiting to time goes first, so it waits for the
    // stages running now, not for whole evaluations.
    if (!hold_.yield()) return now;
  } else if (hold_.held() && hold_.mode() == Mode::exclusive && mode == Mode::shared) {
    hold_.downgrade();
    return now;
  } else if (!held_as) {
    hold_.release();
    hold_ = gate_->acquire(mode, member_);
  } else {
    return now;
  }
  auto after = Clock::now();
  add_seconds("device_wait", now, after);
  return after;
}

void StageClock::enter(Stage stage) { enter(stage, stage_info(stage).fraction); }

void StageClock::enter(Stage stage, double fraction) {
  auto now = Clock::now();
  close_stage(now);
  // The idle check measures what the candidate's threads do while time passes: stopping its
  // process meanwhile would hide them. Set while the timing's exclusive hold is still held.
  if (member_ && stage == Stage::idle_check)
    member_->set_freezable(false);
  else if (member_ && now_ == Stage::idle_check && stage != Stage::done)
    member_->set_freezable(true);
  leave_turn(stage);
  if (gate_) now = hold_device(stage, now);
  now = take_timing_turn(stage, now);
  now_ = stage;
  start_ = now;
  if (progress_) progress_(stage_info(stage).label, fraction);
}

KeyedMutex::Guard StageClock::one_lane_per_task(const std::string& key) {
  static KeyedMutex flights;
  KeyedMutex::Guard g = flights.try_lock(key);
  if (g.held()) return g;
  auto now = Clock::now();
  close_stage(now);
  hold_.release();
  turn_.release();  // the lane computing the facts may need the turn alone (baseline timing)
  g = flights.lock(key);
  start_ = Clock::now();
  add_seconds("same_task_wait", now, start_);
  return g;
}

MemoryBudget::Hold StageClock::reserve_memory(MemoryBudget& budget, uint64_t bytes) {
  auto from = Clock::now();
  MemoryBudget::Hold hold = budget.reserve(bytes);
  add_seconds("memory_wait", from, Clock::now());
  return hold;
}

}  // namespace cudal1
