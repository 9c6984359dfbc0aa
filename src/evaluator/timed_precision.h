// evaluator/timed_precision.h — the precision ladder carried to the timed calls.
//
// The ladder (precision.h) runs on case 0, a checking call whose inputs the candidate holds: a
// candidate that computes in float32 while checked and in bfloat16 on the timed calls, whose
// inputs it never saw, passed it and the tolerance alike and was timed at the cheaper precision.
// So the verified timed calls are judged too: their sampled outputs against the float64 oracle's
// values at the same positions, beside the reference's own error there. Per output, the line an
// honest float32 computation stays under is the ladder's, moved to the reference's error on these
// calls: the reduced rungs are taken at the ratio to as_run that case 0 measured.
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaluator/precision.h"

namespace cudal1 {

// Sums over the verified timed calls, per output, of squared distances to the oracle's samples.
// Not thread-safe; one per evaluation.
class TimedPrecision {
 public:
  // One call's samples (per output: {dtype, numel, positions, values}, or null): the candidate's,
  // the reference's and the oracle's, at the same positions. Outputs that do not line up are
  // left out.
  void add(const nlohmann::json& candidate, const nlohmann::json& reference, const nlohmann::json& oracle);
  int calls() const { return calls_; }
  // The ladder's verdict on these calls; `ladder_rungs` is case 0's ({"as_run": [...], ...}).
  PrecisionVerdict judge(const nlohmann::json& ladder_rungs) const;

 private:
  struct Sums {
    double candidate = 0, reference = 0, oracle = 0;  // sum of (x - oracle)^2; of oracle^2
  };
  std::vector<Sums> outputs_;
  int calls_ = 0;
};

}  // namespace cudal1
