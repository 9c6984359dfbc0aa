// The replay policy on kernel sets written here: CUDA-L1 rows and folders of ModelNew files.
#include "policy/replay_policy.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "policy/response.h"

namespace cudal1::policy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kRef = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n";
const std::string kKernelA = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clone()\n";
const std::string kKernelB = "import torch\n# B\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x + 0\n";
const std::string kVariant = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 1\n";

// A fresh folder per test, removed at the end.
class Scratch {
 public:
  Scratch() {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("cudal1_replay_" + std::to_string(::getpid()) + "_" + t->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  fs::path write(const std::string& rel, const std::string& text) const {
    fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

std::string row(int level, int task, const std::string& ref, const json& custom, const json& graph = nullptr) {
  return json{{"level_id", level}, {"task_id", task}, {"ref_code", ref}, {"custom_code", custom},
              {"cuda_graph_code", graph}, {"cudnn_code", nullptr}, {"score_default", 1.5}}.dump() + "\n";
}

PolicyRequest request(const std::string& task_id, int count, const std::string& reference = "") {
  PolicyRequest r;
  r.task_id = task_id;
  r.reference = reference;
  r.count = count;
  return r;
}

std::string parsed_code(const PolicyAnswer& a) {
  ParsedResponse p = parse_response(a.text, a.finish_reason);
  EXPECT_EQ(p.outcome, ResponseOutcome::ok) << response_outcome_name(p.outcome) << "\n" << a.text;
  return p.code;
}

TEST(ReplayPolicy, JsonLinesRowMatchedByTaskIdGivesEachKernelField) {
  Scratch s;
  fs::path f = s.write("set.jsonl", row(1, 7, kRef, kKernelA, kVariant) + row(1, 8, kRef + "# other\n", kKernelB));
  ReplayPolicy p(f);
  EXPECT_EQ(p.name(), "replay:set.jsonl");
  auto answers = p.answer(request("level1/task7", 5));
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].label, "replay:set.jsonl:level1/task7:custom_code");
  EXPECT_EQ(answers[1].label, "replay:set.jsonl:level1/task7:cuda_graph_code");
  EXPECT_EQ(parsed_code(answers[0]), kKernelA);
  for (const auto& a : answers) {
    EXPECT_EQ(a.finish_reason, "stop");
    EXPECT_EQ(a.prompt_tokens + a.completion_tokens, 0u);
    EXPECT_TRUE(a.error.empty()) << a.error;
    EXPECT_NE(parse_response(a.text).analysis.find("Replayed from set.jsonl"), std::string::npos);
  }
  // The variant defines Model: it comes back whole, run as a ModelNew that subclasses it.
  std::string variant = parsed_code(answers[1]);
  EXPECT_EQ(variant.rfind(kVariant, 0), 0u) << variant;
  EXPECT_NE(variant.find("\nclass ModelNew(Model):\n"), std::string::npos) << variant;
}

TEST(ReplayPolicy, JsonLinesRowMatchedByReferenceWhenTheTaskIdIsUnknown) {
  Scratch s;
  fs::path f = s.write("set.jsonl", row(1, 7, kRef + "# seven\n", kKernelA) + row(1, 8, kRef, kKernelB));
  ReplayPolicy p(f);
  // The suite's copy of task 8: other name, CRLF line endings and trailing blanks.
  std::string crlf = "import torch  \r\nclass Model(torch.nn.Module):\r\n    def forward(self, x):\t\r\n        return x\r\n\r\n";
  auto answers = p.answer(request("level1/08_identity", 3, crlf));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].label, "replay:set.jsonl:level1/task8:custom_code");
  EXPECT_EQ(parsed_code(answers[0]), kKernelB);
  EXPECT_TRUE(p.answer(request("level1/99_unknown", 3, "class Model: pass\n")).empty()) << "no kernel: no answer";
}

TEST(ReplayPolicy, FolderWithOneFileForTheTask) {
  Scratch s;
  s.write("kernels/level1/19_ReLU.py", kKernelA);
  s.write("kernels/level1/20_Other.py", kKernelB);
  ReplayPolicy p(s.dir() / "kernels/");
  EXPECT_EQ(p.name(), "replay:kernels");
  auto answers = p.answer(request("level1/19_ReLU", 4));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].label, "replay:kernels:level1/19_ReLU.py");
  EXPECT_EQ(parsed_code(answers[0]), kKernelA);
  EXPECT_TRUE(p.answer(request("../kernels/level1/20_Other", 1)).empty()) << "a task id never leaves the folder";
  EXPECT_TRUE(p.answer(request("level1/21_Missing", 1)).empty());
}

TEST(ReplayPolicy, FolderWithSeveralFilesPerTaskInNameOrder) {
  Scratch s;
  s.write("k/level2/5_Fuse/b_second.py", kKernelB);
  s.write("k/level2/5_Fuse/a_first.py", kKernelA);
  s.write("k/level2/5_Fuse/notes.txt", "not a kernel");
  s.write("k/level2/5_Fuse.py", kKernelB + "# single\n");
  ReplayPolicy p(s.dir() / "k");
  auto answers = p.answer(request("level2/5_Fuse", 10));
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0].label, "replay:k:level2/5_Fuse.py");
  EXPECT_EQ(answers[1].label, "replay:k:level2/5_Fuse/a_first.py");
  EXPECT_EQ(answers[2].label, "replay:k:level2/5_Fuse/b_second.py");
  EXPECT_EQ(parsed_code(answers[1]), kKernelA);
  EXPECT_EQ(parsed_code(answers[2]), kKernelB);
}

TEST(ReplayPolicy, SuccessiveCallsDoNotRepeatAndRunDry) {
  Scratch s;
  fs::path f = s.write("set.jsonl", row(3, 1, kRef, kKernelA, kVariant));
  ReplayPolicy p(f);
  auto first = p.answer(request("level3/task1", 1));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].label, "replay:set.jsonl:level3/task1:custom_code");
  // Matched the other way (by reference), the row's kernels are still the ones already given.
  auto second = p.answer(request("level3/01_model", 4, kRef));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].label, "replay:set.jsonl:level3/task1:cuda_graph_code");
  EXPECT_TRUE(p.answer(request("level3/task1", 4)).empty());
  // Another policy object replays the set again, the same way.
  ReplayPolicy again(f);
  auto all = again.answer(request("level3/task1", 4));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].text, first[0].text);
  EXPECT_EQ(all[1].text, second[0].text);
}

TEST(ReplayPolicy, EveryAnswerParsesBackToTheExactCode) {
  Scratch s;
  std::vector<std::string> codes = {
      kKernelA,
      "class ModelNew:\n    ## a comment that looks like a heading\n    pass\n",
      "FENCE = '```python'  # a fence in the middle of a line\nclass ModelNew:\n    pass\n",
      "class ModelNew:\r\n    pass\r\n",
  };
  for (std::size_t i = 0; i < codes.size(); ++i) s.write("k/t/" + std::to_string(i) + ".py", codes[i]);
  s.write("k/t/9_no_final_newline.py", "class ModelNew:\n    pass");
  ReplayPolicy p(s.dir() / "k");
  auto answers = p.answer(request("t", 10));
  ASSERT_EQ(answers.size(), codes.size() + 1);
  for (std::size_t i = 0; i < codes.size(); ++i) EXPECT_EQ(parsed_code(answers[i]), codes[i]) << i;
  EXPECT_EQ(parsed_code(answers.back()), "class ModelNew:\n    pass\n") << "a block's lines end in a newline";
}

TEST(ReplayPolicy, CodeWithALineStartingWithAFenceComesBackWhole) {
  Scratch s;
  const std::string code = "class ModelNew:\n    \"\"\"Example:\n    ````\n    x\n    ````\n    \"\"\"\n";
  s.write("k/t.py", code);
  ReplayPolicy p(s.dir() / "k");
  auto answers = p.answer(request("t", 1));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_TRUE(answers[0].error.empty()) << answers[0].error;
  EXPECT_NE(answers[0].text.find("`````python\n"), std::string::npos) << "a fence longer than any in the code";
  ParsedResponse r = parse_response(answers[0].text, answers[0].finish_reason);
  ASSERT_EQ(r.outcome, ResponseOutcome::ok) << response_outcome_name(r.outcome);
  EXPECT_EQ(r.code, code);
}

TEST(ReplayPolicy, MissingOrUnreadableSourceIsAnInputError) {
  Scratch s;
  for (fs::path missing : {s.dir() / "none.jsonl", s.dir() / "no_folder/"}) {
    try {
      ReplayPolicy p(missing);
      ADD_FAILURE() << "no error for " << missing;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input) << e.describe();
      EXPECT_FALSE(e.hint().empty());
    }
  }
}

TEST(ReplayPolicy, BrokenRowsAreSkippedAndCounted) {
  Scratch s;
  fs::path f = s.write("set.jsonl", "not json\n" + row(1, 2, kRef, kKernelA) + "\n" +
                                        json{{"level_id", 1}, {"task_id", 3}}.dump() + "\n" +
                                        row(1, 4, kRef + "#4\n", "None") + "{\"level_id\": 1, \"task_id\"\n");
  ReplayPolicy p(f);
  EXPECT_EQ(p.skipped_rows(), 3u);
  EXPECT_EQ(p.answer(request("level1/task2", 2)).size(), 1u);
  EXPECT_TRUE(p.answer(request("level1/task4", 2)).empty()) << "\"None\" is CUDA-L1's word for no kernel";
}

}  // namespace
}  // namespace cudal1::policy
