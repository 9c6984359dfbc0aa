// trainer/objectives.h — the losses of CUDA-L1's three stages, on per-token log-probabilities of
// completion tokens, and the learning-rate schedule they share.
//
// Inputs are [B, T] over a group's completions, `mask` [B, T] (1 for a completion token, 0 for
// padding and prompt). Every loss averages over each sequence's own tokens first, then over
// sequences (GRPO's per-sequence mean), so a long answer does not outweigh a short one.
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

namespace cudal1::trainer {

// logprobs, mask [B, T]; the loss to minimise (a scalar).
torch::Tensor sft_loss(const torch::Tensor& logprobs, const torch::Tensor& mask);

// logprobs, mask [B, T]; rewards [B] (0 or 1).
torch::Tensor reinforce_loss(const torch::Tensor& logprobs, const torch::Tensor& mask, const torch::Tensor& rewards);

struct GrpoConfig {
  double clip_epsilon = 0.2;  // ratio kept within [1 - eps, 1 + eps]
  double kl_beta = 0.04;      // weight of the KL term
};

struct GrpoTerms {
  torch::Tensor loss;          // scalar, to minimise: -(surrogate - beta * kl)
  double kl_mean = 0;          // mean k3 KL per token (sequence mean, then mean over sequences)
  double clip_fraction = 0;    // share of completion tokens where the clipped term was the one used
  double ratio_mean = 0;       // mean policy ratio over completion tokens
};

// new_logprobs: the policy being trained (with grad) [B, T]; old_logprobs: the policy that
// sampled [B, T]; ref_logprobs: the reference policy (adapters off) [B, T]; advantages [B].
GrpoTerms grpo_loss(const torch::Tensor& new_logprobs, const torch::Tensor& old_logprobs,
                    const torch::Tensor& ref_logprobs, const torch::Tensor& advantages,
                    const torch::Tensor& mask, const GrpoConfig& config);

// Linear warm-up to `peak` over `warmup` steps, then cosine decay to `peak * min_ratio` at
// `total` steps; steps count from 0. Beyond `total` it stays at the floor.
double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t total, double peak, double min_ratio = 0.0);

}  // namespace cudal1::trainer
