// policy/policy.h — what a policy is: given a prompt about one task, it answers with texts, each
// meant to hold one candidate file in the three-section format that response.h parses. The loop
// (rl/) never trusts an answer: it parses it, evaluates it in a fresh process, and scores it.
//
// Policies: an OpenAI-compatible chat endpoint (openai_policy.h), the built-in rewrite policy
// that needs no model (rewrite_policy.h) and the replay policy answering from a kernel set
// (replay_policy.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/prompt.h"

namespace cudal1::policy {

struct PolicyRequest {
  std::string task_id;      // "level1/19_ReLU", a CUDA-L1 row name "level1/task19", or a file stem
  std::string task_path;    // the reference file
  std::string reference;    // its source
  std::string device;       // "cuda", "cpu", ...
  std::string prompt;       // the full prompt (prompt.h), for policies that read prompts
  // What the prompt shows, fastest first, with each one's label (PolicyAnswer::label) when the
  // policy itself wrote it: a policy may learn from them without parsing the prompt.
  std::vector<PromptExemplar> exemplars;
  std::vector<std::string> exemplar_labels;  // same length as exemplars; "" when unknown
  // The labels of every answer this run gave the task in earlier rounds, a resumed run's
  // included: a policy that must not repeat itself (replay) cannot rely on its own memory.
  std::vector<std::string> answered_labels;
  int count = 1;            // answers wanted: the group's size G
  int round = 0;
  uint64_t seed = 0;
};

struct PolicyAnswer {
  std::string text;            // the raw completion, kept whatever it holds
  std::string finish_reason;   // "stop", "length", ... as the chat API says; "" when unknown
  std::size_t prompt_tokens = 0, completion_tokens = 0;
  std::string error;           // non-empty: no answer came (the endpoint failed after retries, ...)
  std::string label;           // what the answer is for a person and for the policy's own learning:
                               // a model name, a rewrite combination "graph+channels_last", a row
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // Up to request.count answers (fewer when the policy has no more to say: a replay policy whose
  // set has one kernel for the task). Never throws for one failed answer: that answer carries
  // `error`. Throws Error for a policy that cannot work at all (no endpoint configured, ...).
  virtual std::vector<PolicyAnswer> answer(const PolicyRequest& request) = 0;
  // The longest prompt this policy can take, counted its own way (a model's tokenizer and chat
  // template), when it has such a limit: the loop fits its prompts to the smaller of this and its
  // own budget. A prompt over a model's positions is otherwise answered with errors only.
  virtual std::optional<PromptBudget> prompt_budget() const { return std::nullopt; }
};

}  // namespace cudal1::policy
