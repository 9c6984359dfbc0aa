// What the policy is told about an answer before it revises it (optimize --turns), from
// constructed evaluation results: each part appears when the result has it, and only then.
#include "rl/feedback.h"

#include <gtest/gtest.h>

#include "evaluator/result.h"

using namespace cudal1;
using nlohmann::json;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(Feedback, ACompileErrorGivesItsStatusAndTheFirstLinesOfTheError) {
  EvalResult r;
  r.status = Status::compile_error;
  for (int i = 1; i <= 20; ++i) r.error += "line " + std::to_string(i) + "\n";
  std::string f = rl::feedback_facts({r.to_json(), "", std::nullopt});
  EXPECT_TRUE(has(f, "Status: compile_error (not accepted)")) << f;
  EXPECT_TRUE(has(f, "line 1\n")) << f;
  EXPECT_TRUE(has(f, "line 15\n")) << f;
  EXPECT_FALSE(has(f, "line 16")) << f;
  EXPECT_TRUE(has(f, "(5 more lines)")) << f;
  EXPECT_TRUE(has(f, "No version of the task has been accepted yet")) << f;
  EXPECT_FALSE(has(f, "Speedup")) << f;
}

TEST(Feedback, AWrongAnswerQuotesItsMismatchesAndFlagsWithEvidence) {
  EvalResult r;
  r.status = Status::incorrect;
  r.correctness = {{"passed", false},
                   {"cases", json::array({{{"case", 0}, {"passed", true}, {"outputs", json::array()}},
                                          {{"case", 1}, {"passed", false},
                                           {"outputs", json::array({{{"index", 0}, {"passed", false}, {"summary", "412 of 1024 elements differ, max abs error 0.5"}},
                                                                    {{"index", 1}, {"passed", true}}})}},
                                          {{"case", 2}, {"passed", false},
                                           {"outputs", json::array({{{"index", 0}, {"passed", false}, {"summary", "not quoted"}}})}}})}};
  r.add_flag("timing_noisy", Severity::warn, "spread 14% after 3 tries");
  std::string f = rl::feedback_facts({r.to_json(), "", 1.5});
  EXPECT_TRUE(has(f, "Status: incorrect (not accepted)")) << f;
  EXPECT_TRUE(has(f, "case 1, output 0: 412 of 1024 elements differ, max abs error 0.5")) << f;
  EXPECT_FALSE(has(f, "not quoted")) << "only the first failing case: " << f;
  EXPECT_TRUE(has(f, "timing_noisy (warn): spread 14% after 3 tries")) << f;
  EXPECT_TRUE(has(f, "The task's best so far: 1.50x")) << f;
}

TEST(Feedback, AnAcceptedAnswerGivesItsSpeedupAgainstTheBestAndItsTopKernels) {
  EvalResult r;
  r.accepted = true;
  r.speedup["eager"] = 1.25;
  r.statistics["attribution"] = {{"gpu_us", 200.0},
                                 {"top_kernels", json::array({{{"name", "my_fused_kernel"}, {"us", 150.0}, {"category", "own"}},
                                                             {{"name", "volta_sgemm"}, {"us", 50.0}, {"category", "library"}}})}};
  std::string f = rl::feedback_facts({r.to_json(), "", 2.0});
  EXPECT_TRUE(has(f, "Status: ok (accepted)")) << f;
  EXPECT_TRUE(has(f, "Speedup against eager PyTorch: 1.25x")) << f;
  EXPECT_TRUE(has(f, "The task's best so far: 2.00x")) << f;
  EXPECT_TRUE(has(f, "my_fused_kernel (own): 75%")) << f;
  EXPECT_TRUE(has(f, "volta_sgemm (library): 25%")) << f;
  EXPECT_FALSE(has(f, "Error")) << f;
}

TEST(Feedback, AnAnswerWithoutAVerdictSaysWhyAndTheTemplateIsFilled) {
  policy::PromptTemplates t;
  t.feedback = "Told:\n{{feedback}}\n\n{{answer_format}}";
  t.answer_format = "## Code Implementation";
  std::string f = rl::render_feedback(t, {nullptr, "the answer has no ## Code Implementation section", std::nullopt});
  EXPECT_EQ(f, "Told:\n- Not evaluated: the answer has no ## Code Implementation section\n"
               "- No version of the task has been accepted yet\n\n## Code Implementation");
}

TEST(Feedback, TheBundledTemplateShowsTheFactsAndTheAnswerFormat) {
  policy::PromptTemplates t = policy::PromptTemplates::load(policy::bundled_prompts_dir());
  EvalResult r;
  r.status = Status::runtime_error;
  r.error = "RuntimeError: shapes do not match";
  std::string f = rl::render_feedback(t, {r.to_json(), "", std::nullopt});
  EXPECT_TRUE(has(f, "Status: runtime_error")) << f;
  EXPECT_TRUE(has(f, "RuntimeError: shapes do not match")) << f;
  EXPECT_TRUE(has(f, "## Code Implementation")) << f;
  EXPECT_FALSE(has(f, "{{")) << f;
}
