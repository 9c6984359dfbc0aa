// The OpenAI-compatible policy against a fake chat completions server on 127.0.0.1: what it
// sends, what it reads back, and how it bounds, retries and gives up without throwing.
#include "policy/openai_policy.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "core/error.h"
#include "policy/fake_chat_server.h"

namespace cudal1::policy {
namespace {

using nlohmann::json;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}


OpenAIConfig config_for(const FakeEndpoint& server) {
  OpenAIConfig c;
  c.base_url = server.base_url();
  c.model = "test-model";
  c.backoff_base_s = 0.01;
  c.timeout_s = 5;
  return c;
}

PolicyRequest request_for(int count, uint64_t seed = 0) {
  PolicyRequest r;
  r.prompt = "make it fast";
  r.count = count;
  r.seed = seed;
  return r;
}

TEST(OpenAIPolicy, SendsTheChatRequestAndReadsContentFinishReasonAndUsage) {
  std::mutex m;
  std::vector<json> bodies;
  std::vector<std::string> authorizations;
  FakeEndpoint server([&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(m);
    bodies.push_back(json::parse(req.body));
    authorizations.push_back(req.get_header_value("Authorization"));
    res.set_content(completion("the answer"), "application/json");
  });
  OpenAIConfig c = config_for(server);
  c.base_url += "/";  // a trailing slash must not double up
  c.api_key = "sk-test";
  c.system_prompt = "You write CUDA.";
  c.top_p = 0.95;
  OpenAIPolicy policy(c);
  EXPECT_EQ(policy.name(), "openai:test-model");

  std::vector<PolicyAnswer> answers = policy.answer(request_for(3, 7));
  ASSERT_EQ(answers.size(), 3u);
  for (const PolicyAnswer& a : answers) {
    EXPECT_EQ(a.error, "");
    EXPECT_EQ(a.text, "the answer") << "reasoning_content is not the answer";
    EXPECT_EQ(a.finish_reason, "stop");
    EXPECT_EQ(a.prompt_tokens, 11u);
    EXPECT_EQ(a.completion_tokens, 22u);
    EXPECT_EQ(a.label, "test-model");
  }
  ASSERT_EQ(bodies.size(), 3u);
  std::set<uint64_t> seeds;
  for (const json& b : bodies) {
    EXPECT_EQ(b["model"], "test-model");
    EXPECT_EQ(b["n"], 1);
    EXPECT_EQ(b["max_tokens"], 8192);
    EXPECT_DOUBLE_EQ(b["temperature"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(b["top_p"].get<double>(), 0.95);
    ASSERT_EQ(b["messages"].size(), 2u);
    EXPECT_EQ(b["messages"][0], (json{{"role", "system"}, {"content", "You write CUDA."}}));
    EXPECT_EQ(b["messages"][1], (json{{"role", "user"}, {"content", "make it fast"}}));
    seeds.insert(b["seed"].get<uint64_t>());
  }
  EXPECT_EQ(seeds, (std::set<uint64_t>{7, 8, 9}));
  for (const std::string& auth : authorizations) EXPECT_EQ(auth, "Bearer sk-test");
  TokenAccounting t = policy.accounting();
  EXPECT_EQ(t.prompt_tokens, 33u);
  EXPECT_EQ(t.completion_tokens, 66u);
  EXPECT_EQ(t.requests, 3u);
  EXPECT_EQ(t.failures, 0u);
}

TEST(OpenAIPolicy, WithoutUsageTokensAreZeroAndWithoutKeyNoAuthorizationIsSent) {
  std::atomic<bool> saw_authorization{false};
  FakeEndpoint server([&](const httplib::Request& req, httplib::Response& res) {
    saw_authorization = req.has_header("Authorization");
    json body = json::parse(completion("x"));
    body.erase("usage");
    res.set_content(body.dump(), "application/json");
  });
  OpenAIPolicy policy(config_for(server));
  std::vector<PolicyAnswer> answers = policy.answer(request_for(1));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].error, "");
  EXPECT_EQ(answers[0].prompt_tokens + answers[0].completion_tokens, 0u);
  EXPECT_FALSE(saw_authorization);
}

TEST(OpenAIPolicy, NeverHasMoreRequestsInFlightThanMaxConcurrency) {
  std::atomic<int> in_flight{0}, most{0};
  FakeEndpoint server([&](const httplib::Request&, httplib::Response& res) {
    int now = ++in_flight;
    for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    --in_flight;
    res.set_content(completion("x"), "application/json");
  });
  OpenAIConfig c = config_for(server);
  c.max_concurrency = 2;
  OpenAIPolicy policy(c);
  std::vector<PolicyAnswer> answers = policy.answer(request_for(6));
  ASSERT_EQ(answers.size(), 6u);
  for (const PolicyAnswer& a : answers) EXPECT_EQ(a.error, "");
  EXPECT_EQ(server.requests(), 6);
  EXPECT_EQ(most, 2) << "at most 2 at once, and requests do overlap";

  // The bound is the policy's, not one call's: the loop may ask for several tasks at once.
  most = 0;
  std::vector<PolicyAnswer> other;
  std::thread beside([&] { other = policy.answer(request_for(3)); });
  answers = policy.answer(request_for(3));
  beside.join();
  EXPECT_EQ(answers.size() + other.size(), 6u);
  EXPECT_EQ(most, 2);
}

TEST(OpenAIPolicy, RetriesA429AfterItsRetryAfterDelay) {
  std::atomic<int> calls{0};
  FakeEndpoint server([&](const httplib::Request&, httplib::Response& res) {
    if (calls++ == 0) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content(R"({"error": {"message": "slow down"}})", "application/json");
    } else {
      res.set_content(completion("after the wait"), "application/json");
    }
  });
  OpenAIPolicy policy(config_for(server));
  auto started = std::chrono::steady_clock::now();
  std::vector<PolicyAnswer> answers = policy.answer(request_for(1));
  EXPECT_GE(seconds_since(started), 0.95) << "Retry-After: 1 wins over the 0.01 s backoff";
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].error, "");
  EXPECT_EQ(answers[0].text, "after the wait");
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(policy.accounting().requests, 2u);
}

TEST(OpenAIPolicy, ServerErrorsAreRetriedThenReportedInTheAnswer) {
  FakeEndpoint server([&](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content(R"({"object": "error", "message": "engine overloaded"})", "application/json");
  });
  OpenAIConfig c = config_for(server);
  c.max_retries = 2;
  OpenAIPolicy policy(c);
  std::vector<PolicyAnswer> answers = policy.answer(request_for(1));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_NE(answers[0].error.find("gave up after 3 attempts"), std::string::npos) << answers[0].error;
  EXPECT_NE(answers[0].error.find("HTTP 503"), std::string::npos) << answers[0].error;
  EXPECT_NE(answers[0].error.find("engine overloaded"), std::string::npos) << answers[0].error;
  EXPECT_EQ(answers[0].label, "test-model");
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(policy.accounting().failures, 1u);
}

TEST(OpenAIPolicy, AClientErrorIsNotRetriedAndCarriesTheServerMessage) {
  FakeEndpoint server([&](const httplib::Request&, httplib::Response& res) {
    res.status = 400;
    res.set_content(R"({"error": {"message": "The model `nope` does not exist."}})", "application/json");
  });
  OpenAIPolicy policy(config_for(server));
  std::vector<PolicyAnswer> answers = policy.answer(request_for(1));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_NE(answers[0].error.find("HTTP 400"), std::string::npos) << answers[0].error;
  EXPECT_NE(answers[0].error.find("`nope` does not exist"), std::string::npos) << answers[0].error;
  EXPECT_EQ(server.requests(), 1);
  EXPECT_EQ(policy.accounting().failures, 1u);
}

TEST(OpenAIPolicy, ASilentServerTimesOutIntoAnErrorAnswer) {
  std::atomic<FakeEndpoint*> self{nullptr};
  FakeEndpoint server([&](const httplib::Request&, httplib::Response&) { self.load()->hold(); });
  self = &server;
  OpenAIConfig c = config_for(server);
  c.timeout_s = 0.3;
  c.max_retries = 1;
  auto started = std::chrono::steady_clock::now();
  std::vector<PolicyAnswer> answers = OpenAIPolicy(c).answer(request_for(1));
  EXPECT_LT(seconds_since(started), 3.0);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_NE(answers[0].error.find("within 0.3 s"), std::string::npos) << answers[0].error;
  EXPECT_EQ(server.requests(), 2) << "a timeout is retried";
}

TEST(OpenAIPolicy, AnUnreachableServerIsAnErrorAnswer) {
  OpenAIConfig c;
  {
    FakeEndpoint gone([](const httplib::Request&, httplib::Response&) {});
    c = config_for(gone);
  }
  c.max_retries = 1;
  std::vector<PolicyAnswer> answers = OpenAIPolicy(c).answer(request_for(2));
  ASSERT_EQ(answers.size(), 2u);
  for (const PolicyAnswer& a : answers) EXPECT_NE(a.error.find("gave up after 2 attempts"), std::string::npos) << a.error;
}

TEST(OpenAIPolicy, MalformedOrEmptyAnswersBecomeErrorAnswers) {
  std::mutex m;
  std::string reply;
  FakeEndpoint server([&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(m);
    res.set_content(reply, "application/json");
  });
  OpenAIPolicy policy(config_for(server));
  auto error_for = [&](const std::string& body) {
    { std::lock_guard lock(m); reply = body; }
    std::vector<PolicyAnswer> answers = policy.answer(request_for(1));
    return answers.size() == 1 ? answers[0] : PolicyAnswer{};
  };
  EXPECT_NE(error_for("<html>bad gateway</html>").error.find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_for(R"({"choices": []})").error.find("no choices"), std::string::npos);
  // A reasoning model that spent every token thinking: no content, but the tokens were spent.
  PolicyAnswer no_content = error_for(
      R"({"choices": [{"message": {"content": null, "reasoning_content": "hmm"}, "finish_reason": "length"}],
          "usage": {"prompt_tokens": 5, "completion_tokens": 8192}})");
  EXPECT_NE(no_content.error.find("no choices[0].message.content (finish_reason length)"), std::string::npos)
      << no_content.error;
  EXPECT_EQ(no_content.completion_tokens, 8192u);
  EXPECT_EQ(server.requests(), 3) << "a malformed answer is not retried";
  EXPECT_EQ(policy.accounting().failures, 3u);
}

TEST(OpenAIPolicy, StopsSendingTheSeedToAServerThatRefusesIt) {
  FakeEndpoint server([&](const httplib::Request& req, httplib::Response& res) {
    if (json::parse(req.body).contains("seed")) {
      res.status = 400;
      res.set_content(R"({"error": "unknown field: seed"})", "application/json");
    } else {
      res.set_content(completion("unseeded"), "application/json");
    }
  });
  OpenAIConfig c = config_for(server);
  c.max_retries = 0;
  OpenAIPolicy policy(c);
  std::vector<PolicyAnswer> first = policy.answer(request_for(1)), second = policy.answer(request_for(1));
  EXPECT_EQ(first.at(0).text, "unseeded") << first.at(0).error;
  EXPECT_EQ(second.at(0).text, "unseeded") << second.at(0).error;
  EXPECT_EQ(server.requests(), 3) << "the seed is refused once, then left out";
}

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(OpenAIPolicy, ConfigFromEnvironmentNeedsAUrlAndAModel) {
  ScopedEnv a("CUDAL1_OPENAI_BASE_URL", nullptr), b("OPENAI_BASE_URL", nullptr), c("CUDAL1_OPENAI_MODEL", nullptr),
      d("OPENAI_MODEL", "generic-model"), e("OPENAI_API_KEY", nullptr);
  try {
    openai_config_from_env();
    FAIL() << "no base URL was set";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::usage);
    EXPECT_NE(err.message().find("base URL"), std::string::npos) << err.message();
    EXPECT_NE(err.hint().find("CUDAL1_OPENAI_BASE_URL"), std::string::npos);
    EXPECT_NE(err.hint().find("CUDAL1_OPENAI_MODEL"), std::string::npos);
  }
  ScopedEnv f("OPENAI_BASE_URL", "http://generic:8000/v1"), g("CUDAL1_OPENAI_MODEL", "cudal1-model");
  OpenAIConfig config = openai_config_from_env();
  EXPECT_EQ(config.base_url, "http://generic:8000/v1");
  EXPECT_EQ(config.model, "cudal1-model") << "the CUDAL1_ variable wins";
  EXPECT_EQ(config.api_key, "");
}

TEST(OpenAIPolicy, UnusableConfigurationsAreUsageErrors) {
  auto kind_for = [](OpenAIConfig c) {
    try {
      OpenAIPolicy policy(c);
      return std::string("accepted");
    } catch (const Error& e) {
      return std::string(error_kind_name(e.kind()));
    }
  };
  OpenAIConfig good;
  good.base_url = "http://localhost:8000/v1";
  good.model = "m";
  EXPECT_EQ(kind_for(good), "accepted");
  OpenAIConfig c = good;
  c.base_url = "ftp://localhost/v1";
  EXPECT_EQ(kind_for(c), "usage");
  c = good;
  c.model = "";
  EXPECT_EQ(kind_for(c), "usage");
  c = good;
  c.max_concurrency = 0;
  EXPECT_EQ(kind_for(c), "usage");
  c = good;
  c.base_url = "https://api.example.com/v1";
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  EXPECT_EQ(kind_for(c), "accepted");
#else
  EXPECT_EQ(kind_for(c), "usage");
#endif
}

}  // namespace
}  // namespace cudal1::policy

namespace cudal1::policy {
namespace {

// optimize --turns: a request with a history is the chat so far (prompt, answer, feedback, ...),
// and answer_each sends several such requests, each its own conversation, in order of the requests.
TEST(OpenAIPolicy, AHistoryIsSentAsTheConversationAndEachRequestGetsItsOwn) {
  std::mutex m;
  std::vector<json> conversations;
  FakeEndpoint server([&](const httplib::Request& req, httplib::Response& res) {
    json messages = json::parse(req.body)["messages"];
    {
      std::lock_guard lock(m);
      conversations.push_back(messages);
    }
    res.set_content(completion("revision after " + std::to_string(messages.size()) + " messages"), "application/json");
  });
  OpenAIPolicy policy(config_for(server));
  PolicyRequest first = request_for(1), second = request_for(1);
  second.history = {{"answer one", "m", "it did not compile", false, std::nullopt},
                    {"answer two", "m", "0.90x, slower than 1.20x", true, 0.9}};
  auto answers = policy.answer_each({first, second});
  ASSERT_EQ(answers.size(), 2u);
  ASSERT_EQ(answers[0].size(), 1u);
  ASSERT_EQ(answers[1].size(), 1u);
  EXPECT_EQ(answers[0][0].text, "revision after 1 messages");
  EXPECT_EQ(answers[1][0].text, "revision after 5 messages");
  ASSERT_EQ(conversations.size(), 2u);
  const json& chat = conversations[0].size() == 5 ? conversations[0] : conversations[1];
  std::vector<std::pair<std::string, std::string>> seen;
  for (auto& msg : chat) seen.push_back({msg["role"], msg["content"]});
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::string>>{{"user", "make it fast"},
                                                                    {"assistant", "answer one"},
                                                                    {"user", "it did not compile"},
                                                                    {"assistant", "answer two"},
                                                                    {"user", "0.90x, slower than 1.20x"}}));
}

}  // namespace
}  // namespace cudal1::policy
