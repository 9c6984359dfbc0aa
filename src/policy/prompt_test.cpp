// Prompts from the bundled templates: what each kind shows, and how the budget shortens them.
#include "policy/prompt.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"

namespace cudal1::policy {
namespace {

const PromptTemplates& bundled() {
  static PromptTemplates t = PromptTemplates::load(bundled_prompts_dir());
  return t;
}

std::string code_of(int lines, const std::string& tag) {
  std::string s = "import torch\n# a comment about " + tag + "\n\nclass ModelNew(torch.nn.Module):\n";
  for (int i = 0; i < lines; ++i) s += "    x_" + std::to_string(i) + " = " + tag + "  # step\n";
  return s;
}

TEST(Prompt, FirstRoundShowsTheReferenceAndTheAnswerFormat) {
  BuiltPrompt p = build_prompt(bundled(), {"level1/gemm", "an NVIDIA H200", "class Model: pass\n", {}});
  EXPECT_NE(p.text.find("class Model: pass"), std::string::npos);
  EXPECT_NE(p.text.find("## Code Implementation"), std::string::npos);
  EXPECT_NE(p.text.find("No caching"), std::string::npos);
  EXPECT_EQ(p.text.find("Earlier versions"), std::string::npos);
  EXPECT_EQ(p.text.find("{{"), std::string::npos) << "a placeholder was left unfilled";
  EXPECT_EQ(p.exemplars_shown, 0u);
}

TEST(Prompt, ContrastiveShowsExemplarsFastestFirstWithScores) {
  BuiltPrompt p = build_prompt(bundled(), {"t", "cpu", "class Model: pass\n",
                                           {{code_of(3, "SLOW"), 0.8}, {code_of(3, "FAST"), 2.5}}});
  ASSERT_EQ(p.exemplars_shown, 2u);
  std::size_t fast = p.text.find("Version 1: speedup 2.50x"), slow = p.text.find("Version 2: speedup 0.80x");
  ASSERT_NE(fast, std::string::npos) << p.text;
  ASSERT_NE(slow, std::string::npos);
  EXPECT_LT(p.text.find("FAST"), p.text.find("SLOW"));
  EXPECT_EQ(p.text.find("{{"), std::string::npos);
  EXPECT_EQ(p.exemplars_shortened, 0u);
}

TEST(Prompt, BudgetShortensExemplarsNeverTheReference) {
  std::string reference = "class Model:\n    # the reference keeps its comments\n    pass\n";
  PromptRequest req{"t", "cpu", reference, {{code_of(400, "A"), 1.5}, {code_of(400, "B"), 1.2}}};
  auto words = [](const std::string& s) {  // a deterministic stand-in tokenizer: lines
    return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
  };
  BuiltPrompt full = build_prompt(bundled(), req, {100000, words});
  EXPECT_EQ(full.exemplars_shortened, 0u);
  BuiltPrompt fit = build_prompt(bundled(), req, {300, words});
  EXPECT_LE(fit.tokens, 300u);
  EXPECT_FALSE(fit.over_budget);
  EXPECT_EQ(fit.exemplars_shown, 2u);
  EXPECT_EQ(fit.exemplars_shortened, 2u);
  EXPECT_NE(fit.text.find("lines omitted"), std::string::npos);
  EXPECT_EQ(fit.text.find("a comment about A"), std::string::npos) << "comments go first";
  EXPECT_NE(fit.text.find("# the reference keeps its comments"), std::string::npos);
  // Too small for both at their shortest: the slower one goes.
  BuiltPrompt one = build_prompt(bundled(), req, {75, words});
  EXPECT_EQ(one.exemplars_shown, 1u);
  EXPECT_NE(one.text.find("x_0 = A"), std::string::npos);
  EXPECT_EQ(one.text.find("x_0 = B"), std::string::npos);
  // Not even the reference fits: said so, nothing of the reference cut.
  BuiltPrompt none = build_prompt(bundled(), req, {5, words});
  EXPECT_TRUE(none.over_budget);
  EXPECT_EQ(none.exemplars_shown, 0u);
  EXPECT_NE(none.text.find("# the reference keeps its comments"), std::string::npos);
}

TEST(Prompt, MissingTemplateIsAnInputError) {
  try {
    PromptTemplates::load("/nonexistent/prompts");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(e.message().find("first_round.md"), std::string::npos);
  }
}

}  // namespace
}  // namespace cudal1::policy
