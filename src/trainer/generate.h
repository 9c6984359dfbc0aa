// trainer/generate.h — batched sampling of completions for a group of prompts, with the KV cache:
// the rollout step of GRPO. Each new token comes with its log-probability under the model's plain
// distribution (temperature 1, no top-p), which is what the policy-gradient ratio needs, whatever
// temperature or nucleus the sample was drawn with.
#pragma once

#include "trainer/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cudal1::trainer {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy (argmax)
  double top_p = 1.0;        // nucleus: sample from the smallest set of tokens with this much mass
  int64_t max_new_tokens = 256;
  std::vector<int64_t> stop_token_ids;  // a sequence ends after emitting one (it is kept)
  uint64_t seed = 0;                    // same seed, prompts and model: same samples
  int64_t pad_token_id = 0;             // fills the left padding of shorter prompts
};

enum class FinishReason { stop, length };
const char* finish_reason_name(FinishReason reason);  // "stop", "length" (vLLM's words)

struct Generation {
  std::vector<int64_t> tokens;   // new tokens, the stop token included when there was one
  std::vector<float> logprobs;   // log p(token | prefix) at temperature 1, one per token
  FinishReason finish = FinishReason::length;
};

// Samples a completion for each prompt (token ids, non-empty) in one left-padded batch. Drawing
// happens on the CPU from a generator seeded with `seed`, so results repeat on any device.
std::vector<Generation> generate(CausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                                 const SamplingOptions& options);

}  // namespace cudal1::trainer
