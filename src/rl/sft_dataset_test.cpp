// The SFT set from the store: accepted answers only, each file once at its best speedup, at most
// N per task and source, fastest first, every run or one, and the JSON-lines it writes.
#include "rl/sft_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "core/paths.h"

using namespace cudal1;
namespace fs = std::filesystem;

namespace {

RlSample answer(const std::string& run, const std::string& task, const std::string& policy, const std::string& hash,
                std::optional<double> speedup, int slot) {
  RlSample x;
  x.run = run;
  x.task_id = task;
  x.task_hash = "h-" + task;
  x.round = 1;
  x.slot = slot;
  x.policy = policy;
  x.prompt = "optimise " + task;
  x.completion = "## Code Implementation\n" + hash;
  x.candidate_hash = hash;
  x.status = speedup ? "ok" : "incorrect";
  x.accepted = speedup.has_value();
  x.speedup = speedup;
  return x;
}

}  // namespace

TEST(SftDataset, AtMostNPerTaskAndSourceFastestDistinctFilesFirst) {
  fs::path dir = make_private_dir("cudal1-sft-test");
  {
    Store store(dir / "store.db");
    store.save_round({answer("r1", "a", "rewrite", "f1", 1.1, 0), answer("r1", "a", "rewrite", "f2", 1.5, 1),
                      answer("r1", "a", "rewrite", "f3", 1.3, 2), answer("r1", "a", "rewrite", "f4", std::nullopt, 3)});
    // The same file again, slower this time: counted once, at its best.
    store.save_round({answer("r2", "a", "rewrite", "f2", 1.2, 0), answer("r2", "a", "openai:m", "g1", 0.9, 1),
                      answer("r2", "b", "rewrite", "k1", 2.0, 0)});
    auto all = rl::select_sft_examples(store, {});
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[0].candidate_hash, "g1");  // task a, sources in name order: "openai:m" < "rewrite"
    EXPECT_EQ(all[1].candidate_hash, "f2");
    EXPECT_DOUBLE_EQ(all[1].speedup, 1.5);
    EXPECT_EQ(all[2].candidate_hash, "f3");
    EXPECT_EQ(all[3].task_id, "b");

    auto one_run = rl::select_sft_examples(store, {"r1", 1});
    ASSERT_EQ(one_run.size(), 1u);
    EXPECT_EQ(one_run[0].candidate_hash, "f2");

    EXPECT_EQ(rl::write_sft_jsonl(all, dir / "sft.jsonl"), 4u);
    std::ifstream in(dir / "sft.jsonl");
    std::string line;
    std::getline(in, line);
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["source"], "openai:m");
    EXPECT_EQ(j["prompt"], "optimise a");
    EXPECT_TRUE(j.contains("completion") && j.contains("speedup") && j.contains("task_hash"));
  }
  fs::remove_all(dir);
}

namespace {

RlSample answer_with_code(const std::string& task, const std::string& hash, double speedup, int slot) {
  RlSample x = answer("r1", task, "rewrite", hash, speedup, slot);
  x.completion = "## Code Implementation\n```python\nclass ModelNew:  # file " + hash + "\n    pass\n```\n";
  return x;
}

rl::ContrastiveCopies copies_for_test(int copies) {
  rl::ContrastiveCopies c;
  c.copies = copies;
  c.device = "cuda";
  c.seed = 7;
  c.templates = policy::PromptTemplates::load(policy::bundled_prompts_dir());
  c.reference = [](const rl::SftExample& e) { return "class Model:  # reference of " + e.task_id + "\n"; };
  return c;
}

}  // namespace

// A copy answers a stage-3 prompt that shows only files slower than the answer, with their
// speedups, beside the task's reference; the slowest answer has nothing to improve on. The task's
// fastest file is also shown as itself, since stage 3's sampler shows it most.
TEST(SftDataset, ContrastiveCopiesShowSlowerFilesAndTheFastestAsItsOwnAnswer) {
  fs::path dir = make_private_dir("cudal1-sft-test");
  {
    Store store(dir / "store.db");
    store.save_round({answer_with_code("a", "f1", 1.0, 0), answer_with_code("a", "f2", 1.5, 1),
                      answer_with_code("a", "f3", 2.0, 2), answer_with_code("b", "k1", 3.0, 0)});
    auto answers = rl::select_sft_examples(store, {"", 3});
    ASSERT_EQ(answers.size(), 4u);
    auto copies = rl::contrastive_copies(store, {"", 3}, answers, copies_for_test(4));
    ASSERT_FALSE(copies.empty());
    std::set<std::string> answered;
    int fastest_shown_as_itself = 0;
    for (auto& c : copies) {
      answered.insert(c.candidate_hash);
      ASSERT_FALSE(c.shown.empty());
      EXPECT_NE(c.prompt.find("reference of " + c.task_id), std::string::npos);
      EXPECT_NE(c.prompt.find("cuda"), std::string::npos);
      const bool fastest = c.candidate_hash == "f3" || c.candidate_hash == "k1";
      for (auto& s : c.shown) {
        const std::string shown = s["candidate_hash"];
        if (shown == c.candidate_hash) {
          EXPECT_TRUE(fastest) << shown << " shown as its own answer";
          ++fastest_shown_as_itself;
        } else {
          EXPECT_LT(s["speedup"].get<double>(), c.speedup);
        }
        EXPECT_NE(c.prompt.find("# file " + shown), std::string::npos);
      }
      if (!fastest) {
        EXPECT_EQ(c.prompt.find("# file " + c.candidate_hash), std::string::npos);
      }
    }
    EXPECT_EQ(answered, (std::set<std::string>{"f2", "f3", "k1"}));
    EXPECT_GT(fastest_shown_as_itself, 1);  // k1's only prompt, and f3's that drew it
    // f2 has one slower file: one distinct prompt however many copies are asked for.
    EXPECT_EQ(std::count_if(copies.begin(), copies.end(), [](auto& c) { return c.candidate_hash == "f2"; }), 1);

    // Seeded: the same copies again; none asked, none made.
    auto again = rl::contrastive_copies(store, {"", 3}, answers, copies_for_test(4));
    ASSERT_EQ(again.size(), copies.size());
    for (std::size_t i = 0; i < again.size(); ++i) EXPECT_EQ(again[i].prompt, copies[i].prompt);
    EXPECT_TRUE(rl::contrastive_copies(store, {"", 3}, answers, copies_for_test(0)).empty());

    // A budget the answer leaves no room in: a copy without its files would be a first-round prompt.
    rl::ContrastiveCopies tight = copies_for_test(4);
    tight.budget.max_tokens = 2000;
    tight.answer_tokens = [](const std::string&) { return std::size_t(1990); };
    EXPECT_TRUE(rl::contrastive_copies(store, {"", 3}, answers, tight).empty());

    rl::write_sft_jsonl(copies, dir / "copies.jsonl");
    std::ifstream in(dir / "copies.jsonl");
    std::string line;
    std::getline(in, line);
    EXPECT_FALSE(nlohmann::json::parse(line)["shown"].empty());
  }
  fs::remove_all(dir);
}

// optimize --turns stores a slot's revisions as samples of the same slot, one per turn: the SFT
// set reads them like any answers, the accepted revision included with the slot's first prompt.
TEST(SftDataset, AMultiTurnRunsRevisionsAreRead) {
  fs::path dir = make_private_dir("cudal1-sft-test");
  {
    Store store(dir / "store.db");
    RlSample failed = answer("r", "a", "openai:m", "broken", std::nullopt, 0);
    failed.status = "compile_error";
    failed.feedback = "Status: compile_error (not accepted)";
    RlSample revised = answer("r", "a", "openai:m", "fixed", 1.4, 0);
    revised.turn = 1;
    store.save_round({failed, revised});
    auto all = rl::select_sft_examples(store, {"r"});
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].candidate_hash, "fixed");
    EXPECT_EQ(all[0].prompt, "optimise a");
    EXPECT_DOUBLE_EQ(all[0].speedup, 1.4);
  }
  fs::remove_all(dir);
}
