// The SFT set from the store: accepted answers only, each file once at its best speedup, at most
// N per task and source, fastest first, every run or one, and the JSON-lines it writes.
#include "rl/sft_dataset.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/paths.h"

using namespace cudal1;
namespace fs = std::filesystem;

namespace {

RlSample answer(const std::string& run, const std::string& task, const std::string& policy, const std::string& hash,
                std::optional<double> speedup, int slot) {
  RlSample x;
  x.run = run, x.task_id = task, x.task_hash = "h-" + task, x.round = 1, x.slot = slot, x.policy = policy;
  x.prompt = "optimise " + task, x.completion = "## Code Implementation\n" + hash;
  x.candidate_hash = hash, x.status = speedup ? "ok" : "incorrect", x.accepted = speedup.has_value(), x.speedup = speedup;
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
