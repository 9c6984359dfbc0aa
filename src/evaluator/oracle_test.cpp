// The oracle's rule on small hand-made tensors: the reference far from the exact result, and
// candidates that are closer, as far, or wrong in one element.
#include <gtest/gtest.h>

#include <cstring>

#include "evaluator/oracle.h"
#include "tensors/test_tensors.h"

using namespace cudal1;
using namespace cudal1::test;

namespace {

// The reference is 3-5% off the exact values, far outside the standard 1e-2 tolerance.
const TensorValue kOracle = f64({10, 20, 30, 40});
const TensorValue kReference = f32({10.4f, 19.2f, 31.0f, 41.6f});

}  // namespace

TEST(Oracle, ACandidateCloserToTheOracleThanTheReferencePasses) {
  OracleJudgement j = judge_against_oracle({kReference}, {f32({10.01f, 20.0f, 29.99f, 40.02f})}, {kOracle},
                                           ToleranceMode::standard);
  EXPECT_TRUE(j.passed) << j.problem;
  ASSERT_EQ(j.outputs.size(), 1u);
  EXPECT_LT(j.outputs[0]["candidate_error"].get<double>(), j.outputs[0]["reference_error"].get<double>());
}

TEST(Oracle, OneElementOutsideTheOraclesToleranceFailsHoweverCloseTheRest) {
  // Exact but for one element: its norm error is below the reference's, the element is wrong.
  OracleJudgement j = judge_against_oracle({kReference}, {f32({10, 20, 30, 41})}, {kOracle}, ToleranceMode::standard);
  EXPECT_FALSE(j.passed);
  EXPECT_NE(j.problem.find("1 of 4 elements outside tolerance of the float64 oracle"), std::string::npos) << j.problem;
}

TEST(Oracle, ACandidateNoCloserThanTheReferenceKeepsTheReferencesVerdict) {
  // Within 1e-2 of the oracle everywhere, but with a larger error than a reference that is itself
  // within tolerance: less precise, so the oracle does not help it.
  TensorValue precise_reference = f32({10.001f, 20.001f, 30.001f, 40.001f});
  OracleJudgement j = judge_against_oracle({precise_reference}, {f32({10.05f, 20.1f, 30.1f, 40.2f})}, {kOracle},
                                           ToleranceMode::standard);
  EXPECT_FALSE(j.passed);
  EXPECT_NE(j.problem.find("above the reference's own"), std::string::npos) << j.problem;
}

TEST(Oracle, OtherShapesDtypesAndCountsFail) {
  EXPECT_FALSE(judge_against_oracle({kReference}, {f32({10, 20, 30})}, {kOracle}, ToleranceMode::standard).passed);
  EXPECT_FALSE(judge_against_oracle({kReference}, {f64({10, 20, 30, 40})}, {kOracle}, ToleranceMode::standard).passed);
  EXPECT_FALSE(judge_against_oracle({kReference, kReference}, {kReference}, {kOracle}, ToleranceMode::standard).passed);
}

TEST(Oracle, StrictModeJudgesAgainstTheOracleWithItsOwnTolerance) {
  // 1e-3 relative off: inside standard's 1e-2, outside strict's float32 1e-4.
  TensorValue candidate = f32({10.01f, 20.02f, 30.03f, 40.04f});
  EXPECT_TRUE(judge_against_oracle({kReference}, {candidate}, {kOracle}, ToleranceMode::standard).passed);
  EXPECT_FALSE(judge_against_oracle({kReference}, {candidate}, {kOracle}, ToleranceMode::strict).passed);
}
