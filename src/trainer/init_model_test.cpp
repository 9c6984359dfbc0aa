// Tests of trainer/init_model.h (a model from scratch loads, runs, is reproducible, has the
// intended initialisation) and trainer/step_bench.h (the timed step trains and reports) on it.
#include "trainer/init_model.h"

#include "core/hash.h"
#include "trainer/step_bench.h"
#include "trainer/test_support.h"

#include <cmath>

namespace cudal1::trainer {
namespace {

namespace fs = std::filesystem;

fs::path tokenizer_fixture(const std::string& name) { return fs::path(CUDAL1_TOKENIZER_FIXTURES) / name; }

InitModelOptions tiny(const fs::path& out, const std::string& arch = "llama") {
  InitModelOptions o;
  o.out_dir = out;
  o.tokenizer_dir = tokenizer_fixture(arch == "qwen2" ? "qwen" : "llama3");
  o.architecture = arch;
  o.hidden_size = 64;
  o.num_layers = 2;
  o.num_heads = 4;
  o.num_kv_heads = 2;
  o.dtype = torch::kFloat32;
  return o;
}

class InitModelArch : public ::testing::TestWithParam<std::string> {};

TEST_P(InitModelArch, FolderLoadsWithTheTokenizerAndRuns) {
  test::ScratchFolder dir;
  const InitModelSummary s = init_model(tiny(dir.path(), GetParam()));
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;

  auto tok = tokenizer::Tokenizer::from_directory(dir.path());
  auto model = load_causal_lm(dir.path());
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.model_type, GetParam());
  EXPECT_EQ(c.vocab_size, static_cast<int64_t>(tok.id_bound()));
  EXPECT_EQ(c.qkv_bias, GetParam() == "qwen2");
  ASSERT_EQ(c.eos_token_ids.size(), 1u);
  EXPECT_EQ(c.eos_token_ids[0], *tok.special_tokens().eos);
  EXPECT_EQ(c.intermediate_size, 192);  // 8/3 of 64, up to a multiple of 64
  EXPECT_EQ(s.parameters, [&] {
    int64_t n = 0;
    for (auto& [name, p] : model->base_parameters()) n += p.numel();
    return n;
  }());

  // The chat template renders and every id it produces has an embedding.
  std::vector<tokenizer::ChatMessage> chat = {{"user", "Write a fused SiLU kernel."}};
  auto ids32 = tok.encode(tok.apply_chat_template(chat, /*add_generation_prompt=*/true));
  std::vector<int64_t> ids(ids32.begin(), ids32.end());
  torch::NoGradGuard no_grad;
  auto logits = model->forward(torch::tensor(ids).unsqueeze(0));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{1, int64_t(ids.size()), c.vocab_size}));
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
  // Random weights of std 0.02 give near-uniform predictions: the loss is about log(V).
  auto loss = test::fixture_loss(logits, torch::tensor(ids).unsqueeze(0), torch::ones({1, int64_t(ids.size())}));
  EXPECT_NEAR(loss.item<double>(), std::log(double(c.vocab_size)), 0.5);
}

INSTANTIATE_TEST_SUITE_P(InitModel, InitModelArch, ::testing::Values("llama", "qwen2"));

TEST(InitModel, SameSeedSameBytesOtherSeedOtherWeights) {
  test::ScratchFolder a, b, c;
  init_model(tiny(a.path()));
  init_model(tiny(b.path()));
  auto o = tiny(c.path());
  o.seed = 1;
  init_model(o);
  EXPECT_EQ(read_file(a / "model.safetensors"), read_file(b / "model.safetensors"));
  EXPECT_EQ(read_file(a / "config.json"), read_file(b / "config.json"));
  auto wa = SafetensorsFile::open(a / "model.safetensors").all(true);
  auto wc = SafetensorsFile::open(c / "model.safetensors").all(true);
  ASSERT_EQ(wa.size(), wc.size());
  for (auto& [name, t] : wa) {
    SCOPED_TRACE(name);
    if (name.find("norm") != std::string::npos) EXPECT_TRUE(t.equal(wc.at(name)));
    else EXPECT_FALSE(t.equal(wc.at(name)));
  }
}

TEST(InitModel, WeightsFollowHuggingFacesInitialisation) {
  test::ScratchFolder dir;
  init_model(tiny(dir.path(), "qwen2"));
  auto w = SafetensorsFile::open(dir / "model.safetensors").all(true);
  int normals = 0, norms = 0, biases = 0;
  for (auto& [name, t] : w) {
    SCOPED_TRACE(name);
    EXPECT_EQ(t.scalar_type(), torch::kFloat32);
    if (name.find("norm.weight") != std::string::npos) {
      EXPECT_TRUE(t.eq(1).all().item<bool>());
      ++norms;
    } else if (name.find(".bias") != std::string::npos) {
      EXPECT_TRUE(t.eq(0).all().item<bool>());
      ++biases;
    } else {
      ++normals;
      if (t.numel() < 10000) continue;  // too few draws to pin the spread down
      EXPECT_NEAR(t.std().item<double>(), 0.02, 0.001);
      EXPECT_NEAR(t.mean().item<double>(), 0.0, 0.001);
    }
  }
  EXPECT_EQ(norms, 2 * 2 + 1);
  EXPECT_EQ(biases, 2 * 3);  // q, k, v per layer
  EXPECT_EQ(normals, 1 + 2 * 7);
}

TEST(InitModel, TiedOrUntiedHead) {
  test::ScratchFolder tied, untied;
  init_model(tiny(tied.path()));
  auto o = tiny(untied.path());
  o.tie_embeddings = false;
  o.dtype = torch::kBFloat16;
  init_model(o);
  auto t = SafetensorsFile::open(tied / "model.safetensors");
  auto u = SafetensorsFile::open(untied / "model.safetensors");
  EXPECT_FALSE(t.contains("lm_head.weight"));
  ASSERT_TRUE(u.contains("lm_head.weight"));
  EXPECT_EQ(u.entries().at("lm_head.weight").dtype, "BF16");
  EXPECT_FALSE(u.get("lm_head.weight").equal(u.get("model.embed_tokens.weight")));

  auto tied_model = load_causal_lm(tied.path());
  auto untied_model = load_causal_lm(untied.path(), torch::kBFloat16);
  EXPECT_EQ(tied_model->lm_head, nullptr);
  EXPECT_NE(untied_model->lm_head, nullptr);
  EXPECT_EQ(ModelConfig::load(untied.path()).torch_dtype, "bfloat16");
}

TEST(InitModel, RefusesWhatItCannotMake) {
  test::ScratchFolder dir;
  auto o = tiny(dir.path());
  o.num_heads = 5;  // 64 does not split into 5 heads
  EXPECT_EQ(test::expect_error([&] { init_model(o); }).kind(), ErrorKind::usage);
  o = tiny(dir.path());
  o.num_kv_heads = 3;
  EXPECT_EQ(test::expect_error([&] { init_model(o); }).kind(), ErrorKind::usage);
  o = tiny(dir.path());
  o.tokenizer_dir = dir.path();  // no tokenizer.json
  EXPECT_EQ(test::expect_error([&] { init_model(o); }).kind(), ErrorKind::input);
  o = tiny(dir.path());
  init_model(o);
  EXPECT_EQ(test::expect_error([&] { init_model(o); }).kind(), ErrorKind::usage);  // a model is already there
  o.overwrite = true;
  init_model(o);
}

TEST(StepBench, LoraStepsTrainAndReport) {
  test::ScratchFolder dir;
  init_model(tiny(dir.path()));
  StepBenchOptions o;
  o.model_dir = dir.path();
  o.lora.r = 4;
  o.batch = 2;
  o.seq = 16;
  o.steps = 4;
  o.warmup = 1;
  o.optim.lr = 1e-2;
  o.dump = dir / "dump.safetensors";
  const StepBenchResult r = run_step_bench(o);
  EXPECT_EQ(r.attention, attention_kind());
  ASSERT_EQ(r.losses.size(), 5u);
  EXPECT_EQ(r.step_ms.size(), 4u);
  EXPECT_GT(r.median_ms, 0);
  EXPECT_NEAR(r.tokens_per_s, 2 * 16 / (r.mean_ms / 1000), 1e-6 * r.tokens_per_s);
  EXPECT_LT(r.losses.back(), r.losses.front());  // the same batch each step: it is learnt
  EXPECT_FALSE(r.peak_memory_bytes);             // CPU
  // r x (in + out) per adapted layer: q k v o gate up down take 64 (down 192) and give 64 32 32 64 192 192 64.
  EXPECT_EQ(r.trainable, 2 * 4 * ((6 * 64 + 192) + (64 + 32 + 32 + 64 + 192 + 192 + 64)));
  EXPECT_LT(r.trainable, r.parameters);

  auto dump = SafetensorsFile::open(o.dump);
  EXPECT_EQ(dump.get("input_ids").sizes(), (std::vector<int64_t>{2, 16}));
  EXPECT_TRUE(dump.get("loss", true).equal(torch::tensor(r.losses, torch::kFloat64)));
  EXPECT_TRUE(dump.contains("init.model.layers.0.self_attn.q_proj.lora_A.weight"));
  auto j = step_bench_json(o, r);
  EXPECT_EQ(j["mode"], "lora");
  EXPECT_EQ(j["attention"], r.attention);
}

TEST(StepBench, FullFineTuningTrainsEveryWeight) {
  test::ScratchFolder dir;
  init_model(tiny(dir.path()));
  StepBenchOptions o;
  o.model_dir = dir.path();
  o.full = true;
  o.batch = 1;
  o.seq = 8;
  o.steps = 2;
  o.warmup = 0;
  const StepBenchResult r = run_step_bench(o);
  EXPECT_EQ(r.trainable, r.parameters);
  EXPECT_EQ(r.step_ms.size(), 2u);
  o.seq = 1;
  EXPECT_EQ(test::expect_error([&] { run_step_bench(o); }).kind(), ErrorKind::usage);
}

}  // namespace
}  // namespace cudal1::trainer
