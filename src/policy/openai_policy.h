// policy/openai_policy.h — the policy that asks a language model: an OpenAI-compatible chat
// completions endpoint (POST {base_url}/chat/completions), the one API that vLLM, SGLang,
// llama.cpp's server and hosted services all speak. Each answer is its own request with `n: 1`
// (llama.cpp ignores larger n), sent a few at a time; a request with a history (optimize --turns)
// is sent as the chat it is: the prompt, then each earlier answer and the feedback on it.
// Transient failures (connection, timeout, 429, 5xx) are retried with backoff, and an answer that
// still fails carries `error` instead of stopping the loop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/policy.h"

namespace cudal1::policy {

struct OpenAIConfig {
  std::string base_url;  // "http://host:8000/v1": the path prefix is kept; https needs OpenSSL
  std::string model;
  std::string api_key;   // empty: no Authorization header (local servers need none)
  int max_concurrency = 4;      // requests in flight at once, over all answer() calls
  int max_retries = 4;          // further attempts after the first, for transient failures only
  double backoff_base_s = 1.0;  // base * 2^retry, jittered; a Retry-After header wins over it
  double timeout_s = 600;       // per request: a long completion takes minutes
  double temperature = 1.0;
  std::optional<double> top_p;  // unset: the server's default
  int max_tokens = 8192;        // <= 0: not sent, the server decides
  std::string system_prompt;    // empty: no system message
};

// base_url and model as given, else CUDAL1_OPENAI_BASE_URL (else OPENAI_BASE_URL) and
// CUDAL1_OPENAI_MODEL (else OPENAI_MODEL); OPENAI_API_KEY (optional); the rest keep their
// defaults. Error(usage) when the URL or the model is missing.
OpenAIConfig openai_config_from_env(const std::string& base_url = "", const std::string& model = "");

// Running totals over the policy's life, for cost reports and for spotting a failing endpoint.
struct TokenAccounting {
  std::size_t prompt_tokens = 0, completion_tokens = 0;
  std::size_t requests = 0;  // HTTP requests sent, retries included
  std::size_t failures = 0;  // answers that came back with `error`
};

class OpenAIPolicy : public Policy {
 public:
  // Error(usage) for a configuration that cannot work (no URL or model, a scheme other than
  // http/https, https without OpenSSL support, no concurrency).
  explicit OpenAIPolicy(OpenAIConfig config);

  std::string name() const override;  // "openai:<model>"
  std::vector<PolicyAnswer> answer(const PolicyRequest& request) override;
  // Concurrently, still at most max_concurrency requests in flight over all of them.
  std::vector<std::vector<PolicyAnswer>> answer_each(const std::vector<PolicyRequest>& requests) override;
  TokenAccounting accounting() const;
  // What to do about an answer's `error` from this policy: add /v1 to a base URL without it that
  // got 404, start a server that did not answer, else check the server and its configuration.
  std::string failure_hint(const std::string& error) const;

 private:
  // messages: the chat so far (chat_messages in the .cpp: the prompt, then each earlier turn's
  // answer and feedback of PolicyRequest::history).
  PolicyAnswer one_answer(const nlohmann::json& messages, uint64_t seed);
  PolicyAnswer attempt_until_done(const nlohmann::json& messages, uint64_t seed, std::size_t& requests_sent);

  OpenAIConfig config_;
  std::string scheme_host_port_, path_;  // base_url split for the HTTP client
  std::string api_root_;                 // base_url's path, without a trailing slash

  // Bounds requests in flight across concurrent answer() calls, not just within one.
  std::mutex slots_mutex_;
  std::condition_variable slot_freed_;
  int in_flight_ = 0;

  // Cleared when the server refuses the `seed` field, so later requests stop sending it.
  std::atomic<bool> send_seed_{true};

  mutable std::mutex accounting_mutex_;
  TokenAccounting totals_;
};

}  // namespace cudal1::policy
