// evaluator/evaluator.h — cudal1's reward function: is a candidate correct, and how much faster?
//
// One evaluation = a trusted reference worker (loads the task, draws inputs from secret seeds,
// computes expected outputs) and a disposable, unprivileged candidate worker (loads ModelNew,
// runs it on those inputs). Expected outputs never enter the candidate's process; its outputs
// come back as files that this code compares. Timing is paired and bucketed (timing.h).
#pragma once

#include <memory>

#include "evaluator/options.h"
#include "evaluator/result.h"

namespace cudal1 {

// Runs one evaluation. Throws Error only when the evaluation itself cannot run (missing files,
// a task that does not load, no Python with torch); every candidate failure is a result.
// evaluate = run_evaluation(prepare_evaluation(options)).
EvalResult evaluate(const EvalOptions& options);

// The part of an evaluation that needs no GPU: files read, private folders made, the reference
// and candidate processes started (they import torch meanwhile, touching no GPU). A queue
// prepares the next evaluations while the GPU runs the current one.
struct PreparedEvaluation;
struct PreparedDeleter {
  void operator()(PreparedEvaluation* p) const;
};
using PreparedPtr = std::unique_ptr<PreparedEvaluation, PreparedDeleter>;
PreparedPtr prepare_evaluation(const EvalOptions& options);
// The GPU part: lint (from task_facts), reference, checks, precision, timing, attribution,
// baselines.
EvalResult run_evaluation(PreparedEvaluation& prepared);

// The speedup above which a figure is timed again in a fresh candidate process: the option
// fresh_remeasure_above, or best_known_factor times the task's best known figure when lower.
double fresh_remeasure_bar(const EvalOptions& options);

// Sets options.best_known_speedup from its task_facts (the store's best accepted figure for the
// task, device and protocol), so a figure far above it is re-measured however far from 3x it is.
// Call once options.device is final. A figure already set stands: a cluster job carries the one
// its producer's store knows, which a worker's own store does not hold.
void fill_best_known_speedup(EvalOptions& options);

}  // namespace cudal1
