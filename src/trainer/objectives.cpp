#include "trainer/objectives.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace cudal1::trainer {

namespace {

void check_shapes(const torch::Tensor& a, const torch::Tensor& mask, const char* what) {
  if (a.dim() != 2 || !a.sizes().equals(mask.sizes()))
    throw Error(ErrorKind::internal, std::string(what) + ": log-probabilities and mask must both be [B, T]",
                "pass one log-probability per completion position and a mask of the same shape");
}

// Per sequence, the mean of x over its masked tokens: [B, T] -> [B]. A sequence without tokens
// counts 0 (its denominator is clamped), which keeps an empty completion from producing NaN.
torch::Tensor sequence_mean(const torch::Tensor& x, const torch::Tensor& mask) {
  return (x * mask).sum(1) / mask.sum(1).clamp_min(1.0);
}

}  // namespace

const char* loss_aggregation_name(LossAggregation mode) {
  switch (mode) {
    case LossAggregation::token_mean: return "token-mean";
    case LossAggregation::seq_mean_token_sum_norm: return "seq-mean-token-sum-norm";
    case LossAggregation::seq_mean_token_mean: break;
  }
  return "seq-mean-token-mean";
}

std::optional<LossAggregation> parse_loss_aggregation(std::string_view name) {
  for (LossAggregation m : kLossAggregations)
    if (name == loss_aggregation_name(m)) return m;
  return std::nullopt;
}

torch::Tensor reduce_tokens(const torch::Tensor& x, const torch::Tensor& mask, const TokenReduction& r) {
  check_shapes(x, mask, "reduce_tokens");
  torch::Tensor m = mask.to(x.scalar_type());
  const double answers = r.answers > 0 ? r.answers : double(x.size(0));
  switch (r.mode) {
    case LossAggregation::token_mean: {
      const double tokens = r.tokens > 0 ? r.tokens : std::max(1.0, m.sum().item<double>());
      return (x * m).sum() / tokens;
    }
    case LossAggregation::seq_mean_token_sum_norm: {
      const double length = r.fixed_length > 0 ? r.fixed_length : double(std::max<int64_t>(1, x.size(1)));
      return (x * m).sum() / (length * answers);
    }
    case LossAggregation::seq_mean_token_mean: break;
  }
  return sequence_mean(x, m).sum() / answers;
}

torch::Tensor sft_loss(const torch::Tensor& logprobs, const torch::Tensor& mask) {
  check_shapes(logprobs, mask, "sft_loss");
  torch::Tensor m = mask.to(logprobs.scalar_type());
  return -sequence_mean(logprobs, m).mean();
}

torch::Tensor reinforce_loss(const torch::Tensor& logprobs, const torch::Tensor& mask, const torch::Tensor& rewards,
                             const TokenReduction& reduction) {
  check_shapes(logprobs, mask, "reinforce_loss");
  return -reduce_tokens(rewards.to(logprobs.scalar_type()).unsqueeze(1) * logprobs, mask, reduction);
}

GrpoTerms grpo_loss(const torch::Tensor& new_logprobs, const torch::Tensor& old_logprobs,
                    const torch::Tensor& ref_logprobs, const torch::Tensor& advantages,
                    const torch::Tensor& mask, const GrpoConfig& c, const TokenReduction& reduction) {
  check_shapes(new_logprobs, mask, "grpo_loss");
  check_shapes(old_logprobs, mask, "grpo_loss");
  check_shapes(ref_logprobs, mask, "grpo_loss");
  auto type = new_logprobs.scalar_type();
  torch::Tensor m = mask.to(type);
  torch::Tensor adv = advantages.to(type).unsqueeze(1);                          // [B, 1]
  torch::Tensor ratio = (new_logprobs - old_logprobs.detach().to(type)).exp();  // [B, T]
  torch::Tensor clipped = ratio.clamp(1.0 - c.clip_epsilon, 1.0 + c.clip_epsilon);
  torch::Tensor plain_term = ratio * adv, clipped_term = clipped * adv;
  torch::Tensor surrogate = at::minimum(plain_term, clipped_term);
  torch::Tensor log_ref_ratio = ref_logprobs.detach().to(type) - new_logprobs;
  torch::Tensor kl = log_ref_ratio.exp() - log_ref_ratio - 1.0;
  GrpoTerms t;
  t.loss = -reduce_tokens(surrogate - c.kl_beta * kl, m, reduction);
  torch::NoGradGuard no_grad;
  double tokens = std::max(1.0, m.sum().item<double>());
  t.kl_mean = sequence_mean(kl, m).mean().item<double>();
  t.clip_fraction = ((clipped_term < plain_term).to(type) * m).sum().item<double>() / tokens;
  t.ratio_mean = (ratio * m).sum().item<double>() / tokens;
  return t;
}

double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t total, double peak, double min_ratio) {
  if (warmup > 0 && step < warmup) return peak * double(step + 1) / double(warmup);
  if (step >= total || total <= warmup) return peak * min_ratio;
  double progress = double(step - warmup) / double(total - warmup);
  double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return peak * (min_ratio + (1.0 - min_ratio) * cosine);
}

}  // namespace cudal1::trainer
