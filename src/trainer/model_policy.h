// trainer/model_policy.h — a model being trained, as a policy of the optimisation loop
// (policy/policy.h): it answers a prompt with G completions sampled in one batch (generate.h)
// through the model's chat template. The RL stages run the loop's round with it, so their
// prompts, evaluation, rewards and store are the loop's own; `cudal1 optimize --policy model`
// runs the loop with a local model and nothing else. A later turn (optimize --turns) is sampled
// after the whole conversation: the prompt, each earlier answer and the feedback on it.
//
// The sampled token ids are kept per (task, round): a stage trains on exactly the tokens that were
// sampled, not on a re-encoding of their text (byte-level BPE need not give the same ids back).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/policy.h"
#include "trainer/chat_data.h"
#include "trainer/generate.h"
#include "trainer/model.h"

namespace cudal1::trainer {

struct ModelPolicyOptions {
  SamplingOptions sampling;          // temperature, top_p, max_new_tokens (stop tokens and seed set here)
  // A longer prompt gets an error answer (scored as a failure); 0: the model's positions less
  // max_new_tokens.
  int64_t max_prompt_tokens = 0;
  int64_t max_batch = 8;             // completions sampled in one batch at most
  std::string label;                 // PolicyAnswer::label; default: the model folder's name
  // Keep each answer's tokens for take_sampled (the RL stages). Off for a search with the model
  // (optimize --policy model), which would otherwise hold every prompt it ever sampled.
  bool keep_tokens = false;
};

// One answer's tokens as sampled, for training on them.
struct SampledTokens {
  std::vector<int64_t> prompt, completion;
  std::vector<float> logprobs;  // log p at temperature 1 under the policy that sampled
};

// A model folder's name for labels ("qwen-0.5b" of "models/qwen-0.5b/").
std::string model_label(const std::filesystem::path& model_dir);

class ModelPolicy : public policy::Policy {
 public:
  ModelPolicy(std::shared_ptr<CausalLM> model, ChatEncoder encoder, ModelPolicyOptions options);
  std::string name() const override { return "model"; }
  std::vector<policy::PolicyAnswer> answer(const policy::PolicyRequest& request) override;
  // max_prompt_tokens, counted as answer() counts: the whole chat-templated prompt.
  std::optional<policy::PromptBudget> prompt_budget() const override;

  // The tokens of the answers given for (task, round), in answer order, moved out; empty when
  // they were not sampled by this object (a resumed run) or keep_tokens is off.
  std::vector<SampledTokens> take_sampled(const std::string& task_id, int round);

 private:
  std::shared_ptr<CausalLM> model_;
  ChatEncoder encoder_;
  ModelPolicyOptions options_;
  std::mutex m_;
  std::map<std::pair<std::string, int>, std::vector<SampledTokens>> sampled_;
};

}  // namespace cudal1::trainer
