// trainer/model_config.h — ModelConfig: the shape of a llama or qwen2 decoder, read from (and
// written back to) a Hugging Face config.json. Only what the model stack implements is accepted;
// anything else (another architecture, RoPE scaling, sliding-window attention) is refused up
// front rather than computed wrongly.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cudal1::trainer {

struct ModelConfig {
  std::string model_type;  // "llama" or "qwen2"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads (no grouping)
  int64_t head_dim = 0;             // defaults to hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;     // qwen2 always; llama when attention_bias
  bool o_proj_bias = false;  // llama's attention_bias covers o_proj too; qwen2's o_proj has none
  bool mlp_bias = false;     // llama's mlp_bias
  std::string torch_dtype;   // as recorded ("bfloat16", ...); "" when absent
  std::vector<int64_t> eos_token_ids;  // eos_token_id, an int or a list
  nlohmann::json raw;        // the whole file, so to_json() keeps fields we do not interpret

  // Throws Error(input) naming `source` for a missing or wrong field or an unsupported feature.
  static ModelConfig from_json(const nlohmann::json& j, std::string_view source = "config.json");
  // `path` is config.json or the folder holding it.
  static ModelConfig load(const std::filesystem::path& path);

  // The config.json text: `raw` with every interpreted field set from this struct.
  nlohmann::json to_json() const;
  void save(const std::filesystem::path& path) const;

  int64_t kv_groups() const { return num_attention_heads / num_key_value_heads; }
};

}  // namespace cudal1::trainer
