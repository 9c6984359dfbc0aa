// trainer/test_support.h — what the trainer's tests share: the Hugging Face fixture
// (tests/fixtures/trainer, made by make_fixture.py), scratch folders, tensor comparisons.
#pragma once

#include "core/error.h"
#include "core/expect_error.h"
#include "trainer/model.h"
#include "trainer/safetensors.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace cudal1::trainer::test {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(CUDAL1_TRAINER_FIXTURES) / name;
}

// The expected values Hugging Face computed for one fixture model (see make_fixture.py).
inline std::map<std::string, torch::Tensor> expected(const std::string& model) {
  return SafetensorsFile::open(fixture(model) / "expected.safetensors").all(/*copy=*/true);
}

// A fresh folder under the temp dir, removed with the object.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("cudal1-trainer-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// Logits at the real (unpadded) positions only: [N, V] from [B, T, V] and mask [B, T].
inline torch::Tensor real_positions(const torch::Tensor& logits, const torch::Tensor& mask) {
  return logits.index({mask.to(torch::kBool)});
}

// make_fixture.py's loss: mean -log p(token t+1 | <= t) where tokens t and t+1 are both real.
inline torch::Tensor fixture_loss(const torch::Tensor& logits, const torch::Tensor& ids, const torch::Tensor& mask) {
  const int64_t T = ids.size(1);
  auto keep = (mask.narrow(1, 0, T - 1) * mask.narrow(1, 1, T - 1)).to(torch::kBool);
  return -next_token_logprobs(logits, ids).index({keep}).mean();
}

// The real tokens of each row of a left-padded batch.
inline std::vector<std::vector<int64_t>> unpadded_rows(const torch::Tensor& ids, const torch::Tensor& mask) {
  std::vector<std::vector<int64_t>> rows;
  for (int64_t b = 0; b < ids.size(0); ++b) {
    std::vector<int64_t> row;
    for (int64_t t = 0; t < ids.size(1); ++t)
      if (mask[b][t].item<int64_t>() != 0) row.push_back(ids[b][t].item<int64_t>());
    rows.push_back(row);
  }
  return rows;
}

// A one-layer Llama with random weights (seeded) and the Llama-3 tokenizer fixture, whose
// vocabulary holds every id of the tokenizer: what the stages' end-to-end tests train.
// tokenizer: a folder of the tokenizer fixtures, "llama3" (Llama-3's template) or "qwen" (ChatML).
inline void write_tiny_llama(const std::filesystem::path& dir, uint64_t seed = 7, int hidden = 32, int layers = 1,
                             const std::string& tokenizer = "llama3") {
  const std::filesystem::path tok_dir = std::filesystem::path(CUDAL1_TOKENIZER_FIXTURES) / tokenizer;
  auto tok = tokenizer::Tokenizer::from_directory(tok_dir);
  nlohmann::json cfg = {{"model_type", "llama"}, {"vocab_size", tok.id_bound()}, {"hidden_size", hidden},
                        {"intermediate_size", 2 * hidden}, {"num_hidden_layers", layers}, {"num_attention_heads", 4},
                        {"num_key_value_heads", 2}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0},
                        {"max_position_embeddings", 4096}, {"tie_word_embeddings", true}, {"hidden_act", "silu"}};
  CausalLM model(ModelConfig::from_json(cfg), torch::TensorOptions().dtype(torch::kFloat32));
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    if (p.key().find("norm") != std::string::npos) p.value().fill_(1.0);
    else p.value().normal_(0.0, 0.05);
  }
  model.save_pretrained(dir);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(tok_dir / f, dir / f, std::filesystem::copy_options::overwrite_existing);
}

// Lines of a text file (a stage's per-step log).
inline std::size_t count_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

using cudal1::test_support::expect_error;

}  // namespace cudal1::trainer::test
