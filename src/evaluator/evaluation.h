// evaluator/evaluation.h — one evaluation between its stages: what prepare_evaluation made, and
// the stages run_evaluation runs on it (internal to the evaluator; evaluator.cpp runs them in
// order, stage_correctness.cpp and stage_timing.cpp hold the longer ones).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/owned_dir.h"
#include "core/paths.h"
#include "evaluator/call_budget.h"
#include "evaluator/evaluator.h"
#include "evaluator/extension_folder.h"
#include "evaluator/infrastructure.h"
#include "evaluator/measure.h"
#include "evaluator/precision.h"
#include "evaluator/stages.h"
#include "evaluator/status.h"
#include "evaluator/task_facts.h"
#include "runner/worker.h"
#include "tensors/tensor_file.h"

namespace cudal1 {

inline std::chrono::milliseconds seconds_to_ms(double s) {
  return std::chrono::milliseconds(static_cast<long long>(s * 1000));
}

// A worker taking its device (start_worker_device): a CUDA context and cuBLAS's and cuDNN's
// handles, seconds even on a loaded machine; a hang (a wedged driver) must not hold the lane for
// the build timeout.
inline constexpr double kWorkerStartS = 120;

// What candidate and reference code alike must not see.
std::vector<std::string> hidden_from_sandboxes(const EvalOptions& o);

// The evaluation's private directory: removed however the evaluation ends, and by a later
// process when this one is killed (core/owned_dir.h).
struct ScratchDir {
  OwnedDir dir{"cudal1-eval", scratch_parent()};
  std::filesystem::path root = dir.path();
};

// The seeds: the weights' inits, and the cases (an init and an input distribution each).
struct Plan {
  uint64_t base_seed;
  json inits = json::array(), cases = json::array();
};

// Everything an evaluation holds between its CPU part and its GPU part. Heap-allocated and
// never moved: the session refers to `o`.
struct PreparedEvaluation {
  explicit PreparedEvaluation(const EvalOptions& options) : o(options) {}
  EvalOptions o;
  // Read first, before any process starts: an out-of-memory kill from here on counts against
  // this evaluation (evaluator/infrastructure.h).
  std::optional<uint64_t> oom_kills_at_start = oom_kill_count();
  EvalResult r;
  std::string task_src, cand_src, python;
  MemoryBudget::Hold memory;  // declared before scratch: released after its files are gone
  MemoryBudget::Hold device_memory;  // declared before the workers: released after they are gone
  ScratchDir scratch;
  std::filesystem::path shared, secret, ref_dir, cand_dir, oracle_dir;
  Plan plan;
  WorkerSpec cspec;
  // Kept extension builds: this evaluation's claim on the candidate's folder, held while its
  // workers live (declared before them, so released after they are gone).
  ExtensionFolderClaim extension_folder;
  // With a freezing gate: this evaluation's processes, which another lane's timing may stop.
  // Declared before the workers, which leave it when they go.
  std::unique_ptr<DeviceGate::Member> member;
  std::unique_ptr<Worker> ref, cand;
  json prebuilt = nullptr;  // load_candidate's "prebuilt" entries (evaluator/prebuilt.h)
  double prepare_seconds = 0;
};

// What the reference gave: its load_task reply (cases, inits, constructor, environment) and
// each case's expected outputs, held here only.
struct ReferenceRun {
  json loaded;
  std::vector<std::vector<TensorValue>> expected;
  CallTimeouts timeouts;
};

// The task as its facts (evaluator/task_facts.h) need it.
TaskQuery task_query(const PreparedEvaluation& p);

// A task's shared facts (its lint, its baselines) are computed by one lane at a time; the others
// then read the first one's answer instead of computing it again. Holds nothing when the facts
// are not shared.
KeyedMutex::Guard one_lane_per_task(const PreparedEvaluation& p, StageClock& stages,
                                    const std::string& what);

// Step 3 of docs/evaluation.md: every case, exact checks first, then values (fills
// r.correctness). Case 0's outputs are kept in `first_actual` for the precision ladder.
Verdict check_cases(PreparedEvaluation& p, Session& s, const ReferenceRun& ref,
                    StageClock& stages, std::vector<TensorValue>& first_actual);

// The precision ladder on case 0 of a float32 task (precision.h); leaves its rungs in
// s.ladder_rungs for the timed calls' check (timed_precision.h).
Verdict check_precision(PreparedEvaluation& p, Session& s, const std::vector<TensorValue>& expected,
                        const std::vector<TensorValue>& actual);

// A precision verdict as a status and flags: systematic error is incorrect, reduced precision
// rejected (a warning with `allowed`, --allow-reduced-precision).
Verdict precision_verdict(const PrecisionVerdict& v, bool allowed, EvalResult& r);

// Speed against the reference, and again in a fresh candidate process when the gain is large.
Verdict time_candidate(PreparedEvaluation& p, Session& s, const json& load_request,
                       StageClock& stages);

// The physics check (evaluator/light_check.h): the candidate's time against the task's speed of
// light, from options.task_facts; its figures in statistics.speed_of_light, a beaten bound as a flag.
void check_speed_of_light(PreparedEvaluation& p, StageClock& stages);

// Speedups against the task's baselines, from options.task_facts.
void add_baselines(PreparedEvaluation& p, const json& env, StageClock& stages);

}  // namespace cudal1
