// cli/worker: `cudal1 worker`, one per GPU host of a cluster: evaluates the jobs producers push to
// Redis (cluster/worker.h) on this host's lanes, with its build service and its own store for
// task facts, until SIGINT or SIGTERM; then it finishes the jobs in hand and leaves.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <regex>
#include <thread>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/queue_setup.h"
#include "cli/redis_options.h"
#include "cluster/worker.h"
#include "core/error.h"
#include "core/format.h"
#include "core/paths.h"
#include "task_facts/store_task_facts.h"

namespace fs = std::filesystem;

namespace cudal1::cli {

namespace {

struct WorkerArgs {
  RedisArgs redis;
  std::string device = "cuda", name, files_dir, db, build_cache, clang;
  int lanes = 1, gpus = 0, max_deliveries = 3;
  double visibility_timeout_s = 300;
  bool no_store = false, no_build_service = false;
};

void run_worker_command(const WorkerArgs& a) {
  if (!a.redis.enabled())
    throw Error(ErrorKind::usage, "a worker needs the cluster's Redis",
                "pass --redis redis://HOST:PORT");
  static const std::regex name_ok(R"([A-Za-z0-9._-]{1,100})");
  if (!a.name.empty() && !std::regex_match(a.name, name_ok))
    throw Error(ErrorKind::usage, "--name '" + a.name + "' is not a worker name",
                "use 1 to 100 of A-Z a-z 0-9 . _ -");
  // Signals go to one waiting thread (blocked everywhere else, before any thread starts).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  WorkerConfig c;
  c.endpoint = a.redis.endpoint();
  c.keys = a.redis.keys();
  c.name = a.name;
  c.lanes = lane_devices(a.device, a.gpus, a.lanes, false);
  c.visibility_timeout_s = a.visibility_timeout_s;
  c.max_deliveries = a.max_deliveries;
  c.files_dir = a.files_dir.empty() ? extension_cache_dir().parent_path() / "worker-files"
                                    : fs::path(a.files_dir);
  std::unique_ptr<Store> store = open_store(a.db, a.no_store);
  std::shared_ptr<TaskFacts> facts = store_task_facts(store.get());
  std::vector<std::string> protect = store ? store->private_files() : std::vector<std::string>{};
  const std::string files_dir = fs::absolute(c.files_dir).string();
  c.host_options = [facts, protect, files_dir](EvalOptions& o) {
    o.task_facts = facts;
    o.protect_files = protect;
    o.hidden_paths.push_back(files_dir);  // other jobs' files; this job's are put back, read-only
  };
  std::unique_ptr<BuildService> builds;
  if (!a.no_build_service) builds = attach_build_service(c.queue, {a.build_cache, 0, 1, a.clang});
  std::mutex out_m;
  c.on_outcome = [&out_m](const std::string& id, const std::string& candidate,
                          const RemoteOutcome& o) {
    std::lock_guard l(out_m);
    std::cout << id << "  " << candidate << "  " << o.device << "  "
              << (o.result ? status_name(o.result->status) : "error: " + o.error->message()) << "  "
              << format_fixed(o.run_s, 1) << " s" << std::endl;
  };

  std::atomic<bool> stop{false};
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::cerr << "cudal1 worker: stopping after the jobs in hand" << std::endl;
    stop = true;
  });
  signals.detach();  // it ends with the process when no signal comes (the worker failed to start)
  WorkerTotals t = run_worker(c, stop);
  std::cerr << "cudal1 worker: " << t.done << " evaluated, " << t.failed << " ended with an error, "
            << t.reclaimed << " taken over from stopped workers" << std::endl;
}

}  // namespace

void register_worker(CLI::App& app) {
  auto a = std::make_shared<WorkerArgs>();
  CLI::App* cmd =
      app.add_subcommand("worker", "Evaluate the jobs of a Redis cluster on this host's devices");
  add_redis_server_options(cmd, a->redis);
  cmd->add_option("-d,--device", a->device, "cuda (every visible GPU), cuda:N, or cpu")
      ->transform(device_names())
      ->capture_default_str();
  cmd->add_option("--lanes", a->lanes, "evaluations side by side on each device")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--gpus", a->gpus, "use at most this many GPUs (0: all)");
  cmd->add_option("--name", a->name, "this worker's name in the cluster (default HOST-PID)");
  cmd->add_option("--visibility-timeout", a->visibility_timeout_s,
                  "seconds without a heartbeat after which another worker takes this worker's jobs")
      ->check(CLI::Range(3.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--max-deliveries", a->max_deliveries,
                  "a job handed out more often than this ends with an error")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option(
      "--files-dir", a->files_dir,
      "where the jobs' files are kept, by content (default $CUDAL1_CACHE/worker-files)");
  cmd->add_option("--db", a->db,
                  "this host's store, for task facts (lint, baselines) (default as for eval)");
  cmd->add_flag("--no-store", a->no_store, "keep no task facts between jobs");
  cmd->add_flag("--no-build-service", a->no_build_service,
                "let each candidate's process compile its own extensions");
  cmd->add_option("--build-cache", a->build_cache,
                  "the build service's cache folder (default $CUDAL1_CACHE/builds)");
  cmd->add_option("--clang", a->clang, kClangOptionHelp);
  cmd->callback([a] { run_worker_command(*a); });
}

}  // namespace cudal1::cli
