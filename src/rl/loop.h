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

#include "judge/judge.h"
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
  std::optional<judge::JudgeConfig> judge;  // a second opinion on suspicious results (judge/judge.h)
};

// What the run is doing now; the counts are over the whole run so far. A file answered twice in
// one round is counted once; answers count as their evaluations finish.
struct LoopProgress {
  int round = 0, rounds = 0;
  std::size_t tasks = 0, active = 0;        // tasks in the run, tasks in this round
  std::size_t jobs = 0, jobs_done = 0;      // this round's evaluations (answers the store had judged are not)
  std::size_t jobs_accepted = 0;            // of jobs_done
  int tried = 0, correct = 0;               // answers so far and the accepted ones
  std::size_t with_best = 0;                // tasks with an accepted file
  std::size_t improved = 0;                 // tasks whose best beats their start (TaskOutcome::improved)
  std::optional<double> best_geomean;       // geometric mean of the with_best tasks' best eager speedups
  std::string task;                         // the task last asked or evaluated
  std::string stage;                        // "asking", "evaluating", "round done"
};

// An answer that could not be judged because the policy gave none or its evaluation could not
// run; the message is the policy's or the evaluation's own (a server's status and words).
struct LoopFailure {
  std::string task, message;
};

struct TaskOutcome {
  std::string id;
  int rounds = 0, tried = 0, evaluated = 0, correct = 0, hacks = 0;  // each file once a round
  std::optional<double> best;                   // eager speedup of the best accepted file
  // What a best must beat to be an improvement: eager (1.0), or the fastest accepted file the
  // store knew for the task before the run began, if faster.
  double start = 1.0;
  nlohmann::json best_speedups = nlohmann::json::object();  // that file's speedup against every baseline measured
  nlohmann::json flags = nlohmann::json::object();          // flag id -> answers of this run that raised it
  nlohmann::json failures = nlohmann::json::object();       // LoopFailure message -> answers of this run
  std::string best_label;
  std::filesystem::path best_file;
  bool stopped_early = false;
  bool improved() const { return best && *best > start; }
  nlohmann::json to_json() const;
};

// Runs every task. Rounds go over all tasks at once: round r asks the policy for every task that
// is still going, then evaluates all their answers together over the queue's lanes, so lanes
// stay busy whatever the group size. Throws Error for what stops the whole run (an unwritable run folder,
// a broken store); a task whose reference does not load is reported in its outcome's rounds = 0
// and `error`-free answers are never lost.
// `failure` hears each distinct LoopFailure message once, when it is first met.
std::vector<TaskOutcome> run_loop(const std::vector<LoopTask>& tasks, policy::Policy& policy, Store& store,
                                  const LoopConfig& config,
                                  const std::function<void(const LoopProgress&)>& progress = {},
                                  const std::function<void(const LoopFailure&)>& failure = {});

// When every one of `samples` is an answer that could not be judged (a LoopFailure), why: the most
// common message, how many answers gave it and how many messages there were. nullopt otherwise,
// and for no samples.
struct AllFailed {
  std::string message;
  std::size_t answers = 0, with_message = 0, messages = 0;
};
std::optional<AllFailed> all_failed(const std::vector<RlSample>& samples);

// RUN_DIR/samples.jsonl from the store: one line per answer (prompt, completion, reward,
// advantage, verdict, and the error when it has no verdict), in the order written. Returns the lines written.
std::size_t export_samples(Store& store, const std::string& run, const std::filesystem::path& file);

}  // namespace cudal1::rl
