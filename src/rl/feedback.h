// rl/feedback.h — what the policy is told about its answer before it revises it (optimize
// --turns): the evaluator's verdict as a short text a model can act on. Built from the
// EvalResult's JSON (evaluator/result.h), or from why the answer has no verdict, and rendered
// through prompts/feedback.md ({{feedback}}, {{answer_format}}) like the other prompts.
//
// What it says, each only when the result has it:
// - the status, and whether the answer was accepted;
// - the error's first kFeedbackErrorLines lines (a compiler's or Python's first lines say what
//   broke; the rest is mostly a traceback's frames);
// - the mismatch summary of each failing output of the first failing case (correctness);
// - every flag with its severity and evidence;
// - the top kernels and their shares of GPU time (statistics.attribution, CUDA only);
// - the eager speedup, against the task's best so far.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/prompt.h"

namespace cudal1::rl {

inline constexpr std::size_t kFeedbackErrorLines = 15;
inline constexpr std::size_t kFeedbackTopKernels = 5;
inline constexpr std::size_t kFeedbackMismatches = 3;  // failing outputs quoted, at most

struct FeedbackInput {
  nlohmann::json result = nullptr;  // EvalResult::to_json() of the answer's evaluation; null when none
  std::string error;                // why the answer has no verdict (RlSample::error), when result is null
  std::optional<double> best;       // the task's best accepted eager speedup so far, this answer's included
};

// The facts as Markdown lines, without the template.
std::string feedback_facts(const FeedbackInput& in);

// The feedback message: templates.feedback with {{feedback}} = feedback_facts(in) and
// {{answer_format}} = templates.answer_format.
std::string render_feedback(const policy::PromptTemplates& templates, const FeedbackInput& in);

}  // namespace cudal1::rl
