// evaluator/light_check.h — the physics check: a candidate timed faster than its device can run
// the task. Two bounds, each from the task's own figures at the device's measured ceilings
// (evaluator/task_facts.h, TaskLightFacts):
//   - the floor: writing the task's outputs once at the measured bandwidth. No correct program
//     beats it (its outputs must be written), so beating it by more than the margin is blocking
//     `beyond_speed_of_light`: the time cannot be what the program did;
//   - the estimate: the task's FLOPs and fewest bytes (speed of light). A correct program can beat
//     it by doing less work than the reference (an algebraic rewrite that skips a matmul), so
//     beating it by more than the margin is the warning `below_speed_of_light_estimate`: the
//     result deserves a second look (the judge reviews warned results), not a rejection.
// The margin allows for ceilings measured below a card's peak (a copy kernel, one matmul shape).
// When eager itself beats the estimate by the margin the ceilings do not fit this task (cached
// data, an unusual shape), and the estimate is not used.
#pragma once

#include <vector>

#include "evaluator/result.h"
#include "evaluator/task_facts.h"

namespace cudal1 {

// A bound is beaten when the time is under this fraction of it.
inline constexpr double kLightMargin = 0.5;

// The check runs for candidates at least this many times faster than eager, and no others: the
// reference is a correct program, so eager takes at least the floor (and, where the estimate is
// used, about the estimate), and a time under half of either is at least 2x faster than eager.
// Slower candidates then cost no description of the task and no measuring of the device.
inline constexpr double kLightCheckAbove = 1.0 / kLightMargin;

// The flags `candidate_ms` (median device ms a call) earns against `light`; `eager_ms` is the
// reference's time measured beside it. Evidence carries the arithmetic.
std::vector<Flag> light_flags(double candidate_ms, double eager_ms, const TaskLightFacts& light);

// The record an evaluation keeps in statistics.speed_of_light: the task's figures, the margin and
// whether each bound was used.
json light_record(double candidate_ms, double eager_ms, const TaskLightFacts& light);

}  // namespace cudal1
