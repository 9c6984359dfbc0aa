// rl/best_rule.h — when an accepted answer is worth handing to a user as RUN_DIR/best/<task>.py:
// only when it beats the reference by more than the measurement's noise. A best file slower than
// the reference (or within noise of it) would give whoever takes best/ a program no better than
// what they had, so the loop keeps recording such an answer's speedup but writes no file for it.
#pragma once

#include <optional>
#include <string>

#include "evaluator/result.h"

namespace cudal1::rl {

// The smallest margin over 1.00x that counts as a gain, whatever the spread says: an A/A run
// (the task's own Model as candidate) measures 1.00-1.03x on a quiet GPU (bench/NOTES.md), so a
// figure within 3 % of eager is what measuring the same program twice can give.
inline constexpr double kMinBestMargin = 0.03;

// The margin a speedup must clear: max(kMinBestMargin, statistics.spread) — the spread is the
// result's interquartile range over its median (docs/evaluation.md, "spread"), absent or not a
// number counts as 0.
double noise_margin(const EvalResult& r);

// Accepted, with an eager speedup above 1 + noise_margin(r).
bool beats_reference(const EvalResult& r);

// Why a task with no best file has none, for tables and summary.json: its best accepted eager
// speedup if any ("no answer beat the reference by more than the noise (best 0.91x); the
// reference stands"), else that its `accepted` answers were not timed (--no-timing), else that
// no answer was accepted.
std::string no_best_file_note(const std::optional<double>& best, int accepted);

}  // namespace cudal1::rl
