// rl/loop.h — CUDA-L1's contrastive optimisation loop as a tool (`cudal1 optimize`).
//
// Per task, rounds of G candidates: the prompt shows earlier accepted variants with their
// measured speedups (sampled by score bucket, rl/sampler.h), a policy answers G times
// (policy/policy.h), every answer is parsed and, when it holds a ModelNew file, evaluated by the
// hardened evaluator in its own process (the group in parallel over the queue's lanes). Rewards
// (rl/reward.h): the eager speedup when accepted, 0 on any failure, a penalty on a caught hack;
// normalised over a rolling window and clipped; GRPO advantages within the group. Every answer
// lands in the store (rl_samples) and in RUN_DIR/samples.jsonl for trainers. The best accepted
// file per task that beats the reference by more than the noise (rl/best_rule.h) is kept in
// RUN_DIR/best/; with none, the reference stands and the outcome says so. A task stops after `patience` rounds without a better
// best. A run resumes at each task's first round without samples; evaluations already in the
// store are not repeated, so nothing accepted is lost to a crash or Ctrl-C.
//
// Multi-turn refinement (LoopConfig::turns > 1): after each answer the policy is sent the
// evaluator's feedback on it in the same conversation and revises, up to `turns` answers per slot;
// a slot stops early once its answer beats the reference beyond the noise and the task's best
// before that turn, or when no answer comes.
// Every turn is evaluated and stored as its own sample (RlSample::turn, the slot kept).
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

// The discount of later turns' rewards in a turn's return (samples.jsonl `return`).
inline constexpr double kDefaultGamma = 0.9;
inline constexpr int kMaxTurns = 8;

struct LoopTask {
  std::string id;                // "level1/19_ReLU", or the file's stem
  std::filesystem::path path;    // the KernelBench reference file
};

struct LoopConfig {
  std::string run;                   // samples are keyed by it; a second run with it resumes
  std::filesystem::path run_dir;     // best/, candidates/, samples.jsonl
  int rounds = 8, group = 4;         // at most `rounds` rounds of `group` answers per task
  int patience = 3;                  // rounds without a better best before a task stops
  // optimize --turns: each slot's answer is revised up to `turns` times in one conversation, the
  // policy told the evaluator's feedback (rl/feedback.h) after each; 1 is one answer per slot.
  int turns = 1;
  double gamma = kDefaultGamma;      // discount of samples.jsonl's per-turn `return`
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
  std::size_t improved = 0;                 // tasks whose best file beats their start (TaskOutcome::improved)
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
  // What a best file must beat to be an improvement: eager (1.0), or the fastest accepted file the
  // store knew for the task before the run began, if faster.
  double start = 1.0;
  nlohmann::json best_speedups = nlohmann::json::object();  // that file's speedup against every baseline measured
  nlohmann::json flags = nlohmann::json::object();          // flag id -> answers of this run that raised it
  nlohmann::json failures = nlohmann::json::object();       // LoopFailure message -> answers of this run
  std::string best_label;
  // RUN_DIR/best/<task>.py, written only for an accepted answer that beats the reference by more
  // than the noise (rl/best_rule.h); empty when none did, and best_note says why.
  std::filesystem::path best_file;
  std::optional<double> best_file_speedup;      // that file's eager speedup
  std::string best_note;                        // why best/ has no file for the task, or not the fastest answer

  bool stopped_early = false;
  // Improved: the run left a best file (one that beats the reference beyond the noise) faster
  // than `start`; a faster answer within the noise is no improvement a user can take.
  bool improved() const { return best_file_speedup && *best_file_speedup > start; }
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

// Each sample's discounted return within its slot's trajectory (its round and slot, over turns):
// sum over the slot's turns j >= t of gamma^(j - t) * reward_j, with the normalised `reward`
// trainers read. A slot of one turn returns its reward. Same order as `samples`.
std::vector<double> discounted_returns(const std::vector<RlSample>& samples, double gamma);

// RUN_DIR/samples.jsonl from the store: one line per answer (prompt, completion, reward,
// advantage, verdict, and the error when it has no verdict; its `turn`, the `return` above, and
// the `feedback` it was sent when a later turn was asked), in the order written. Returns the
// lines written.
std::size_t export_samples(Store& store, const std::string& run, const std::filesystem::path& file, double gamma = kDefaultGamma);

}  // namespace cudal1::rl
