// Stage 1 end to end on the CPU: a store with accepted answers, a tiny random Llama with the
// Llama-3 tokenizer fixture, SFT through LoRA that lowers the loss and writes PEFT's adapter, and
// a run stopped after a checkpoint that resumes to the same adapter as an uninterrupted run.
#include "trainer/sft.h"

#include "trainer/test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "tokenizer/tokenizer.h"
#include "trainer/chat_data.h"

using namespace cudal1;
using namespace cudal1::trainer;
namespace fs = std::filesystem;

namespace {

RlSample accepted(const std::string& task, const std::string& code, int slot) {
  RlSample x;
  x.run = "r";
  x.task_id = task;
  x.task_hash = "h-" + task;
  x.round = 1;
  x.slot = slot;
  x.policy = "rewrite";
  x.prompt = "Make " + task + " faster.";
  x.completion = "## Code Implementation\n```python\n" + code + "\n```\n";
  x.candidate_hash = "c-" + task + std::to_string(slot);
  x.status = "ok";
  x.accepted = true;
  x.speedup = 1.0 + slot;
  return x;
}

struct SftSetup {
  test::ScratchFolder dir;
  std::unique_ptr<Store> store;
  SftRunOptions o;
  explicit SftSetup(const std::string& tokenizer = "llama3") {
    test::write_tiny_llama(dir / "model", 7, 32, 1, tokenizer);
    store = std::make_unique<Store>(dir / "store.db");
    store->save_round({accepted("relu", "class ModelNew: return torch.relu(x)", 0), accepted("relu", "class ModelNew: return x.clamp_min(0)", 1),
                       accepted("gelu", "class ModelNew: return torch.nn.functional.gelu(x)", 0), accepted("add", "class ModelNew: return x + y", 0)});
    o.model_dir = dir / "model";
    o.out_dir = dir / "out";
    o.lora.r = 4;
    o.lora.alpha = 8;
    o.lora.dropout = 0.0;
    o.optim.lr = 5e-2;
    o.optim.warmup_steps = 1;
    o.epochs = 20;
    o.batch = 2;
    o.checkpoint_every = 2;
  }
};

}  // namespace

// Every weight trains here: a rank-4 adapter on frozen random 32-wide embeddings learns slowly
// (train_test.cpp shows an adapter learning on the Hugging Face fixture).
TEST(Sft, FullFineTuningLearnsTheStoresAnswersAndSavesTheModel) {
  SftSetup t;
  t.o.full = true;
  t.o.optim.lr = 1e-2;
  SftRunSummary s = run_sft(*t.store, t.o);
  EXPECT_EQ(s.examples, 4u);
  EXPECT_EQ(s.steps, 40);  // 20 epochs of 2 batches
  EXPECT_LT(s.last_loss, 0.5 * s.first_loss) << s.first_loss << " -> " << s.last_loss;
  EXPECT_EQ(s.output.filename(), "model");
  auto reloaded = load_causal_lm(s.output);  // Hugging Face's layout, loadable again
  EXPECT_EQ(reloaded->config().vocab_size, load_causal_lm(t.o.model_dir)->config().vocab_size);
  EXPECT_EQ(test::count_lines(t.o.out_dir / "sft.jsonl"), 4u);
  EXPECT_EQ(test::count_lines(t.o.out_dir / "train_log.jsonl"), 40u);
  EXPECT_FALSE(fs::exists(t.o.out_dir / "checkpoint")) << "a finished run leaves no checkpoint to resume";
}

// Contrastive copies join the set: relu's faster answer again, under a prompt showing the slower
// one with its speedup, and each task's fastest file under prompts that show it (gelu's and add's
// only file, relu's faster one beside the slower); every example still fits max_tokens.
TEST(Sft, ContrastiveCopiesAreTrainedOnBesideThePlainAnswers) {
  SftSetup t;
  t.o.epochs = 1;
  t.o.contrastive.copies = 2;
  t.o.contrastive.device = "cpu";
  t.o.contrastive.templates = policy::PromptTemplates::load(policy::bundled_prompts_dir());
  t.o.contrastive.reference = [](const rl::SftExample& e) { return "class Model:  # " + e.task_id + "\n"; };
  SftRunSummary s = run_sft(*t.store, t.o);
  EXPECT_EQ(s.too_long, 0u);
  std::ifstream in(t.o.out_dir / "sft.jsonl");
  std::string line;
  std::size_t plain = 0, copies = 0;
  std::set<std::string> copied;
  bool relu_over_its_slower = false;
  while (std::getline(in, line)) {
    auto e = nlohmann::json::parse(line);
    if (e["shown"].empty()) {
      ++plain;
      continue;
    }
    ++copies;
    copied.insert(e["candidate_hash"]);
    for (auto& shown : e["shown"]) {
      EXPECT_LE(shown["speedup"].get<double>(), e["speedup"].get<double>()) << line;
      if (e["candidate_hash"] == "c-relu1" && shown["candidate_hash"] == "c-relu0")
        relu_over_its_slower = e["prompt"].get<std::string>().find("return torch.relu(x)") != std::string::npos;
    }
  }
  EXPECT_EQ(plain, 4u);
  EXPECT_EQ(s.examples, plain + copies);
  EXPECT_EQ(s.contrastive, copies);
  EXPECT_EQ(copied, (std::set<std::string>{"c-relu1", "c-gelu0", "c-add0"}));  // c-relu0 has nothing slower
  EXPECT_TRUE(relu_over_its_slower);
}

// An answer longer than the later stages' sampling limit is left out and counted, the rest still
// train; when every answer is, the error names the limit that left them out.
TEST(Sft, AnswersLongerThanTheSamplersLimitAreLeftOut) {
  SftSetup t;
  std::string body;
  for (int i = 0; i < 60; ++i) body += "        x = x * 1.0001 + " + std::to_string(i) + "\n";
  const RlSample longest = accepted("long", "class ModelNew:\n    def forward(self, x):\n" + body + "        return x", 0);
  t.store->save_round({longest});
  t.o.epochs = 1;
  t.o.max_answer_tokens = 120;  // the short answers are tens of tokens, the long one hundreds
  SftRunSummary s = run_sft(*t.store, t.o);
  EXPECT_EQ(s.answer_too_long, 1u);
  EXPECT_EQ(s.too_long, 0u);
  EXPECT_EQ(s.examples, 4u);

  // At the limit exactly, as the sampler counts (the answer and its stop token), it stays; ChatML
  // closes the turn with a newline after the stop token, which the sampler never writes.
  SftSetup chatml("qwen");
  ChatEncoder encoder(tokenizer::Tokenizer::from_directory(chatml.o.model_dir), std::nullopt);
  std::vector<int64_t> answer = encoder.prompt_and_answer("", longest.completion).second;
  const std::vector<int64_t> stops = encoder.stop_token_ids();
  auto stop = std::find_first_of(answer.begin(), answer.end(), stops.begin(), stops.end());
  ASSERT_NE(stop, answer.end());
  const int64_t sampled = int64_t(stop - answer.begin()) + 1;
  ASSERT_LT(sampled, int64_t(answer.size()));
  for (int64_t limit : {sampled, sampled - 1}) {
    SftSetup at("qwen");
    at.store->save_round({longest});
    at.o.epochs = 1;
    at.o.max_answer_tokens = limit;
    EXPECT_EQ(run_sft(*at.store, at.o).answer_too_long, limit == sampled ? 0u : 1u) << limit;
  }

  SftSetup none;
  none.o.max_answer_tokens = 2;
  Error e = test::expect_error([&] { run_sft(*none.store, none.o); });
  EXPECT_NE(std::string(e.what()).find("4 with an answer longer than --max-answer-tokens 2"), std::string::npos) << e.what();
}

// Through a LoRA adapter, saved in PEFT's layout.
TEST(Sft, AStoppedRunResumesToTheSameAdapter) {
  SftSetup whole;
  whole.o.epochs = 3;
  run_sft(*whole.store, whole.o);

  SftSetup cut;
  cut.o.epochs = 3;
  struct Stop {};
  try {
    run_sft(*cut.store, cut.o, [](int64_t step, int64_t, double) {
      if (step == 5) throw Stop{};  // after step 4's checkpoint, before step 6's
    });
    FAIL() << "the run was not stopped";
  } catch (const Stop&) {
  }
  SftRunSummary s = run_sft(*cut.store, cut.o);
  EXPECT_TRUE(fs::exists(s.output / "adapter_config.json"));
  EXPECT_EQ(s.resumed_at, 4);
  EXPECT_EQ(s.steps, 6);
  EXPECT_EQ(test::count_lines(cut.o.out_dir / "train_log.jsonl"), 6u) << "step 5's line must not stay twice";
  auto a = SafetensorsFile::open(whole.o.out_dir / "adapter" / "adapter_model.safetensors").all(true);
  auto b = SafetensorsFile::open(s.output / "adapter_model.safetensors").all(true);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [name, t] : a) EXPECT_TRUE(t.equal(b.at(name))) << name;
}

TEST(Sft, AStoreWithoutAcceptedAnswersSaysWhatToRunFirst) {
  test::ScratchFolder dir;
  Store empty(dir / "store.db");
  SftRunOptions o;
  o.model_dir = dir / "none";
  o.out_dir = dir / "out";
  Error e = test::expect_error([&] { run_sft(empty, o); });
  EXPECT_NE(e.hint().find("cudal1 optimize"), std::string::npos);
}
