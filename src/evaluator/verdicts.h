// evaluator/verdicts.h — how what the candidate worker did becomes a status, flags and an error.
// Kept apart from the orchestration so each rule can be read (and tested) on its own.
#pragma once

#include <string>
#include <vector>

#include "evaluator/result.h"
#include "evaluator/status.h"
#include "tensors/compare.h"
#include "tensors/tensor_file.h"
#include "runner/worker.h"

namespace cudal1 {

// A worker reply that is not a normal answer: its verdict (stops), else ok. A forged reply also
// flags `r`. `what` names the step ("loading the candidate", "case 3").
Verdict candidate_failure(const WorkerReply& reply, const std::string& what,
                          const std::string& stderr_tail, EvalResult& r);

// The exact checks reported for one case's outputs (plain tensor, materialised, device, aliasing,
// inputs unchanged); adds blocking flags to `r` and returns whether any check failed.
bool apply_exact_checks(const json& run_reply, int case_index, EvalResult& r);

// Compares one case's outputs with the expected ones; returns the per-case JSON record and sets
// `passed`. Flags unwritten outputs.
json check_case_values(const std::vector<TensorValue>& expected,
                       const std::vector<TensorValue>& actual, ToleranceMode mode,
                       int case_index, bool& passed, EvalResult& r);

// One output's sampled values ({dtype, numel, positions, values}) as a flat tensor.
TensorValue sampled_value(const json& sample);

// A timed call's sampled output values (per output: {dtype, numel, positions, values}, or null)
// against the reference's values at the same positions. Empty when they agree within the
// tolerance, else what differs, for a person.
std::string compare_samples(const json& candidate, const json& reference, ToleranceMode mode);

// On a degenerate task (its lint found a null kernel that passes: r.task_lint.findings), a
// speedup says nothing about the candidate, whose shortcut may be the null kernel itself (a
// cached zero buffer on a task whose output is always zero). Every speedup above 1 is credited
// as 1.00x; what was measured stays in statistics.degenerate_task_uncredited, and the
// degenerate_task flag's evidence says so.
void credit_degenerate_task(EvalResult& r);

}  // namespace cudal1
