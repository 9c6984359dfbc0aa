#include <gtest/gtest.h>

#include <cstring>

#include "evaluator/precision.h"
#include "tensors/test_tensors.h"

using namespace cudal1;
using namespace cudal1::test;

TEST(Precision, RelativeErrorIsNormOfDifferenceOverNormOfOracle) {
  auto oracle = f32({3, 4});           // norm 5
  auto actual = f32({3, 4.5f});        // difference norm 0.5
  EXPECT_NEAR(*relative_error(actual, oracle), 0.1, 1e-7);
  EXPECT_FALSE(relative_error(f32({1, 2, 3}), oracle).has_value());  // other shape
  EXPECT_NEAR(*relative_error(f32({0, 0.5f}), f32({0, 0})), 0.5, 1e-7);  // all-zero oracle: absolute
}

TEST(Precision, LadderFlagsAnErrorThatReachesTowardAReducedRung) {
  nlohmann::json rungs = {{"as_run", {3e-7}}, {"tf32", {4e-4}}, {"bf16", {3e-3}}};
  // threshold = max(8 x 3e-7, sqrt(3e-7 x 4e-4)) ~ 1.1e-5
  EXPECT_FALSE(judge_precision(rungs, {2e-6}).reduced);      // honest: sums in another order
  auto tf32 = judge_precision(rungs, {5e-4});
  EXPECT_TRUE(tf32.reduced);
  EXPECT_EQ(tf32.like, "tf32");
  EXPECT_NE(tf32.evidence.find("float64 oracle"), std::string::npos);
  auto bf16 = judge_precision(rungs, {2.5e-3});
  EXPECT_TRUE(bf16.reduced);
  EXPECT_EQ(bf16.like, "bf16");
}

TEST(Precision, NoVerdictWhereReducedRungsMatchTheReference) {
  // A float32 convolution cuDNN already runs in TF32: as_run ~ tf32, nothing lower to tell apart
  // except bf16.
  nlohmann::json rungs = {{"as_run", {5e-4}}, {"tf32", {5e-4}}};
  EXPECT_FALSE(judge_precision(rungs, {6e-4}).reduced);
  // An exact reference (elementwise): the floor keeps honest rounding differences fine.
  nlohmann::json exact = {{"as_run", {0.0}}, {"bf16", {2e-3}}};
  EXPECT_FALSE(judge_precision(exact, {1e-7}).reduced);
  EXPECT_TRUE(judge_precision(exact, {1e-3}).reduced);
  // Outputs without a float error (null) are skipped.
  nlohmann::json with_int = {{"as_run", {nullptr}}, {"bf16", {nullptr}}};
  EXPECT_FALSE(judge_precision(with_int, {std::nullopt}).reduced);
}
