// Tests of trainer/lora.h: a fresh adapter changes nothing, adapters off is the base model, only
// the factors train, save/load round trips, and the saved layout is exactly what PEFT wrote for
// the same adapter (tests/fixtures/trainer/llama_lora), whose logits we reproduce.
#include "trainer/lora.h"

#include "core/hash.h"
#include "trainer/test_support.h"

#include <torch/utils.h>

#include <set>

namespace cudal1::trainer {
namespace {

using test::max_abs_diff;

LoraConfig fixture_like() {  // the adapter make_fixture.py builds with PEFT
  LoraConfig c;
  c.r = 4;
  c.alpha = 8;
  c.dropout = 0.0;
  c.target_modules = {"q_proj", "v_proj", "down_proj"};
  c.base_model_name_or_path = "llama_tiny";
  return c;
}

void randomise_b(CausalLM& model, int seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : lora_parameters(model))
    if (name.find("lora_B") != std::string::npos) p.normal_(0.0, 0.3);
}

class Lora : public ::testing::Test {
 protected:
  void SetUp() override {
    model = load_causal_lm(test::fixture("llama"));
    exp = test::expected("llama");
    ids = exp.at("input_ids");
    mask = exp.at("attention_mask");
    torch::NoGradGuard no_grad;
    base = model->forward(ids, mask);
  }
  torch::Tensor logits() {
    torch::NoGradGuard no_grad;
    return model->forward(ids, mask);
  }
  std::shared_ptr<CausalLM> model;
  std::map<std::string, torch::Tensor> exp;
  torch::Tensor ids, mask, base;
};

TEST_F(Lora, FreshAdapterLeavesLogitsUnchanged) {
  auto adapted = apply_lora(*model, fixture_like(), 3);
  EXPECT_EQ(adapted.size(), 6u);  // 3 targets x 2 layers
  EXPECT_TRUE(torch::equal(logits(), base));
  for (auto& [name, p] : lora_parameters(*model)) {
    if (name.find("lora_A") != std::string::npos) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(p.size(1)));
      EXPECT_GT(p.abs().max().item<double>(), 0.5 * bound) << name;  // Kaiming-uniform, not zeros
      EXPECT_LE(p.abs().max().item<double>(), bound) << name;
      EXPECT_EQ(p.size(0), 4);
    } else {
      EXPECT_EQ(p.abs().max().item<double>(), 0.0) << name;
    }
  }
}

TEST_F(Lora, OnlyAdapterFactorsRequireGrad) {
  apply_lora(*model, fixture_like());
  randomise_b(*model, 1);
  int lora = 0;
  for (const auto& item : model->named_parameters()) {
    const bool is_lora = item.key().find(".lora_") != std::string::npos;
    EXPECT_EQ(item.value().requires_grad(), is_lora) << item.key();
    lora += is_lora;
  }
  EXPECT_EQ(lora, 12);
  test::fixture_loss(model->forward(ids, mask), ids, mask).backward();
  for (const auto& item : model->named_parameters()) {
    const bool is_lora = item.key().find(".lora_") != std::string::npos;
    EXPECT_EQ(item.value().grad().defined(), is_lora) << item.key();
    if (is_lora) {
      EXPECT_GT(item.value().grad().abs().max().item<double>(), 0.0) << item.key();
    }
  }
}

TEST_F(Lora, AdaptersOffIsTheBaseModel) {
  apply_lora(*model, fixture_like());
  randomise_b(*model, 2);
  auto on = logits();
  EXPECT_GT(max_abs_diff(on, base), 1e-2);
  set_lora_enabled(*model, false);
  EXPECT_TRUE(torch::equal(logits(), base));
  set_lora_enabled(*model, true);
  EXPECT_TRUE(torch::equal(logits(), on));
}

TEST_F(Lora, SavedAndReloadedAdapterGivesIdenticalLogits) {
  auto config = fixture_like();
  config.target_modules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  apply_lora(*model, config);
  randomise_b(*model, 3);
  auto want = logits();
  test::ScratchFolder dir;
  save_lora(*model, config, dir.path());
  auto fresh = load_causal_lm(test::fixture("llama"));
  auto loaded = load_lora(*fresh, dir.path());
  EXPECT_EQ(loaded.r, 4);
  EXPECT_EQ(loaded.alpha, 8);
  EXPECT_EQ(loaded.target_modules.size(), 7u);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(fresh->forward(ids, mask), want));
}

TEST_F(Lora, ReproducesPeftsAdapter) {
  auto config = load_lora(*model, test::fixture("llama_lora"));
  EXPECT_EQ(config.base_model_name_or_path, "llama_tiny");
  auto got = logits();
  auto want = exp.at("lora_logits");
  EXPECT_GT(max_abs_diff(test::real_positions(want, mask), test::real_positions(base, mask)), 1e-2);
  EXPECT_LT(max_abs_diff(test::real_positions(got, mask), test::real_positions(want, mask)), 1e-4);
}

TEST_F(Lora, SavedLayoutIsExactlyPefts) {
  apply_lora(*model, fixture_like());
  test::ScratchFolder dir;
  save_lora(*model, fixture_like(), dir.path());

  auto ours = nlohmann::json::parse(read_file(dir / "adapter_config.json"));
  auto peft = nlohmann::json::parse(read_file(test::fixture("llama_lora") / "adapter_config.json"));
  // target_modules is a set in PEFT, written in arbitrary order.
  auto as_set = [](const nlohmann::json& a) { return a.get<std::set<std::string>>(); };
  EXPECT_EQ(as_set(ours["target_modules"]), as_set(peft["target_modules"]));
  ours.erase("target_modules");
  peft.erase("target_modules");
  EXPECT_EQ(ours, peft) << "ours: " << ours.dump() << "\npeft: " << peft.dump();

  auto our_file = SafetensorsFile::open(dir / "adapter_model.safetensors");
  auto peft_file = SafetensorsFile::open(test::fixture("llama_lora") / "adapter_model.safetensors");
  EXPECT_EQ(our_file.names(), peft_file.names());
  EXPECT_EQ(our_file.metadata(), peft_file.metadata());
  for (const auto& name : peft_file.names()) {
    EXPECT_EQ(our_file.entries().at(name).shape, peft_file.entries().at(name).shape) << name;
    EXPECT_EQ(our_file.entries().at(name).dtype, peft_file.entries().at(name).dtype) << name;
  }
  EXPECT_TRUE(our_file.contains("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
  EXPECT_EQ(our_file.entries().at("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight").shape,
            (std::vector<int64_t>{64, 4}));
}

TEST_F(Lora, DropoutActsOnlyInTraining) {
  auto config = fixture_like();
  config.dropout = 0.5;
  apply_lora(*model, config);
  randomise_b(*model, 4);
  auto eval1 = logits(), eval2 = logits();
  EXPECT_TRUE(torch::equal(eval1, eval2));
  model->train(true);
  EXPECT_GT(max_abs_diff(logits(), eval1), 1e-4);
  model->train(false);
  EXPECT_TRUE(torch::equal(logits(), eval1));
}

TEST_F(Lora, Errors) {
  auto none = fixture_like();
  none.target_modules = {"qkv_proj"};
  Error e = test::expect_error([&] { apply_lora(*model, none); });
  EXPECT_EQ(e.kind(), ErrorKind::usage);
  apply_lora(*model, fixture_like());
  test::expect_error([&] { apply_lora(*model, fixture_like()); });

  test::ScratchFolder dir;
  save_lora(*model, fixture_like(), dir.path());
  // An adapter for more targets than the file holds: missing factors are named.
  auto config = nlohmann::json::parse(read_file(dir / "adapter_config.json"));
  config["target_modules"] = {"q_proj", "v_proj", "down_proj", "o_proj"};
  write_file(dir / "adapter_config.json", config.dump(), "");
  auto fresh = load_causal_lm(test::fixture("llama"));
  Error m = test::expect_error([&] { load_lora(*fresh, dir.path()); });
  EXPECT_NE(m.message().find("o_proj.lora_A.weight\" is missing"), std::string::npos) << m.describe();
  // Fewer targets than the file holds: the extra tensors are named.
  config["target_modules"] = {"q_proj", "v_proj"};
  write_file(dir / "adapter_config.json", config.dump(), "");
  fresh = load_causal_lm(test::fixture("llama"));
  Error x = test::expect_error([&] { load_lora(*fresh, dir.path()); });
  EXPECT_NE(x.message().find("down_proj"), std::string::npos) << x.describe();
  // What would load wrongly is refused.
  config["target_modules"] = {"q_proj", "v_proj", "down_proj"};
  config["use_dora"] = true;
  write_file(dir / "adapter_config.json", config.dump(), "");
  fresh = load_causal_lm(test::fixture("llama"));
  Error d = test::expect_error([&] { load_lora(*fresh, dir.path()); });
  EXPECT_NE(d.message().find("use_dora"), std::string::npos) << d.describe();
}

}  // namespace
}  // namespace cudal1::trainer
