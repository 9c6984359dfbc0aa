// trainer/model_policy.cpp — the model as the loop's policy (see model_policy.h).
#include "trainer/model_policy.h"

#include <algorithm>

namespace cudal1::trainer {

std::string model_label(const std::filesystem::path& model_dir) {
  std::filesystem::path p = model_dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

ModelPolicy::ModelPolicy(std::shared_ptr<CausalLM> model, ChatEncoder encoder, ModelPolicyOptions options)
    : model_(std::move(model)), encoder_(std::move(encoder)), options_(std::move(options)) {
  options_.sampling.stop_token_ids = encoder_.stop_token_ids();
  options_.sampling.pad_token_id = encoder_.pad_token_id();
  if (options_.max_prompt_tokens <= 0)
    options_.max_prompt_tokens = std::max<int64_t>(1, model_->config().max_position_embeddings - options_.sampling.max_new_tokens);
}

namespace {

// The request as the chat endpoint policy sends it (policy::conversation_of), so a revision sees
// what it revises and why, through the model's own template.
std::vector<tokenizer::ChatMessage> chat_messages(const policy::PolicyRequest& request) {
  std::vector<tokenizer::ChatMessage> messages;
  for (const policy::ChatTurn& t : policy::conversation_of(request)) messages.push_back({t.role, t.content});
  return messages;
}

}  // namespace

std::vector<policy::PolicyAnswer> ModelPolicy::answer(const policy::PolicyRequest& request) {
  std::vector<int64_t> prompt = encoder_.conversation(chat_messages(request));
  std::vector<policy::PolicyAnswer> answers(std::size_t(std::max(0, request.count)));
  std::vector<SampledTokens> kept;
  if (int64_t(prompt.size()) > options_.max_prompt_tokens) {
    for (auto& a : answers) {
      a.error = std::string(request.history.empty() ? "the prompt" : "the conversation") + " has " + std::to_string(prompt.size()) + " tokens, more than the " +
                std::to_string(options_.max_prompt_tokens) + " this model is sampled with";
      a.label = options_.label;
    }
    return answers;
  }
  // The group in batches of at most max_batch; each batch has its own seed so that a group's
  // samples differ and the same request gives the same ones.
  for (std::size_t first = 0; first < answers.size(); first += std::size_t(options_.max_batch)) {
    std::size_t n = std::min(answers.size() - first, std::size_t(options_.max_batch));
    SamplingOptions s = options_.sampling;
    s.seed = request.seed + first;
    std::vector<Generation> gens = generate(*model_, std::vector<std::vector<int64_t>>(n, prompt), s);
    for (std::size_t i = 0; i < n; ++i) {
      Generation& g = gens[i];
      policy::PolicyAnswer& a = answers[first + i];
      a.text = encoder_.decode_answer(g.tokens);
      a.finish_reason = finish_reason_name(g.finish);
      a.prompt_tokens = prompt.size();
      a.completion_tokens = g.tokens.size();
      a.label = options_.label;
      if (options_.keep_tokens) kept.push_back({prompt, std::move(g.tokens), std::move(g.logprobs)});
    }
  }
  if (!options_.keep_tokens) return answers;
  std::lock_guard lock(m_);
  sampled_[{request.task_id, request.round}] = std::move(kept);
  return answers;
}

std::optional<policy::PromptBudget> ModelPolicy::prompt_budget() const {
  policy::PromptBudget b;
  b.max_tokens = std::size_t(options_.max_prompt_tokens);
  b.count_tokens = [encoder = encoder_](const std::string& text) { return encoder.prompt(text).size(); };
  return b;
}

std::vector<SampledTokens> ModelPolicy::take_sampled(const std::string& task_id, int round) {
  std::lock_guard lock(m_);
  auto it = sampled_.find({task_id, round});
  if (it == sampled_.end()) return {};
  std::vector<SampledTokens> out = std::move(it->second);
  sampled_.erase(it);
  return out;
}

}  // namespace cudal1::trainer
