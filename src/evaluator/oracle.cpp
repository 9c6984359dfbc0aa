#include "evaluator/oracle.h"

#include <cmath>

#include "core/format.h"
#include "evaluator/precision.h"
#include "evaluator/verdicts.h"

namespace cudal1 {

namespace {

using json = nlohmann::json;

// Elements of `actual` outside `tol` of the oracle (shapes equal, any float dtypes).
int64_t outside_oracle(const TensorValue& oracle, const TensorValue& actual, Tolerance tol) {
  int64_t n = 0;
  for (int64_t i = 0, size = oracle.numel(); i < size; ++i) n += element_outside(oracle.at(i), actual.at(i), tol);
  return n;
}

// One output: within tolerance of the oracle everywhere, and no farther from it than the reference.
json judge_output(std::size_t index, const TensorValue& expected, const TensorValue& actual, const TensorValue& oracle,
                  ToleranceMode mode) {
  json out = {{"index", index}};
  if (!expected.is_tensor || !dtype_is_float(expected.dtype)) {
    bool same = actual.is_tensor && expected.dtype == actual.dtype && expected.shape == actual.shape &&
                expected.bytes == actual.bytes;
    if (!same) out["problem"] = "not a float output, and not equal to the reference's";
    return out;
  }
  if (!actual.is_tensor || actual.dtype != expected.dtype || actual.shape != expected.shape || !oracle.is_tensor ||
      oracle.shape != expected.shape) {
    out["problem"] = "shape or dtype differs";
    return out;
  }
  auto cand_err = relative_error(actual, oracle), ref_err = relative_error(expected, oracle);
  int64_t outside = outside_oracle(oracle, actual, tolerance_for(expected.dtype, mode));
  out.update({{"candidate_error", cand_err ? json(*cand_err) : json()}, {"reference_error", ref_err ? json(*ref_err) : json()},
              {"outside_tolerance", outside}, {"elements", oracle.numel()}});
  if (outside > 0)
    out["problem"] = std::to_string(outside) + " of " + std::to_string(oracle.numel()) +
                     " elements outside tolerance of the float64 oracle";
  else if (!cand_err || !ref_err || *cand_err > *ref_err)
    out["problem"] = "relative error to the float64 oracle " + (cand_err ? format_sci(*cand_err) : std::string("-")) +
                     ", above the reference's own " + (ref_err ? format_sci(*ref_err) : std::string("-"));
  return out;
}

}  // namespace

OracleJudgement judge_against_oracle(const std::vector<TensorValue>& expected, const std::vector<TensorValue>& actual,
                                     const std::vector<TensorValue>& oracle, ToleranceMode mode) {
  OracleJudgement j;
  if (expected.size() != actual.size() || expected.size() != oracle.size()) {
    j.problem = "returned " + std::to_string(actual.size()) + " values, expected " + std::to_string(expected.size());
    return j;
  }
  j.passed = true;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    json out = judge_output(i, expected[i], actual[i], oracle[i], mode);
    if (out.contains("problem") && j.passed) {
      j.passed = false;
      j.problem = "output " + std::to_string(i) + ": " + out["problem"].get<std::string>();
    }
    j.outputs.push_back(out);
  }
  return j;
}

std::string samples_against_oracle(const json& candidate, const json& reference, const json& oracle, ToleranceMode mode) {
  if (!candidate.is_array() || !reference.is_array() || !oracle.is_array() || candidate.size() != reference.size() ||
      oracle.size() != reference.size())
    return "the oracle's samples do not match the call's outputs";
  std::vector<TensorValue> e, a, o;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    if (reference[i].is_null()) continue;
    if (candidate[i].is_null() || oracle[i].is_null()) return "output " + std::to_string(i) + ": not a readable tensor";
    if (candidate[i].value("positions", "") != reference[i].value("positions", "") ||
        oracle[i].value("positions", "") != reference[i].value("positions", ""))
      return "output " + std::to_string(i) + ": sampled positions differ from those checked";
    e.push_back(sampled_value(reference[i])), a.push_back(sampled_value(candidate[i])), o.push_back(sampled_value(oracle[i]));
  }
  OracleJudgement j = judge_against_oracle(e, a, o, mode);
  return j.passed ? "" : j.problem;
}

}  // namespace cudal1
