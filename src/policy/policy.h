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

// One earlier turn of a slot's conversation (optimize --turns): the policy's answer and the
// evaluator's feedback on it (rl/feedback.h), the message that follows the answer.
struct Turn {
  std::string answer;             // the assistant's text as it came
  std::string label;              // that answer's PolicyAnswer::label
  std::string feedback;           // the user message sent after it
  bool accepted = false;          // the answer's verdict, for policies that do not read text
  std::optional<double> speedup;  // its eager speedup, when accepted
};

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
  // The slot's conversation so far, oldest first: empty on a slot's first turn. With a history
  // the loop asks for one answer (count 1), the revision of the last one; a policy may ignore it
  // (replay) and answer as on a first turn, or answer nothing to end the slot.
  std::vector<Turn> history;
};

// A request as a chat, the way every policy that talks to a model sends it: the prompt (user),
// then each earlier turn's answer (assistant) and the feedback on it (user).
struct ChatTurn {
  std::string role, content;
};
inline std::vector<ChatTurn> conversation_of(const PolicyRequest& request) {
  std::vector<ChatTurn> turns = {{"user", request.prompt}};
  for (const Turn& t : request.history) {
    turns.push_back({"assistant", t.answer});
    turns.push_back({"user", t.feedback});
  }
  return turns;
}

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
  // answer() for each request, in order: the loop's later turns ask one request per slot, each
  // with its own conversation. One after another unless a policy can do better (the OpenAI
  // policy sends them concurrently).
  virtual std::vector<std::vector<PolicyAnswer>> answer_each(const std::vector<PolicyRequest>& requests) {
    std::vector<std::vector<PolicyAnswer>> out;
    for (auto& r : requests) out.push_back(answer(r));
    return out;
  }
  // The longest prompt this policy can take, counted its own way (a model's tokenizer and chat
  // template), when it has such a limit: the loop fits its prompts to the smaller of this and its
  // own budget. A prompt over a model's positions is otherwise answered with errors only.
  virtual std::optional<PromptBudget> prompt_budget() const { return std::nullopt; }
};

}  // namespace cudal1::policy
