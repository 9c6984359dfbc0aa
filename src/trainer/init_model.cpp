// trainer/init_model.cpp — a randomly initialised model folder (see init_model.h).
#include "trainer/init_model.h"

#include "core/error.h"
#include "core/hash.h"
#include "tokenizer/tokenizer.h"
#include "trainer/model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <nlohmann/json.hpp>

namespace cudal1::trainer {
namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void check_sizes(const InitModelOptions& o) {
  auto usage = [](const std::string& what, const std::string& hint) { throw Error(ErrorKind::usage, what, hint); };
  if (o.architecture != "llama" && o.architecture != "qwen2")
    usage("architecture \"" + o.architecture + "\" is not supported", "use llama or qwen2");
  for (auto [name, value] : {std::pair{"hidden size", o.hidden_size}, {"layers", o.num_layers}, {"heads", o.num_heads},
                             {"max positions", o.max_positions}})
    if (value <= 0) usage(std::string(name) + " must be positive", "pass a positive number");
  if (o.num_kv_heads < 0 || o.intermediate_size < 0)
    usage("kv heads and intermediate size must be positive (or 0 for their defaults)", "pass a positive number");
  if (o.hidden_size % o.num_heads != 0 || (o.hidden_size / o.num_heads) % 2 != 0)
    usage("hidden size " + std::to_string(o.hidden_size) + " does not split into " + std::to_string(o.num_heads) +
              " heads of an even size", "rotary positions need hidden size = heads x an even head size");
  const int64_t kv = o.num_kv_heads ? o.num_kv_heads : o.num_heads;
  if (o.num_heads % kv != 0)
    usage("heads " + std::to_string(o.num_heads) + " is not a multiple of kv heads " + std::to_string(kv),
          "each kv head serves a whole group of query heads");
  if (!(o.init_std > 0)) usage("the initialisation's standard deviation must be positive", "the usual value is 0.02");
}

// What Hugging Face's LlamaConfig / Qwen2Config.save_pretrained write for these sizes.
nlohmann::json hf_config(const InitModelOptions& o, const tokenizer::Tokenizer& tok) {
  const bool qwen = o.architecture == "qwen2";
  // SwiGLU's three matrices at 8/3 of the width cost what a 4x two-matrix MLP does.
  const int64_t intermediate = o.intermediate_size ? o.intermediate_size : (8 * o.hidden_size / 3 + 63) / 64 * 64;
  nlohmann::json j = {
      {"architectures", nlohmann::json::array({qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM"})},
      {"model_type", o.architecture},
      {"vocab_size", static_cast<int64_t>(tok.id_bound())},
      {"hidden_size", o.hidden_size},
      {"intermediate_size", intermediate},
      {"num_hidden_layers", o.num_layers},
      {"num_attention_heads", o.num_heads},
      {"num_key_value_heads", o.num_kv_heads ? o.num_kv_heads : o.num_heads},
      {"hidden_act", "silu"},
      {"max_position_embeddings", o.max_positions},
      {"rms_norm_eps", o.rms_norm_eps},
      {"rope_theta", o.rope_theta},
      {"rope_scaling", nullptr},
      {"tie_word_embeddings", o.tie_embeddings},
      {"initializer_range", o.init_std},
      {"attention_dropout", 0.0},
      {"use_cache", true},
      {"torch_dtype", dtype_name(o.dtype)},
  };
  if (qwen) {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
    j["max_window_layers"] = o.num_layers;
  } else {
    j["head_dim"] = o.hidden_size / o.num_heads;
    j["attention_bias"] = false;
    j["mlp_bias"] = false;
    j["pretraining_tp"] = 1;
  }
  // No pad_token_id here: transformers would make it the embedding's padding_idx, whose row then
  // never trains, unlike this model's; padding is the batches' business (generation_config).
  const auto& special = tok.special_tokens();
  if (special.bos) j["bos_token_id"] = *special.bos;
  if (special.eos) j["eos_token_id"] = *special.eos;
  return j;
}

}  // namespace

InitModelSummary init_model(const InitModelOptions& o) {
  check_sizes(o);
  const fs::path tok_json = o.tokenizer_dir / "tokenizer.json", tok_config = o.tokenizer_dir / "tokenizer_config.json";
  for (const auto& f : {tok_json, tok_config})
    if (!fs::is_regular_file(f))
      throw Error(ErrorKind::input, "no " + f.filename().string() + " in the tokenizer folder",
                  "point at a Hugging Face tokenizer folder (tokenizer.json and tokenizer_config.json), e.g. a model's",
                  o.tokenizer_dir.string());
  const auto tok = tokenizer::Tokenizer::from_directory(o.tokenizer_dir);
  // The stages render every example through the chat template; a model without one cannot train.
  if (!tok.chat_template_text())
    throw Error(ErrorKind::input, "the tokenizer has no chat template",
                "use a tokenizer_config.json with a chat_template (ChatML or Llama-3)", tok_config.string());
  if (!tok.special_tokens().eos)
    throw Error(ErrorKind::input, "the tokenizer names no eos_token", "generation needs one to stop at", tok_config.string());

  if (!o.overwrite)
    for (const char* f : {"config.json", "model.safetensors", "model.safetensors.index.json"})
      if (fs::exists(o.out_dir / f))
        throw Error(ErrorKind::usage, std::string("the output folder already holds a model (") + f + ")",
                    "choose another folder, or overwrite it on purpose (--force)", o.out_dir.string());

  InitModelSummary summary;
  summary.config = ModelConfig::from_json(hf_config(o, tok), "the model's options");
  summary.out_dir = o.out_dir;
  CausalLM model(summary.config, torch::TensorOptions().dtype(o.dtype));
  {
    torch::NoGradGuard no_grad;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed);
    for (auto& [name, p] : model.base_parameters()) {
      if (ends_with(name, "norm.weight")) p.fill_(1.0);
      else if (ends_with(name, ".bias")) p.zero_();
      else p.copy_(torch::empty(p.sizes(), torch::kFloat32).normal_(0.0, o.init_std, gen));
      summary.parameters += p.numel();
    }
  }

  fs::create_directories(o.out_dir);
  model.save_pretrained(o.out_dir);  // config.json, model.safetensors
  nlohmann::json generation = {{"_from_model_config", true}};
  const auto& special = tok.special_tokens();
  if (special.bos) generation["bos_token_id"] = *special.bos;
  generation["eos_token_id"] = *special.eos;
  if (special.pad) generation["pad_token_id"] = *special.pad;
  write_file(o.out_dir / "generation_config.json", generation.dump(2) + "\n", "check the output folder is writable");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"})
    if (fs::exists(o.tokenizer_dir / f) && !(fs::exists(o.out_dir / f) && fs::equivalent(o.tokenizer_dir / f, o.out_dir / f)))
      fs::copy_file(o.tokenizer_dir / f, o.out_dir / f, fs::copy_options::overwrite_existing);
  return summary;
}

}  // namespace cudal1::trainer
