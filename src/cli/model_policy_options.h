// cli/model_policy_options: a local model as the loop's policy on the command line (builds with
// the trainer): `cudal1 optimize --policy model --model DIR` and the sampling of `cudal1 train
// selfsup|crl`.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "policy/policy.h"
#include "trainer/model_policy.h"

namespace cudal1::cli {

// An answer's length limit unless --max-new-tokens says otherwise: room for the three sections of
// the answer format around a whole ModelNew file.
inline constexpr int64_t kDefaultMaxNewTokens = 2048;

// --temperature --top-p --max-new-tokens (default kDefaultMaxNewTokens) --sample-batch
void add_sampling_options(CLI::App* cmd, trainer::ModelPolicyOptions& o);

// "auto": bfloat16 on a GPU, float32 on the CPU (bf16 matmuls are slow there).
std::string model_dtype(const std::string& dtype, const std::string& device);

struct ModelPolicyArgs {
  std::string model, adapter, device = "auto", dtype = "auto", chat_format;  // device: trainer::resolve_device
  trainer::ModelPolicyOptions sampling;
};

// --model --adapter --model-device --model-dtype --chat-format and the sampling options.
void add_model_policy_options(CLI::App* cmd, ModelPolicyArgs& a);

// Loads the model (and adapter) and returns it as a policy. Error(usage) without --model and for a
// --model-device this libtorch cannot reach.
std::unique_ptr<policy::Policy> make_model_policy(const ModelPolicyArgs& a);

}  // namespace cudal1::cli
