// Tests of trainer/model.h against Hugging Face (tests/fixtures/trainer): logits, loss and
// gradients of a llama and a qwen2 model, the KV cache, left padding, loading and saving.
#include "trainer/model.h"

#include "trainer/test_support.h"

#include <torch/utils.h>

namespace cudal1::trainer {
namespace {

using test::max_abs_diff;

class ModelFixture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    model = load_causal_lm(test::fixture(GetParam()));
    exp = test::expected(GetParam());
    ids = exp.at("input_ids");
    mask = exp.at("attention_mask");
  }
  std::shared_ptr<CausalLM> model;
  std::map<std::string, torch::Tensor> exp;
  torch::Tensor ids, mask;
};

TEST_P(ModelFixture, LogitsMatchHuggingFace) {
  torch::NoGradGuard no_grad;
  auto logits = model->forward(ids, mask);
  ASSERT_EQ(logits.sizes(), exp.at("logits").sizes());
  const double diff = max_abs_diff(test::real_positions(logits, mask), test::real_positions(exp.at("logits"), mask));
  EXPECT_LT(diff, 1e-4);
  RecordProperty("max_abs_diff", std::to_string(diff));
  // The check can fail: the logits are far from constant.
  EXPECT_GT(exp.at("logits").std().item<double>(), 0.1);
}

TEST_P(ModelFixture, LossAndGradientsMatchHuggingFace) {
  auto loss = test::fixture_loss(model->forward(ids, mask), ids, mask);
  EXPECT_NEAR(loss.item<double>(), exp.at("loss").item<double>(), 1e-5);
  loss.backward();
  std::map<std::string, torch::Tensor> params;
  for (const auto& item : model->named_parameters()) params[item.key()] = item.value();
  int compared = 0;
  for (const auto& [key, want] : exp) {
    if (key.rfind("grad.", 0) != 0) continue;
    const std::string name = key.substr(5);
    SCOPED_TRACE(name);
    ASSERT_TRUE(params.count(name));
    auto got = params[name].grad();
    ASSERT_TRUE(got.defined());
    const double scale = want.abs().max().item<double>();
    EXPECT_GT(scale, 1e-4);
    const double diff = max_abs_diff(got, want);
    EXPECT_LT(diff, 1e-5 + 1e-4 * scale);
    RecordProperty("grad_rel_diff." + name, std::to_string(diff / scale));
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

TEST_P(ModelFixture, KvCacheDecodingEqualsOneFullPass) {
  torch::NoGradGuard no_grad;
  auto full = model->forward(ids, mask);
  const int64_t B = ids.size(0), T = ids.size(1);
  // Prefill 8 positions, then 1, then the last 3: the cache starts too small and must grow.
  KvCache cache(model->config(), B, 4, model->embedding_weight().options());
  std::vector<torch::Tensor> parts;
  int64_t at = 0;
  for (int64_t len : {8, 1, 3}) {
    parts.push_back(model->forward(ids.narrow(1, at, len), mask.narrow(1, 0, at + len), &cache));
    at += len;
    EXPECT_EQ(cache.length, at);
  }
  ASSERT_EQ(at, T);
  auto stepped = torch::cat(parts, 1);
  EXPECT_LT(max_abs_diff(test::real_positions(stepped, mask), test::real_positions(full, mask)), 1e-5);
  EXPECT_GT(cache.k[0].size(2), 4);
}

TEST_P(ModelFixture, LeftPaddingDoesNotChangeARow) {
  torch::NoGradGuard no_grad;
  auto batch = model->forward(ids, mask);
  auto rows = test::unpadded_rows(ids, mask);
  for (int64_t b = 0; b < ids.size(0); ++b) {
    SCOPED_TRACE(b);
    auto alone = model->forward(torch::tensor(rows[b]).unsqueeze(0));  // [1, n, V], no mask, no padding
    const int64_t n = static_cast<int64_t>(rows[b].size());
    auto padded = batch[b].narrow(0, ids.size(1) - n, n);
    EXPECT_LT(max_abs_diff(alone[0], padded), 1e-5);
  }
  // Explicit positions: RoPE sees only distances, so shifting every position changes nothing,
  // while spreading them apart does.
  const int64_t n = static_cast<int64_t>(rows[2].size());
  auto tokens = torch::tensor(rows[2]).unsqueeze(0);
  auto reference = batch[2].narrow(0, ids.size(1) - n, n);
  auto shifted = model->forward(tokens, {}, nullptr, torch::arange(5, n + 5).unsqueeze(0));
  EXPECT_LT(max_abs_diff(shifted[0], reference), 1e-4);
  auto spread = model->forward(tokens, {}, nullptr, torch::arange(0, 2 * n, 2).unsqueeze(0));
  EXPECT_GT(max_abs_diff(spread[0], reference), 1e-2);
}

TEST_P(ModelFixture, SavesAndReloadsUnderHuggingFaceNames) {
  test::ScratchFolder dir;
  model->save_pretrained(dir.path());
  auto saved = SafetensorsFile::open(dir / "model.safetensors");
  std::vector<std::string> names;
  for (auto& [name, p] : model->base_parameters()) names.push_back(name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(saved.names(), names);
  EXPECT_EQ(saved.contains("lm_head.weight"), !model->config().tie_word_embeddings);
  EXPECT_TRUE(saved.contains("model.layers.1.post_attention_layernorm.weight"));
  EXPECT_EQ(saved.contains("model.layers.0.self_attn.q_proj.bias"), model->config().qkv_bias);
  EXPECT_EQ(saved.metadata().at("format"), "pt");
  auto again = load_causal_lm(dir.path());
  EXPECT_EQ(again->config().torch_dtype, "float32");
  for (auto& [name, p] : again->base_parameters()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(torch::equal(p, saved.get(name)));
  }
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(again->forward(ids, mask), model->forward(ids, mask)));
}

INSTANTIATE_TEST_SUITE_P(HuggingFace, ModelFixture, ::testing::Values("llama", "qwen2"));

TEST(Model, ParameterNamesAndShapesAreHuggingFaces) {
  auto model = load_causal_lm(test::fixture("qwen2"));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (auto& [name, p] : model->base_parameters()) shapes[name] = p.sizes().vec();
  // kv heads 1, head_dim 16: k_proj is [16, 64]; the index names every one of them.
  EXPECT_EQ(shapes.at("model.layers.0.self_attn.k_proj.weight"), (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(shapes.at("model.layers.0.self_attn.k_proj.bias"), (std::vector<int64_t>{16}));
  EXPECT_FALSE(shapes.count("model.layers.0.self_attn.o_proj.bias"));
  EXPECT_EQ(shapes.at("lm_head.weight"), (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(shapes.size(), 2u + 2 * 12 + 1);  // embed, lm_head, 2 layers x 12, norm
}

TEST(Model, LoadsBfloat16WithoutLoss) {
  // The files hold bf16; loading as bf16 must give exactly those values, and the bf16 model
  // must still compute nearly the same logits.
  auto model = load_causal_lm(test::fixture("llama"), torch::kBFloat16);
  auto file = SafetensorsFile::open(test::fixture("llama") / "model.safetensors");
  for (auto& [name, p] : model->base_parameters()) {
    EXPECT_EQ(p.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(p, file.get(name))) << name;
  }
  auto exp = test::expected("llama");
  torch::NoGradGuard no_grad;
  auto logits = model->forward(exp.at("input_ids"), exp.at("attention_mask"));
  EXPECT_EQ(logits.scalar_type(), torch::kBFloat16);
  auto want = test::real_positions(exp.at("logits"), exp.at("attention_mask"));
  const double diff = max_abs_diff(test::real_positions(logits, exp.at("attention_mask")), want);
  EXPECT_LT(diff, 0.05 * want.abs().max().item<double>());
}

TEST(Model, MissingOrMisshapedWeightsAreErrorsNamingThem) {
  auto file = SafetensorsFile::open(test::fixture("llama") / "model.safetensors");
  auto tensors = file.all(/*copy=*/true);
  test::ScratchFolder dir;
  ModelConfig::load(test::fixture("llama")).save(dir / "config.json");

  auto missing = tensors;
  missing.erase("model.layers.1.mlp.up_proj.weight");
  save_safetensors(dir / "model.safetensors", missing);
  Error e = test::expect_error([&] { load_causal_lm(dir.path()); });
  EXPECT_EQ(e.kind(), ErrorKind::input);
  EXPECT_NE(e.message().find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << e.describe();

  auto misshaped = tensors;
  misshaped["model.norm.weight"] = torch::ones({65}, torch::kBFloat16);
  save_safetensors(dir / "model.safetensors", misshaped);
  Error s = test::expect_error([&] { load_causal_lm(dir.path()); });
  EXPECT_NE(s.message().find("\"model.norm.weight\" has shape [65]"), std::string::npos) << s.describe();

  std::filesystem::remove(dir / "model.safetensors");
  Error none = test::expect_error([&] { load_causal_lm(dir.path()); });
  EXPECT_NE(none.message().find("no model.safetensors"), std::string::npos) << none.describe();
}

}  // namespace
}  // namespace cudal1::trainer
