// cli/loop_options: what `cudal1 optimize` and `cudal1 train selfsup|crl` share around the
// optimisation loop (rl/loop.h): the tasks named on the command line, the prompt's exemplar
// sampling, the group, the evaluation lanes and what is measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/baseline_options.h"
#include "cli/redis_options.h"
#include "rl/loop.h"

namespace cudal1::cli {

struct LoopArgs {
  std::vector<std::string> tasks;
  std::string suite, prompts;
  bool all = false;
  int group = 4, lanes = 2, gpus = 0, picks = 2, buckets = 8;
  double tau = 1.0, memory_budget_gb = 0;
  double exemplar_share = 1.0;      // the share of a task's rounds whose prompt shows exemplars
  std::size_t max_prompt_tokens = 12000;
  uint64_t seed = 1;
  BaselineArgs baselines;
  bool no_timing = false;
  RedisArgs redis;  // with a URL, the candidates are evaluated by the cluster's workers
  int turns = 1;                    // answers per slot, each revising the last with feedback
  double gamma = rl::kDefaultGamma; // discount of a turn's return in samples.jsonl
};

// Registers the positional tasks and --all --suite --group --seed --tau --buckets --exemplars
// --exemplar-share --max-prompt-tokens --prompts --gpus --lanes --eval-memory-gb --baselines --baseline --no-timing,
// --turns (1..8) --gamma (0..1), and --redis with its kin (cli/redis_options.h).
void add_loop_options(CLI::App* cmd, LoopArgs& a);

// The tasks named (suite names or KernelBench files, or --all), each once, with ids the store
// and the run folder key everything by. Error(usage) when none is named.
std::vector<rl::LoopTask> resolve_loop_tasks(const LoopArgs& a);

// The loop's settings from the arguments; `eval_device` is the device the candidates run on
// ("cuda", "cpu", "cuda:N") and its lanes come from lane_devices, or with --redis are the
// cluster's (the device then names what the workers run on). run and run_dir are left to the caller.
rl::LoopConfig loop_config(const LoopArgs& a, const std::string& eval_device);

}  // namespace cudal1::cli
