// evaluator/options.h — what one evaluation is asked to do, in three parts that change for
// different reasons: the protocol (what a figure means: results under another protocol are never
// compared or reused), the limits (what the candidate may spend) and the scheduling (how this
// evaluation shares the machine with others). EvalOptions is the three together.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "build/build.h"
#include "core/device_gate.h"
#include "core/memory_budget.h"
#include "tensors/compare.h"

namespace cudal1 {

class TaskFacts;  // evaluator/task_facts.h

// Bumped whenever a change can alter a verdict or a figure: results under another protocol are
// never reused from the store.
inline constexpr const char* kProtocolVersion = "cudal1-eval/9";

// "cuda" and "cuda:N" are CUDA devices; everything else runs on the host.
inline bool is_cuda_device(const std::string& device) { return device.rfind("cuda", 0) == 0; }

// What is checked and measured, and how: what protocol_key() covers.
struct EvalProtocol {
  std::string device = "cpu";        // "cpu", "cuda", "cuda:N" (core/device.h parses them)
  std::string python;                // empty: find_python()
  ToleranceMode tolerance = ToleranceMode::standard;
  std::optional<uint64_t> seed;      // fixed seeds (reproducible); default: fresh secret seeds
  bool timing = true;                // measure speed once correct
  int buckets = 0;                   // 0: 5 on CPU, 7 on CUDA
  int calls_per_bucket = 0;          // 0: 8 on CPU, 20 on CUDA
  int warmup = 0;                    // 0: 3 on CPU, 10 on CUDA
  double spread_limit = 0.10;        // re-measure while (q75 - q25) / median is above this
  int max_remeasure = 2;
  int noisy_retries = 2;             // still noisy after that: this many more fresh sets of buckets
  double fresh_remeasure_above = 3.0;  // a speedup above this is timed again in a fresh process
  std::optional<double> best_known_speedup;  // the task's best accepted figure so far, if any
  double best_known_factor = 2.0;    // ... and so is one above this many times the best known
  double remeasure_disagreement = 0.10;  // relative gap between the two that raises a flag
  int sample_elements = 1024;        // per output of every call, drawn after the call returns
  double verify_fraction = 0.5;      // share of timed calls the reference recomputes and compares
  int verify_min = 8;                // ... and never fewer than this many
  bool precision_check = true;       // the precision ladder on float32 tasks
  bool allow_reduced_precision = false;  // reduced_precision becomes a warning, labelled
  bool attribution = true;           // profiler attribution and the decoy flag (CUDA)
  bool lint = true;                  // attach the task's degenerate-task lint (from task_facts)
  // Speedups against torch.compile, CUDA graph, cuDNN autotuning (from task_facts).
  bool baselines = false;
  // With baselines: these only; empty: every one (baseline_names()).
  std::vector<std::string> baseline_names;
  // false: every evaluation builds its load_inline modules anew (the stock way).
  bool reuse_extension_builds = true;
  // Set in both workers' environment, on purpose (enrich's strict graph mode): the task's code
  // may read them, so they are part of the protocol key.
  std::map<std::string, std::string> extra_env;

  std::string protocol_key() const;  // what the store keys results by, besides content hashes
};

// What the candidate may spend, and what it must not see.
struct EvalLimits {
  // Loading the candidate, compilation included; also a first call while it compiles.
  double build_timeout_s = 900;
  // One forward call. Unset: max(10 s, 50 x the reference's own call on that case), fitted per
  // evaluation (evaluator/call_budget.h).
  std::optional<double> call_timeout_s;
  std::size_t memory_limit_mb = 16384;
  std::size_t output_limit_kb = 4096;  // stdout+stderr of one worker
  // Files the candidate must neither read nor write (the results store, its -wal and -shm):
  // their folders are hidden from its sandbox (sandbox/sandbox.h), with whatever else lies there.
  std::vector<std::string> protect_files;
  // Files or folders the candidate must not see at all (a service's files, its token file).
  std::vector<std::string> hidden_paths;
};

// How this evaluation shares the machine and what it is handed from above.
struct EvalScheduling {
  // Where the task's lint and baselines come from, cached or not (task_facts/store_task_facts.h);
  // null: no lint and no baselines.
  std::shared_ptr<TaskFacts> task_facts;
  // The build service (build/build.h): the candidate's load_inline extensions are built outside
  // its process, and its calls import them. `prebuilt`, when set, is a build already done (a
  // queue's prebuild stage); otherwise `build_service`, when set, builds during preparation.
  // Neither: the candidate's process compiles them itself.
  std::shared_ptr<const BuildOutcome> prebuilt;
  BuildService* build_service = nullptr;
  std::function<void(const std::string& stage, double fraction)> progress;
  // Set when other evaluations share the device (a queue's lanes on one GPU): timing and
  // baselines then hold it alone, the other stages share it. Null: no other user is known.
  std::shared_ptr<DeviceGate> device_gate;
  // Set when other evaluations run beside this one in the process: it waits for host memory
  // before its reference runs (core/memory_budget.h). Null: nothing else is known to run.
  std::shared_ptr<MemoryBudget> memory_budget;
  // The memory of o.device that the lanes sharing it reserve from (core/device_memory.h): an
  // evaluation holds its estimated footprint on the device from before its reference loads the
  // task until its workers are gone. Null: nothing else is known to use the device.
  std::shared_ptr<MemoryBudget> device_memory_budget;
};

struct EvalOptions : EvalProtocol, EvalLimits, EvalScheduling {
  std::string task_path, candidate_path;
};

}  // namespace cudal1
