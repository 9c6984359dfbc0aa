// queue/evaluation_engine.h — what the queue evaluates through. The queue, the RL loop and the
// reward service reach the evaluator only through this seam, so their ordering, lanes and error
// handling can be tested with a double that needs no Python and no torch.
#pragma once

#include <memory>

#include "evaluator/evaluator.h"

namespace cudal1 {

// An evaluation whose processes are started. Destroying it ends them and removes its folders.
class PreparedRun {
 public:
  virtual ~PreparedRun() = default;
  // The device part; throws Error only when the evaluation itself cannot run.
  virtual EvalResult run() = 0;
};

// Lanes call it from several threads at once: implementations must be thread-safe.
class EvaluationEngine {
 public:
  virtual ~EvaluationEngine() = default;
  // The part that needs no device; throws Error when the evaluation cannot run.
  virtual std::unique_ptr<PreparedRun> prepare(const EvalOptions& options) = 0;
};

// prepare_evaluation and run_evaluation (evaluator/evaluator.h); what every queue uses unless
// its QueueConfig names another engine.
std::shared_ptr<EvaluationEngine> real_evaluation_engine();

}  // namespace cudal1
