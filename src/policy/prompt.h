// policy/prompt: the prompt a policy answers, from template files a user can copy and edit
// (the bundled ones are in prompts/). A first-round prompt shows the reference only; a
// contrastive one also shows earlier versions with their speedups. Over the token budget,
// exemplars are shortened (comments and blank lines first, then their middles elided, then the
// slowest dropped); the reference is never shortened.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>
#include <utility>

namespace cudal1::policy {

// Template files: first_round.md, contrastive.md, exemplar.md, restrictions.md, answer_format.md,
// feedback.md. Placeholders: {{task}} {{device}} {{reference}} {{exemplars}} {{restrictions}}
// {{answer_format}}; in exemplar.md {{index}} {{speedup}} {{code}}; in feedback.md (the message
// that follows an answer in optimize --turns, rl/feedback.h) {{feedback}} {{answer_format}}.
struct PromptTemplates {
  std::string first_round, contrastive, exemplar, restrictions, answer_format;
  std::string feedback;
  // Reads the files from `dir`; Error(input) naming a missing or unreadable one. feedback.md
  // came later: a folder copied before it has none, and gets the bundled one.
  static PromptTemplates load(const std::filesystem::path& dir);
};

// Replaces every {{key}} of `text` with its value; a placeholder not in `values` stays.
std::string fill_template(std::string text, const std::vector<std::pair<std::string, std::string>>& values);

// $CUDAL1_PROMPTS_DIR, else the source tree's prompts/ (the build embeds its path).
std::filesystem::path bundled_prompts_dir();

struct PromptExemplar {
  std::string code;
  double speedup = 1.0;
};

struct PromptRequest {
  std::string task, device, reference;
  std::vector<PromptExemplar> exemplars;  // empty: the first-round prompt
};

struct PromptBudget {
  std::size_t max_tokens = 12000;
  // Tokens in a text; default: bytes / 3.5, a fair guess for code under BPE tokenizers.
  std::function<std::size_t(const std::string&)> count_tokens;
};

struct BuiltPrompt {
  std::string text;
  std::size_t tokens = 0;
  std::size_t exemplars_shown = 0, exemplars_shortened = 0;
  bool over_budget = false;  // still over after every exemplar was dropped (a long reference)
};

BuiltPrompt build_prompt(const PromptTemplates& t, const PromptRequest& request, const PromptBudget& budget = {});

}  // namespace cudal1::policy
