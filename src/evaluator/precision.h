// evaluator/precision.h — the precision ladder: is a float32 task computed in reduced precision?
//
// The reference worker runs case 0 in float64 (the oracle) and measures the relative error
// ||y - oracle|| / ||oracle|| of the reference run as it is ("as_run") and in reduced precision
// ("tf32", "bf16", "fp16" where the device has them). A candidate whose error is far above the
// reference's and reaches toward a reduced rung computes in reduced precision, whatever the
// tolerance lets through. Unless its error is shaped like a bias or a wrong constant rather than
// rounding (error_shape.h): then it computes another function, and is incorrect.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaluator/error_shape.h"
#include "tensors/tensor_file.h"

namespace cudal1 {

struct PrecisionVerdict {
  bool reduced = false;        // above what float32 reaches, and not shown to be systematic
  bool rounding_like = false;  // ... and its error scatters like rounding: the only case worth accepting
  bool systematic = false;     // above it, with an error shaped like a bias or a wrong scale: incorrect
  std::string like;        // the rung whose error is nearest the candidate's ("as_run" when fine)
  std::string evidence;    // for a person, set when reduced or systematic
  nlohmann::json detail = nlohmann::json::array();   // per output: candidate error, rungs, threshold
};

// The smallest error an as-run rung counts as: float32 rounding, so an exact reference still
// leaves room for honest reordering of sums.
inline constexpr double kPrecisionFloor = 1e-7;

// ||actual - oracle|| / ||oracle|| over elements finite in both (absolute when the oracle is all
// zero); nullopt when the two cannot be compared (not float, other shape).
std::optional<double> relative_error(const TensorValue& actual, const TensorValue& oracle);

// rungs: {"as_run": [error per output or null], "tf32": [...], ...}. An output is reduced when
// its error exceeds max(8 x as_run, sqrt(as_run x lowest reduced rung that is itself above
// 8 x as_run)); as_run is floored at 1e-7 (float32 rounding), so exact references still leave room
// for honest reordering of sums. `shapes` (per output, may be shorter) says whether an error
// above that line is rounding or systematic; an output without one is reduced, undecided.
PrecisionVerdict judge_precision(const nlohmann::json& rungs,
                                 const std::vector<std::optional<double>>& candidate_errors,
                                 const std::vector<std::optional<ErrorShape>>& shapes = {});

}  // namespace cudal1
