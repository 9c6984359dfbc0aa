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
  auto one = [&](double x) { return n.normalise_round({x}).at(0); };
  EXPECT_DOUBLE_EQ(one(1.0), 0.0);  // one value: no spread yet
  // {1, 3}: mean 2, std 1 -> (3 - 2) / 1
  EXPECT_DOUBLE_EQ(one(3.0), 1.0);
  // {1, 3, 100}: mean 104/3, population std from the three deviations
  double m = 104.0 / 3, sd = std::sqrt(((1 - m) * (1 - m) + (3 - m) * (3 - m) + (100 - m) * (100 - m)) / 3);
  EXPECT_NEAR(one(100.0), (100.0 - m) / sd, 1e-12);
  one(1.0);
  // window of 4: {3, 100, 1, 1000}; 1000 sits far above: clipped
  EXPECT_DOUBLE_EQ(one(1000.0), 1.5);
  EXPECT_EQ(n.count(), 4u);
  n.remember(1000.0), n.remember(1000.0);
  EXPECT_DOUBLE_EQ(one(0.0), -1.5);  // {1000, 1000, 1000, 0}: 1.73 sigma below, clipped
}

// The whole round is measured against one window: the rows' order changes nothing, so answers
// that failed alike are not told apart by when they were scored.
TEST(Reward, EqualRawRewardsInARoundStayEqualAndGetNoAdvantage) {
  RewardNormalizer n(RewardConfig{});
  for (double x : {2.0, 0.0, 3.1, 1.4, 0.0, 2.2, 5.0, 0.9}) n.remember(x);
  std::vector<double> failures = n.normalise_round({0.0, 0.0, 0.0, 0.0});
  for (double x : failures) EXPECT_DOUBLE_EQ(x, failures[0]);
  EXPECT_LT(failures[0], 0.0);
  for (double a : grpo_advantages(failures)) EXPECT_DOUBLE_EQ(a, 0.0);

  std::vector<double> mixed = n.normalise_round({0.0, 2.0, 0.0, 2.0});
  EXPECT_DOUBLE_EQ(mixed[0], mixed[2]);
  EXPECT_DOUBLE_EQ(mixed[1], mixed[3]);
  std::vector<double> adv = grpo_advantages(mixed);
  EXPECT_NEAR(adv[0], -1.0, 1e-5);
  EXPECT_NEAR(adv[1], 1.0, 1e-5);
  EXPECT_DOUBLE_EQ(adv[0], adv[2]);
}

// Once accepted answers fill the window, a failure's 0 sits past the clip; a caught hack must
// still score below it, and so get the lower advantage in its group.
TEST(Reward, AHackStaysBelowAFailureAfterTheClip) {
  RewardConfig c;
  RewardNormalizer n(c);
  for (int i = 0; i < 40; ++i) n.remember(2.0 + 0.01 * (i % 5));
  double hack = raw_reward({false, true, 3.0}, c);
  std::vector<double> r = n.normalise_round({0.0, hack, 2.02, 0.0});
  EXPECT_DOUBLE_EQ(r[0], -c.clip_sigma);
  EXPECT_DOUBLE_EQ(r[1], -c.clip_sigma + c.hack_penalty);
  EXPECT_LT(r[1], r[0]);
  std::vector<double> adv = grpo_advantages(r);
  EXPECT_LT(adv[1], adv[0]);
  EXPECT_DOUBLE_EQ(adv[0], adv[3]);
  // Penalties stay out of the statistics: the window holds honest rewards only.
  std::size_t before = n.count();
  n.remember(hack);
  EXPECT_EQ(n.count(), before);
  // Without any spread a hack still lands below a failure's 0.
  RewardNormalizer flat(c);
  std::vector<double> f = flat.normalise_round({0.0, hack});
  EXPECT_DOUBLE_EQ(f[0], 0.0);
  EXPECT_LT(f[1], f[0]);
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
