// The optimisation loop over a fault-injecting double of the evaluator (queue/fake_engine.h):
// an evaluation that cannot run, whether it fails preparing or running, is a scored failure
// whose reason the sample keeps and the failure callback hears once; a rejected candidate is
// penalised and counted as a hack; only the accepted one becomes the best; best/ gets a file
// only for an answer that beats the reference by more than the noise.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <tuple>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "policy/marked_policy_testing.h"
#include "queue/fake_engine.h"
#include "rl/best_rule.h"
#include "rl/loop.h"

using namespace cudal1;
using fakes::Stage;
namespace fs = std::filesystem;

namespace {

using policy::answer_marked;
using policy::MarkedPolicy;

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
  if (marked("slow")) return fakes::accepted_result(0.91);
  if (marked("noisy")) {  // 1.20x, but with an interquartile range of 30 % of the median
    EvalResult r = fakes::accepted_result(1.20);
    r.statistics["spread"] = 0.30;
    return r;
  }
  if (marked("barely")) return fakes::accepted_result(1.02);  // under the 3 % floor
  return fakes::accepted_result(3.0);
}

// Round r answers the markers of rounds[r - 1]; nothing after the last.
struct RoundsPolicy : policy::Policy {
  std::vector<std::vector<std::string>> rounds;
  std::string name() const override { return "rounds"; }
  std::vector<policy::PolicyAnswer> answer(const policy::PolicyRequest& r) override {
    std::vector<policy::PolicyAnswer> answers;
    if (r.round >= 1 && r.round <= int(rounds.size()))
      for (auto& m : rounds[r.round - 1]) answers.push_back({answer_marked(m), "stop", 10, 20, "", m});
    return answers;
  }
};

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

// A user who takes best/ must get a faster program than the reference, never a slower one or one
// within the measurement's noise of it: such answers are recorded, but no file is written.
TEST(LoopUnit, NoBestFileWhenNothingBeatsTheReferenceBeyondTheNoise) {
  FakeLoopRun run;
  MarkedPolicy policy;
  policy.markers = {"slow", "noisy", "barely"};
  auto outcomes = rl::run_loop(run.tasks, policy, run.store, run.config);
  ASSERT_EQ(outcomes.size(), 1u);
  const rl::TaskOutcome& out = outcomes[0];
  ASSERT_TRUE(out.best) << "the best accepted speedup is still recorded, for tables";
  EXPECT_DOUBLE_EQ(*out.best, 1.20);
  EXPECT_EQ(out.best_label, "noisy");
  EXPECT_TRUE(out.best_file.empty());
  EXPECT_FALSE(out.best_file_speedup);
  EXPECT_FALSE(fs::exists(run.config.run_dir / "best" / "planted.py"));
  EXPECT_EQ(out.best_note, "no answer beat the reference by more than the noise (best 1.20x); the reference stands");
  EXPECT_FALSE(out.improved()) << "1.20x within its noise is no improvement a user can take";
  nlohmann::json j = out.to_json();
  EXPECT_FALSE(j.contains("best_file"));
  EXPECT_EQ(j.value("best_note", ""), out.best_note);
}

TEST(LoopUnit, ALaterAnswerThatBeatsTheReferenceWritesTheBestFile) {
  FakeLoopRun run;
  run.config.rounds = 2;
  RoundsPolicy policy;
  policy.rounds = {{"slow"}, {"fast"}};
  auto outcomes = rl::run_loop(run.tasks, policy, run.store, run.config);
  ASSERT_EQ(outcomes.size(), 1u);
  const rl::TaskOutcome& out = outcomes[0];
  EXPECT_EQ(out.rounds, 2);
  ASSERT_TRUE(out.best);
  EXPECT_DOUBLE_EQ(*out.best, 3.0);
  ASSERT_FALSE(out.best_file.empty());
  EXPECT_NE(read_file(out.best_file).find("# fast"), std::string::npos);
  EXPECT_DOUBLE_EQ(out.best_file_speedup.value_or(0), 3.0);
  EXPECT_TRUE(out.improved());
  EXPECT_TRUE(out.best_note.empty()) << out.best_note;
}

TEST(LoopUnit, NoAcceptedAnswerLeavesTheReferenceStanding) {
  FakeLoopRun run;
  MarkedPolicy policy;
  policy.markers = {"incorrect"};
  auto outcomes = rl::run_loop(run.tasks, policy, run.store, run.config);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].best_file.empty());
  EXPECT_EQ(outcomes[0].best_note, "no answer was accepted; the reference stands");
}

TEST(BestRule, TheMarginIsTheSpreadOrThreePercent) {
  EvalResult r = fakes::accepted_result(1.03);
  EXPECT_DOUBLE_EQ(rl::noise_margin(r), rl::kMinBestMargin);
  EXPECT_FALSE(rl::beats_reference(r)) << "1.03x is within the 3 % floor";
  r.speedup["eager"] = 1.04;
  EXPECT_TRUE(rl::beats_reference(r));
  r.statistics["spread"] = 0.05;
  EXPECT_DOUBLE_EQ(rl::noise_margin(r), 0.05);
  EXPECT_FALSE(rl::beats_reference(r)) << "1.04x with a 5 % spread is noise";
  r.speedup["eager"] = 1.06;
  EXPECT_TRUE(rl::beats_reference(r));
  r.accepted = false;
  EXPECT_FALSE(rl::beats_reference(r)) << "a rejected answer is never a best file";
}

// Revises by script: the first turn answers `first`, the turn after k earlier ones answers
// later[k - 1] (nothing past the list). Keeps every request to look at what it was sent.
struct TurnsPolicy : policy::Policy {
  std::vector<std::string> first, later;
  std::vector<policy::PolicyRequest> requests;
  std::string name() const override { return "turns"; }
  std::vector<policy::PolicyAnswer> answer(const policy::PolicyRequest& r) override {
    requests.push_back(r);
    std::vector<policy::PolicyAnswer> answers;
    if (r.history.empty()) {
      for (auto& m : first) answers.push_back({answer_marked(m), "stop", 10, 20, "", m});
    } else if (r.history.size() <= later.size()) {
      const std::string& m = later[r.history.size() - 1];
      answers.push_back({answer_marked(m), "stop", 10, 20, "", m});
    }
    return answers;
  }
};

// optimize --turns: a slot whose answer failed is asked again with the evaluator's feedback and
// its history; a slot whose answer became the task's best stops; every turn is its own sample in
// the same slot, and samples.jsonl carries each turn's discounted return.
TEST(LoopUnit, SlotsReviseAfterFeedbackAndStopOnceTheirAnswerIsTheBest) {
  FakeLoopRun run;
  run.config.turns = 3;
  run.config.gamma = 0.5;
  TurnsPolicy policy;
  policy.first = {"accepted", "incorrect"};
  policy.later = {"slow", "noisy"};
  auto outcomes = rl::run_loop(run.tasks, policy, run.store, run.config);
  ASSERT_EQ(outcomes.size(), 1u);
  // Slot 0 was the best at once and stopped; slot 1 went on for two more turns.
  auto rows = run.store.run_samples(run.config.run);
  ASSERT_EQ(rows.size(), 4u);
  std::vector<std::tuple<int, int, std::string>> seen;
  for (auto& x : rows) seen.push_back({x.slot, x.turn, x.label});
  EXPECT_EQ(seen, (std::vector<std::tuple<int, int, std::string>>{
                      {0, 0, "accepted"}, {1, 0, "incorrect"}, {1, 1, "slow"}, {1, 2, "noisy"}}));
  EXPECT_TRUE(rows[0].feedback.empty()) << "a slot that stops is sent nothing";
  EXPECT_NE(rows[1].feedback.find("Status: incorrect (not accepted)"), std::string::npos) << rows[1].feedback;
  EXPECT_NE(rows[1].feedback.find("The task's best so far: 3.00x"), std::string::npos) << rows[1].feedback;
  EXPECT_NE(rows[2].feedback.find("Speedup against eager PyTorch: 0.91x"), std::string::npos) << rows[2].feedback;
  EXPECT_TRUE(rows[3].feedback.empty()) << "the last turn's feedback is never sent";
  EXPECT_EQ(outcomes[0].tried, 4);
  EXPECT_EQ(outcomes[0].correct, 3);

  // The second turn's request held the first answer and the feedback sent on it.
  ASSERT_EQ(policy.requests.size(), 3u);
  EXPECT_TRUE(policy.requests[0].history.empty());
  ASSERT_EQ(policy.requests[1].history.size(), 1u);
  EXPECT_EQ(policy.requests[1].count, 1);
  EXPECT_EQ(policy.requests[1].history[0].label, "incorrect");
  EXPECT_FALSE(policy.requests[1].history[0].accepted);
  EXPECT_EQ(policy.requests[1].history[0].feedback, rows[1].feedback);
  EXPECT_EQ(policy.requests[1].prompt, policy.requests[0].prompt);
  ASSERT_EQ(policy.requests[2].history.size(), 2u);
  EXPECT_DOUBLE_EQ(policy.requests[2].history[1].speedup.value_or(0), 0.91);

  // Returns within slot 1's trajectory: r1 + 0.5 r2 + 0.25 r3, and so on.
  std::vector<nlohmann::json> lines;
  std::ifstream in(run.config.run_dir / "samples.jsonl");
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 4u);
  auto reward = [&](int i) { return lines[i]["reward"].get<double>(); };
  EXPECT_EQ(lines[2]["turn"], 1);
  EXPECT_EQ(lines[2]["slot"], 1);
  EXPECT_DOUBLE_EQ(lines[0]["return"].get<double>(), reward(0));
  EXPECT_DOUBLE_EQ(lines[3]["return"].get<double>(), reward(3));
  EXPECT_DOUBLE_EQ(lines[2]["return"].get<double>(), reward(2) + 0.5 * reward(3));
  EXPECT_DOUBLE_EQ(lines[1]["return"].get<double>(), reward(1) + 0.5 * reward(2) + 0.25 * reward(3));
  EXPECT_NE(lines[1]["return"].get<double>(), reward(1)) << "the later turns count";
}

TEST(LoopUnit, TurnsAndGammaOutOfRangeAreUsageErrors) {
  FakeLoopRun run;
  MarkedPolicy policy;
  policy.markers = {"accepted"};
  run.config.turns = 0;
  EXPECT_THROW(rl::run_loop(run.tasks, policy, run.store, run.config), Error);
  run.config.turns = rl::kMaxTurns + 1;
  EXPECT_THROW(rl::run_loop(run.tasks, policy, run.store, run.config), Error);
  run.config.turns = 2;
  run.config.gamma = 1.5;
  EXPECT_THROW(rl::run_loop(run.tasks, policy, run.store, run.config), Error);
}

TEST(Returns, AreDiscountedWithinEachSlotOverItsTurns) {
  auto sample = [](int round, int slot, int turn, double reward) {
    RlSample x;
    x.run = "r", x.task_id = "t", x.round = round, x.slot = slot, x.turn = turn, x.reward = reward;
    return x;
  };
  // Stored turn by turn, slots interleaved; another round's slot 0 is another trajectory.
  std::vector<RlSample> xs = {sample(1, 0, 0, 1.0), sample(1, 1, 0, -1.0), sample(1, 0, 1, 0.5), sample(1, 0, 2, 2.0),
                              sample(2, 0, 0, 0.25)};
  std::vector<double> g = rl::discounted_returns(xs, 0.9);
  EXPECT_DOUBLE_EQ(g[0], 1.0 + 0.9 * 0.5 + 0.81 * 2.0);
  EXPECT_DOUBLE_EQ(g[1], -1.0);
  EXPECT_DOUBLE_EQ(g[2], 0.5 + 0.9 * 2.0);
  EXPECT_DOUBLE_EQ(g[3], 2.0);
  EXPECT_DOUBLE_EQ(g[4], 0.25);
  EXPECT_DOUBLE_EQ(rl::discounted_returns(xs, 0.0)[0], 1.0);
}

// A first accepted answer within the noise of the reference is the task's best, yet no reason to
// stop revising: its slot goes on, and ends once an answer beats the reference beyond the noise.
TEST(LoopUnit, ASlotWhoseAnswerIsWithinTheNoiseGoesOn) {
  FakeLoopRun run;
  run.config.turns = 3;
  TurnsPolicy policy;
  policy.first = {"barely"};
  policy.later = {"accepted", "never asked"};
  auto outcomes = rl::run_loop(run.tasks, policy, run.store, run.config);
  auto rows = run.store.run_samples(run.config.run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].label, "barely");
  EXPECT_NE(rows[0].feedback.find("Speedup against eager PyTorch: 1.02x"), std::string::npos) << rows[0].feedback;
  EXPECT_EQ(rows[1].label, "accepted");
  EXPECT_EQ(rows[1].turn, 1);
  EXPECT_TRUE(rows[1].feedback.empty());
  EXPECT_EQ(policy.requests.size(), 2u);
  EXPECT_DOUBLE_EQ(outcomes[0].best_file_speedup.value_or(0), 3.0);
}
