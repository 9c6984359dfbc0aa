// trainer/objectives.h — the losses of CUDA-L1's three stages, on per-token log-probabilities of
// completion tokens, and the learning-rate schedule they share.
//
// Inputs are [B, T] over a group's completions, `mask` [B, T] (1 for a completion token, 0 for
// padding and prompt). The SFT loss averages over each sequence's own tokens first, then over
// sequences; the RL losses aggregate their per-token terms as TokenReduction says (by default the
// same, GRPO's per-sequence mean).
//
// - sft_loss: mean negative log-likelihood of the completion tokens (stage 1).
// - reinforce_loss: REINFORCE with a 0/1 reward and no baseline (stage 2, self-supervised: only
//   executable and correct samples carry weight).
// - grpo_loss: the clipped-ratio objective with GRPO's group advantages and a KL term to the
//   reference policy, using the k3 estimator exp(ref - new) - (ref - new) - 1, which is
//   non-negative and unbiased (stage 3).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace cudal1::trainer {

// logprobs, mask [B, T]; the loss to minimise (a scalar).
torch::Tensor sft_loss(const torch::Tensor& logprobs, const torch::Tensor& mask);

// How the RL losses turn per-token terms into one number (the names are verl's loss_agg_mode):
// - seq_mean_token_mean: each answer's mean over its tokens, then the mean over answers (GRPO's
//   form, the default). Every answer weighs the same, so a token of a short answer weighs more
//   than one of a long answer: where rewards are positive, the short answer gains most.
// - token_mean: the mean over every completion token of the round (DAPO): each token the same.
// - seq_mean_token_sum_norm: each answer's token sum divided by one fixed length (the sampling
//   limit), then the mean over answers (Dr. GRPO): no length bias either way.
enum class LossAggregation { seq_mean_token_mean, token_mean, seq_mean_token_sum_norm };
inline constexpr LossAggregation kLossAggregations[] = {LossAggregation::seq_mean_token_mean, LossAggregation::token_mean,
                                                        LossAggregation::seq_mean_token_sum_norm};
const char* loss_aggregation_name(LossAggregation mode);
std::optional<LossAggregation> parse_loss_aggregation(std::string_view name);

// The aggregation and the round a batch belongs to: with the round's answer and token counts, a
// micro-batch's loss is its part of the round's, and the parts add up to the round's loss. A
// count of 0 takes the batch's own (the batch is the whole round).
struct TokenReduction {
  LossAggregation mode = LossAggregation::seq_mean_token_mean;
  double answers = 0, tokens = 0;  // the round's completions and their tokens
  double fixed_length = 0;         // seq_mean_token_sum_norm's divisor; 0 takes T
};

// x, mask [B, T] -> the scalar the reduction says.
torch::Tensor reduce_tokens(const torch::Tensor& x, const torch::Tensor& mask, const TokenReduction& reduction);

// logprobs, mask [B, T]; rewards [B] (0 or 1).
torch::Tensor reinforce_loss(const torch::Tensor& logprobs, const torch::Tensor& mask, const torch::Tensor& rewards,
                             const TokenReduction& reduction = {});

struct GrpoConfig {
  double clip_epsilon = 0.2;  // ratio kept within [1 - eps, 1 + eps]
  double kl_beta = 0.04;      // weight of the KL term
};

struct GrpoTerms {
  torch::Tensor loss;          // scalar, to minimise: -(surrogate - beta * kl), reduced as asked
  double kl_mean = 0;          // mean k3 KL per token (sequence mean, then mean over sequences)
  double clip_fraction = 0;    // share of completion tokens where the clipped term was the one used
  double ratio_mean = 0;       // mean policy ratio over completion tokens
};

// new_logprobs: the policy being trained (with grad) [B, T]; old_logprobs: the policy that
// sampled [B, T]; ref_logprobs: the reference policy (adapters off) [B, T]; advantages [B].
GrpoTerms grpo_loss(const torch::Tensor& new_logprobs, const torch::Tensor& old_logprobs,
                    const torch::Tensor& ref_logprobs, const torch::Tensor& advantages,
                    const torch::Tensor& mask, const GrpoConfig& config, const TokenReduction& reduction = {});

// Linear warm-up to `peak` over `warmup` steps, then cosine decay to `peak * min_ratio` at
// `total` steps; steps count from 0. Beyond `total` it stays at the floor.
double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t total, double peak, double min_ratio = 0.0);

}  // namespace cudal1::trainer
