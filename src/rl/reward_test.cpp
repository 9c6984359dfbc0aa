// Rewards, their rolling normalisation and GRPO advantages on hand-computed cases.
#include "rl/reward.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cudal1::rl {
namespace {

TEST(Reward, HackScoresBelowAnyFailure) {
  RewardConfig c;
  EXPECT_DOUBLE_EQ(raw_reward({true, false, 2.5}, c), 2.5);
  EXPECT_DOUBLE_EQ(raw_reward({false, false, 0}, c), 0.0);
  EXPECT_LT(raw_reward({false, true, 9.0}, c), 0.0);
  c.hack_penalty = 0.5;  // a misconfigured penalty still lands below a failure's 0
  EXPECT_LT(raw_reward({true, true, 9.0}, c), 0.0);
}

TEST(Reward, RollingNormalisationClipsAtOnePointFiveSigma) {
  RewardConfig c;
  c.window = 4;
  RewardNormalizer n(c);
  EXPECT_DOUBLE_EQ(n.normalise(1.0), 0.0);  // one value: no spread yet
  // {1, 3}: mean 2, std 1 -> (3 - 2) / 1
  EXPECT_DOUBLE_EQ(n.normalise(3.0), 1.0);
  // {1, 3, 100}: mean 104/3, population std from the three deviations
  double m = 104.0 / 3, sd = std::sqrt(((1 - m) * (1 - m) + (3 - m) * (3 - m) + (100 - m) * (100 - m)) / 3);
  EXPECT_NEAR(n.normalise(100.0), (100.0 - m) / sd, 1e-12);
  n.normalise(1.0);
  // window of 4: {3, 100, 1, 1000}; 1000 sits far above: clipped
  EXPECT_DOUBLE_EQ(n.normalise(1000.0), 1.5);
  EXPECT_EQ(n.count(), 4u);
  EXPECT_DOUBLE_EQ(n.normalise(-1e6), -1.5);  // {100, 1, 1000, -1e6}: 1.73 sigma below, clipped
}

TEST(Reward, GrpoAdvantagesAreGroupZScores) {
  auto a = grpo_advantages({0.0, 1.0, 2.0, 3.0}, 0.0);  // mean 1.5, std sqrt(1.25)
  double sd = std::sqrt(1.25);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_NEAR(a[0], -1.5 / sd, 1e-12);
  EXPECT_NEAR(a[3], 1.5 / sd, 1e-12);
  double sum = 0;
  for (double x : a) sum += x;
  EXPECT_NEAR(sum, 0.0, 1e-12);
  for (double x : grpo_advantages({2.0, 2.0, 2.0})) EXPECT_DOUBLE_EQ(x, 0.0);
  EXPECT_TRUE(grpo_advantages({}).empty());
}

}  // namespace
}  // namespace cudal1::rl
