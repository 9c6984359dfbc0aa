// The shared training step on the tiny Llama fixture with a LoRA adapter: batch packing and its
// masks, SFT that learns a small set, accumulation equal to one large batch, a checkpoint that
// resumes bit for bit, and the gradient-sync hook data-parallel training uses.
#include "trainer/train.h"

#include "trainer/lora.h"
#include "trainer/objectives.h"
#include "trainer/stage_io.h"
#include "trainer/test_support.h"

#include <gtest/gtest.h>

using namespace cudal1::trainer;
using cudal1::trainer::test::fixture;
using cudal1::trainer::test::max_abs_diff;

namespace {

using Rows = std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>;

Rows tiny_set() {
  return {{{1, 2, 3}, {40, 41, 42, 43}}, {{4, 5}, {50, 51, 52}}, {{6, 7, 8, 9}, {60, 61}}, {{10}, {70, 71, 72, 73, 74}}};
}

struct Adapted {
  std::shared_ptr<CausalLM> model = load_causal_lm(fixture("llama"));
  explicit Adapted(uint64_t seed = 3) {
    LoraConfig c;
    c.r = 8;
    c.alpha = 16;
    c.dropout = 0.0;
    apply_lora(*model, c, seed);
    model->train();
  }
};

double sft_step(Adapted& m, Optimizer& opt, const Rows& rows, StepStats* stats = nullptr) {
  TokenBatch b = make_batch(rows, 0);
  torch::Tensor loss = sft_loss(completion_logprobs(*m.model, b), b.completion_mask);
  StepStats s = opt.backward_and_step(loss);
  if (stats) *stats = s;
  return loss.item<double>();
}

}  // namespace

TEST(Train, BatchesAreRightPaddedWithTheCompletionTokensMasked) {
  TokenBatch b = make_batch({{{1, 2}, {3, 4}}, {{5}, {6}}}, 0);
  EXPECT_TRUE(b.ids.equal(torch::tensor({1, 2, 3, 4, 5, 6, 0, 0}, torch::kInt64).view({2, 4})));
  EXPECT_TRUE(b.attention_mask.equal(torch::tensor({1, 1, 1, 1, 1, 1, 0, 0}, torch::kInt64).view({2, 4})));
  EXPECT_TRUE(b.completion_mask.equal(torch::tensor({0.f, 1.f, 1.f, 1.f, 0.f, 0.f}).view({2, 3})));
}

TEST(Train, SftLearnsASmallSetThroughTheAdapter) {
  Adapted m;
  OptimConfig c;
  c.lr = 2e-2;
  c.total_steps = 40;
  c.warmup_steps = 2;
  Optimizer opt(lora_parameters(*m.model), c);
  double first = sft_step(m, opt, tiny_set()), last = first;
  for (int i = 1; i < 40; ++i) last = sft_step(m, opt, tiny_set());
  EXPECT_EQ(opt.step(), 40);
  EXPECT_LT(last, 0.5 * first) << "loss " << first << " -> " << last;
}

TEST(Train, AccumulatingTwoHalvesUpdatesAsOneBatchDoes) {
  OptimConfig c;
  c.lr = 1e-2;
  c.max_grad_norm = 0;
  Adapted whole, halves;
  Optimizer one(lora_parameters(*whole.model), c);
  StepStats s1, s2;
  sft_step(whole, one, tiny_set(), &s1);
  c.accumulation = 2;
  Optimizer two(lora_parameters(*halves.model), c);
  Rows all = tiny_set(), a(all.begin(), all.begin() + 2), b(all.begin() + 2, all.end());
  sft_step(halves, two, a);
  EXPECT_EQ(two.step(), 0) << "no update after the first half";
  sft_step(halves, two, b, &s2);
  EXPECT_EQ(two.step(), 1);
  // The same gradient: each half's loss counts half (Adam alone would hide a factor of two).
  EXPECT_TRUE(s2.stepped);
  EXPECT_NEAR(s2.grad_norm, s1.grad_norm, 1e-6 * s1.grad_norm);
  auto p = lora_parameters(*whole.model), q = lora_parameters(*halves.model);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_LT(max_abs_diff(p[i].second, q[i].second), 1e-6) << p[i].first;
}

TEST(Train, ACheckpointResumesBitForBit) {
  OptimConfig c;
  c.lr = 1e-2;
  c.total_steps = 6;
  c.warmup_steps = 1;
  Adapted straight;
  Optimizer s(lora_parameters(*straight.model), c);
  for (int i = 0; i < 6; ++i) sft_step(straight, s, tiny_set());

  test::ScratchFolder dir;
  {
    Adapted first;
    Optimizer f(lora_parameters(*first.model), c);
    for (int i = 0; i < 3; ++i) sft_step(first, f, tiny_set());
    f.save_checkpoint(dir / "ckpt");
  }
  Adapted resumed(/*seed=*/99);  // other initial factors: the checkpoint must overwrite them
  Optimizer r(lora_parameters(*resumed.model), c);
  r.load_checkpoint(dir / "ckpt");
  EXPECT_EQ(r.step(), 3);
  for (int i = 0; i < 3; ++i) sft_step(resumed, r, tiny_set());
  auto p = lora_parameters(*straight.model), q = lora_parameters(*resumed.model);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(max_abs_diff(p[i].second, q[i].second), 0.0) << p[i].first;

  Adapted other;
  c.accumulation = 2;
  Optimizer mid(lora_parameters(*other.model), c);
  sft_step(other, mid, tiny_set());
  test::expect_error([&] { mid.save_checkpoint(dir / "mid"); });
}

// A stage killed between the checkpoint swap's two renames (the old one moved aside, the new one
// not yet in place) resumes from the new one when it is complete, else from the old one.
TEST(Train, AStageCheckpointCutOffMidSwapStillLoads) {
  OptimConfig c;
  c.lr = 1e-2;
  c.total_steps = 6;
  c.warmup_steps = 1;
  Adapted m;
  Optimizer opt(lora_parameters(*m.model), c);
  test::ScratchFolder dir;
  sft_step(m, opt, tiny_set());
  save_stage_checkpoint(opt, {{"objective", "crl"}, {"round", 1}}, dir.path());
  sft_step(m, opt, tiny_set());
  save_stage_checkpoint(opt, {{"objective", "crl"}, {"round", 2}}, dir.path());
  EXPECT_FALSE(std::filesystem::exists(dir / "checkpoint.old"));
  EXPECT_FALSE(std::filesystem::exists(dir / "checkpoint.new"));

  auto loads = [&](const std::string& objective = "crl") {
    Adapted again(/*seed=*/99);
    Optimizer o(lora_parameters(*again.model), c);
    auto state = load_stage_checkpoint(o, dir.path(), objective);
    return state ? state->value("round", 0) : 0;
  };
  EXPECT_EQ(loads(), 2);
  auto e = test::expect_error([&] { loads("sft"); });  // another stage's checkpoint is not taken up
  EXPECT_EQ(e.kind(), cudal1::ErrorKind::usage);
  std::filesystem::rename(dir / "checkpoint", dir / "checkpoint.new");  // cut off: the new one not yet in
  EXPECT_EQ(loads(), 2);
  std::filesystem::rename(dir / "checkpoint", dir / "checkpoint.old");  // and the new one half written
  std::filesystem::create_directories(dir / "checkpoint.new");
  EXPECT_EQ(loads(), 2);
  EXPECT_TRUE(std::filesystem::exists(dir / "checkpoint" / "stage_state.json"));
}

// Data-parallel training averages the gradients over its ranks in this hook: once per update,
// after the last micro-batch and before clipping, so that the norm clipped is the synced one.
TEST(Train, TheGradientSyncRunsOncePerStepBeforeClipping) {
  OptimConfig c;
  c.lr = 1e-2;
  c.accumulation = 2;
  Adapted plain, synced;
  Optimizer p(lora_parameters(*plain.model), c), s(lora_parameters(*synced.model), c);
  int calls = 0;
  s.set_gradient_sync([&](std::vector<torch::Tensor>& grads) {
    ++calls;
    EXPECT_EQ(grads.size(), lora_parameters(*synced.model).size());
    for (auto& g : grads) g.mul_(10.0);
  });
  Rows all = tiny_set(), a(all.begin(), all.begin() + 2), b(all.begin() + 2, all.end());
  StepStats ps, ss;
  sft_step(plain, p, a), sft_step(synced, s, a);
  EXPECT_EQ(calls, 0) << "not per micro-batch";
  sft_step(plain, p, b, &ps), sft_step(synced, s, b, &ss);
  EXPECT_EQ(calls, 1);
  EXPECT_NEAR(ss.grad_norm, 10 * ps.grad_norm, 1e-5 * ss.grad_norm);
}
