// The optimisation loop over a fault-injecting double of the evaluator (queue/fake_engine.h):
// an evaluation that cannot run, whether it fails preparing or running, is a scored failure
// whose reason the sample keeps and the failure callback hears once; a rejected candidate is
// penalised and counted as a hack; only the accepted one becomes the best.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "core/hash.h"
#include "core/paths.h"
#include "queue/fake_engine.h"
#include "rl/loop.h"

using namespace cudal1;
using fakes::Stage;
namespace fs = std::filesystem;

namespace {

// A ModelNew file the judge below recognises by its marker.
std::string answer_marked(const std::string& marker) {
  return "## Code Implementation\n```python\n# " + marker +
         "\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```\n";
}

struct MarkedPolicy : policy::Policy {
  std::vector<std::string> markers;
  std::string name() const override { return "marked"; }
  std::vector<policy::PolicyAnswer> answer(const policy::PolicyRequest&) override {
    std::vector<policy::PolicyAnswer> answers;
    for (auto& m : markers) answers.push_back({answer_marked(m), "stop", 10, 20, "", m});
    return answers;
  }
};

EvalResult judge_by_marker(const EvalOptions& o, Stage stage) {
  const std::string code = read_file(o.candidate_path);
  auto marked = [&](const char* m) {
    return code.find(std::string("# ") + m) != std::string::npos;
  };
  if (marked("prepare-fails") && stage == Stage::prepare)
    throw Error(ErrorKind::task, "the task does not load: planted", "fix the task");
  if (marked("run-fails") && stage == Stage::run)
    throw Error(ErrorKind::runner, "the worker died: planted", "free host memory");
  if (marked("hack")) return fakes::rejected_result("planted_hack");
  if (marked("incorrect")) return fakes::verdict_result(Status::incorrect);
  return fakes::accepted_result(3.0);
}

struct FakeLoopRun {
  fs::path dir = make_private_dir("cudal1-loop-unit");
  Store store{dir / "store.db"};
  rl::LoopConfig config;
  std::vector<rl::LoopTask> tasks{{"planted", dir / "planted.py"}};
  std::shared_ptr<fakes::FakeEngine> engine = std::make_shared<fakes::FakeEngine>();
  FakeLoopRun() {
    std::ofstream(tasks[0].path) << "# a task the fake evaluator never loads\n";
    config.run = "unit";
    config.run_dir = dir / "run";
    config.rounds = 1;
    config.templates = policy::PromptTemplates::load(policy::bundled_prompts_dir());
    config.queue.devices = {"cpu", "cpu"};
    engine->judge = judge_by_marker;
    config.queue.engine = engine;
    config.queue.log = [](const std::string&) {};
  }
  ~FakeLoopRun() { fs::remove_all(dir); }
  std::map<std::string, RlSample> samples_by_label() {
    std::map<std::string, RlSample> by;
    for (auto& x : store.run_samples(config.run)) by[x.label] = x;
    return by;
  }
};

}  // namespace

TEST(LoopUnit, FailedAndRejectedEvaluationsAreScoredAndTheirReasonsKept) {
  FakeLoopRun run;
  MarkedPolicy policy;
  policy.markers = {"accepted", "hack", "prepare-fails", "run-fails", "incorrect"};
  std::vector<rl::LoopFailure> told;
  auto outcomes = rl::run_loop(run.tasks, policy, run.store, run.config, {},
                               [&](const rl::LoopFailure& f) { told.push_back(f); });
  ASSERT_EQ(outcomes.size(), 1u);
  const rl::TaskOutcome& out = outcomes[0];
  EXPECT_EQ(out.tried, 5);
  EXPECT_EQ(out.evaluated, 3) << "only the evaluations that ran have verdicts";
  EXPECT_EQ(out.correct, 1);
  EXPECT_EQ(out.hacks, 1);
  ASSERT_TRUE(out.best);
  EXPECT_DOUBLE_EQ(*out.best, 3.0);
  EXPECT_EQ(out.best_label, "accepted");
  EXPECT_EQ(out.flags.value("planted_hack", 0), 1);
  EXPECT_EQ(out.failures.size(), 2u) << out.failures.dump();

  auto by = run.samples_by_label();
  ASSERT_EQ(by.size(), 5u);
  EXPECT_DOUBLE_EQ(by["accepted"].raw_reward, 3.0);
  EXPECT_DOUBLE_EQ(by["hack"].raw_reward, run.config.reward.hack_penalty);
  EXPECT_EQ(by["hack"].status, "rejected");
  EXPECT_DOUBLE_EQ(by["incorrect"].raw_reward, 0.0);
  for (const char* failed : {"prepare-fails", "run-fails"}) {
    EXPECT_DOUBLE_EQ(by[failed].raw_reward, 0.0) << failed;
    EXPECT_TRUE(by[failed].status.empty()) << failed << " has a verdict it never got";
    EXPECT_EQ(by[failed].error.rfind("the evaluation could not run: ", 0), 0u) << by[failed].error;
  }
  EXPECT_NE(by["prepare-fails"].error.find("the task does not load: planted"), std::string::npos);
  EXPECT_NE(by["run-fails"].error.find("the worker died: planted"), std::string::npos);
  ASSERT_EQ(told.size(), 2u);
  EXPECT_EQ(told[0].task, "planted");
  EXPECT_FALSE(rl::all_failed(run.store.run_samples("unit")));
}

TEST(LoopUnit, ARoundWhoseEvaluationsAllFailSaysWhy) {
  FakeLoopRun run;
  MarkedPolicy policy;
  policy.markers = {"run-fails", "run-fails again", "prepare-fails"};
  rl::run_loop(run.tasks, policy, run.store, run.config);
  std::optional<rl::AllFailed> why = rl::all_failed(run.store.run_samples("unit"));
  ASSERT_TRUE(why);
  EXPECT_EQ(why->answers, 3u);
  EXPECT_EQ(why->messages, 2u);
  EXPECT_NE(why->message.find("the worker died: planted"), std::string::npos) << why->message;
  EXPECT_EQ(why->with_message, 2u);
}
