// cli/model_policy_options.cpp — a local model as a policy, from the command line.
#include "cli/model_policy_options.h"

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "trainer/device.h"
#include "trainer/lora.h"

namespace cudal1::cli {

void add_sampling_options(CLI::App* cmd, trainer::ModelPolicyOptions& o) {
  o.sampling.max_new_tokens = kDefaultMaxNewTokens;
  cmd->add_option("--temperature", o.sampling.temperature, "sampling temperature (0: greedy)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--top-p", o.sampling.top_p, "nucleus mass sampled from (1: all)")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--max-new-tokens", o.sampling.max_new_tokens, "tokens an answer may take at most")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--sample-batch", o.max_batch, "answers sampled in one batch at most")->check(CLI::PositiveNumber)->capture_default_str();
}

std::string model_dtype(const std::string& dtype, const std::string& device) {
  if (dtype != "auto") return dtype;
  return device.rfind("cuda", 0) == 0 ? "bfloat16" : "float32";
}

void add_model_policy_options(CLI::App* cmd, ModelPolicyArgs& a) {
  cmd->add_option("--model", a.model, "with --policy model: a Hugging Face model folder (config.json, safetensors, tokenizer.json)");
  cmd->add_option("--adapter", a.adapter, "with --policy model: a PEFT LoRA adapter folder to apply");
  cmd->add_option("--model-device", a.device, "with --policy model: where the model runs: auto (cuda when this build's "
                  "libtorch sees a GPU, else cpu), cuda, cuda:N, cpu")->capture_default_str();
  cmd->add_option("--model-dtype", a.dtype, "with --policy model: auto (bfloat16 on a GPU), float32, bfloat16, float16")->capture_default_str();
  cmd->add_option("--chat-format", a.chat_format, "chatml or llama3, when the model's chat template is not recognised");
  add_sampling_options(cmd, a.sampling);
}

std::unique_ptr<policy::Policy> make_model_policy(const ModelPolicyArgs& a) {
  if (a.model.empty())
    throw Error(ErrorKind::usage, "--policy model needs --model", "name a Hugging Face model folder (a `cudal1 train` output's model/ works)");
  std::optional<tokenizer::ChatFormat> format;
  if (!a.chat_format.empty()) format = tokenizer::parse_chat_format(a.chat_format);
  const std::string device = trainer::resolve_device(a.device);
  const torch::Device on = trainer::parse_device(device, "--model-device");
  trainer::ChatEncoder encoder(tokenizer::Tokenizer::from_directory(a.model), format);
  auto model = trainer::load_causal_lm(a.model, trainer::dtype_from_name(model_dtype(a.dtype, device)), on);
  if (!a.adapter.empty()) trainer::load_lora(*model, a.adapter);
  model->eval();
  trainer::ModelPolicyOptions o = a.sampling;
  if (o.label.empty()) o.label = trainer::model_label(a.model) + (a.adapter.empty() ? "" : "+adapter");
  return std::make_unique<trainer::ModelPolicy>(model, std::move(encoder), o);
}

}  // namespace cudal1::cli
