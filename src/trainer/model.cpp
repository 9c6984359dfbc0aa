// trainer/model.cpp — the llama/qwen2 decoder, its KV cache and its weights (see model.h).
#include "trainer/model.h"

#include "core/error.h"
#include "core/hash.h"
#include "trainer/safetensors.h"

#include <torch/utils.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace cudal1::trainer {
namespace fs = std::filesystem;

WeightImpl::WeightImpl(std::vector<int64_t> shape, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty(shape, options));
}

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias, const torch::TensorOptions& options)
    : in_features(in), out_features(out) {
  weight = register_parameter("weight", torch::empty({out, in}, options));
  if (with_bias) bias = register_parameter("bias", torch::empty({out}, options));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = at::linear(x, weight, bias);
  if (lora_A && lora_enabled) {
    const auto adapter_dtype = lora_A->weight.scalar_type();
    torch::Tensor h = x.to(adapter_dtype);
    if (lora_dropout > 0.0 && is_training()) h = at::dropout(h, lora_dropout, /*train=*/true);
    torch::Tensor update = at::linear(at::linear(h, lora_A->weight), lora_B->weight) * lora_scaling;
    y = y + update.to(y.scalar_type());
  }
  return y;
}

KvCache::KvCache(const ModelConfig& config, int64_t batch, int64_t capacity, const torch::TensorOptions& options) {
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    k.push_back(torch::zeros({batch, config.num_key_value_heads, capacity, config.head_dim}, options));
    v.push_back(torch::zeros({batch, config.num_key_value_heads, capacity, config.head_dim}, options));
  }
}

void KvCache::reserve(int64_t extra) {
  if (k.empty() || length + extra <= k[0].size(2)) return;
  const int64_t capacity = std::max(length + extra, 2 * k[0].size(2));
  for (auto* list : {&k, &v})
    for (auto& t : *list) {
      auto grown = torch::zeros({t.size(0), t.size(1), capacity, t.size(3)}, t.options());
      grown.narrow(2, 0, length).copy_(t.narrow(2, 0, length));
      t = grown;
    }
}

namespace {

// Hugging Face's rotate_half: the two halves of the last dimension, (-x2, x1).
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

torch::Tensor apply_rope(const torch::Tensor& x, const Rotary& rope) {  // x [B, heads, T, D]
  return x * rope.cos + rotate_half(x) * rope.sin;
}

}  // namespace

AttentionImpl::AttentionImpl(const ModelConfig& c, const torch::TensorOptions& options)
    : heads(c.num_attention_heads), kv_heads(c.num_key_value_heads), head_dim(c.head_dim) {
  q_proj = register_module("q_proj", std::make_shared<LinearImpl>(c.hidden_size, heads * head_dim, c.qkv_bias, options));
  k_proj = register_module("k_proj", std::make_shared<LinearImpl>(c.hidden_size, kv_heads * head_dim, c.qkv_bias, options));
  v_proj = register_module("v_proj", std::make_shared<LinearImpl>(c.hidden_size, kv_heads * head_dim, c.qkv_bias, options));
  o_proj = register_module("o_proj", std::make_shared<LinearImpl>(heads * head_dim, c.hidden_size, c.o_proj_bias, options));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const Rotary& rope, const torch::Tensor& allowed,
                                     KvCache* cache, int64_t layer_index) {
  const int64_t B = x.size(0), T = x.size(1), groups = heads / kv_heads;
  auto q = q_proj->forward(x).view({B, T, heads, head_dim}).transpose(1, 2);     // [B, heads, T, D]
  auto k = k_proj->forward(x).view({B, T, kv_heads, head_dim}).transpose(1, 2);  // [B, kv, T, D]
  auto v = v_proj->forward(x).view({B, T, kv_heads, head_dim}).transpose(1, 2);  // [B, kv, T, D]
  q = apply_rope(q, rope);
  k = apply_rope(k, rope);
  if (cache != nullptr) {
    auto& ck = cache->k[layer_index];
    auto& cv = cache->v[layer_index];
    ck.narrow(2, cache->length, T).copy_(k);
    cv.narrow(2, cache->length, T).copy_(v);
    k = ck.narrow(2, 0, cache->length + T);  // [B, kv, Tk, D]
    v = cv.narrow(2, 0, cache->length + T);
  }
#if CUDAL1_TORCH_SDPA
  // The fused kernels (flash, memory-efficient) instead of materialising [T, Tk] scores. Flash,
  // the one for a plain causal mask, pairs kv heads with query groups itself (enable_gqa); the
  // memory-efficient kernel, the one for an explicit mask, does not, and would fall back to the
  // unfused math path, so there K/V are repeated per query head first (Hugging Face's repeat_kv
  // pairing: query head h reads kv head h / groups).
  torch::Tensor out;
  if (!allowed.defined()) {
#if CUDAL1_TORCH_SDPA_GQA
    out = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt, /*enable_gqa=*/true);
#else
    out = at::scaled_dot_product_attention(q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1), {}, 0.0,
                                           /*is_causal=*/true);
#endif
  } else {
    out = at::scaled_dot_product_attention(q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1), allowed);
  }
  out = out.transpose(1, 2).reshape({B, T, heads * head_dim});  // [B, heads, T, D] -> [B, T, H]
#else
  const int64_t Tk = k.size(2);
  // Grouped-query attention without repeating K/V: each kv head's `groups` query heads are
  // stacked along the query axis, [B, kv, groups * T, D] (Hugging Face's repeat_kv gives query
  // head h the kv head h / groups, the same pairing).
  auto qg = q.reshape({B, kv_heads, groups * T, head_dim});
  auto scores = at::matmul(qg, k.transpose(2, 3)) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
  scores = scores.view({B, kv_heads, groups, T, Tk}).to(torch::kFloat32);  // softmax in float32
  scores = scores.masked_fill(allowed.logical_not().unsqueeze(1), -std::numeric_limits<float>::infinity());
  auto probs = at::softmax(scores, -1).to(v.scalar_type()).view({B, kv_heads, groups * T, Tk});
  auto out = at::matmul(probs, v)                  // [B, kv, groups * T, D]
                 .view({B, heads, T, head_dim})    // back to query heads
                 .transpose(1, 2)
                 .reshape({B, T, heads * head_dim});
#endif
  return o_proj->forward(out);
}

MlpImpl::MlpImpl(const ModelConfig& c, const torch::TensorOptions& options) {
  gate_proj = register_module("gate_proj", std::make_shared<LinearImpl>(c.hidden_size, c.intermediate_size, c.mlp_bias, options));
  up_proj = register_module("up_proj", std::make_shared<LinearImpl>(c.hidden_size, c.intermediate_size, c.mlp_bias, options));
  down_proj = register_module("down_proj", std::make_shared<LinearImpl>(c.intermediate_size, c.hidden_size, c.mlp_bias, options));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return down_proj->forward(at::silu(gate_proj->forward(x)) * up_proj->forward(x));
}

RmsNormImpl::RmsNormImpl(int64_t size, double eps_, const torch::TensorOptions& options) : eps(eps_) {
  weight = register_parameter("weight", torch::empty({size}, options));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  auto h = x.to(torch::kFloat32);
  h = h * at::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(x.scalar_type());
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c, const torch::TensorOptions& options) {
  input_layernorm = register_module("input_layernorm", std::make_shared<RmsNormImpl>(c.hidden_size, c.rms_norm_eps, options));
  self_attn = register_module("self_attn", std::make_shared<AttentionImpl>(c, options));
  post_attention_layernorm =
      register_module("post_attention_layernorm", std::make_shared<RmsNormImpl>(c.hidden_size, c.rms_norm_eps, options));
  mlp = register_module("mlp", std::make_shared<MlpImpl>(c, options));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const Rotary& rope, const torch::Tensor& allowed,
                                        KvCache* cache, int64_t layer_index) {
  auto h = x + self_attn->forward(input_layernorm->forward(x), rope, allowed, cache, layer_index);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

namespace {
// "layers" as a module of its own so that parameters are named layers.{i}.… (a module name may
// not contain a dot); what torch::nn::ModuleList does, without its header.
class LayerListImpl : public torch::nn::Module {
 public:
  void add(const std::shared_ptr<DecoderLayerImpl>& layer) { register_module(std::to_string(count_++), layer); }

 private:
  int64_t count_ = 0;
};
}  // namespace

DecoderImpl::DecoderImpl(const ModelConfig& c, const torch::TensorOptions& options) {
  embed_tokens = register_module("embed_tokens", std::make_shared<WeightImpl>(std::vector<int64_t>{c.vocab_size, c.hidden_size}, options));
  auto list = register_module("layers", std::make_shared<LayerListImpl>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layers.push_back(std::make_shared<DecoderLayerImpl>(c, options));
    list->add(layers.back());
  }
  norm = register_module("norm", std::make_shared<RmsNormImpl>(c.hidden_size, c.rms_norm_eps, options));
}

CausalLM::CausalLM(ModelConfig config, const torch::TensorOptions& options)
    : config_(std::move(config)), options_(options) {
  model = register_module("model", std::make_shared<DecoderImpl>(config_, options));
  if (!config_.tie_word_embeddings)
    lm_head = register_module("lm_head", std::make_shared<LinearImpl>(config_.hidden_size, config_.vocab_size, false, options));
  // Hugging Face's default RoPE: inv_freq computed in float32 from int64 exponents.
  auto exponents = torch::arange(0, config_.head_dim, 2, torch::kInt64).to(torch::kFloat32) /
                   static_cast<double>(config_.head_dim);
  inv_freq_ = (1.0 / torch::pow(torch::tensor(config_.rope_theta, torch::kFloat32), exponents)).to(options.device());
  train(false);  // inference mode until a trainer says otherwise (LoRA dropout only acts in training)
}

const char* attention_kind() { return CUDAL1_TORCH_SDPA ? "sdpa" : "matmul"; }

torch::Tensor positions_from_mask(const torch::Tensor& mask) {
  auto m = mask.to(torch::kInt64);
  return (m.cumsum(-1) - 1).masked_fill(m == 0, 1);
}

torch::Tensor CausalLM::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, KvCache* cache,
                                const torch::Tensor& position_ids) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be [B, T]");
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  const int64_t past = cache ? cache->length : 0;
  const int64_t Tk = past + T;
  const auto device = inv_freq_.device();
  auto ids = input_ids.to(device, torch::kInt64);

  torch::Tensor key_valid;  // [B, Tk] bool
  if (attention_mask.defined()) {
    TORCH_CHECK(attention_mask.dim() == 2 && attention_mask.size(0) == B && attention_mask.size(1) == Tk,
                "attention_mask must be [B, T_past + T] = [", B, ", ", Tk, "], got ", attention_mask.sizes());
    key_valid = attention_mask.to(device).ne(0);
  } else {
    key_valid = torch::ones({B, Tk}, torch::TensorOptions().dtype(torch::kBool).device(device));
  }
  torch::Tensor pos;
  if (position_ids.defined()) {
    pos = position_ids.to(device, torch::kInt64);
  } else if (attention_mask.defined()) {
    pos = positions_from_mask(key_valid).narrow(1, past, T);
  } else {
    pos = torch::arange(past, Tk, torch::TensorOptions().dtype(torch::kInt64).device(device)).unsqueeze(0).expand({B, T});
  }

  // allowed[b, 0, i, j]: query i (absolute position past + i) may see key j if j <= past + i and
  // key j is a real token. A padding query would see nothing (its softmax would be NaN and the
  // NaN would reach real rows' gradients through 0 * NaN), so it sees itself; its output is never
  // a prediction anyway. Without padding or history, the fused attention needs no mask: it is
  // told "causal", which lets it pick its fastest kernel.
  torch::Tensor allowed;
  if (!(CUDAL1_TORCH_SDPA && !attention_mask.defined() && past == 0)) {
    auto opts = torch::TensorOptions().dtype(torch::kInt64).device(device);
    auto qi = torch::arange(past, Tk, opts).unsqueeze(1);  // [T, 1]
    auto kj = torch::arange(0, Tk, opts).unsqueeze(0);     // [1, Tk]
    allowed = (kj.le(qi).unsqueeze(0) & key_valid.unsqueeze(1)) | kj.eq(qi).unsqueeze(0);  // [B, T, Tk]
    allowed = allowed.unsqueeze(1);                                                           // [B, 1, T, Tk]
  }

  // RoPE tables: angles in float32 (as Hugging Face, whatever the model dtype), then cast.
  auto freqs = pos.to(torch::kFloat32).unsqueeze(-1) * inv_freq_;  // [B, T, D/2]
  auto emb = torch::cat({freqs, freqs}, -1);                       // [B, T, D]
  const auto dtype = model->embed_tokens->weight.scalar_type();
  Rotary rope{emb.cos().to(dtype).unsqueeze(1), emb.sin().to(dtype).unsqueeze(1)};  // [B, 1, T, D]

  if (cache != nullptr) cache->reserve(T);
  auto h = at::embedding(model->embed_tokens->weight, ids);  // [B, T, H]
  for (size_t i = 0; i < model->layers.size(); ++i)
    h = model->layers[i]->forward(h, rope, allowed, cache, static_cast<int64_t>(i));
  h = model->norm->forward(h);
  if (cache != nullptr) cache->length += T;
  return lm_head ? lm_head->forward(h) : at::linear(h, model->embed_tokens->weight);  // [B, T, V]
}

std::vector<std::pair<std::string, torch::Tensor>> CausalLM::base_parameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : named_parameters(/*recurse=*/true))
    if (item.key().find(".lora_") == std::string::npos) out.emplace_back(item.key(), item.value());
  return out;
}

void CausalLM::load_weights(const fs::path& path) {
  // Which file holds each tensor: one file, or a sharded checkpoint's index.
  std::map<std::string, fs::path> where;
  std::optional<fs::path> single;
  if (fs::is_directory(path)) {
    if (fs::exists(path / "model.safetensors")) {
      single = path / "model.safetensors";
    } else if (fs::exists(path / "model.safetensors.index.json")) {
      const fs::path index_path = path / "model.safetensors.index.json";
      nlohmann::json index;
      try {
        index = nlohmann::json::parse(read_file(index_path));
      } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::input, std::string("index is not valid JSON: ") + e.what(), "fetch the checkpoint again",
                    index_path.string());
      }
      if (!index.contains("weight_map") || !index["weight_map"].is_object())
        throw Error(ErrorKind::input, "index has no weight_map object", "fetch the checkpoint again", index_path.string());
      for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
        if (!it.value().is_string())
          throw Error(ErrorKind::input, "weight_map entry \"" + it.key() + "\" is not a file name", {}, index_path.string());
        where[it.key()] = path / it.value().get<std::string>();
      }
    } else {
      throw Error(ErrorKind::input, "no model.safetensors or model.safetensors.index.json in the folder",
                  "point at a Hugging Face model folder with safetensors weights (not .bin)", path.string());
    }
  } else {
    single = path;
  }

  std::map<fs::path, SafetensorsFile> files;
  auto file_of = [&](const fs::path& p) -> const SafetensorsFile& {
    auto it = files.find(p);
    if (it == files.end()) it = files.emplace(p, SafetensorsFile::open(p)).first;
    return it->second;
  };

  torch::NoGradGuard no_grad;
  for (auto& [name, param] : base_parameters()) {
    fs::path file;
    if (single) {
      file = *single;
    } else {
      auto it = where.find(name);
      if (it == where.end())
        throw Error(ErrorKind::input, "weight \"" + name + "\" is missing from the checkpoint index",
                    "the checkpoint does not match config.json (another architecture or size?)", path.string());
      file = it->second;
    }
    const SafetensorsFile& f = file_of(file);
    if (!f.contains(name))
      throw Error(ErrorKind::input, "weight \"" + name + "\" is missing",
                  "the checkpoint does not match config.json (another architecture or size?)", file.string());
    torch::Tensor t = f.get(name);
    if (t.sizes() != param.sizes()) {
      std::ostringstream msg;
      msg << "weight \"" << name << "\" has shape " << t.sizes() << " but the model expects " << param.sizes();
      throw Error(ErrorKind::input, msg.str(), "the checkpoint does not match config.json", file.string());
    }
    param.copy_(t);  // converts dtype and moves to the parameter's device in one go
  }
}

void CausalLM::save_weights(const fs::path& file) const {
  std::map<std::string, torch::Tensor> tensors;
  for (auto& [name, param] : base_parameters()) tensors.emplace(name, param);
  save_safetensors(file, tensors, {{"format", "pt"}});
}

void CausalLM::save_pretrained(const fs::path& folder) const {
  fs::create_directories(folder);
  ModelConfig c = config_;
  c.torch_dtype = dtype_name(model->embed_tokens->weight.scalar_type());
  c.save(folder / "config.json");
  save_weights(folder / "model.safetensors");
}

std::shared_ptr<CausalLM> load_causal_lm(const fs::path& folder, torch::Dtype dtype, torch::Device device) {
  auto lm = std::make_shared<CausalLM>(ModelConfig::load(folder), torch::TensorOptions().dtype(dtype).device(device));
  lm->load_weights(folder);
  return lm;
}

torch::Tensor next_token_logprobs(const torch::Tensor& logits, const torch::Tensor& ids) {
  const int64_t T = logits.size(1);
  auto lp = at::log_softmax(logits.narrow(1, 0, T - 1).to(torch::kFloat32), -1);  // [B, T-1, V]
  auto target = ids.narrow(1, 1, T - 1).to(logits.device(), torch::kInt64).unsqueeze(-1);
  return lp.gather(-1, target).squeeze(-1);  // [B, T-1]
}

torch::Dtype dtype_from_name(const std::string& name) {
  if (name == "bfloat16" || name == "bf16") return torch::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return torch::kFloat16;
  if (name == "float32" || name == "fp32" || name == "float") return torch::kFloat32;
  throw Error(ErrorKind::usage, "unknown dtype \"" + name + "\"", "use bfloat16, float16 or float32");
}

std::string dtype_name(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kBFloat16: return "bfloat16";
    case torch::kFloat16: return "float16";
    case torch::kFloat32: return "float32";
    case torch::kFloat64: return "float64";
    default: return c10::toString(dtype);
  }
}

}  // namespace cudal1::trainer
