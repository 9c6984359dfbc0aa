// The exemplar sampler against hand-computed buckets and probabilities, and its draws.
#include "rl/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/error.h"

namespace cudal1::rl {
namespace {

std::vector<Exemplar> scores(std::initializer_list<double> s) {
  std::vector<Exemplar> out;
  for (double x : s) out.push_back({"c" + std::to_string(out.size()), x});
  return out;
}

TEST(Sampler, BucketsAndSoftmaxByHand) {
  // Scores 1, 1.2, 2, 3 in 2 buckets of width 1: [1, 2) holds 1 and 1.2, [2, 3] holds 2 and 3.
  auto ex = scores({1.0, 1.2, 2.0, 3.0});
  SamplerConfig c;
  c.buckets = 2;
  c.tau = 0.5;
  auto b = make_buckets(ex, c);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].members, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(b[1].members, (std::vector<std::size_t>{2, 3}));
  EXPECT_DOUBLE_EQ(b[0].mean, 1.1);
  EXPECT_DOUBLE_EQ(b[1].mean, 2.5);
  // global mean 1.8: weights exp(-0.7 / 0.5) and exp(0.7 / 0.5)
  double lo = std::exp(-1.4), hi = std::exp(1.4);
  EXPECT_NEAR(b[0].probability, lo / (lo + hi), 1e-12);
  EXPECT_NEAR(b[1].probability, hi / (lo + hi), 1e-12);
}

TEST(Sampler, EmptyBucketsAreDroppedAndEqualScoresMakeOne) {
  SamplerConfig c;
  c.buckets = 4;
  auto b = make_buckets(scores({1.0, 1.0, 5.0}), c);  // buckets [1,2) and [4,5]; two empty ones dropped
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].members, (std::vector<std::size_t>{2}));
  auto same = make_buckets(scores({2.0, 2.0, 2.0}), c);
  ASSERT_EQ(same.size(), 1u);
  EXPECT_DOUBLE_EQ(same[0].probability, 1.0);
  EXPECT_TRUE(make_buckets({}, c).empty());
}

TEST(Sampler, PicksComeFromDistinctBucketsAndRepeatWithTheSeed) {
  auto ex = scores({0.5, 0.6, 1.0, 1.1, 2.0, 2.2, 4.0});
  SamplerConfig c;
  c.buckets = 4;
  c.picks = 2;
  auto b = make_buckets(ex, c);
  std::map<std::size_t, std::size_t> bucket_of;
  for (std::size_t k = 0; k < b.size(); ++k)
    for (std::size_t i : b[k].members) bucket_of[i] = k;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::mt19937_64 r1(seed), r2(seed);
    auto p = sample_exemplars(ex, c, r1);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_NE(bucket_of[p[0]], bucket_of[p[1]]);
    EXPECT_EQ(p, sample_exemplars(ex, c, r2));
  }
  // Fewer non-empty buckets than picks: one from each there is.
  std::mt19937_64 r(7);
  c.picks = 5;
  EXPECT_EQ(sample_exemplars(scores({1.0, 3.0}), c, r).size(), 2u);
  EXPECT_TRUE(sample_exemplars({}, c, r).empty());
}

TEST(Sampler, LowTemperatureFavoursTheFastBucket) {
  auto ex = scores({1.0, 1.0, 1.0, 1.0, 3.0});
  SamplerConfig c;
  c.buckets = 2;
  c.picks = 1;
  c.tau = 0.1;
  std::mt19937_64 rng(1);
  int fast = 0;
  for (int i = 0; i < 200; ++i) fast += sample_exemplars(ex, c, rng)[0] == 4;
  EXPECT_GT(fast, 195);  // probability 1 - 1e-8
  c.tau = 1e-6;          // weights underflow: still a valid draw
  c.picks = 2;
  auto both = sample_exemplars(ex, c, rng);
  EXPECT_EQ(std::set<std::size_t>(both.begin(), both.end()).size(), 2u);
}

// One file measured on two devices comes back twice from the store, with two speedups: it is
// one version, never two buckets' worth of exemplars.
TEST(Sampler, TheSameFileIsNeverPickedTwice) {
  std::vector<Exemplar> ex = {{"same", 1.0}, {"same", 3.0}};
  SamplerConfig c;
  c.buckets = 2;
  c.picks = 2;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed);
    EXPECT_EQ(sample_exemplars(ex, c, rng), (std::vector<std::size_t>{0}));
  }
  ex.push_back({"other", 2.0});
  std::mt19937_64 rng(3);
  auto p = sample_exemplars(ex, c, rng);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NE(ex[p[0]].id, ex[p[1]].id);
}

TEST(Sampler, BadConfigurationIsAUsageError) {
  SamplerConfig c;
  c.tau = 0;
  EXPECT_THROW(make_buckets(scores({1.0}), c), Error);
  c.tau = 1;
  c.buckets = 0;
  EXPECT_THROW(make_buckets(scores({1.0}), c), Error);
}

// The rounds that show exemplars are spread evenly: every one at 1, none at 0, every other at
// 0.5 with neighbouring tasks out of step (so one round of two tasks asks both kinds), one in four
// at 0.25.
TEST(Sampler, AShareOfRoundsIsSpreadOverRoundsAndTasks) {
  for (int r = 1; r <= 8; ++r) {
    EXPECT_TRUE(round_shows_exemplars(1.0, r, 0));
    EXPECT_FALSE(round_shows_exemplars(0.0, r, 3));
    EXPECT_NE(round_shows_exemplars(0.5, r, 0), round_shows_exemplars(0.5, r + 1, 0));
    EXPECT_NE(round_shows_exemplars(0.5, r, 0), round_shows_exemplars(0.5, r, 1));
  }
  for (std::size_t task = 0; task < 5; ++task) {
    int shown = 0;
    for (int r = 1; r <= 8; ++r) shown += round_shows_exemplars(0.25, r, task);
    EXPECT_EQ(shown, 2) << "task " << task;
    shown = 0;
    for (int r = 1; r <= 10; ++r) shown += round_shows_exemplars(0.3, r, task);
    EXPECT_EQ(shown, 3) << "task " << task;
  }
}

}  // namespace
}  // namespace cudal1::rl
