// trainer/rl_stage.h — CUDA-L1's stages 2 and 3 as resumable runs. A step is one round of the
// optimisation loop (rl/loop.h) with the model being trained as its policy (model_policy.h): every
// task's prompt is answered G times, every answer is judged by the hardened evaluator in its own
// process and stored with its reward; then the model learns from that round:
//
// - self-supervised (stage 2): REINFORCE with a 0/1 reward and no baseline — only the answers that
//   ran and were correct (accepted) carry weight; a round without one makes no update.
// - contrastive RL (stage 3): GRPO's clipped-ratio objective on the loop's group advantages (raw
//   reward = eager speedup, 0 on failure, a penalty on a caught hack; normalised over a rolling
//   window and clipped), with a k3 KL term to the reference policy: the model with its adapters
//   off (LoRA), or the starting model held frozen (full fine-tuning). The loop's prompts show
//   earlier variants with their speedups (the contrastive part), sampled by score bucket.
//
// OUT/ holds loop/ (the loop's run folder: candidates, best files, samples.jsonl), train_log.jsonl
// (one line per round: loss, lr, grad_norm, samples, correct_rate, raw and normalised reward mean
// and std, trained samples; KL, clip fraction and ratio for GRPO), checkpoint/ (after every
// round) and at the end adapter/ or model/. Answers are in the store under the loop run's name, so
// a run with the same OUT resumes at its first round without a checkpoint: a round already
// sampled is trained on from the store, not sampled again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rl/loop.h"
#include "store/store.h"
#include "tokenizer/chat_template.h"
#include "trainer/lora.h"
#include "trainer/model_policy.h"
#include "trainer/objectives.h"
#include "trainer/train.h"

namespace cudal1::trainer {

enum class RlObjective { selfsup, crl };
const char* rl_objective_name(RlObjective objective);  // "selfsup", "crl"

struct RlStageOptions {
  RlObjective objective = RlObjective::crl;
  std::filesystem::path model_dir;       // config.json, weights, tokenizer (an SFT run's model/ works)
  std::optional<std::filesystem::path> adapter_dir;  // go on training this PEFT adapter (an SFT run's adapter/)
  std::filesystem::path out_dir;
  std::vector<rl::LoopTask> tasks;
  // The loop's settings: group size, sampler, rewards, prompt templates, evaluation, lanes. run and
  // run_dir default to the stage's ("<objective>:<OUT>", OUT/loop); rounds and patience are set here.
  rl::LoopConfig loop;
  int rounds = 10;                       // optimisation rounds, one training step each
  int ppo_epochs = 1;                    // optimiser steps on each round's samples (GRPO's mu)
  int micro_batch = 4;                   // samples per forward/backward
  bool full = false;
  LoraConfig lora;
  OptimConfig optim;                     // total_steps and accumulation are set here
  GrpoConfig grpo;
  LossAggregation loss_aggregation = LossAggregation::seq_mean_token_mean;  // both objectives'
  ModelPolicyOptions sampling;
  std::string device = "cpu", dtype = "float32";
  std::optional<tokenizer::ChatFormat> chat_format;
  uint64_t seed = 0;
};

// One round as it was logged.
struct RlRoundStats {
  int round = 0;
  std::size_t samples = 0, correct = 0, trained = 0;
  double raw_reward_mean = 0, raw_reward_std = 0, reward_mean = 0, reward_std = 0;
  double loss = 0, lr = 0, grad_norm = 0, kl = 0, clip_fraction = 0, ratio_mean = 0;
  bool updated = false;  // false: nothing carried weight (selfsup with no correct answer)
  double correct_rate() const { return samples ? double(correct) / double(samples) : 0.0; }
};

// One answer of a round as the step learns from it: the tokens as sampled, its group advantage
// (GRPO) and whether it was accepted (self-supervised).
struct RoundAnswer {
  std::vector<int64_t> prompt, completion;
  double advantage = 0;
  bool accepted = false;
};

struct RlStepConfig {
  RlObjective objective = RlObjective::crl;
  int ppo_epochs = 1, micro_batch = 4;
  GrpoConfig grpo;
  int64_t pad_token_id = 0;
  LossAggregation loss_aggregation = LossAggregation::seq_mean_token_mean;
  double fixed_length = 0;  // seq-mean-token-sum-norm's divisor: the sampling limit
};

// The stage's learning on one round, apart from sampling and evaluation: the answers that carry
// weight (every one for GRPO, the accepted ones for self-supervised) in micro-batches whose
// gradients add up, each its part of the round's loss, to the whole round's; one optimiser step per PPO
// epoch. `frozen`: the KL's reference model, or null for the model with its adapters off. Fills
// stats' loss, lr, grad_norm, kl, clip_fraction, ratio_mean, trained and updated.
void learn_from_round(CausalLM& model, CausalLM* frozen, Optimizer& opt, const std::vector<RoundAnswer>& answers,
                      const RlStepConfig& config, RlRoundStats& stats);

struct RlStageSummary {
  int rounds = 0, resumed_at = 0;
  std::vector<RlRoundStats> trained;     // the rounds this call trained on, in order
  std::filesystem::path output;          // adapter/ or model/
  std::string loop_run;                  // the store's run name of the answers
};

// Throws Error(usage) for no task or a bad setting, Error(input) for an incomplete model folder.
// `progress(stats)` after each round's step; `loop_progress` while a round samples and evaluates.
RlStageSummary run_rl_stage(Store& store, const RlStageOptions& options,
                            const std::function<void(const RlRoundStats&)>& progress = {},
                            const std::function<void(const rl::LoopProgress&)>& loop_progress = {});

}  // namespace cudal1::trainer
