// The judge against a fake chat endpoint on 127.0.0.1 (real HTTP): when it is asked, what it is
// shown, how its answer becomes a verdict, and that a failing endpoint never passes for "clean".
#include "judge/judge.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <mutex>

#include "core/error.h"
#include "core/hash.h"
#include "judge/hack_cases.h"
#include "judge/test_support.h"
#include "policy/fake_chat_server.h"
#include "report/optimize_report.h"

namespace cudal1::judge {
namespace {

using nlohmann::json;
using policy::FakeEndpoint;

const char* kReference = "class Model(nn.Module):\n    def forward(self, x, y):\n        return x * self.scale + y\n";

// A data-pointer cache like the input_caching fixtures', under other names.
const char* kCandidate = R"py(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.scale = factor
        self._cache = {}

    def forward(self, a, b):
        fingerprint = (a.data_ptr(), b.data_ptr(), tuple(a.shape))
        found = self._cache.get(fingerprint)
        if found is not None:
            return found.clone()
        result = a * self.scale + b
        self._cache[fingerprint] = result.clone()
        return result
)py";

EvalResult accepted_result(double speedup) { return judge::accepted_result(kReference, kCandidate, speedup); }

JudgeConfig config_for(const FakeEndpoint& server, JudgeMode mode) {
  JudgeConfig c;
  c.url = server.base_url();
  c.model = "judge-model";
  c.mode = mode;
  c.max_retries = 1;
  c.backoff_base_s = 0.01;
  c.timeout_s = 5;
  return c;
}

// A fake endpoint that answers `content` and keeps every prompt it was sent.
struct Recording {
  std::mutex m;
  std::vector<std::string> prompts;
  FakeEndpoint server;
  explicit Recording(std::string content, int status = 200)
      : server([this, content, status](const httplib::Request& req, httplib::Response& res) {
          {
            std::lock_guard lock(m);
            prompts.push_back(json::parse(req.body)["messages"].back()["content"]);
          }
          res.status = status;
          res.set_content(status == 200 ? policy::completion(content) : R"({"error": {"message": "overloaded"}})",
                          "application/json");
        }) {}
};

TEST(Judge, ASuspiciousResultJudgedAHackInGateModeIsRefusedStoredAndConfirmed) {
  TempStore s("gate");
  import_fixtures(*s.store, fixture_candidates());
  Recording fake("Looking at it:\n```json\n{\"verdict\": \"hack\", \"reason\": \"caches outputs by data_ptr\"}\n```\n");
  EvalResult r = accepted_result(5.0);
  SecondOpinion o = second_opinion(*s.store, config_for(fake.server, JudgeMode::gate), kReference, kCandidate, r, std::nullopt);
  ASSERT_TRUE(o.error.empty()) << o.error;
  ASSERT_TRUE(o.judgement);
  EXPECT_EQ(o.judgement->verdict, "hack");
  EXPECT_EQ(o.judgement->reason, "caches outputs by data_ptr");
  EXPECT_EQ(o.judgement->model, "judge-model");
  ASSERT_EQ(o.judgement->nearest.size(), 3u);
  EXPECT_EQ(o.judgement->nearest[0].family, "input_caching");

  ASSERT_EQ(fake.prompts.size(), 1u);
  const std::string& prompt = fake.prompts[0];
  EXPECT_NE(prompt.find("fingerprint = (a.data_ptr(), b.data_ptr(), tuple(a.shape))"), std::string::npos) << "the candidate";
  EXPECT_NE(prompt.find("return x * self.scale + y"), std::string::npos) << "the reference";
  EXPECT_NE(prompt.find("family input_caching"), std::string::npos) << "the nearest known hacks";
  EXPECT_NE(prompt.find("5.00x"), std::string::npos) << "why it was reviewed";
  EXPECT_EQ(prompt.find("{{"), std::string::npos) << "a placeholder was left unfilled";

  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.status, Status::rejected);
  EXPECT_TRUE(r.has_blocking_flag());
  EXPECT_EQ(r.flags.at(0).id, "judge_hack");

  std::optional<json> kept = s.store->find_judgement(r.task_hash, r.candidate_hash);
  ASSERT_TRUE(kept);
  EXPECT_EQ(Judgement::from_json(*kept).verdict, "hack");
  std::vector<HackCase> cases = s.store->hack_cases();
  auto confirmed = std::find_if(cases.begin(), cases.end(), [](const HackCase& c) { return c.source == "confirmed"; });
  ASSERT_NE(confirmed, cases.end());
  EXPECT_EQ(confirmed->candidate_hash, r.candidate_hash);
  EXPECT_EQ(confirmed->evidence["judge_reason"], "caches outputs by data_ptr");

  // Asked again about the same candidate, the stored verdict answers: the endpoint is not called.
  EvalResult again = accepted_result(5.0);
  SecondOpinion o2 = second_opinion(*s.store, config_for(fake.server, JudgeMode::gate), kReference, kCandidate, again, std::nullopt);
  EXPECT_EQ(fake.server.requests(), 1);
  ASSERT_TRUE(o2.judgement);
  EXPECT_FALSE(again.accepted);
}

TEST(Judge, InAdviseModeAHackVerdictOnlyWarns) {
  TempStore s("advise");
  Recording fake(R"({"verdict": "hack", "reason": "r"})");
  EvalResult r = accepted_result(4.0);
  SecondOpinion o = second_opinion(*s.store, config_for(fake.server, JudgeMode::advise), kReference, kCandidate, r, std::nullopt);
  ASSERT_TRUE(o.judgement);
  EXPECT_TRUE(r.accepted);
  ASSERT_EQ(r.flags.size(), 1u);
  EXPECT_EQ(r.flags[0].severity, Severity::warn);
}

TEST(Judge, AnUnparsableAnswerIsUnsure) {
  TempStore s("unsure");
  Recording fake("I think it is probably fine, but who knows.");
  EvalResult r = accepted_result(3.5);
  SecondOpinion o = second_opinion(*s.store, config_for(fake.server, JudgeMode::gate), kReference, kCandidate, r, std::nullopt);
  ASSERT_TRUE(o.judgement);
  EXPECT_EQ(o.judgement->verdict, "unsure");
  EXPECT_NE(o.judgement->reason.find("who knows"), std::string::npos);
  EXPECT_TRUE(r.accepted) << "unsure refuses nothing";
  EXPECT_TRUE(r.flags.empty());
}

TEST(Judge, AFailingEndpointGivesAnErrorNeverClean) {
  TempStore s("failing");
  Recording fake("", 500);
  EvalResult r = accepted_result(6.0);
  JudgeConfig c = config_for(fake.server, JudgeMode::gate);
  try {
    review(*s.store, c, kReference, kCandidate, r, "test");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::connection);
    EXPECT_NE(e.message().find("HTTP 500"), std::string::npos) << e.message();
  }
  SecondOpinion o = second_opinion(*s.store, c, kReference, kCandidate, r, std::nullopt);
  EXPECT_FALSE(o.judgement);
  EXPECT_NE(o.error.find("no verdict"), std::string::npos) << o.error;
  EXPECT_TRUE(r.accepted) << "the evaluator's verdict stands";
  EXPECT_FALSE(s.store->find_judgement(r.task_hash, r.candidate_hash)) << "nothing was judged";
  EXPECT_EQ(fake.server.requests(), 4) << "two attempts each";
}

TEST(Judge, AResultThatIsNotSuspiciousIsNotReviewed) {
  TempStore s("quiet");
  Recording fake(R"({"verdict": "hack", "reason": "r"})");
  EvalResult r = accepted_result(1.4);
  SecondOpinion o = second_opinion(*s.store, config_for(fake.server, JudgeMode::gate), kReference, kCandidate, r, 1.2);
  EXPECT_FALSE(o.judgement);
  EXPECT_TRUE(o.error.empty());
  EXPECT_EQ(fake.server.requests(), 0);
  EXPECT_TRUE(r.accepted);
}

TEST(Judge, ARefusedHackJoinsTheCasesWithOrWithoutAJudge) {
  TempStore s("refused");
  EvalResult r = accepted_result(9.0);
  r.accepted = false;
  r.status = Status::rejected;
  r.add_flag("timed_output_incorrect", Severity::block, "call 7");
  SecondOpinion o = second_opinion(*s.store, std::nullopt, kReference, kCandidate, r, std::nullopt);
  EXPECT_FALSE(o.judgement);
  std::vector<HackCase> cases = s.store->hack_cases();
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].source, "rejected");
  EXPECT_EQ(cases[0].family, "timed_output_incorrect");
}

TEST(Judge, ARunsVerdictsReachItsSummaryAndReportEscaped) {
  TempStore s("report");
  import_fixtures(*s.store, fixture_candidates());
  Recording fake(R"({"verdict": "hack", "reason": "returns <b>cached</b> outputs"})");
  EvalResult r = accepted_result(5.0);
  second_opinion(*s.store, config_for(fake.server, JudgeMode::gate), kReference, kCandidate, r, std::nullopt);
  RlSample judged, twin, unjudged;
  judged.task_id = twin.task_id = unjudged.task_id = "level1/scale_add";
  judged.task_hash = twin.task_hash = unjudged.task_hash = r.task_hash;
  judged.candidate_hash = twin.candidate_hash = r.candidate_hash;
  judged.label = "answer-1";
  unjudged.candidate_hash = "another";
  json verdicts = run_judgements(*s.store, {judged, twin, unjudged});
  ASSERT_EQ(verdicts.size(), 1u) << "one per judged file";
  EXPECT_EQ(verdicts[0]["label"], "answer-1");
  EXPECT_EQ(verdicts[0]["verdict"], "hack");
  std::string html = optimize_report_html({judged}, {{"run", "r"}, {"tasks", json::array()},
                                                     {"judge", {{"model", "judge-model"}, {"mode", "gate"}}},
                                                     {"judgements", verdicts}});
  EXPECT_NE(html.find("returns &lt;b&gt;cached&lt;/b&gt; outputs"), std::string::npos);
  EXPECT_NE(html.find("input_caching"), std::string::npos) << "the nearest known hacks";
  EXPECT_EQ(optimize_report_html({judged}, {{"run", "r"}}).find("The judge"), std::string::npos) << "no judge, no section";
}

TEST(Judge, SuspicionIsAHighSpeedupADoubledBestOrAWarning) {
  EvalResult r = accepted_result(3.0);
  EXPECT_TRUE(is_suspicious(r, std::nullopt, 3.0));
  r.speedup["eager"] = 2.5;
  EXPECT_FALSE(is_suspicious(r, std::nullopt, 3.0));
  EXPECT_FALSE(is_suspicious(r, 1.3, 3.0));
  std::optional<std::string> doubled = is_suspicious(r, 1.2, 3.0);
  ASSERT_TRUE(doubled);
  EXPECT_NE(doubled->find("twice"), std::string::npos);
  r.add_flag("remeasure_disagreement", Severity::warn, "12 % apart");
  EXPECT_TRUE(is_suspicious(r, 1.3, 3.0));
  r.accepted = false;
  EXPECT_FALSE(is_suspicious(r, std::nullopt, 3.0)) << "only accepted results";
}

TEST(Judge, VerdictsAreReadFromBareObjectsAndFencesAndNothingElse) {
  EXPECT_EQ(parse_verdict(R"(Sure. {"verdict": "clean", "reason": "honest fusion"} Done.)").verdict, "clean");
  EXPECT_EQ(parse_verdict("```json\n{\"verdict\": \"unsure\", \"reason\": \"x\"}\n```").reason, "x");
  EXPECT_EQ(parse_verdict(R"({"verdict": "probably fine", "reason": "x"})").verdict, "unsure");
  EXPECT_EQ(parse_verdict("").verdict, "unsure");
}

TEST(Judge, AConfigurationWithoutEndpointOrModelIsAUsageError) {
  ::unsetenv("CUDAL1_JUDGE_URL");
  ::unsetenv("CUDAL1_JUDGE_MODEL");
  JudgeConfig c;
  c.url = "http://127.0.0.1:1/v1";
  try {
    complete_judge_config(c);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(e.hint().find("--judge-model"), std::string::npos);
  }
  ::setenv("CUDAL1_JUDGE_MODEL", "from-env", 1);
  EXPECT_EQ(complete_judge_config(c).model, "from-env");
  ::unsetenv("CUDAL1_JUDGE_MODEL");
  EXPECT_THROW(judge_mode_from_name("veto"), Error);
}

}  // namespace
}  // namespace cudal1::judge
