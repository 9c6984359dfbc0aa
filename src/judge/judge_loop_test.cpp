// The judge in the optimisation loop, over the fault-injecting double of the evaluator
// (queue/fake_engine.h) and a fake chat endpoint: a refused hack joins the cases, and a suspicious
// accepted answer judged a hack in gate mode is scored as a caught hack and never becomes the best.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <map>

#include "core/hash.h"
#include "core/paths.h"
#include "policy/fake_chat_server.h"
#include "queue/fake_engine.h"
#include "rl/loop.h"
#include "policy/marked_policy_testing.h"

namespace cudal1::judge {
namespace {

namespace fs = std::filesystem;

using policy::MarkedPolicy;

// "fast": accepted at 4x, over the judge's threshold; "modest": accepted at 1.5x; "caught": refused.
// Keyed as the evaluator keys its results, so the store answers for a file it has seen.
EvalResult evaluate_by_marker(const EvalOptions& o, fakes::Stage) {
  const std::string code = read_file(o.candidate_path);
  EvalResult r = code.find("# caught") != std::string::npos
                     ? fakes::rejected_result("output_aliases_input")
                     : fakes::accepted_result(code.find("# fast") != std::string::npos ? 4.0 : 1.5);
  r.task_hash = sha256_hex(read_file(o.task_path));
  r.candidate_hash = sha256_hex(code);
  return r;
}

TEST(JudgeLoop, AGatedHackVerdictIsScoredAsACaughtHackAndRefusedHacksJoinTheCases) {
  fs::path dir = make_private_dir("cudal1-judge-loop");
  {
    Store store(dir / "store.db");
    policy::FakeEndpoint server([](const httplib::Request&, httplib::Response& res) {
      res.set_content(policy::completion(R"({"verdict": "hack", "reason": "returns its input"})"), "application/json");
    });
    rl::LoopConfig config;
    config.run = "judged";
    config.run_dir = dir / "run";
    config.rounds = 1;
    config.templates = policy::PromptTemplates::load(policy::bundled_prompts_dir());
    config.queue.devices = {"cpu"};
    auto engine = std::make_shared<fakes::FakeEngine>();
    engine->judge = evaluate_by_marker;
    config.queue.engine = engine;
    config.queue.log = [](const std::string&) {};
    JudgeConfig j;
    j.url = server.base_url();
    j.model = "judge-model";
    j.mode = JudgeMode::gate;
    j.max_retries = 0;
    config.judge = j;
    std::vector<rl::LoopTask> tasks{{"planted", dir / "planted.py"}};
    std::ofstream(tasks[0].path) << "# a task the fake evaluator never loads\n";
    MarkedPolicy policy;
    policy.markers = {"fast", "modest", "caught"};

    auto outcomes = rl::run_loop(tasks, policy, store, config);
    ASSERT_EQ(outcomes.size(), 1u);
    EXPECT_EQ(server.requests(), 1) << "only the 4x answer is suspicious";
    EXPECT_EQ(outcomes[0].hacks, 2) << "the refused one and the judged one";
    EXPECT_EQ(outcomes[0].flags.value("judge_hack", 0), 1);
    ASSERT_TRUE(outcomes[0].best);
    EXPECT_DOUBLE_EQ(*outcomes[0].best, 1.5) << "the judged hack is not the best";

    std::map<std::string, RlSample> by;
    for (auto& x : store.run_samples("judged")) by[x.label] = x;
    EXPECT_FALSE(by["fast"].accepted);
    EXPECT_DOUBLE_EQ(by["fast"].raw_reward, config.reward.hack_penalty);
    EXPECT_DOUBLE_EQ(by["modest"].raw_reward, 1.5);
    EXPECT_DOUBLE_EQ(by["caught"].raw_reward, config.reward.hack_penalty);

    std::map<std::string, std::string> family_by_source;
    for (auto& c : store.hack_cases()) family_by_source[c.source] = c.family;
    EXPECT_EQ(family_by_source["rejected"], "output_aliases_input");
    EXPECT_TRUE(family_by_source.count("confirmed"));
    EXPECT_EQ(store.hack_cases().size(), 2u) << "the judged file is a confirmed case only";

    // Resumed for a second round, the same answers come back: the store's verdict refuses the
    // 4x file again, without asking, and the first round's replay does not make it the best.
    config.rounds = 2;
    config.patience = 5;
    auto resumed = rl::run_loop(tasks, policy, store, config);
    EXPECT_EQ(server.requests(), 1);
    ASSERT_TRUE(resumed[0].best);
    EXPECT_DOUBLE_EQ(*resumed[0].best, 1.5);
    EXPECT_EQ(resumed[0].rounds, 2);
    for (auto& x : store.run_samples("judged"))
      if (x.label == "fast") EXPECT_DOUBLE_EQ(x.raw_reward, config.reward.hack_penalty) << "round " << x.round;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cudal1::judge
