// cli/commands.h — the subcommands of build/cudal1; each registers its options on the app and
// runs when chosen.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "store/store.h"

namespace cudal1::cli {

// Where a command's store is when --db is not given (core/paths.h default_store_path), for --help.
inline constexpr const char* kDefaultStoreHelp =
    "default $CUDAL1_DB, else $XDG_CACHE_HOME/cudal1/results.db, else ~/.cache/cudal1/results.db";

// The store named by --db, or the default one; none with --no-store.
std::unique_ptr<Store> open_store(const std::string& db, bool no_store);

// `cudal1 eval`: one task, one candidate, one verdict.
void register_eval(CLI::App& app);

// `cudal1 tasks list|show`: the bundled suite with computed FLOPs and bytes.
void register_tasks(CLI::App& app);

// `cudal1 lint-task`: whether a kernel that does no work would pass the check on a task.
void register_lint(CLI::App& app);

// `cudal1 batch`: many evaluations queued over every visible GPU (or the stock way).
void register_batch(CLI::App& app);
// `cudal1 build`: a candidate's load_inline extensions through the build service.
void register_build(CLI::App& app);

// `cudal1 baselines`: a task against torch.compile, CUDA graph and cuDNN autotuning.
void register_baselines(CLI::App& app);

// `cudal1 enrich`: each task's CUDA Graph version as a KernelBench file, verified on the device.
void register_enrich(CLI::App& app);

// `cudal1 bench`: a kernel set scored against a suite, with reports.
void register_bench(CLI::App& app);

// `cudal1 optimize`: the contrastive-RL loop with a policy, every candidate verified.
void register_optimize(CLI::App& app);

// `cudal1 worker`: evaluates a Redis cluster's jobs on this host (cluster/worker.h).
void register_worker(CLI::App& app);

// `cudal1 workers`: a Redis cluster's workers and jobs, as a table.
void register_workers(CLI::App& app);

// `cudal1 hacks import|list|similar`: the judge's database of known reward hacks.
void register_hacks(CLI::App& app);

// `cudal1 serve`: the reward service (serve_command.cpp, in builds with the HTTP library).
void register_serve(CLI::App& app);

// `cudal1 train sft|selfsup|crl|report`: the trainer's stages (train_command.cpp, in builds with
// the trainer), with `train init` (train_init_command.cpp) and `train bench-step`
// (train_bench_command.cpp) under the same `train`.
void register_train(CLI::App& app);
void register_train_init(CLI::App& train);
void register_train_bench(CLI::App& train);

}  // namespace cudal1::cli
