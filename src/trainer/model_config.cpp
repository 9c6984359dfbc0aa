// trainer/model_config.cpp — parsing and checking Hugging Face config.json (see model_config.h).
#include "trainer/model_config.h"

#include "core/error.h"
#include "core/hash.h"

namespace cudal1::trainer {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(std::string_view source, const std::string& what, const std::string& hint) {
  throw Error(ErrorKind::input, what, hint, std::string(source));
}

int64_t get_int(const nlohmann::json& j, const char* key, std::string_view source, int64_t fallback = -1) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback >= 0) return fallback;
    bad(source, std::string("config has no \"") + key + "\"", "is this a Hugging Face config.json of a llama or qwen2 model?");
  }
  if (!j[key].is_number_integer() || j[key].get<int64_t>() <= 0)
    bad(source, std::string("config field \"") + key + "\" is not a positive integer", "fix config.json");
  return j[key].get<int64_t>();
}

double get_double(const nlohmann::json& j, const char* key, std::string_view source, double fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number()) bad(source, std::string("config field \"") + key + "\" is not a number", "fix config.json");
  return j[key].get<double>();
}

bool get_bool(const nlohmann::json& j, const char* key, std::string_view source, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean()) bad(source, std::string("config field \"") + key + "\" is not true or false", "fix config.json");
  return j[key].get<bool>();
}

}  // namespace

ModelConfig ModelConfig::from_json(const nlohmann::json& j, std::string_view source) {
  if (!j.is_object()) bad(source, "config is not a JSON object", "pass the model's config.json");
  ModelConfig c;
  c.raw = j;
  c.model_type = j.value("model_type", std::string());
  if (c.model_type != "llama" && c.model_type != "qwen2")
    bad(source, "model_type \"" + c.model_type + "\" is not supported",
        "the trainer implements the llama and qwen2 architectures (Llama 2/3-style, Qwen2/2.5, their coders)");

  c.vocab_size = get_int(j, "vocab_size", source);
  c.hidden_size = get_int(j, "hidden_size", source);
  c.intermediate_size = get_int(j, "intermediate_size", source);
  c.num_hidden_layers = get_int(j, "num_hidden_layers", source);
  c.num_attention_heads = get_int(j, "num_attention_heads", source);
  c.num_key_value_heads = get_int(j, "num_key_value_heads", source, c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    bad(source, "num_attention_heads " + std::to_string(c.num_attention_heads) + " is not a multiple of num_key_value_heads " +
                    std::to_string(c.num_key_value_heads), "fix config.json");
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    c.head_dim = get_int(j, "head_dim", source);
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      bad(source, "hidden_size is not a multiple of num_attention_heads and no head_dim is given", "fix config.json");
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) bad(source, "head_dim " + std::to_string(c.head_dim) + " is odd", "rotary positions need an even head_dim");
  c.rms_norm_eps = get_double(j, "rms_norm_eps", source, 1e-6);
  c.rope_theta = get_double(j, "rope_theta", source, 10000.0);
  c.max_position_embeddings = get_int(j, "max_position_embeddings", source, 0);
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", source, false);

  if (c.model_type == "qwen2") {
    c.qkv_bias = true;  // Qwen2Attention: q/k/v with bias, o_proj without
    c.o_proj_bias = false;
  } else {
    c.qkv_bias = c.o_proj_bias = get_bool(j, "attention_bias", source, false);
    c.mlp_bias = get_bool(j, "mlp_bias", source, false);
  }

  // Unsupported features: refused, because computing without them gives a different model.
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    bad(source, "rope_scaling " + j["rope_scaling"].dump() + " is not supported",
        "only plain rotary positions (rope_scaling null) are implemented; Llama 3.1+ style scaling is not");
  std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu") bad(source, "hidden_act \"" + act + "\" is not supported", "only SwiGLU (silu) MLPs are implemented");
  if (get_bool(j, "use_sliding_window", source, false) && j.contains("sliding_window") && !j["sliding_window"].is_null())
    bad(source, "sliding-window attention is in use (use_sliding_window true)",
        "only full causal attention is implemented; set use_sliding_window false if the window exceeds your context");
  if (j.contains("layer_types") && j["layer_types"].is_array())
    for (const auto& t : j["layer_types"])
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        bad(source, "layer_types has " + t.dump() + "; only full_attention layers are supported",
            "only full causal attention is implemented");

  // Transformers >= 4.56 writes "dtype"; older versions "torch_dtype".
  for (const char* key : {"torch_dtype", "dtype"})
    if (j.contains(key) && j[key].is_string()) c.torch_dtype = j[key].get<std::string>();
  if (j.contains("eos_token_id")) {
    const auto& e = j["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int64_t>());
    else if (e.is_array())
      for (const auto& x : e)
        if (x.is_number_integer()) c.eos_token_ids.push_back(x.get<int64_t>());
  }
  return c;
}

ModelConfig ModelConfig::load(const fs::path& path) {
  fs::path file = fs::is_directory(path) ? path / "config.json" : path;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(file));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, std::string("config is not valid JSON: ") + e.what(), "fix config.json", file.string());
  }
  return from_json(j, file.string());
}

nlohmann::json ModelConfig::to_json() const {
  nlohmann::json j = raw.is_object() ? raw : nlohmann::json::object();
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  // qwen2 configs carry no head_dim: keep it implicit when it is the default.
  if (model_type == "llama" || head_dim != hidden_size / num_attention_heads || raw.contains("head_dim"))
    j["head_dim"] = head_dim;
  j["rms_norm_eps"] = rms_norm_eps;
  j["rope_theta"] = rope_theta;
  if (max_position_embeddings > 0) j["max_position_embeddings"] = max_position_embeddings;
  j["tie_word_embeddings"] = tie_word_embeddings;
  if (model_type == "llama") {
    j["attention_bias"] = qkv_bias;
    j["mlp_bias"] = mlp_bias;
  }
  if (!j.contains("rope_scaling")) j["rope_scaling"] = nullptr;
  if (!torch_dtype.empty()) {
    const char* key = raw.contains("torch_dtype") ? "torch_dtype" : "dtype";
    j[key] = torch_dtype;
  }
  return j;
}

void ModelConfig::save(const fs::path& path) const {
  write_file(path, to_json().dump(2) + "\n", "check the output folder is writable");
}

}  // namespace cudal1::trainer
