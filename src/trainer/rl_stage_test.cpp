// Stages 2 and 3 on the CPU. The step: GRPO raises the answer with the better advantage and
// lowers the worse, self-supervised learns only from accepted answers, and micro-batches add up
// to the whole round's update. The stage end to end: a tiny model taught one correct file
// answers through the loop, the evaluator judges it in its own process, the round is learned
// from, logged and checkpointed, and a stopped run resumes at its next round.
#include "trainer/rl_stage.h"

#include "trainer/stage_io.h"
#include "trainer/test_support.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/hash.h"
#include "core/paths.h"
#include "policy/prompt.h"
#include "tokenizer/tokenizer.h"
#include "trainer/objectives.h"

using namespace cudal1;
using namespace cudal1::trainer;
namespace fs = std::filesystem;

namespace {

fs::path fixtures_dir() { return CUDAL1_FIXTURES_DIR; }

LoraConfig small_lora() {
  LoraConfig c;
  c.r = 4;
  c.alpha = 8;
  c.dropout = 0.0;
  return c;
}

struct StepSetup {
  test::ScratchFolder dir;
  std::shared_ptr<CausalLM> model;
  StepSetup(bool lora = true) {
    test::write_tiny_llama(dir / "m");
    model = load_causal_lm(dir / "m");
    if (lora) apply_lora(*model, small_lora(), 3);
  }
  Optimizer optimizer(bool full = false, double lr = 5e-2) {
    OptimConfig oc;
    oc.lr = lr;
    oc.total_steps = 100;
    oc.min_lr_ratio = 1.0;
    oc.max_grad_norm = 0;
    return Optimizer(trainable_parameters(*model, full), oc);
  }
  // Sum of log p over the answer's tokens.
  double logprob(const RoundAnswer& a) {
    torch::NoGradGuard no_grad;
    TokenBatch b = make_batch({{a.prompt, a.completion}}, 0);
    return (completion_logprobs(*model, b) * b.completion_mask).sum().item<double>();
  }
};

RoundAnswer answer(std::vector<int64_t> completion, double advantage, bool accepted) {
  return {{5, 6, 7, 8}, std::move(completion), advantage, accepted};
}

}  // namespace

TEST(RlStep, GrpoRaisesTheBetterAnswerAndLowersTheWorse) {
  StepSetup t;
  Optimizer opt = t.optimizer();
  std::vector<RoundAnswer> round = {answer({10, 11, 12}, 1.0, true), answer({20, 21, 22}, -1.0, false)};
  const double good = t.logprob(round[0]), bad = t.logprob(round[1]);
  RlRoundStats st;
  learn_from_round(*t.model, nullptr, opt, round, {RlObjective::crl, 1, 4, {}, 0}, st);
  EXPECT_TRUE(st.updated);
  EXPECT_EQ(st.trained, 2u);
  EXPECT_NEAR(st.kl, 0.0, 1e-6);          // the adapter starts at zero: the policy is the reference
  EXPECT_NEAR(st.ratio_mean, 1.0, 1e-5);  // first epoch: the policy is the one that sampled
  EXPECT_GT(t.logprob(round[0]), good);
  EXPECT_LT(t.logprob(round[1]), bad);
  // Now the adapter has moved: a second round sees a KL to the adapters-off reference.
  learn_from_round(*t.model, nullptr, opt, round, {RlObjective::crl, 1, 4, {}, 0}, st);
  EXPECT_GT(st.kl, 0.0);
}

TEST(RlStep, SelfSupervisedLearnsOnlyFromAcceptedAnswers) {
  StepSetup t;
  Optimizer opt = t.optimizer();
  std::vector<RoundAnswer> none = {answer({10, 11}, 0, false), answer({20, 21}, 0, false)};
  auto before = trainable_parameters(*t.model, false)[0].second.clone();
  RlRoundStats st;
  learn_from_round(*t.model, nullptr, opt, none, {RlObjective::selfsup, 1, 4, {}, 0}, st);
  EXPECT_FALSE(st.updated);
  EXPECT_EQ(st.trained, 0u);
  EXPECT_EQ(opt.step(), 0);
  EXPECT_TRUE(torch::equal(before, trainable_parameters(*t.model, false)[0].second));

  // With an accepted answer: the very update of supervised learning on that answer alone.
  std::vector<RoundAnswer> one = {answer({10, 11}, 0, true), answer({20, 21}, 0, false)};
  StepSetup alone;
  Optimizer by_hand = alone.optimizer();
  TokenBatch b = make_batch({{one[0].prompt, one[0].completion}}, 0);
  by_hand.backward_and_step(sft_loss(completion_logprobs(*alone.model, b), b.completion_mask));
  const double kept = t.logprob(one[0]);
  learn_from_round(*t.model, nullptr, opt, one, {RlObjective::selfsup, 1, 4, {}, 0}, st);
  EXPECT_TRUE(st.updated);
  EXPECT_EQ(st.trained, 1u);
  EXPECT_EQ(opt.step(), 1);
  EXPECT_GT(t.logprob(one[0]), kept);
  auto pa = trainable_parameters(*t.model, false), pb = trainable_parameters(*alone.model, false);
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_LT(test::max_abs_diff(pa[i].second, pb[i].second), 1e-6) << pa[i].first;
}

TEST(RlStep, EachPpoEpochIsAnOptimiserStep) {
  StepSetup t;
  Optimizer opt = t.optimizer();
  RlRoundStats st;
  learn_from_round(*t.model, nullptr, opt, {answer({10, 11}, 1.0, true), answer({20}, -1.0, false)},
                   {RlObjective::crl, 3, 4, {}, 0}, st);
  EXPECT_EQ(opt.step(), 3);
  EXPECT_NE(st.ratio_mean, 1.0);  // the last epoch's policy has moved from the one that sampled
}

// A round split into micro-batches of 1 makes the same update, and reports the same statistics,
// as the round in one batch: each micro-batch's loss is its part of the round's, for either
// objective and every reduction (the per-token ones count the round's tokens, not the micro-batch's).
TEST(RlStep, MicroBatchesAddUpToTheWholeRoundsUpdate) {
  for (RlObjective objective : {RlObjective::crl, RlObjective::selfsup})
    for (LossAggregation agg : {LossAggregation::seq_mean_token_mean, LossAggregation::token_mean,
                                LossAggregation::seq_mean_token_sum_norm}) {
      const std::string what = std::string(rl_objective_name(objective)) + " " + loss_aggregation_name(agg);
      std::vector<RoundAnswer> round = {answer({10, 11, 12, 13}, 1.2, true), answer({20, 21}, -0.4, true),
                                        answer({30}, -0.8, false)};
      StepSetup whole, split;
      Optimizer a = whole.optimizer(true, 1e-3), b = split.optimizer(true, 1e-3);
      RlRoundStats sa, sb;
      // Two PPO epochs: in the second the policy has moved, so the ratio's statistics mean something.
      // No sampling limit (0) under the fixed-length reduction: the round's longest answer, not each batch's width.
      const double limit = agg == LossAggregation::seq_mean_token_sum_norm && objective == RlObjective::selfsup ? 0 : 6;
      learn_from_round(*whole.model, nullptr, a, round, {objective, 2, 4, {}, 0, agg, limit}, sa);
      learn_from_round(*split.model, nullptr, b, round, {objective, 2, 1, {}, 0, agg, limit}, sb);
      EXPECT_NEAR(sa.loss, sb.loss, 1e-5) << what;
      EXPECT_NEAR(sa.ratio_mean, sb.ratio_mean, 1e-6) << what;  // over the round's tokens, however split
      EXPECT_NEAR(sa.clip_fraction, sb.clip_fraction, 1e-6) << what;
      EXPECT_NEAR(sa.kl, sb.kl, 1e-6) << what;
      auto pa = trainable_parameters(*whole.model, true), pb = trainable_parameters(*split.model, true);
      for (std::size_t i = 0; i < pa.size(); ++i)
        EXPECT_LT(test::max_abs_diff(pa[i].second, pb[i].second), 1e-5) << pa[i].first << " " << what;
    }
}

TEST(RlStep, FullFineTuningKeepsItsKlToTheFrozenStart) {
  StepSetup t(/*lora=*/false);
  auto frozen = load_causal_lm(t.dir / "m");
  Optimizer opt = t.optimizer(true, 1e-2);
  std::vector<RoundAnswer> round = {answer({10, 11, 12}, 1.0, true), answer({20, 21, 22}, -1.0, false)};
  RlRoundStats st;
  learn_from_round(*t.model, frozen.get(), opt, round, {RlObjective::crl, 1, 4, {}, 0}, st);
  EXPECT_NEAR(st.kl, 0.0, 1e-6);
  learn_from_round(*t.model, frozen.get(), opt, round, {RlObjective::crl, 1, 4, {}, 0}, st);
  EXPECT_GT(st.kl, 0.0);
}

namespace {

// A model that answers the scale_add task's prompt with one correct file: taught by heart (full
// fine-tuning on that one answer), so that the stage's loop has something the evaluator accepts.
struct StageSetup {
  test::ScratchFolder dir;
  std::unique_ptr<Store> store;
  RlStageOptions o;
  StageSetup() {
    const fs::path task = fixtures_dir() / "tasks" / "scale_add.py";
    o.tasks = {{"scale_add", task}};
    o.loop.templates = policy::PromptTemplates::load(policy::bundled_prompts_dir());
    o.loop.templates.first_round = "Make {{task}} faster on {{device}}.";  // short: quick to teach
    o.loop.sampler.picks = 0;  // the prompt the model was taught with
    o.loop.group = 2;
    o.loop.eval.device = "cpu";
    o.loop.eval.lint = false;
    o.loop.eval.precision_check = false;
    o.loop.eval.buckets = 2;
    o.loop.eval.calls_per_bucket = 3;
    o.loop.eval.warmup = 1;
    o.loop.eval.max_remeasure = 0;
    o.loop.eval.fresh_remeasure_above = 0;
    o.loop.queue.devices = {"cpu"};
    o.model_dir = dir / "model";
    o.out_dir = dir / "out";
    o.lora = small_lora();
    o.optim.lr = 1e-3;
    o.optim.max_grad_norm = 1.0;
    o.sampling.sampling.temperature = 0;  // greedy: the taught file
    o.sampling.sampling.max_new_tokens = 400;
    std::string code = read_file(fixtures_dir() / "candidates" / "ok_scale_add_alpha.py");
    code = code.substr(code.find("import torch"));
    const std::string file = "## Performance Analysis\nfused\n\n## Algorithm Design\nadd with alpha\n\n"
                             "## Code Implementation\n```python\n" + code + "```\n";
    std::string prompt = policy::build_prompt(o.loop.templates, {"scale_add", "cpu", read_file(task), {}}, o.loop.budget).text;
    teach(prompt, file);
    store = std::make_unique<Store>(dir / "store.db");
  }
  void teach(const std::string& prompt, const std::string& file) {
    test::write_tiny_llama(o.model_dir, 7, 64, 2);
    auto tok = tokenizer::Tokenizer::from_directory(o.model_dir);
    ChatEncoder enc(tok, std::nullopt);
    auto model = load_causal_lm(o.model_dir);
    OptimConfig oc;
    oc.lr = 1e-2;
    oc.total_steps = 400;
    oc.min_lr_ratio = 1.0;
    Optimizer opt(trainable_parameters(*model, true), oc);
    model->train();
    auto pa = enc.prompt_and_answer(prompt, file);
    for (int i = 0; i < 400; ++i) {
      TokenBatch b = make_batch({pa}, enc.pad_token_id());
      torch::Tensor loss = sft_loss(completion_logprobs(*model, b), b.completion_mask);
      if (loss.item<double>() < 2e-3) break;
      opt.backward_and_step(loss);
    }
    model->save_pretrained(o.model_dir);
  }
};

}  // namespace

TEST(RlStage, SelfSupervisedRoundEvaluatesTheModelsAnswersLearnsAndLogs) {
  StageSetup t;
  t.o.objective = RlObjective::selfsup;
  t.o.rounds = 1;
  RlStageSummary s1 = run_rl_stage(*t.store, t.o);
  ASSERT_EQ(s1.trained.size(), 1u);
  const RlRoundStats& r1 = s1.trained[0];
  EXPECT_EQ(r1.samples, 2u);
  EXPECT_EQ(r1.correct, 2u) << "the taught file was not accepted; see " << (t.o.out_dir / "loop").string();
  EXPECT_TRUE(r1.updated);
  EXPECT_GT(r1.raw_reward_mean, 0.0);  // accepted and timed: the eager speedup
  EXPECT_TRUE(fs::exists(t.o.out_dir / "adapter" / "adapter_model.safetensors"));
  EXPECT_EQ(test::count_lines(t.o.out_dir / "train_log.jsonl"), 1u);
  // A finished OUT is not trained into again.
  auto e = test::expect_error([&] { run_rl_stage(*t.store, t.o); });
  EXPECT_EQ(e.kind(), ErrorKind::usage);
  // Nor is one removed and started over: the store's answers under its run's name are another
  // model's.
  fs::remove_all(t.o.out_dir);
  e = test::expect_error([&] { run_rl_stage(*t.store, t.o); });
  EXPECT_EQ(e.kind(), ErrorKind::usage);
  EXPECT_NE(e.describe().find("already holds answers"), std::string::npos) << e.describe();
}

TEST(RlStage, ContrastiveRunResumesAtItsNextRoundAndLogsGrpoTerms) {
  StageSetup t;
  t.o.objective = RlObjective::crl;
  t.o.rounds = 2;
  t.o.loss_aggregation = LossAggregation::token_mean;
  int calls = 0;
  // Stop after round 1 as a crash would: from the progress callback.
  struct Stop {};
  try {
    run_rl_stage(*t.store, t.o, [&](const RlRoundStats&) {
      if (++calls == 1) throw Stop{};
    });
    FAIL() << "the stop did not happen";
  } catch (const Stop&) {
  }
  EXPECT_TRUE(fs::exists(t.o.out_dir / "checkpoint" / "stage_state.json"));
  RlStageSummary s = run_rl_stage(*t.store, t.o);
  EXPECT_EQ(s.resumed_at, 1);
  ASSERT_EQ(s.trained.size(), 1u);
  EXPECT_EQ(s.trained[0].round, 2);
  EXPECT_EQ(test::count_lines(t.o.out_dir / "train_log.jsonl"), 2u);
  auto stored = t.store->run_samples(s.loop_run);
  ASSERT_EQ(stored.size(), 4u);  // 2 rounds of 2, none sampled twice
  std::ifstream log(t.o.out_dir / "train_log.jsonl");
  std::string line;
  std::getline(log, line);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["stage"], "crl");
  EXPECT_EQ(j["loss_agg"], "token-mean");
  for (const char* k : {"kl", "clip_fraction", "ratio_mean", "correct_rate", "reward_mean", "reward_std", "raw_reward_mean"})
    EXPECT_TRUE(j.contains(k)) << k;
}
