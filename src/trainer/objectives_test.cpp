// The three stages' losses and the schedule on hand-computed cases: sequence means over masked
// tokens, the clipped ratio in both signs of the advantage (which token's clip binds, and that it
// stops the gradient), the k3 KL, the warm-up and cosine points.
#include "trainer/objectives.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace cudal1::trainer;

namespace {

// float64, so hand-computed values compare at 1e-12.
torch::Tensor row(std::initializer_list<double> v) { return torch::tensor(std::vector<double>(v), torch::kFloat64).unsqueeze(0); }

}  // namespace

TEST(Objectives, SftLossAveragesEachSequenceOverItsOwnTokens) {
  auto lp = torch::tensor({-1.0, -2.0, -3.0, -4.0, 0.0, 0.0}).view({2, 3});
  auto mask = torch::tensor({1.0, 1.0, 1.0, 1.0, 0.0, 0.0}).view({2, 3});
  EXPECT_NEAR(sft_loss(lp, mask).item<double>(), 3.0, 1e-12);  // sequences -2 and -4
}

TEST(Objectives, ReinforceWeighsOnlyRewardedSamples) {
  auto lp = torch::tensor({-1.0, -2.0, -3.0, -4.0, 0.0, 0.0}).view({2, 3});
  auto mask = torch::tensor({1.0, 1.0, 1.0, 1.0, 0.0, 0.0}).view({2, 3});
  EXPECT_NEAR(reinforce_loss(lp, mask, torch::tensor({1.0, 0.0})).item<double>(), 1.0, 1e-12);
  EXPECT_NEAR(reinforce_loss(lp, mask, torch::tensor({0.0, 0.0})).item<double>(), 0.0, 1e-12);
}

// Answers of 4 and 2 tokens: each reduction against its formula, alone and as part of a round
// of 4 answers and 12 tokens (a micro-batch's share), and the names as the CLI takes them.
TEST(Objectives, EachReductionWeighsTokensAsItsNameSays) {
  auto x = torch::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 0.0}, torch::kFloat64).view({2, 4});
  auto mask = torch::tensor({1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0}, torch::kFloat64).view({2, 4});
  using L = LossAggregation;
  EXPECT_NEAR(reduce_tokens(x, mask, {}).item<double>(), (2.5 + 5.5) / 2, 1e-12);
  EXPECT_NEAR(reduce_tokens(x, mask, {L::token_mean}).item<double>(), 21.0 / 6, 1e-12);
  EXPECT_NEAR(reduce_tokens(x, mask, {L::seq_mean_token_sum_norm}).item<double>(), 21.0 / (4 * 2), 1e-12);
  EXPECT_NEAR(reduce_tokens(x, mask, {L::seq_mean_token_sum_norm, 0, 0, 8}).item<double>(), 21.0 / (8 * 2), 1e-12);
  EXPECT_NEAR(reduce_tokens(x, mask, {L::seq_mean_token_mean, 4, 12}).item<double>(), (2.5 + 5.5) / 4, 1e-12);
  EXPECT_NEAR(reduce_tokens(x, mask, {L::token_mean, 4, 12}).item<double>(), 21.0 / 12, 1e-12);
  EXPECT_NEAR(reduce_tokens(x, mask, {L::seq_mean_token_sum_norm, 4, 12, 8}).item<double>(), 21.0 / (8 * 4), 1e-12);
  for (L m : kLossAggregations) EXPECT_EQ(parse_loss_aggregation(loss_aggregation_name(m)), m);
  EXPECT_FALSE(parse_loss_aggregation("sequence-mean").has_value());
}

// Two rewarded answers, of 1 and 3 tokens: under the per-answer mean each token of the short one
// is pulled three times as hard as one of the long one; the other two pull every token alike.
TEST(Objectives, OnlyThePerAnswerMeanPullsShortAnswersHarder) {
  using L = LossAggregation;
  for (L m : {L::seq_mean_token_mean, L::token_mean, L::seq_mean_token_sum_norm}) {
    auto lp = torch::tensor({-1.0, 0.0, 0.0, -1.0, -1.0, -1.0}, torch::kFloat64).view({2, 3}).requires_grad_(true);
    auto mask = torch::tensor({1.0, 0.0, 0.0, 1.0, 1.0, 1.0}, torch::kFloat64).view({2, 3});
    reinforce_loss(lp, mask, torch::tensor({1.0, 1.0}, torch::kFloat64), {m}).backward();
    const double short_pull = -lp.grad()[0][0].item<double>(), long_pull = -lp.grad()[1][0].item<double>();
    EXPECT_GT(long_pull, 0.0) << loss_aggregation_name(m);
    EXPECT_NEAR(short_pull / long_pull, m == L::seq_mean_token_mean ? 3.0 : 1.0, 1e-12) << loss_aggregation_name(m);
    EXPECT_EQ(lp.grad()[0][1].item<double>(), 0.0);  // padding
  }
}

TEST(Objectives, GrpoClipsTheRatioOnTheSideTheAdvantagePushes) {
  // Ratios 1.5, 0.5, 1.1 against the sampling policy; eps 0.2; no KL (reference = new).
  auto fresh = [] { return row({std::log(1.5), std::log(0.5), std::log(1.1)}).requires_grad_(true); };
  auto old = row({0, 0, 0}), mask = row({1, 1, 1});
  GrpoConfig c{0.2, 0.0};

  auto up = fresh();
  GrpoTerms plus = grpo_loss(up, old, up.detach(), torch::tensor({1.0}), mask, c);
  EXPECT_NEAR(plus.loss.item<double>(), -(1.2 + 0.5 + 1.1) / 3, 1e-12);  // 1.5 clipped to 1.2
  EXPECT_NEAR(plus.clip_fraction, 1.0 / 3, 1e-12);
  EXPECT_NEAR(plus.ratio_mean, (1.5 + 0.5 + 1.1) / 3, 1e-12);
  plus.loss.backward();
  auto g = up.grad();
  EXPECT_NEAR(g[0][0].item<double>(), 0.0, 1e-12) << "a clipped token must not push further";
  EXPECT_NEAR(g[0][1].item<double>(), -0.5 / 3, 1e-12);
  EXPECT_NEAR(g[0][2].item<double>(), -1.1 / 3, 1e-12);

  auto down = fresh();
  GrpoTerms minus = grpo_loss(down, old, down.detach(), torch::tensor({-1.0}), mask, c);
  EXPECT_NEAR(minus.loss.item<double>(), (1.5 + 0.8 + 1.1) / 3, 1e-12);  // 0.5 clipped to 0.8
  EXPECT_NEAR(minus.clip_fraction, 1.0 / 3, 1e-12);
  minus.loss.backward();
  EXPECT_NEAR(down.grad()[0][0].item<double>(), 1.5 / 3, 1e-12);
  EXPECT_NEAR(down.grad()[0][1].item<double>(), 0.0, 1e-12);
}

TEST(Objectives, GrpoKlIsTheK3EstimateAgainstTheReference) {
  auto lp = row({std::log(1.5), std::log(0.5), std::log(1.1)});
  auto ref = row({0, 0, 0}), mask = row({1, 1, 1});
  // k3 = 1/r + log r - 1 per token, r = new / ref.
  double k = 0;
  for (double r : {1.5, 0.5, 1.1}) k += 1 / r + std::log(r) - 1;
  k /= 3;
  GrpoTerms t = grpo_loss(lp, lp, ref, torch::tensor({1.0}), mask, GrpoConfig{0.2, 0.04});
  EXPECT_NEAR(t.kl_mean, k, 1e-12);
  EXPECT_NEAR(t.loss.item<double>(), -(1.0 - 0.04 * k), 1e-12);  // ratio 1 everywhere: surrogate = A
  EXPECT_NEAR(t.clip_fraction, 0.0, 1e-12);
  // Padding carries nothing: a masked-out token with a wild value changes neither figure.
  auto padded = torch::cat({lp, row({5.0})}, 1), pref = torch::cat({ref, row({-5.0})}, 1), pmask = torch::cat({mask, row({0})}, 1);
  GrpoTerms p = grpo_loss(padded, padded, pref, torch::tensor({1.0}), pmask, GrpoConfig{0.2, 0.04});
  EXPECT_NEAR(p.kl_mean, k, 1e-12);
  EXPECT_NEAR(p.loss.item<double>(), t.loss.item<double>(), 1e-12);
}

TEST(Objectives, WarmupThenCosineToTheFloor) {
  EXPECT_NEAR(warmup_cosine_lr(0, 10, 110, 1.0), 0.1, 1e-12);
  EXPECT_NEAR(warmup_cosine_lr(9, 10, 110, 1.0), 1.0, 1e-12);
  EXPECT_NEAR(warmup_cosine_lr(10, 10, 110, 1.0), 1.0, 1e-12);
  EXPECT_NEAR(warmup_cosine_lr(60, 10, 110, 1.0), 0.5, 1e-12);
  EXPECT_NEAR(warmup_cosine_lr(60, 10, 110, 1.0, 0.1), 0.55, 1e-12);
  EXPECT_NEAR(warmup_cosine_lr(110, 10, 110, 1.0, 0.1), 0.1, 1e-12);
  EXPECT_NEAR(warmup_cosine_lr(500, 10, 110, 1.0), 0.0, 1e-12);
}
