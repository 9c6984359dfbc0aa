// evaluator/oracle.h — correctness against a float64 oracle, where the reference is the imprecise one.
//
// The tolerance test compares the candidate with the reference's outputs. When the reference is
// itself far from the exact result (a bfloat16 matmul on a CPU without bf16 instructions, an
// accumulation in half precision), an honest candidate that computes more precisely fails it.
// Such a candidate is judged against the float64 oracle instead: every element within the
// tolerance of the oracle, and its relative error to the oracle no larger than the reference's.
// A candidate less precise than the reference never passes this way: it keeps the tolerance test
// and the precision ladder (precision.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensors/compare.h"
#include "tensors/tensor_file.h"

namespace cudal1 {

struct OracleJudgement {
  bool passed = false;
  // Per output: {index, candidate_error, reference_error, outside_tolerance, elements}, and a
  // `problem` for a person when it did not pass.
  nlohmann::json outputs = nlohmann::json::array();
  std::string problem;  // the first output's reason, when it did not pass
};

// expected: the reference's outputs; actual: the candidate's; oracle: the reference's model run in
// float64 on the same inputs. Outputs that are not floating point must equal the reference's
// exactly. The tolerance is the one the task's output dtype gets under `mode`.
OracleJudgement judge_against_oracle(const std::vector<TensorValue>& expected, const std::vector<TensorValue>& actual,
                                     const std::vector<TensorValue>& oracle, ToleranceMode mode);

// The same rule on a timed call's sampled values (per output: {dtype, numel, positions, values}),
// with the oracle's values at the same positions. Empty when the candidate passes, else why not.
std::string samples_against_oracle(const nlohmann::json& candidate, const nlohmann::json& reference,
                                   const nlohmann::json& oracle, ToleranceMode mode);

}  // namespace cudal1
