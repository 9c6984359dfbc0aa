// trainer/train.h — what every stage's step shares: packing prompt + completion token lists into
// a batch, the completion tokens' log-probabilities under the model, and the optimiser around
// AdamW (warm-up cosine schedule, gradient accumulation, gradient-norm clipping) with a
// checkpoint that resumes exactly (trainable tensors, AdamW's moments, the step count).
#pragma once

#include "trainer/model.h"

#include <torch/optim/adamw.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cudal1::trainer {

// Prompt + completion per row, right-padded: causal attention never looks right, so padding at
// the end changes no real position.
struct TokenBatch {
  torch::Tensor ids;              // [B, T] int64
  torch::Tensor attention_mask;   // [B, T] int64, 1 on real tokens
  torch::Tensor completion_mask;  // [B, T - 1] float32: 1 where position t + 1 is a completion token
};
TokenBatch make_batch(const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>& prompt_and_completion,
                      int64_t pad_token_id, torch::Device device = torch::kCPU);

// log p(ids[b, t+1] | <= t) [B, T - 1] float32 (with grad when grad mode is on); the losses of
// objectives.h take it with batch.completion_mask.
torch::Tensor completion_logprobs(CausalLM& model, const TokenBatch& batch);

struct OptimConfig {
  double lr = 1e-4, min_lr_ratio = 0.1;
  int64_t warmup_steps = 0, total_steps = 1000;
  double weight_decay = 0.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double max_grad_norm = 1.0;    // 0: no clipping
  int64_t accumulation = 1;      // micro-batches per optimiser step
};

struct StepStats {
  bool stepped = false;          // false: a micro-batch was accumulated, no update yet
  int64_t step = 0;              // optimiser steps taken so far
  double lr = 0, grad_norm = 0;  // of the update just made (grad_norm before clipping)
};

// AdamW over named trainable tensors (a LoRA adapter's factors, or every parameter).
class Optimizer {
 public:
  Optimizer(std::vector<std::pair<std::string, torch::Tensor>> params, OptimConfig config);
  // Back-propagates loss / accumulation; every `accumulation` calls, syncs the gradients (below),
  // clips, sets the scheduled learning rate, updates and zeroes the gradients. An undefined loss
  // counts a micro-batch that adds no gradient (a data-parallel rank whose share of a batch is
  // empty still takes part in the step).
  StepStats backward_and_step(const torch::Tensor& loss);
  int64_t step() const { return step_; }

  // Called once per optimiser step, before clipping, with every trainable tensor's gradient
  // (zeros where the step reached none), to be changed in place: data-parallel training averages
  // them over its ranks here (DataParallel::all_reduce_mean), so that every rank clips the same
  // gradient and makes the same update. Unset: the local gradients are used as they are.
  using GradientSync = std::function<void(std::vector<torch::Tensor>& grads)>;
  void set_gradient_sync(GradientSync sync) { sync_ = std::move(sync); }

  // The trainable tensors, AdamW's state and the step count to `folder` (trainable.safetensors,
  // optimizer.pt, trainer_state.json), between optimiser steps (Error(usage) in the middle of an
  // accumulation); load_checkpoint into an optimiser over the same names continues bit for bit.
  // Error(input) when a name or shape differs.
  void save_checkpoint(const std::filesystem::path& folder) const;
  void load_checkpoint(const std::filesystem::path& folder);

 private:
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  OptimConfig config_;
  std::unique_ptr<torch::optim::AdamW> adamw_;
  GradientSync sync_;
  int64_t step_ = 0, micro_ = 0;
};

}  // namespace cudal1::trainer
