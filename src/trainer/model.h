// trainer/model.h — the decoder-only transformer of the llama and qwen2 families as torch::nn
// modules, with Hugging Face's parameter names, its KV cache for incremental decoding, and weight
// loading and saving in safetensors.
//
// Module tree (named_parameters() yields exactly Hugging Face's names, so loading, saving and
// PEFT's adapter keys are name-for-name):
//   model.embed_tokens.weight                       [V, H]
//   model.layers.{i}.input_layernorm.weight         [H]
//   model.layers.{i}.self_attn.{q,k,v,o}_proj.weight (.bias)
//   model.layers.{i}.post_attention_layernorm.weight
//   model.layers.{i}.mlp.{gate,up,down}_proj.weight
//   model.norm.weight                               [H]
//   lm_head.weight                                  [V, H]   absent when tied to embed_tokens
#pragma once

#include "trainer/model_config.h"

#include <torch/nn/module.h>
#include <torch/types.h>
#include <torch/version.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

// Attention through at::scaled_dot_product_attention (fused kernels, no [T, Tk] score matrix in
// memory) from libtorch 2.0, where it became public; its enable_gqa from 2.5. Libtorch 1.13
// (Debian's) computes it by hand: matmul, mask, softmax in float32, matmul.
#if TORCH_VERSION_MAJOR >= 2
#define CUDAL1_TORCH_SDPA 1
#else
#define CUDAL1_TORCH_SDPA 0
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define CUDAL1_TORCH_SDPA_GQA 1
#else
#define CUDAL1_TORCH_SDPA_GQA 0
#endif

namespace cudal1::trainer {

// A module holding one parameter "weight" (an embedding table, a norm scale, a LoRA factor).
class WeightImpl : public torch::nn::Module {
 public:
  WeightImpl(std::vector<int64_t> shape, const torch::TensorOptions& options);
  torch::Tensor weight;
};

// y = x W^T + b, plus an optional LoRA adapter y += scaling * B(A(dropout(x))) that lora.h
// attaches as submodules "lora_A" and "lora_B" (PEFT's names). The adapter may hold another dtype
// than W (float32 factors on a bf16 base, as PEFT does): x is cast to it and the update back.
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // [..., in] -> [..., out]

  int64_t in_features, out_features;
  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out], undefined without bias

  std::shared_ptr<WeightImpl> lora_A;  // weight [r, in]; null without an adapter
  std::shared_ptr<WeightImpl> lora_B;  // weight [out, r]
  double lora_scaling = 0.0;           // alpha / r
  double lora_dropout = 0.0;           // applied to x in training mode only
  bool lora_enabled = true;            // off: the layer computes the base model alone
};

// Per-layer keys and values of everything decoded so far, for incremental decoding. Storage is
// allocated for `capacity` positions up front (grown by doubling when exceeded), so each step
// writes its new positions in place instead of concatenating the whole history again.
struct KvCache {
  KvCache(const ModelConfig& config, int64_t batch, int64_t capacity, const torch::TensorOptions& options);

  std::vector<torch::Tensor> k, v;  // per layer [B, kv_heads, capacity, head_dim]
  int64_t length = 0;               // positions filled, the same in every layer

  // Makes room for `extra` more positions.
  void reserve(int64_t extra);
};

// RoPE tables for one forward pass: [B, 1, T, head_dim], in the model's dtype.
struct Rotary {
  torch::Tensor cos, sin;
};

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelConfig& config, const torch::TensorOptions& options);
  // x [B, T, H]; allowed [B, 1, T, T_past + T] bool, true where a query may attend to a key;
  // undefined (only with the fused attention, CUDAL1_TORCH_SDPA): plain causal attention over
  // T == T_past + T real positions.
  // With a cache, this layer's new keys and values are written at positions [cache->length, +T).
  torch::Tensor forward(const torch::Tensor& x, const Rotary& rope, const torch::Tensor& allowed, KvCache* cache,
                        int64_t layer_index);

  int64_t heads, kv_heads, head_dim;
  std::shared_ptr<LinearImpl> q_proj, k_proj, v_proj, o_proj;
};

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(const ModelConfig& config, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // down(silu(gate(x)) * up(x)), [B, T, H]
  std::shared_ptr<LinearImpl> gate_proj, up_proj, down_proj;
};

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t size, double eps, const torch::TensorOptions& options);
  // weight * (x / rms(x)), the normalisation in float32 as Hugging Face does it.
  torch::Tensor forward(const torch::Tensor& x);
  double eps;
  torch::Tensor weight;
};

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const ModelConfig& config, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x, const Rotary& rope, const torch::Tensor& allowed, KvCache* cache,
                        int64_t layer_index);
  std::shared_ptr<RmsNormImpl> input_layernorm, post_attention_layernorm;
  std::shared_ptr<AttentionImpl> self_attn;
  std::shared_ptr<MlpImpl> mlp;
};

// Hugging Face's LlamaModel / Qwen2Model: embeddings, layers, final norm (no head).
class DecoderImpl : public torch::nn::Module {
 public:
  DecoderImpl(const ModelConfig& config, const torch::TensorOptions& options);
  std::shared_ptr<WeightImpl> embed_tokens;
  std::vector<std::shared_ptr<DecoderLayerImpl>> layers;  // registered under "layers.{i}"
  std::shared_ptr<RmsNormImpl> norm;
};

class CausalLM : public torch::nn::Module {
 public:
  // Parameters are allocated uninitialised with `options` (dtype and device); load_weights fills them.
  CausalLM(ModelConfig config, const torch::TensorOptions& options);

  // input_ids [B, T] int64 -> logits [B, T, V] in the model's dtype.
  // attention_mask [B, T_past + T] (1 real token, 0 padding; left padding), covering the cached
  //   positions too, as in Hugging Face; undefined: every position is real.
  // cache: keys/values of the T_past earlier positions; this call appends T and advances it.
  // position_ids [B, T]: undefined: counted from the first real token (cumsum(mask) - 1).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                        KvCache* cache = nullptr, const torch::Tensor& position_ids = {});

  const ModelConfig& config() const { return config_; }
  const torch::TensorOptions& options() const { return options_; }
  torch::Tensor embedding_weight() const { return model->embed_tokens->weight; }
  torch::Tensor lm_head_weight() const { return lm_head ? lm_head->weight : model->embed_tokens->weight; }

  // The base model's parameters under their Hugging Face names (no LoRA factors).
  std::vector<std::pair<std::string, torch::Tensor>> base_parameters() const;

  // Fills every base parameter from `path`: a .safetensors file, or a folder holding
  // model.safetensors or model.safetensors.index.json and its shards. Tensors are converted to the
  // model's dtype and device. A missing tensor or one of the wrong shape is Error(input) naming it.
  void load_weights(const std::filesystem::path& path);
  // The base parameters to one .safetensors file under Hugging Face's names, in their dtype.
  void save_weights(const std::filesystem::path& file) const;
  // config.json (dtype set to the parameters') and model.safetensors in `folder`.
  void save_pretrained(const std::filesystem::path& folder) const;

  std::shared_ptr<DecoderImpl> model;
  std::shared_ptr<LinearImpl> lm_head;  // null when tie_word_embeddings

 private:
  ModelConfig config_;
  torch::TensorOptions options_;
  torch::Tensor inv_freq_;  // [head_dim / 2] float32, 1 / theta^(2i / head_dim)
};

// config.json and weights from a Hugging Face model folder.
std::shared_ptr<CausalLM> load_causal_lm(const std::filesystem::path& folder,
                                         torch::Dtype dtype = torch::kFloat32,
                                         torch::Device device = torch::kCPU);

// log p(ids[b, t+1] | ids[b, <= t]) for every t: [B, T - 1] float32, from logits [B, T, V].
torch::Tensor next_token_logprobs(const torch::Tensor& logits, const torch::Tensor& ids);

// Positions counted from each row's first real token: cumsum(mask) - 1, 1 at padding (as
// Hugging Face's generate does); mask [B, T] -> [B, T] int64.
torch::Tensor positions_from_mask(const torch::Tensor& attention_mask);

// "sdpa" or "matmul": how this build computes attention (CUDAL1_TORCH_SDPA).
const char* attention_kind();

torch::Dtype dtype_from_name(const std::string& name);  // "bfloat16" / "bf16", "float16", "float32"
std::string dtype_name(torch::Dtype dtype);              // Hugging Face's spelling

}  // namespace cudal1::trainer
