// The model as the loop's policy: a group of G answers sampled through the chat template, the
// sampled tokens kept for training, repeatable by seed, and a prompt the model cannot take
// answered with errors (scored as failures) instead of stopping the run.
#include "trainer/model_policy.h"

#include "trainer/test_support.h"

#include <gtest/gtest.h>

using namespace cudal1;
using namespace cudal1::trainer;

namespace {

struct PolicySetup {
  test::ScratchFolder dir;
  tokenizer::Tokenizer tok;
  std::shared_ptr<CausalLM> model;
  PolicySetup() : tok((test::write_tiny_llama(dir / "m"), tokenizer::Tokenizer::from_directory(dir / "m"))) {
    model = load_causal_lm(dir / "m");
  }
  ModelPolicy policy(int64_t max_prompt_tokens = 4096) {
    ModelPolicyOptions o;
    o.sampling.max_new_tokens = 12;
    o.max_prompt_tokens = max_prompt_tokens;
    o.max_batch = 2;
    o.label = "tiny";
    o.keep_tokens = true;
    return ModelPolicy(model, ChatEncoder(tok, std::nullopt), o);
  }
};

policy::PolicyRequest request(int count, uint64_t seed) {
  policy::PolicyRequest r;
  r.task_id = "scale_add";
  r.prompt = "Make scale_add faster.";
  r.count = count;
  r.round = 3;
  r.seed = seed;
  return r;
}

}  // namespace

TEST(ModelPolicy, AnswersAGroupAndKeepsTheSampledTokensForTraining) {
  PolicySetup t;
  ModelPolicy p = t.policy();
  auto answers = p.answer(request(3, 11));  // 3 answers in batches of 2
  ASSERT_EQ(answers.size(), 3u);
  ChatEncoder enc(t.tok, std::nullopt);
  auto kept = p.take_sampled("scale_add", 3);
  ASSERT_EQ(kept.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(answers[i].error.empty());
    EXPECT_EQ(answers[i].label, "tiny");
    EXPECT_EQ(answers[i].completion_tokens, kept[i].completion.size());
    EXPECT_EQ(kept[i].prompt, enc.prompt("Make scale_add faster."));
    EXPECT_EQ(kept[i].logprobs.size(), kept[i].completion.size());
    EXPECT_EQ(answers[i].text, enc.decode_answer(kept[i].completion));
    EXPECT_TRUE(answers[i].finish_reason == "stop" || answers[i].finish_reason == "length");
  }
  EXPECT_TRUE(p.take_sampled("scale_add", 3).empty());  // moved out
  // Each batch has its own seed: the group's answers are not copies of one another.
  EXPECT_NE(kept[0].completion, kept[2].completion);
}

TEST(ModelPolicy, TheSameRequestGivesTheSameAnswers) {
  PolicySetup t;
  ModelPolicy p = t.policy();
  auto a = p.answer(request(2, 5)), b = p.answer(request(2, 5)), c = p.answer(request(2, 6));
  EXPECT_EQ(a[0].text, b[0].text);
  EXPECT_EQ(a[1].text, b[1].text);
  EXPECT_NE(a[0].text + a[1].text, c[0].text + c[1].text);
}

// A revision is sampled after the conversation it continues, the feedback last, as the chat
// endpoint policy sends it; without it, a model could not revise what it cannot see.
TEST(ModelPolicy, ALaterTurnIsSampledAfterTheWholeConversation) {
  PolicySetup t;
  ModelPolicy p = t.policy();
  policy::PolicyRequest r = request(1, 7);
  r.history.push_back({"class ModelNew: first try", "tiny", "Your answer was incorrect: 12 elements differ.", false, {}});
  auto answers = p.answer(r);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].error.empty()) << answers[0].error;
  auto kept = p.take_sampled("scale_add", 3);
  ASSERT_EQ(kept.size(), 1u);
  ChatEncoder enc(t.tok, std::nullopt);
  EXPECT_EQ(kept[0].prompt, enc.conversation({{"user", "Make scale_add faster."},
                                              {"assistant", "class ModelNew: first try"},
                                              {"user", "Your answer was incorrect: 12 elements differ."}}));
  std::vector<int32_t> ids(kept[0].prompt.begin(), kept[0].prompt.end());
  std::string seen = t.tok.decode(ids, /*skip_special=*/true);
  EXPECT_LT(seen.find("Make scale_add faster."), seen.find("first try"));
  EXPECT_LT(seen.find("first try"), seen.find("12 elements differ"));
  EXPECT_EQ(answers[0].prompt_tokens, kept[0].prompt.size());
  EXPECT_GT(kept[0].prompt.size(), enc.prompt("Make scale_add faster.").size());
}

TEST(ModelPolicy, APromptLongerThanTheModelTakesIsAnsweredWithErrors) {
  PolicySetup t;
  ModelPolicy p = t.policy(/*max_prompt_tokens=*/4);
  auto answers = p.answer(request(2, 1));
  ASSERT_EQ(answers.size(), 2u);
  for (auto& a : answers) EXPECT_NE(a.error.find("more than the 4"), std::string::npos) << a.error;
  EXPECT_TRUE(p.take_sampled("scale_add", 3).empty());
}

TEST(ModelPolicy, ItsPromptBudgetCountsTheWholeChatTemplatedPrompt) {
  PolicySetup t;
  ModelPolicy p = t.policy(/*max_prompt_tokens=*/300);
  auto budget = p.prompt_budget();
  ASSERT_TRUE(budget && budget->count_tokens);
  EXPECT_EQ(budget->max_tokens, 300u);
  ChatEncoder enc(t.tok, std::nullopt);
  const std::string text = "Make scale_add faster.\n```python\nclass ModelNew: pass\n```";
  EXPECT_EQ(budget->count_tokens(text), enc.prompt(text).size());
}

TEST(ChatEncoder, StopsAtTheEndOfTheAssistantsTurnAndTrainsOnIt) {
  PolicySetup t;
  ChatEncoder enc(t.tok, std::nullopt);
  auto stops = enc.stop_token_ids();
  ASSERT_FALSE(stops.empty());
  EXPECT_EQ(stops[0], *t.tok.token_to_id("<|eot_id|>"));  // the fixture is Llama-3's layout
  auto [prompt, answer] = enc.prompt_and_answer("hi", "return x");
  EXPECT_EQ(prompt, enc.prompt("hi"));
  EXPECT_EQ(answer.back(), stops[0]);  // trained to close its turn, where sampling stops
  EXPECT_EQ(enc.decode_answer(answer), "return x");
}
