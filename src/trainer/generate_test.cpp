// Tests of trainer/generate.h: greedy decoding reproduces Hugging Face's generate(), sampling
// repeats with its seed, log-probabilities are the temperature-1 ones of a full forward pass,
// top-p keeps to the nucleus, stop tokens end a sequence.
#include "trainer/generate.h"

#include "trainer/test_support.h"

#include <torch/utils.h>

namespace cudal1::trainer {
namespace {

class Generate : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    model = load_causal_lm(test::fixture(GetParam()));
    exp = test::expected(GetParam());
    prompts = test::unpadded_rows(exp.at("input_ids"), exp.at("attention_mask"));
  }
  std::shared_ptr<CausalLM> model;
  std::map<std::string, torch::Tensor> exp;
  std::vector<std::vector<int64_t>> prompts;
};

std::vector<int64_t> row(const torch::Tensor& t, int64_t b) {
  auto r = t[b].contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

TEST_P(Generate, GreedyMatchesHuggingFace) {
  SamplingOptions o;
  o.temperature = 0;
  o.max_new_tokens = exp.at("greedy_ids").size(1);
  auto out = generate(*model, prompts, o);
  ASSERT_EQ(out.size(), prompts.size());
  for (size_t b = 0; b < out.size(); ++b) {
    EXPECT_EQ(out[b].tokens, row(exp.at("greedy_ids"), static_cast<int64_t>(b))) << "row " << b;
    EXPECT_EQ(out[b].finish, FinishReason::length);
    EXPECT_EQ(out[b].logprobs.size(), out[b].tokens.size());
  }
  // A vanishing nucleus is greedy too.
  o.temperature = 1.0;
  o.top_p = 1e-6;
  auto nucleus = generate(*model, prompts, o);
  for (size_t b = 0; b < out.size(); ++b) EXPECT_EQ(nucleus[b].tokens, out[b].tokens);
}

// log p(token | prefix) from one full pass over prompt + completion, and the probabilities.
std::pair<std::vector<float>, torch::Tensor> rescore(CausalLM& model, const std::vector<int64_t>& prompt,
                                                     const std::vector<int64_t>& tokens) {
  std::vector<int64_t> all = prompt;
  all.insert(all.end(), tokens.begin(), tokens.end());
  torch::NoGradGuard no_grad;
  auto ids = torch::tensor(all).unsqueeze(0);
  auto logits = model.forward(ids);
  auto lp = next_token_logprobs(logits, ids)[0].narrow(0, prompt.size() - 1, tokens.size());
  auto probs = at::softmax(logits[0].narrow(0, prompt.size() - 1, tokens.size()).to(torch::kFloat32), -1);
  return {std::vector<float>(lp.data_ptr<float>(), lp.data_ptr<float>() + lp.numel()), probs};
}

TEST_P(Generate, SamplesRepeatAndCarryTemperatureOneLogprobs) {
  SamplingOptions o;
  o.temperature = 0.7;
  o.top_p = 0.9;
  o.max_new_tokens = 8;
  o.seed = 11;
  auto a = generate(*model, prompts, o);
  auto b = generate(*model, prompts, o);
  o.seed = 12;
  auto c = generate(*model, prompts, o);
  bool any_differs = false;
  for (size_t g = 0; g < prompts.size(); ++g) {
    SCOPED_TRACE(g);
    EXPECT_EQ(a[g].tokens, b[g].tokens);
    EXPECT_EQ(a[g].logprobs, b[g].logprobs);
    any_differs = any_differs || a[g].tokens != c[g].tokens;
    ASSERT_EQ(a[g].tokens.size(), 8u);
    auto [want, probs] = rescore(*model, prompts[g], a[g].tokens);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(a[g].logprobs[i], want[i], 1e-4) << "token " << i;
  }
  EXPECT_TRUE(any_differs) << "another seed gave the same samples";
}

TEST_P(Generate, TopPKeepsToTheNucleus) {
  SamplingOptions o;
  o.temperature = 1.0;
  o.top_p = 0.3;
  o.max_new_tokens = 8;
  for (uint64_t seed : {1, 2, 3}) {
    o.seed = seed;
    auto out = generate(*model, prompts, o);
    for (size_t g = 0; g < prompts.size(); ++g) {
      auto [lp, probs] = rescore(*model, prompts[g], out[g].tokens);
      for (size_t i = 0; i < out[g].tokens.size(); ++i) {
        auto p = probs[static_cast<int64_t>(i)];
        const double mine = p[out[g].tokens[i]].item<double>();
        const double before = p.masked_select(p > mine).sum().item<double>();  // mass of likelier tokens
        EXPECT_LT(before, 0.3 + 1e-5) << "row " << g << " token " << i;
      }
    }
  }
}

TEST_P(Generate, StopTokensEndASequence) {
  auto greedy = exp.at("greedy_ids");
  const int64_t stop = greedy[0][2].item<int64_t>();
  SamplingOptions o;
  o.temperature = 0;
  o.max_new_tokens = greedy.size(1);
  o.stop_token_ids = {stop};
  auto out = generate(*model, prompts, o);
  for (size_t g = 0; g < out.size(); ++g) {
    auto full = row(greedy, static_cast<int64_t>(g));
    auto it = std::find(full.begin(), full.end(), stop);
    std::vector<int64_t> want(full.begin(), it == full.end() ? full.end() : it + 1);
    EXPECT_EQ(out[g].tokens, want) << "row " << g;
    EXPECT_EQ(out[g].finish, it == full.end() ? FinishReason::length : FinishReason::stop);
  }
  EXPECT_EQ(out[0].tokens.size(), 3u);
  EXPECT_STREQ(finish_reason_name(out[0].finish), "stop");
}

INSTANTIATE_TEST_SUITE_P(HuggingFace, Generate, ::testing::Values("llama", "qwen2"));

}  // namespace
}  // namespace cudal1::trainer
