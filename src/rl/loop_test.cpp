// The optimisation loop on real CPU evaluations: with a scripted policy (what it stores, the
// rewards and advantages, the best file, resuming without redoing a round, the contrastive
// prompt, early stopping, a candidate evaluated once however often it is proposed), with the
// replay policy, and with the OpenAI-compatible policy against a real HTTP server on loopback.
#include "rl/loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>

#include "core/hash.h"
#include "core/paths.h"
#include "evaluator/fixture_cases.h"
#include "policy/replay_policy.h"
#include "rl/best_rule.h"
#ifdef CUDAL1_HAVE_HTTP
#include "policy/fake_chat_server.h"
#include "policy/openai_policy.h"
#endif

using namespace cudal1;
namespace fs = std::filesystem;

namespace {

std::string answer_with(const std::string& code) {
  return "## Performance Analysis\nscripted\n\n## Algorithm Design\nscripted\n\n## Code Implementation\n```python\n" + code + "```\n";
}

// Answers every request with the same three: an accepted file, an incorrect one, no code at all.
struct ScriptedPolicy : policy::Policy {
  std::vector<policy::PolicyRequest> requests;
  std::string name() const override { return "scripted"; }
  std::vector<policy::PolicyAnswer> answer(const policy::PolicyRequest& r) override {
    requests.push_back(r);
    auto cand = [](const char* f) { return read_file(fixtures_dir() / "candidates" / f); };
    return {{answer_with(cand("ok_scale_add_alpha.py")), "stop", 10, 20, "", "ok"},
            {answer_with(cand("incorrect_scale_add_off_by_5pct.py")), "stop", 10, 20, "", "off"},
            {"I would rather not.", "stop", 10, 5, "", "none"}};
  }
};

struct LoopRun {
  fs::path dir = make_private_dir("cudal1-loop-test");
  Store store{dir / "store.db"};
  rl::LoopConfig config;
  std::vector<rl::LoopTask> tasks{{"scale_add", fixtures_dir() / "tasks" / "scale_add.py"}};
  LoopRun() {
    config.run = "test";
    config.run_dir = dir / "run";
    config.group = 3;
    config.templates = policy::PromptTemplates::load(policy::bundled_prompts_dir());
    config.eval.device = "cpu";
    config.eval.lint = false;
    config.eval.precision_check = false;
    config.eval.buckets = 2;
    config.eval.calls_per_bucket = 3;
    config.eval.warmup = 1;
    config.eval.max_remeasure = 0;
    config.eval.fresh_remeasure_above = 0;
    config.queue.devices = {"cpu", "cpu"};
  }
  ~LoopRun() { fs::remove_all(dir); }
  // Round 1 answered by the scripted policy: the store then holds an accepted file to show.
  void first_round() {
    config.rounds = 1;
    ScriptedPolicy first;
    rl::run_loop(tasks, first, store, config);
  }
};

// Answers the accepted file twice, then the incorrect one.
struct TwicePolicy : policy::Policy {
  std::string name() const override { return "twice"; }
  std::vector<policy::PolicyAnswer> answer(const policy::PolicyRequest&) override {
    auto cand = [](const char* f) { return read_file(fixtures_dir() / "candidates" / f); };
    return {{answer_with(cand("ok_scale_add_alpha.py")), "stop", 10, 20, "", "first"},
            {answer_with(cand("ok_scale_add_alpha.py")), "stop", 10, 20, "", "again"},
            {answer_with(cand("incorrect_scale_add_off_by_5pct.py")), "stop", 10, 20, "", "off"}};
  }
};

std::vector<nlohmann::json> exported(const LoopRun& run) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(run.config.run_dir / "samples.jsonl");
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  return lines;
}

// A replay folder for scale_add: a.py (incorrect), then b.py (accepted).
fs::path replay_set(const LoopRun& run) {
  fs::path set = run.dir / "set";
  fs::create_directories(set / "scale_add");
  fs::copy_file(fixtures_dir() / "candidates" / "incorrect_scale_add_off_by_5pct.py", set / "scale_add" / "a.py");
  fs::copy_file(fixtures_dir() / "candidates" / "ok_scale_add_alpha.py", set / "scale_add" / "b.py");
  return set;
}

}  // namespace

TEST(Loop, ARoundIsStoredScoredAndExportedAndTheBestFileKept) {
  LoopRun run;
  run.config.rounds = 1;
  ScriptedPolicy policy;
  auto out = rl::run_loop(run.tasks, policy, run.store, run.config);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rounds, 1);
  EXPECT_EQ(out[0].tried, 3);
  EXPECT_EQ(out[0].evaluated, 2);
  EXPECT_EQ(out[0].correct, 1);
  ASSERT_TRUE(out[0].best);
  EXPECT_GT(*out[0].best, 0.0);
  EXPECT_EQ(out[0].best_label, "ok");
  // The fused add may or may not beat the reference on this CPU: best/ gets the file exactly when
  // it beats it by more than the noise (rl/best_rule.h), and the outcome says why when it does not.
  std::string code = read_file(fixtures_dir() / "candidates" / "ok_scale_add_alpha.py");
  std::optional<EvalResult> judged = run.store.find(sha256_hex(read_file(run.tasks[0].path)), sha256_hex(code),
                                                    run.config.eval.protocol_key(), "cpu");
  ASSERT_TRUE(judged);
  if (rl::beats_reference(*judged)) {
    EXPECT_EQ(read_file(out[0].best_file), code);
  } else {
    EXPECT_TRUE(out[0].best_file.empty());
    EXPECT_FALSE(fs::exists(run.config.run_dir / "best" / "scale_add.py"));
    EXPECT_NE(out[0].best_note.find("the reference stands"), std::string::npos) << out[0].best_note;
  }

  auto rows = run.store.run_samples("test");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].outcome, "ok");
  EXPECT_TRUE(rows[0].accepted);
  EXPECT_EQ(rows[1].status, "incorrect");
  EXPECT_EQ(rows[2].outcome, "no_code");
  EXPECT_GT(rows[0].raw_reward, 0.0);
  EXPECT_EQ(rows[1].raw_reward, 0.0);
  EXPECT_EQ(rows[2].raw_reward, 0.0);
  EXPECT_GT(rows[0].advantage, 0.0);
  EXPECT_LT(rows[1].advantage, 0.0);
  // The two failures are alike whichever was scored first.
  EXPECT_DOUBLE_EQ(rows[1].reward, rows[2].reward);
  EXPECT_DOUBLE_EQ(rows[1].advantage, rows[2].advantage);
  EXPECT_NEAR(rows[0].advantage + rows[1].advantage + rows[2].advantage, 0.0, 1e-9);
  EXPECT_NE(rows[0].prompt.find("scale_add"), std::string::npos);

  std::ifstream lines(run.config.run_dir / "samples.jsonl");
  int n = 0;
  for (std::string l; std::getline(lines, l); ++n) {
    auto j = nlohmann::json::parse(l);
    EXPECT_TRUE(j.contains("prompt") && j.contains("completion") && j.contains("advantage") && j.contains("verdict"));
  }
  EXPECT_EQ(n, 3);
}

TEST(Loop, AResumedRunGoesOnWithAContrastivePromptAndStopsWithoutProgress) {
  LoopRun run;
  run.first_round();
  int64_t evaluations = run.store.count();

  run.config.rounds = 5;
  run.config.patience = 2;
  ScriptedPolicy again;
  auto out = rl::run_loop(run.tasks, again, run.store, run.config);
  // Round 1 is not asked again; rounds 2 and 3 find nothing better than round 1's best: stop.
  ASSERT_EQ(again.requests.size(), 2u);
  EXPECT_EQ(again.requests[0].round, 2);
  EXPECT_EQ(out[0].rounds, 3);
  EXPECT_TRUE(out[0].stopped_early);
  EXPECT_EQ(out[0].tried, 9);
  // The second round's prompt shows round 1's accepted file with its speedup.
  ASSERT_EQ(again.requests[0].exemplars.size(), 1u);
  EXPECT_EQ(again.requests[0].exemplar_labels[0], "ok");
  auto stored = run.store.run_samples("test");
  ASSERT_EQ(stored[3].exemplars.size(), 1u);  // round 2's first row: what its prompt showed
  EXPECT_EQ(stored[3].exemplars[0]["label"], "ok");
  EXPECT_EQ(stored[3].exemplars[0]["candidate_hash"], sha256_hex(read_file(fixtures_dir() / "candidates" / "ok_scale_add_alpha.py")));
  EXPECT_TRUE(stored[0].exemplars.empty());
  EXPECT_NE(again.requests[0].prompt.find("class ModelNew"), std::string::npos);
  // The same files again: judged from the store, not evaluated a second time.
  EXPECT_EQ(run.store.count(), evaluations);
  EXPECT_EQ(run.store.run_samples("test").size(), 9u);
}

// A stage that asks both kinds of prompt: with half the rounds contrastive, a task's rounds
// alternate, and a round without exemplars is a first-round prompt though earlier files exist.
TEST(Loop, AShareOfRoundsShowsExemplarsAndTheOthersAreFirstRoundPrompts) {
  LoopRun run;
  run.first_round();

  run.config.rounds = 3;
  run.config.patience = 5;
  run.config.sampler.share = 0.5;
  ScriptedPolicy again;
  rl::run_loop(run.tasks, again, run.store, run.config);
  ASSERT_EQ(again.requests.size(), 2u);
  EXPECT_EQ(again.requests[0].round, 2);
  EXPECT_TRUE(again.requests[0].exemplars.empty());
  EXPECT_EQ(again.requests[0].prompt.find("ok_scale_add_alpha"), std::string::npos);
  EXPECT_EQ(again.requests[1].round, 3);
  ASSERT_EQ(again.requests[1].exemplars.size(), 1u);
  EXPECT_EQ(again.requests[1].exemplar_labels[0], "ok");
  auto stored = run.store.run_samples("test");
  ASSERT_EQ(stored.size(), 9u);
  EXPECT_TRUE(stored[3].exemplars.empty());    // round 2's first row
  EXPECT_EQ(stored[6].exemplars.size(), 1u);   // round 3's
}

// Neighbouring tasks are out of step: in one round, one task is asked a first-round prompt and
// the next a contrastive one.
TEST(Loop, NeighbouringTasksAskTheOtherKindInTheSameRound) {
  LoopRun run;
  run.tasks.push_back({"scale_add_again", run.tasks[0].path});
  run.first_round();
  run.config.rounds = 2;
  run.config.sampler.share = 0.5;
  ScriptedPolicy again;
  rl::run_loop(run.tasks, again, run.store, run.config);
  ASSERT_EQ(again.requests.size(), 2u);
  std::map<std::string, std::size_t> shown;
  for (auto& r : again.requests) {
    EXPECT_EQ(r.round, 2);
    shown[r.task_id] = r.exemplars.size();
  }
  EXPECT_EQ(shown["scale_add"], 0u);
  EXPECT_EQ(shown["scale_add_again"], 1u);
}

// The live line counts an answer as soon as its evaluation finishes, not when the round is written.
TEST(Loop, ProgressCountsAnswersAsTheirEvaluationsFinish) {
  LoopRun run;
  run.config.rounds = 1;
  ScriptedPolicy policy;
  int tried_when_all_evaluated = -1, correct_when_all_evaluated = -1;
  rl::run_loop(run.tasks, policy, run.store, run.config, [&](const rl::LoopProgress& p) {
    if (p.stage == "evaluating" && p.jobs > 0 && p.jobs_done == p.jobs)
      tried_when_all_evaluated = p.tried, correct_when_all_evaluated = p.correct;
  });
  EXPECT_EQ(tried_when_all_evaluated, 3);  // two files evaluated, and the answer without code
  EXPECT_EQ(correct_when_all_evaluated, 1);
}

// An improvement beats where the task started: eager, or the fastest file the store knew before
// the run. A second run finding only the first run's file improved nothing.
TEST(Loop, ATaskImprovesOnlyOnWhatWasKnownBeforeTheRun) {
  LoopRun run;
  run.config.rounds = 1;
  ScriptedPolicy first;
  auto found = rl::run_loop(run.tasks, first, run.store, run.config);
  ASSERT_TRUE(found[0].best);
  run.config.run = "second";
  ScriptedPolicy second;
  std::size_t improved = 99;
  auto again = rl::run_loop(run.tasks, second, run.store, run.config, [&](const rl::LoopProgress& p) { improved = p.improved; });
  EXPECT_EQ(improved, 0u);
  ASSERT_TRUE(again[0].best);
  EXPECT_EQ(*again[0].best, *found[0].best);
  EXPECT_EQ(again[0].start, std::max(1.0, *found[0].best));
  EXPECT_FALSE(again[0].improved());
  EXPECT_FALSE(again[0].to_json()["improved"].get<bool>());
}

// Two answers holding one file: evaluated once, counted once, both stored with its verdict; a
// resumed run counts them the same way.
TEST(Loop, AFileAnsweredTwiceInARoundIsJudgedAndCountedOnce) {
  LoopRun run;
  run.config.rounds = 1;
  TwicePolicy policy;
  auto out = rl::run_loop(run.tasks, policy, run.store, run.config);
  EXPECT_EQ(out[0].tried, 2);
  EXPECT_EQ(out[0].evaluated, 2);
  EXPECT_EQ(out[0].correct, 1);
  EXPECT_EQ(out[0].best_label, "first");
  EXPECT_EQ(run.store.count(), 2);
  auto rows = run.store.run_samples("test");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].accepted && rows[1].accepted);
  EXPECT_EQ(rows[0].raw_reward, rows[1].raw_reward);
  TwicePolicy none;
  auto resumed = rl::run_loop(run.tasks, none, run.store, run.config);
  EXPECT_EQ(resumed[0].to_json().dump(), out[0].to_json().dump());
}

// A reference that does not load: no answer's evaluation can run, and each sample says why.
TEST(Loop, AnEvaluationThatCannotRunLeavesItsReasonInTheSample) {
  LoopRun run;
  run.config.rounds = 1;
  run.tasks = {{"syntax_error", fixtures_dir() / "bad_tasks" / "syntax_error.py"}};
  ScriptedPolicy policy;
  std::vector<rl::LoopFailure> told;
  rl::run_loop(run.tasks, policy, run.store, run.config, {}, [&](const rl::LoopFailure& f) { told.push_back(f); });
  auto lines = exported(run);
  ASSERT_EQ(lines.size(), 3u);
  for (auto& l : lines) {
    if (!l["verdict"]["status"].is_null()) continue;
    ASSERT_TRUE(l.value("error", nlohmann::json()).is_string()) << l.dump();
    EXPECT_FALSE(l["error"].get<std::string>().empty());
  }
  EXPECT_NE(lines[0]["error"].get<std::string>().find("syntax_error.py"), std::string::npos) << lines[0]["error"];
  EXPECT_NE(lines[2]["error"].get<std::string>().find("no fenced code block"), std::string::npos) << lines[2]["error"];
  // The two files met the same reason; it is said once.
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].task, "syntax_error");
  EXPECT_EQ(told[0].message, lines[0]["error"].get<std::string>());
  EXPECT_FALSE(rl::all_failed(run.store.run_samples("test")));  // the answer without code was judged on its text
}

// Answers like ScriptedPolicy and takes prompts of at most `limit` bytes, its own count.
struct LimitedPolicy : ScriptedPolicy {
  std::size_t limit = 0;
  std::optional<policy::PromptBudget> prompt_budget() const override {
    return policy::PromptBudget{limit, [](const std::string& s) { return s.size(); }};
  }
};

// A policy with its own prompt limit (a model: its positions less the answer's tokens, counted by
// its tokenizer) gets contrastive prompts shortened to fit it. (On the H200 the contrastive
// prompts of a model trained from scratch ran over its 8192 positions, and every answer of the
// crl stage was an error.)
TEST(Loop, ContrastivePromptsFitThePolicysOwnLimit) {
  LoopRun run;
  run.first_round();
  run.config.rounds = 2;
  LimitedPolicy again;
  // The contrastive prompt unshortened: round 1's accepted file as the exemplar.
  policy::PromptExemplar shown{read_file(fixtures_dir() / "candidates" / "ok_scale_add_alpha.py"), 1.0};
  std::string full = policy::build_prompt(run.config.templates, {"scale_add", "cpu", read_file(run.tasks[0].path), {shown}},
                                          policy::PromptBudget{1000000, nullptr}).text;
  again.limit = full.size() - 40;
  rl::run_loop(run.tasks, again, run.store, run.config);
  ASSERT_EQ(again.requests.size(), 1u);
  ASSERT_EQ(again.requests[0].exemplars.size(), 1u);  // what the prompt was made from
  EXPECT_LE(again.requests[0].prompt.size(), again.limit);
  EXPECT_GT(again.requests[0].prompt.size(), 0u);
}

// A run stopped after its policy answered and before the round's samples were written: on resume
// the same answers are judged (those judged already come from their evaluations), the policy is
// not asked that round again, and the round's pending answers go once its samples are written.
// (On the H200 a resumed chunk was asked again and, shown the stopped round's accepted files as
// exemplars, answered 1 or 2 files where it had answered 3: the others were never credited.)
TEST(Loop, AStoppedRoundIsJudgedOnItsOwnAnswersWhenResumed) {
  LoopRun run;
  run.config.rounds = 1;
  ScriptedPolicy first;
  auto given = first.answer({});
  nlohmann::json answers = nlohmann::json::array();
  for (auto& a : given)
    answers.push_back({{"text", a.text}, {"finish_reason", a.finish_reason}, {"label", a.label},
                       {"prompt_tokens", a.prompt_tokens}, {"completion_tokens", a.completion_tokens}});
  nlohmann::json pending = {{"policy", "scripted"}, {"prompt", "the stopped round's prompt"},
                            {"shown", nlohmann::json::array()}, {"answers", answers}};
  run.store.save_pending_round("test", "scale_add", 1, pending);
  // Another policy's pending answers are not judged: that policy is asked.
  run.store.save_pending_round("other", "scale_add", 1, {{"policy", "replay:x"}, {"prompt", "p"}, {"answers", answers}});
  ScriptedPolicy resumed;
  auto out = rl::run_loop(run.tasks, resumed, run.store, run.config);
  EXPECT_TRUE(resumed.requests.empty()) << "the stopped round was asked again";
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tried, 3);
  EXPECT_EQ(out[0].correct, 1);
  EXPECT_EQ(out[0].best_label, "ok");
  auto rows = run.store.run_samples("test");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].prompt, "the stopped round's prompt");
  EXPECT_EQ(rows[0].label, "ok");
  EXPECT_EQ(rows[2].outcome, "no_code");
  EXPECT_FALSE(run.store.pending_round("test", "scale_add", 1).has_value());
  // A round asked in full leaves nothing pending either.
  run.config.rounds = 2;
  run.config.patience = 5;
  rl::run_loop(run.tasks, resumed, run.store, run.config);
  EXPECT_EQ(resumed.requests.size(), 1u);
  EXPECT_FALSE(run.store.pending_round("test", "scale_add", 2).has_value());
  run.config.run = "other";
  run.config.rounds = 1;
  ScriptedPolicy other;
  rl::run_loop(run.tasks, other, run.store, run.config);
  EXPECT_EQ(other.requests.size(), 1u);
}

// Two tasks' answers are evaluated together in one round, and a second run over a finished one
// reports what the first did (best file's speedups, flags), not a blank.
TEST(Loop, ARoundEvaluatesEveryTasksAnswersTogetherAndAResumeKeepsTheirFindings) {
  LoopRun run;
  run.config.rounds = 1;
  fs::path twin = run.dir / "scale_add_twin.py";
  std::ofstream(twin) << "# the same task, another file\n" << read_file(fixtures_dir() / "tasks" / "scale_add.py");
  run.tasks.push_back({"scale_add_twin", twin});
  ScriptedPolicy policy;
  std::size_t most_jobs = 0;
  auto first = rl::run_loop(run.tasks, policy, run.store, run.config, [&](const rl::LoopProgress& p) {
    if (p.stage == "evaluating") most_jobs = std::max(most_jobs, p.jobs);
  });
  EXPECT_EQ(most_jobs, 4u) << "each task's two files should be in one queue";
  ASSERT_EQ(first.size(), 2u);
  for (auto& o : first) {
    EXPECT_EQ(o.correct, 1);
    ASSERT_TRUE(o.best);
    EXPECT_TRUE(o.best_speedups.contains("eager"));
  }
  ScriptedPolicy none;
  auto again = rl::run_loop(run.tasks, none, run.store, run.config);
  EXPECT_TRUE(none.requests.empty());
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again[i].to_json().dump(), first[i].to_json().dump());
  }
}

// The replay policy through the loop: a folder's files, one per round, then nothing: the task stops.
TEST(Loop, ReplayedKernelsAreEvaluatedInTurnUntilTheSetRunsDry) {
  LoopRun run;
  run.config.rounds = 5;
  run.config.group = 1;
  run.config.patience = 5;
  fs::path set = replay_set(run);
  policy::ReplayPolicy replay(set);
  auto out = rl::run_loop(run.tasks, replay, run.store, run.config);
  EXPECT_EQ(out[0].rounds, 2);
  EXPECT_TRUE(out[0].stopped_early);
  auto rows = run.store.run_samples("test");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].status, "incorrect");
  EXPECT_TRUE(rows[1].accepted);
  EXPECT_NE(rows[1].label.find("b.py"), std::string::npos);
}

// A replay run resumed by a new process (a new policy object) goes on with the next kernel: the
// earlier rounds' labels come with the request, so the policy does not start the set again.
TEST(Loop, AResumedReplayGoesOnWhereTheStoppedOneWas) {
  LoopRun run;
  run.config.rounds = 1;
  run.config.group = 1;
  run.config.patience = 5;
  fs::path set = replay_set(run);
  {
    policy::ReplayPolicy replay(set);
    rl::run_loop(run.tasks, replay, run.store, run.config);
  }
  run.config.rounds = 3;
  policy::ReplayPolicy again(set);
  auto out = rl::run_loop(run.tasks, again, run.store, run.config);
  auto rows = run.store.run_samples("test");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].label.find("a.py"), std::string::npos);
  EXPECT_NE(rows[1].label.find("b.py"), std::string::npos) << rows[1].label;
  EXPECT_TRUE(out[0].stopped_early);
}

#ifdef CUDAL1_HAVE_HTTP
// The OpenAI-compatible policy through the loop, against a real HTTP server on loopback. Each
// request's seed (the round's seed plus the answer's slot) picks what the server does, so retries
// and the order requests arrive in do not matter: a good file, a wrong one slowly, a body that is
// not JSON, a server error every time, an answer cut off at the token limit.
// optimize --turns 2 through real HTTP and real CPU evaluations: the model's first answer does
// not compile; the second request is the same chat with that answer and the evaluator's feedback
// (its status) after it, and the model answers a correct file. Both turns are samples of slot 0,
// and samples.jsonl gives each its discounted return.
TEST(Loop, AModelRevisesAFailedAnswerFromTheEvaluatorsFeedback) {
  LoopRun run;
  run.config.rounds = 1;
  run.config.group = 1;
  run.config.turns = 2;
  run.config.gamma = 0.9;
  auto cand = [](const char* f) { return read_file(fixtures_dir() / "candidates" / f); };
  const std::string broken = answer_with(
      "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def __init__(self, scale):\n"
      "        super().__init__()\n        self.scale = scale\n\n    def forward(self, x, y)\n        return x * self.scale + y\n");
  const std::string good = answer_with(cand("ok_scale_add_alpha.py"));
  std::mutex m;
  std::vector<nlohmann::json> conversations;
  policy::FakeEndpoint server([&](const httplib::Request& req, httplib::Response& res) {
    auto messages = nlohmann::json::parse(req.body)["messages"];
    std::lock_guard lock(m);
    conversations.push_back(messages);
    res.set_content(policy::completion(messages.size() == 1 ? broken : good), "application/json");
  });
  policy::OpenAIConfig cfg;
  cfg.base_url = server.base_url();
  cfg.model = "scripted-model";
  cfg.timeout_s = 10;
  policy::OpenAIPolicy chat(cfg);
  auto out = rl::run_loop(run.tasks, chat, run.store, run.config);

  ASSERT_EQ(conversations.size(), 2u);
  const nlohmann::json& second = conversations[1];
  ASSERT_EQ(second.size(), 3u) << second.dump();
  EXPECT_EQ(second[0]["role"], "user");
  EXPECT_EQ(second[0]["content"], conversations[0][0]["content"]) << "the same first prompt";
  EXPECT_EQ(second[1]["role"], "assistant");
  EXPECT_EQ(second[1]["content"], broken);
  EXPECT_EQ(second[2]["role"], "user");
  EXPECT_NE(second[2]["content"].get<std::string>().find("Status: compile_error (not accepted)"), std::string::npos)
      << second[2]["content"];

  auto rows = run.store.run_samples("test");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].turn, 0);
  EXPECT_EQ(rows[0].slot, 0);
  EXPECT_EQ(rows[0].status, "compile_error");
  EXPECT_FALSE(rows[0].accepted);
  EXPECT_EQ(rows[0].feedback, second[2]["content"]);
  EXPECT_EQ(rows[1].turn, 1);
  EXPECT_EQ(rows[1].slot, 0);
  EXPECT_EQ(rows[1].status, "ok");
  EXPECT_TRUE(rows[1].accepted);
  EXPECT_EQ(out[0].tried, 2);
  EXPECT_EQ(out[0].correct, 1);

  // The round's raw rewards [0, s], normalised together: one standard deviation below and above
  // their mean, -1 and 1. Returns with gamma 0.9: turn 0 gets -1 + 0.9 * 1, turn 1 its own 1.
  auto lines = exported(run);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["turn"], 0);
  EXPECT_EQ(lines[1]["turn"], 1);
  EXPECT_EQ(lines[0]["slot"], 0);
  EXPECT_EQ(lines[1]["slot"], 0);
  EXPECT_EQ(lines[0]["verdict"]["status"], "compile_error");
  EXPECT_EQ(lines[1]["verdict"]["accepted"], true);
  EXPECT_DOUBLE_EQ(lines[0]["reward"].get<double>(), -1.0);
  EXPECT_DOUBLE_EQ(lines[1]["reward"].get<double>(), 1.0);
  EXPECT_NEAR(lines[0]["return"].get<double>(), -0.1, 1e-12);
  EXPECT_NEAR(lines[1]["return"].get<double>(), 1.0, 1e-12);
}

TEST(Loop, AnOpenAICompatibleServerDrivesTheLoopThroughItsFailures) {
  LoopRun run;
  run.config.rounds = 1;
  run.config.group = 5;
  auto cand = [](const char* f) { return read_file(fixtures_dir() / "candidates" / f); };
  const std::string good = answer_with(cand("ok_scale_add_alpha.py")), wrong = answer_with(cand("incorrect_scale_add_off_by_5pct.py"));
  policy::FakeEndpoint server([&](const httplib::Request& req, httplib::Response& res) {
    auto body = nlohmann::json::parse(req.body);
    switch (body.value("seed", int64_t(0)) % 5) {
      case 0: res.set_content(policy::completion(good), "application/json"); break;
      case 1:
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        res.set_content(policy::completion(wrong), "application/json");
        break;
      case 2: res.set_content("{\"choices\": [", "application/json"); break;
      case 3:
        res.status = 500;
        res.set_content("{\"error\": {\"message\": \"overloaded\"}}", "application/json");
        break;
      default: {
        nlohmann::json cut = {{"choices", {{{"index", 0}, {"finish_reason", "length"},
                                            {"message", {{"role", "assistant"}, {"content", good.substr(0, good.size() / 2)}}}}}}};
        res.set_content(cut.dump(), "application/json");
      }
    }
  });
  policy::OpenAIConfig cfg;
  cfg.base_url = server.base_url();
  cfg.model = "scripted-model";
  cfg.max_retries = 1;
  cfg.backoff_base_s = 0.01;
  cfg.timeout_s = 10;
  policy::OpenAIPolicy chat(cfg);
  auto out = rl::run_loop(run.tasks, chat, run.store, run.config);
  EXPECT_EQ(out[0].tried, 5);
  EXPECT_EQ(out[0].evaluated, 2);
  EXPECT_EQ(out[0].correct, 1);
  std::map<std::string, int> outcomes;
  double advantages = 0;
  for (auto& x : run.store.run_samples("test")) {
    outcomes[x.outcome + (x.status.empty() ? "" : "/" + x.status)]++;
    advantages += x.advantage;
    EXPECT_EQ(x.policy, "openai:scripted-model");
  }
  EXPECT_EQ(outcomes, (std::map<std::string, int>{{"ok/ok", 1}, {"ok/incorrect", 1}, {"policy_error", 2}, {"truncated", 1}}));
  // Each failed answer carries the server's words, and so does the summary's tally.
  std::string errors;
  for (auto& x : run.store.run_samples("test"))
    if (x.outcome == "policy_error") errors += x.error + "\n";
  EXPECT_NE(errors.find("HTTP 500 from " + server.base_url() + "/chat/completions: overloaded"), std::string::npos) << errors;
  EXPECT_NE(errors.find("HTTP 200 from " + server.base_url() + "/chat/completions: the server's answer is not a JSON object"),
            std::string::npos) << errors;
  EXPECT_EQ(out[0].failures.size(), 2u) << out[0].failures.dump();
  EXPECT_NEAR(advantages, 0.0, 1e-9);
  EXPECT_GE(server.requests(), 6);  // the server error was retried
}
#endif
