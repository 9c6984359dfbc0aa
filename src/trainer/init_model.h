// trainer/init_model.h — a llama or qwen2 model with random weights, from scratch, written as a
// Hugging Face model folder, for training runs and benchmarks that have no downloaded model.
//
// The folder holds config.json (Hugging Face's fields for the architecture, vocab_size covering
// every id of the tokenizer, its bos/eos ids), model.safetensors, generation_config.json, and the
// tokenizer's tokenizer.json and tokenizer_config.json (and chat_template.jinja when it has one):
// what load_causal_lm, the tokenizer, `cudal1 train sft` and transformers' from_pretrained read.
//
// Weights follow Hugging Face's _init_weights for these models: linear and embedding weights
// normal(0, init_std), norm scales one, biases zero. They are drawn in float32 on the CPU from
// one generator seeded with `seed`, in parameter order, then cast to `dtype`: the same options
// give the same bytes on any machine with the same libtorch.
#pragma once

#include "trainer/model_config.h"

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace cudal1::trainer {

struct InitModelOptions {
  std::filesystem::path out_dir;
  std::filesystem::path tokenizer_dir;  // tokenizer.json + tokenizer_config.json with a chat template
  std::string architecture = "llama";   // "llama" or "qwen2"
  int64_t hidden_size = 256;
  int64_t num_layers = 4;
  int64_t num_heads = 4;
  int64_t num_kv_heads = 0;             // 0: as many as num_heads (no grouping)
  int64_t intermediate_size = 0;        // 0: about 8/3 of hidden_size, a multiple of 64 (Llama's ratio)
  int64_t max_positions = 4096;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  bool tie_embeddings = true;
  torch::Dtype dtype = torch::kBFloat16;
  double init_std = 0.02;
  uint64_t seed = 0;
  bool overwrite = false;               // replace a model already in out_dir
};

struct InitModelSummary {
  ModelConfig config;
  int64_t parameters = 0;               // distinct tensors' elements (a tied head counts once)
  std::filesystem::path out_dir;
};

// Throws Error(usage) for sizes the model cannot have and for an out_dir that already holds a
// model (unless overwrite), Error(input) for a tokenizer folder without tokenizer.json or a chat
// template.
InitModelSummary init_model(const InitModelOptions& options);

}  // namespace cudal1::trainer
