// trainer/lora.cpp — LoRA adapters in PEFT's layout (see lora.h).
#include "trainer/lora.h"

#include "core/error.h"
#include "core/hash.h"
#include "trainer/safetensors.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace cudal1::trainer {
namespace fs = std::filesystem;

namespace {

// Every linear layer with its name ("model.layers.0.self_attn.q_proj").
std::vector<std::pair<std::string, std::shared_ptr<LinearImpl>>> linear_layers(const CausalLM& model) {
  std::vector<std::pair<std::string, std::shared_ptr<LinearImpl>>> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false))
    if (auto linear = std::dynamic_pointer_cast<LinearImpl>(item.value())) out.emplace_back(item.key(), linear);
  return out;
}

std::string last_component(const std::string& name) {
  auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

}  // namespace

nlohmann::json LoraConfig::to_peft_json() const {
  std::vector<std::string> targets = target_modules;
  std::sort(targets.begin(), targets.end());
  // The field set of PEFT 0.17's LoraConfig.save_pretrained; tests/fixtures/trainer/llama_lora
  // holds a file PEFT wrote, and the tests compare the two.
  return {
      {"alpha_pattern", nlohmann::json::object()},
      {"auto_mapping", nullptr},
      {"base_model_name_or_path", base_model_name_or_path},
      {"bias", "none"},
      {"corda_config", nullptr},
      {"eva_config", nullptr},
      {"exclude_modules", nullptr},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"layer_replication", nullptr},
      {"layers_pattern", nullptr},
      {"layers_to_transform", nullptr},
      {"loftq_config", nlohmann::json::object()},
      {"lora_alpha", std::floor(alpha) == alpha ? nlohmann::json(static_cast<int64_t>(alpha)) : nlohmann::json(alpha)},
      {"lora_bias", false},
      {"lora_dropout", dropout},
      {"megatron_config", nullptr},
      {"megatron_core", "megatron.core"},
      {"modules_to_save", nullptr},
      {"peft_type", "LORA"},
      {"qalora_group_size", 16},
      {"r", r},
      {"rank_pattern", nlohmann::json::object()},
      {"revision", nullptr},
      {"target_modules", targets},
      {"target_parameters", nullptr},
      {"task_type", "CAUSAL_LM"},
      {"trainable_token_indices", nullptr},
      {"use_dora", false},
      {"use_qalora", false},
      {"use_rslora", false},
  };
}

LoraConfig LoraConfig::from_peft_json(const nlohmann::json& j, std::string_view source) {
  auto bad = [&](const std::string& what, const std::string& hint) -> void {
    throw Error(ErrorKind::input, what, hint, std::string(source));
  };
  if (!j.is_object()) bad("adapter config is not a JSON object", "pass PEFT's adapter_config.json");
  if (j.value("peft_type", std::string()) != "LORA") bad("peft_type is not LORA", "only LoRA adapters are supported");
  auto is_set = [&](const char* key) {
    if (!j.contains(key) || j[key].is_null()) return false;
    const auto& v = j[key];
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_object() || v.is_array()) return !v.empty();
    return true;
  };
  for (const char* key : {"use_dora", "use_rslora", "fan_in_fan_out", "rank_pattern", "alpha_pattern",
                          "layers_to_transform", "modules_to_save", "layer_replication", "lora_bias",
                          "trainable_token_indices", "target_parameters", "use_qalora"})
    if (is_set(key)) bad(std::string("adapter uses \"") + key + "\", which is not supported",
                         "train the adapter with plain LoRA settings");
  if (j.value("bias", std::string("none")) != "none") bad("adapter bias is not \"none\"", "train with bias=\"none\"");
  LoraConfig c;
  if (!j.contains("r") || !j["r"].is_number_integer() || j["r"].get<int64_t>() <= 0) bad("adapter r is not a positive integer", "fix adapter_config.json");
  c.r = j["r"].get<int64_t>();
  if (!j.contains("lora_alpha") || !j["lora_alpha"].is_number()) bad("adapter lora_alpha is not a number", "fix adapter_config.json");
  c.alpha = j["lora_alpha"].get<double>();
  c.dropout = j.contains("lora_dropout") && j["lora_dropout"].is_number() ? j["lora_dropout"].get<double>() : 0.0;
  if (!j.contains("target_modules") || !j["target_modules"].is_array() || j["target_modules"].empty())
    bad("adapter target_modules is not a list of module names", "a regular-expression target_modules is not supported");
  c.target_modules.clear();
  for (const auto& t : j["target_modules"]) {
    if (!t.is_string()) bad("adapter target_modules holds a non-string", "fix adapter_config.json");
    c.target_modules.push_back(t.get<std::string>());
  }
  std::sort(c.target_modules.begin(), c.target_modules.end());
  if (j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_string())
    c.base_model_name_or_path = j["base_model_name_or_path"].get<std::string>();
  return c;
}

std::vector<std::string> apply_lora(CausalLM& model, const LoraConfig& config, uint64_t seed) {
  if (config.r <= 0) throw Error(ErrorKind::usage, "LoRA rank must be positive", "pass r >= 1");
  if (!lora_parameters(model).empty())
    throw Error(ErrorKind::usage, "the model already has LoRA adapters", "apply LoRA once per model");
  std::set<std::string> targets(config.target_modules.begin(), config.target_modules.end());
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<std::string> adapted;
  torch::NoGradGuard no_grad;
  for (auto& [name, linear] : linear_layers(model)) {
    if (!targets.count(last_component(name))) continue;
    const auto device = linear->weight.device();
    auto opts = torch::TensorOptions().dtype(config.dtype).device(device);
    linear->lora_A = linear->register_module("lora_A", std::make_shared<WeightImpl>(std::vector<int64_t>{config.r, linear->in_features}, opts));
    linear->lora_B = linear->register_module("lora_B", std::make_shared<WeightImpl>(std::vector<int64_t>{linear->out_features, config.r}, opts));
    // PEFT: kaiming_uniform_(A, a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)); B = 0. Drawn on the CPU
    // from one seeded generator, so the adapter is the same on any device.
    const double bound = 1.0 / std::sqrt(static_cast<double>(linear->in_features));
    auto a = torch::empty({config.r, linear->in_features}, torch::kFloat32).uniform_(-bound, bound, gen);
    linear->lora_A->weight.copy_(a);
    linear->lora_B->weight.zero_();
    linear->lora_scaling = config.scaling();
    linear->lora_dropout = config.dropout;
    linear->lora_enabled = true;
    linear->lora_A->train(model.is_training());
    linear->lora_B->train(model.is_training());
    adapted.push_back(name);
  }
  if (adapted.empty())
    throw Error(ErrorKind::usage, "no linear layer matches the LoRA target modules",
                "targets are names like q_proj k_proj v_proj o_proj gate_proj up_proj down_proj");
  for (auto& [name, p] : model.base_parameters()) p.set_requires_grad(false);
  return adapted;
}

void set_lora_enabled(CausalLM& model, bool enabled) {
  for (auto& [name, linear] : linear_layers(model)) linear->lora_enabled = enabled;
}

std::vector<std::pair<std::string, torch::Tensor>> lora_parameters(const CausalLM& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : model.named_parameters(/*recurse=*/true))
    if (item.key().find(".lora_") != std::string::npos) out.emplace_back(item.key(), item.value());
  return out;
}

void save_lora(const CausalLM& model, const LoraConfig& config, const fs::path& folder) {
  auto params = lora_parameters(model);
  if (params.empty()) throw Error(ErrorKind::usage, "the model has no LoRA adapters to save", "call apply_lora first");
  std::map<std::string, torch::Tensor> tensors;
  for (auto& [name, p] : params) tensors.emplace(peft_key(name), p);
  fs::create_directories(folder);
  write_file(folder / "adapter_config.json", config.to_peft_json().dump(2) + "\n", "check the output folder is writable");
  save_safetensors(folder / "adapter_model.safetensors", tensors, {{"format", "pt"}});
}

LoraConfig load_lora(CausalLM& model, const fs::path& folder) {
  const fs::path config_path = folder / "adapter_config.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(config_path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, std::string("adapter config is not valid JSON: ") + e.what(), {}, config_path.string());
  }
  LoraConfig config = LoraConfig::from_peft_json(j, config_path.string());
  const fs::path weights_path = folder / "adapter_model.safetensors";
  auto file = SafetensorsFile::open(weights_path);
  auto dtype = torch::kFloat32;
  if (!file.entries().empty()) dtype = safetensors_dtype(file.entries().begin()->second.dtype);
  config.dtype = dtype == torch::kFloat64 ? torch::kFloat32 : dtype;
  apply_lora(model, config);

  std::set<std::string> expected;
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : lora_parameters(model)) {
    const std::string key = peft_key(name);
    expected.insert(key);
    if (!file.contains(key))
      throw Error(ErrorKind::input, "adapter weight \"" + key + "\" is missing",
                  "the adapter was trained for another base model or target set", weights_path.string());
    auto t = file.get(key);
    if (t.sizes() != p.sizes()) {
      std::ostringstream msg;
      msg << "adapter weight \"" << key << "\" has shape " << t.sizes() << " but the model expects " << p.sizes();
      throw Error(ErrorKind::input, msg.str(), "the adapter was trained for another base model or rank", weights_path.string());
    }
    p.copy_(t);
  }
  for (const auto& name : file.names())
    if (!expected.count(name))
      throw Error(ErrorKind::input, "adapter holds \"" + name + "\", which this model has no place for",
                  "the adapter was trained for another base model, or saved modules this loader does not support",
                  weights_path.string());
  return config;
}

}  // namespace cudal1::trainer
