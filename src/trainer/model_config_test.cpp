// Tests of trainer/model_config.h: Hugging Face config.json files of both families, defaults,
// what is refused and why, and writing the file back.
#include "trainer/model_config.h"

#include "trainer/test_support.h"

namespace cudal1::trainer {
namespace {

using nlohmann::json;
using test::expect_error;

json minimal_llama() {
  return {{"model_type", "llama"},      {"vocab_size", 100},        {"hidden_size", 32},
          {"intermediate_size", 64},    {"num_hidden_layers", 2},   {"num_attention_heads", 4},
          {"rms_norm_eps", 1e-5},       {"rope_theta", 500000.0}};
}

TEST(ModelConfig, ReadsTheLlamaFixture) {
  auto c = ModelConfig::load(test::fixture("llama"));
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.vocab_size, 256);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 160);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 32);  // given explicitly, not hidden / heads
  EXPECT_EQ(c.kv_groups(), 2);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.max_position_embeddings, 128);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_EQ(c.torch_dtype, "bfloat16");  // transformers 4.57 writes "dtype"
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
}

TEST(ModelConfig, ReadsTheQwen2Fixture) {
  auto c = ModelConfig::load(test::fixture("qwen2") / "config.json");
  EXPECT_EQ(c.model_type, "qwen2");
  EXPECT_EQ(c.num_key_value_heads, 1);
  EXPECT_EQ(c.head_dim, 16);  // hidden / heads
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
}

TEST(ModelConfig, Defaults) {
  auto c = ModelConfig::from_json(minimal_llama());
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_TRUE(c.torch_dtype.empty());
  auto j = minimal_llama();
  j["attention_bias"] = true;
  j["torch_dtype"] = "float16";
  j["eos_token_id"] = {128001, 128009};
  auto b = ModelConfig::from_json(j);
  EXPECT_TRUE(b.qkv_bias);
  EXPECT_TRUE(b.o_proj_bias);  // llama's attention_bias covers o_proj too
  EXPECT_EQ(b.torch_dtype, "float16");
  EXPECT_EQ(b.eos_token_ids, (std::vector<int64_t>{128001, 128009}));
}

void expect_refused(const json& j, const std::string& needle) {
  Error e = expect_error([&] { ModelConfig::from_json(j, "somewhere/config.json"); });
  EXPECT_EQ(e.kind(), ErrorKind::input);
  EXPECT_NE(e.message().find(needle), std::string::npos) << e.describe();
  EXPECT_EQ(e.context(), "somewhere/config.json");
  EXPECT_FALSE(e.hint().empty());
}

TEST(ModelConfig, RefusesWhatIsNotImplemented) {
  auto j = minimal_llama();
  j["model_type"] = "mistral";
  expect_refused(j, "model_type \"mistral\" is not supported");
  j = minimal_llama();
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expect_refused(j, "rope_scaling");
  j = minimal_llama();
  j["hidden_act"] = "gelu";
  expect_refused(j, "hidden_act");
  j = minimal_llama();
  j.erase("hidden_size");
  expect_refused(j, "\"hidden_size\"");
  j = minimal_llama();
  j["num_key_value_heads"] = 3;
  expect_refused(j, "not a multiple");
  j = minimal_llama();
  j["vocab_size"] = "many";
  expect_refused(j, "\"vocab_size\" is not a positive integer");

  auto q = minimal_llama();
  q["model_type"] = "qwen2";
  q["use_sliding_window"] = false;
  q["sliding_window"] = 4096;  // present but not in use: fine
  EXPECT_NO_THROW(ModelConfig::from_json(q));
  q["use_sliding_window"] = true;
  expect_refused(q, "sliding-window");
  q["use_sliding_window"] = false;
  q["layer_types"] = {"full_attention", "sliding_attention"};
  expect_refused(q, "sliding_attention");
  expect_refused(json::array(), "not a JSON object");
}

TEST(ModelConfig, WritesItselfBack) {
  auto c = ModelConfig::load(test::fixture("qwen2"));
  c.torch_dtype = "float32";
  test::ScratchFolder dir;
  c.save(dir / "config.json");
  auto back = ModelConfig::load(dir.path());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(back.torch_dtype, "float32");
  auto j = back.to_json();
  EXPECT_EQ(j["bos_token_id"], 1);        // fields we do not interpret survive
  EXPECT_FALSE(j.contains("head_dim"));   // qwen2 keeps it implicit
  EXPECT_FALSE(j.contains("torch_dtype"));  // the file's spelling, "dtype", is kept
  EXPECT_EQ(j["dtype"], "float32");
  auto l = ModelConfig::from_json(ModelConfig::load(test::fixture("llama")).to_json());
  EXPECT_EQ(l.head_dim, 32);
  EXPECT_TRUE(l.tie_word_embeddings);
}

}  // namespace
}  // namespace cudal1::trainer
