// trainer/lora.h — LoRA adapters on a CausalLM's linear layers, saved and loaded in PEFT's layout
// (what PEFT's PeftModel.from_pretrained and vLLM's --lora-modules read).
//
// A targeted layer computes y = W x + b + (alpha / r) * B(A(dropout(x))), A [r, in] initialised
// Kaiming-uniform, B [out, r] zeros, so a fresh adapter leaves the model unchanged. With adapters
// on, the base weights are frozen: only A and B train. Turning the adapters off gives back the
// base model, the reference policy of a KL penalty, without a second copy of the weights.
#pragma once

#include "trainer/model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace cudal1::trainer {

struct LoraConfig {
  int64_t r = 16;
  double alpha = 32;
  double dropout = 0.05;
  // Last component of the linear layers' names: q_proj k_proj v_proj o_proj gate_proj up_proj down_proj.
  std::vector<std::string> target_modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  std::string base_model_name_or_path;
  // The factors' dtype; float32 by default whatever the base model's (as PEFT does), so that small
  // updates are not lost to bf16 rounding.
  torch::Dtype dtype = torch::kFloat32;

  double scaling() const { return alpha / static_cast<double>(r); }
  // adapter_config.json, with every field PEFT 0.17 writes (defaults for those not modelled here).
  nlohmann::json to_peft_json() const;
  // Throws Error(input) for what cannot be loaded faithfully: DoRA, rsLoRA, bias other than none,
  // per-module rank or alpha patterns, layer selections, modules_to_save.
  static LoraConfig from_peft_json(const nlohmann::json& j, std::string_view source = "adapter_config.json");
};

// Adds an adapter to every linear layer whose name ends in a target (Error(usage) if none match or
// the model already has adapters), freezes every base parameter and returns the adapted layers'
// names. `seed` makes A's initialisation repeatable.
std::vector<std::string> apply_lora(CausalLM& model, const LoraConfig& config, uint64_t seed = 0);

// All adapters on or off (off: the model computes exactly the base model).
void set_lora_enabled(CausalLM& model, bool enabled);

// The adapter factors, named as in the model ("model.layers.0.self_attn.q_proj.lora_A.weight").
std::vector<std::pair<std::string, torch::Tensor>> lora_parameters(const CausalLM& model);

// adapter_config.json + adapter_model.safetensors (keys "base_model.model." + the model's names).
void save_lora(const CausalLM& model, const LoraConfig& config, const std::filesystem::path& folder);

// Reads a PEFT adapter folder, applies it to a model without adapters and fills the factors.
// Every factor the model expects must be in the file with its shape, and the file must hold no
// other tensor (a mismatch means another base model or layout): Error(input) naming it.
LoraConfig load_lora(CausalLM& model, const std::filesystem::path& folder);

// PEFT's key for a model parameter name.
inline std::string peft_key(const std::string& name) { return "base_model.model." + name; }

}  // namespace cudal1::trainer
