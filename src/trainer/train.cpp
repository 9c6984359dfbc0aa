#include "trainer/train.h"

#include "trainer/objectives.h"
#include "trainer/safetensors.h"

#include <torch/nn/utils/clip_grad.h>
#include <torch/serialize.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace cudal1::trainer {

TokenBatch make_batch(const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>& rows,
                      int64_t pad_token_id, torch::Device device) {
  if (rows.empty()) throw Error(ErrorKind::internal, "make_batch: no rows", "pass at least one prompt and completion");
  int64_t T = 0;
  for (auto& [p, c] : rows) {
    if (p.empty() || c.empty())
      throw Error(ErrorKind::input, "a training example has an empty prompt or completion",
                  "drop examples whose prompt or completion tokenizes to nothing");
    T = std::max<int64_t>(T, int64_t(p.size() + c.size()));
  }
  const int64_t B = int64_t(rows.size());
  auto ids = torch::full({B, T}, pad_token_id, torch::kInt64);
  auto mask = torch::zeros({B, T}, torch::kInt64);
  auto completion = torch::zeros({B, T - 1}, torch::kFloat32);
  for (int64_t b = 0; b < B; ++b) {
    const auto& [p, c] = rows[b];
    int64_t t = 0;
    for (int64_t id : p) ids[b][t++] = id;
    for (int64_t id : c) {
      completion[b][t - 1] = 1.0;  // position t is predicted from position t - 1
      ids[b][t++] = id;
    }
    mask[b].narrow(0, 0, t).fill_(1);
  }
  return {ids.to(device), mask.to(device), completion.to(device)};
}

torch::Tensor completion_logprobs(CausalLM& model, const TokenBatch& batch) {
  torch::Tensor logits = model.forward(batch.ids, batch.attention_mask);
  return next_token_logprobs(logits, batch.ids);
}

Optimizer::Optimizer(std::vector<std::pair<std::string, torch::Tensor>> params, OptimConfig config)
    : params_(std::move(params)), config_(config) {
  if (params_.empty()) throw Error(ErrorKind::usage, "nothing to train", "apply LoRA or unfreeze parameters first");
  if (config_.accumulation < 1) config_.accumulation = 1;
  std::vector<torch::Tensor> tensors;
  for (auto& [name, t] : params_) tensors.push_back(t);
  adamw_ = std::make_unique<torch::optim::AdamW>(
      tensors, torch::optim::AdamWOptions(config_.lr)
                   .betas({config_.beta1, config_.beta2})
                   .eps(config_.eps)
                   .weight_decay(config_.weight_decay));
}

StepStats Optimizer::backward_and_step(const torch::Tensor& loss) {
  if (loss.defined()) (loss / double(config_.accumulation)).backward();
  StepStats s;
  if (++micro_ < config_.accumulation) {
    s.step = step_;
    return s;
  }
  micro_ = 0;
  std::vector<torch::Tensor> tensors;
  for (auto& [name, t] : params_) tensors.push_back(t);
  if (sync_) {
    // Every rank must hand over the same tensors, reached by its micro-batches or not.
    std::vector<torch::Tensor> grads;
    for (auto& t : tensors) {
      if (!t.grad().defined()) t.mutable_grad() = torch::zeros_like(t);
      grads.push_back(t.grad());
    }
    sync_(grads);
  }
  if (config_.max_grad_norm > 0) {
    s.grad_norm = torch::nn::utils::clip_grad_norm_(tensors, config_.max_grad_norm);
  } else {
    double sq = 0;
    for (auto& t : tensors)
      if (t.grad().defined()) sq += t.grad().detach().to(torch::kFloat64).pow(2).sum().item<double>();
    s.grad_norm = std::sqrt(sq);
  }
  s.lr = warmup_cosine_lr(step_, config_.warmup_steps, config_.total_steps, config_.lr, config_.min_lr_ratio);
  for (auto& group : adamw_->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(s.lr);
  adamw_->step();
  adamw_->zero_grad();
  s.stepped = true;
  s.step = ++step_;
  return s;
}

void Optimizer::save_checkpoint(const fs::path& folder) const {
  if (micro_ != 0)
    throw Error(ErrorKind::usage, "a checkpoint in the middle of gradient accumulation would lose the gradients so far",
                "save after backward_and_step reports stepped");
  fs::create_directories(folder);
  std::map<std::string, torch::Tensor> trainable;
  for (auto& [name, t] : params_) trainable[name] = t.detach();
  save_safetensors(folder / "trainable.safetensors", trainable, {});
  torch::save(*adamw_, (folder / "optimizer.pt").string());
  nlohmann::json state = {{"step", step_}, {"names", nlohmann::json::array()}};
  for (auto& [name, t] : params_) state["names"].push_back(name);
  write_file(folder / "trainer_state.json", state.dump(2) + "\n", "check that the checkpoint folder is writable");
}

void Optimizer::load_checkpoint(const fs::path& folder) {
  auto hint = "resume with the same model, adapter settings and trainable parameters the checkpoint was saved with";
  nlohmann::json state = nlohmann::json::parse(read_file(folder / "trainer_state.json"), nullptr, false);
  if (state.is_discarded() || !state.contains("names"))
    throw Error(ErrorKind::input, "trainer_state.json is not a cudal1 checkpoint's", hint, folder.string());
  std::vector<std::string> names;
  for (auto& [name, t] : params_) names.push_back(name);
  if (state["names"].get<std::vector<std::string>>() != names)
    throw Error(ErrorKind::input, "the checkpoint trains other parameters than this optimiser", hint, folder.string());
  auto file = SafetensorsFile::open(folder / "trainable.safetensors");
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : params_) {
    torch::Tensor saved = file.get(name, /*copy=*/true);
    if (!saved.sizes().equals(t.sizes()))
      throw Error(ErrorKind::input, "checkpoint tensor " + name + " has another shape", hint, folder.string());
    t.copy_(saved);
  }
  torch::load(*adamw_, (folder / "optimizer.pt").string());
  step_ = state.value("step", int64_t(0));
  micro_ = 0;
}

}  // namespace cudal1::trainer
