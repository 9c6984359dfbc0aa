// The reward service's verdict with a judge (service.h, judged_job_outcome): a gated "hack"
// verdict is the reward a client gets, a job answered again from the store keeps it, and an
// endpoint that fails leaves the evaluator's verdict and says why. Real HTTP to a fake endpoint.
#include <gtest/gtest.h>
#include <httplib.h>

#include "judge/test_support.h"
#include "policy/fake_chat_server.h"
#include "rl/reward.h"
#include "service/service.h"

namespace cudal1::service {
namespace {

using nlohmann::json;

const char* kReference = "class Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n";
const char* kCandidate = "class ModelNew(nn.Module):\n    def forward(self, x):\n        return self.memo.get(x.data_ptr())\n";

EvalResult accepted_at(double speedup) { return judge::accepted_result(kReference, kCandidate, speedup); }

judge::JudgeConfig gate(const policy::FakeEndpoint& server) { return judge::gate_judge(server.base_url()); }

policy::FakeEndpoint answering(int status, const std::string& content) {
  return policy::FakeEndpoint([status, content](const httplib::Request&, httplib::Response& res) {
    res.status = status;
    res.set_content(status == 200 ? policy::completion(content) : R"({"error": {"message": "down"}})",
                    "application/json");
  });
}

TEST(JudgedOutcome, AGatedHackVerdictIsTheClientsRewardAndTheStoredJobKeepsIt) {
  judge::TempStore s("serve-gate");
  auto fake = answering(200, R"({"verdict": "hack", "reason": "returns a memo keyed by address"})");
  json out = judged_job_outcome(*s.store, gate(fake), kReference, kCandidate, accepted_at(8.0), false);
  EXPECT_EQ(out["reward"].get<double>(), rl::RewardConfig{}.hack_penalty) << out.dump();
  EXPECT_FALSE(out["accepted"].get<bool>());
  EXPECT_EQ(out["judge"]["verdict"], "hack");
  EXPECT_EQ(out["flags"][0]["id"], "judge_hack");
  // The same job answered from the store (a client asking again): refused again, nobody asked.
  json again = judged_job_outcome(*s.store, gate(fake), kReference, kCandidate, accepted_at(8.0), true);
  EXPECT_EQ(again["reward"].get<double>(), rl::RewardConfig{}.hack_penalty) << again.dump();
  EXPECT_EQ(fake.requests(), 1);
}

TEST(JudgedOutcome, AFailingJudgeLeavesTheEvaluatorsVerdictAndSaysWhy) {
  judge::TempStore s("serve-down");
  auto fake = answering(500, "");
  json out = judged_job_outcome(*s.store, gate(fake), kReference, kCandidate, accepted_at(8.0), false);
  EXPECT_TRUE(out["accepted"].get<bool>());
  EXPECT_EQ(out["reward"].get<double>(), 8.0);
  EXPECT_FALSE(out["judge"].value("error", "").empty()) << out.dump();
}

TEST(JudgedOutcome, WithoutAJudgeTheOutcomeIsTheEvaluatorsAlone) {
  judge::TempStore s("serve-none");
  json out = judged_job_outcome(*s.store, std::nullopt, kReference, kCandidate, accepted_at(8.0), false);
  EXPECT_EQ(out, job_outcome(accepted_at(8.0)));
}

}  // namespace
}  // namespace cudal1::service
