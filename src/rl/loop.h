// rl/loop.h — CUDA-L1's contrastive optimisation loop as a tool (`cudal1 optimize`).
//
// Per task, rounds of G candidates: the prompt shows earlier accepted variants with their
// measured speedups (sampled by score bucket, rl/sampler.h), a policy answers G times
// (policy/policy.h), every answer is parsed and, when it holds a ModelNew file, evaluated by the
// hardened evaluator in its own process (the group in parallel over the queue's lanes). Rewards
// (rl/reward.h): the eager speedup when accepted, 0 on any failure, a penalty on a caught hack;
// normalised over a rolling window and clipped; GRPO advantages within the group. Every answer
// lands in the store (rl_samples) and in RUN_DIR/samples.jsonl for trainers. The best accepted
// file per task is kept in RUN_DIR/best/. A task stops after `patience` rounds without a better
// best. A run resumes at each task's first round without samples; evaluations already in the
// store are not repeated, so nothing accepted is lost to a crash or Ctrl-C.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/policy.h"
#include "policy/prompt.h"
#include "queue/queue.h"
#include "rl/reward.h"
#include "rl/sampler.h"
#include "store/store.h"

namespace cudal1::rl {

struct LoopTask {
  std::string id;                // "level1/19_ReLU", or the file's stem
  std::filesystem::path path;    // the KernelBench reference file
};

struct LoopConfig {
  std::string run;                   // samples are keyed by it; a second run with it resumes
  std::filesystem::path run_dir;     // best/, candidates/, samples.jsonl
  int rounds = 8, group = 4;         // at most `rounds` rounds of `group` answers per task
  int patience = 3;                  // rounds without a better best before a task stops
  uint64_t seed = 1;
  SamplerConfig sampler;
  RewardConfig reward;
  policy::PromptTemplates templates;
  policy::PromptBudget budget;
  EvalOptions eval;                  // every candidate's options; task and candidate paths are set here
  QueueConfig queue;                 // the lanes a group is evaluated on
};

// What the run is doing now; the counts are over the whole run so far.
struct LoopProgress {
  int round = 0, rounds = 0;
  std::size_t tasks = 0, active = 0;        // tasks in the run, tasks in this round
  std::size_t jobs = 0, jobs_done = 0;      // this round's evaluations (answers the store had judged are not)
  std::size_t jobs_accepted = 0;            // of jobs_done
  int tried = 0, correct = 0;               // answers so far and the accepted ones
  std::size_t improved = 0;                 // tasks with an accepted file
  std::optional<double> best_geomean;       // geometric mean of those tasks' best eager speedups
  std::string task;                         // the task last asked or evaluated
  std::string stage;                        // "asking", "evaluating", "round done"
};

struct TaskOutcome {
  std::string id;
  int rounds = 0, tried = 0, evaluated = 0, correct = 0, hacks = 0;
  std::optional<double> best;                   // eager speedup of the best accepted file
  nlohmann::json best_speedups = nlohmann::json::object();  // that file's speedup against every baseline measured
  nlohmann::json flags = nlohmann::json::object();          // flag id -> answers of this run that raised it
  std::string best_label;
  std::filesystem::path best_file;
  bool stopped_early = false;
  nlohmann::json to_json() const;
};

// Runs every task. Rounds go over all tasks at once: round r asks the policy for every task that
// is still going, then evaluates all their answers together over the queue's lanes, so lanes
// stay busy whatever the group size. Throws Error for what stops the whole run (an unwritable run folder,
// a broken store); a task whose reference does not load is reported in its outcome's rounds = 0
// and `error`-free answers are never lost.
std::vector<TaskOutcome> run_loop(const std::vector<LoopTask>& tasks, policy::Policy& policy, Store& store,
                                  const LoopConfig& config,
                                  const std::function<void(const LoopProgress&)>& progress = {});

// RUN_DIR/samples.jsonl from the store: one line per answer (prompt, completion, reward,
// advantage, verdict), in the order written. Returns the lines written.
std::size_t export_samples(Store& store, const std::string& run, const std::filesystem::path& file);

}  // namespace cudal1::rl
