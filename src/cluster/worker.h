// cluster/worker.h — `cudal1 worker`: takes jobs from the cluster's stream through its consumer
// group, evaluates each through this host's queue machinery (its lanes, device gates, build
// service and caches), writes the outcome once by job id, then acknowledges the job.
//
// Delivery is at least once: a job whose worker stops beating (killed, host lost) is claimed by
// another after the visibility timeout and evaluated again; the outcome is written with SET NX, so
// whichever evaluation ends first is the job's one result. A job claimed more than
// max_deliveries times is ended with an error outcome instead of being tried forever.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "cluster/remote_job.h"
#include "queue/queue.h"

namespace cudal1 {

struct WorkerConfig {
  RedisEndpoint endpoint;
  ClusterKeys keys;
  std::string name;                // unique in the cluster; empty: HOST-PID
  std::vector<std::string> lanes;  // one thread each, named by its device (cli/queue_setup.h)
  // What each job runs through on its lane: engine, prebuild (the build service), log. Its
  // devices are set per lane.
  QueueConfig queue;
  std::filesystem::path files_dir;  // job files, written by content hash
  // This host's part of each job's options: task facts from its own store, files to protect.
  std::function<void(EvalOptions&)> host_options;
  double visibility_timeout_s = 300;  // a held job not heartbeaten this long is claimed by another
  int max_deliveries = 3;
  double reconnect_patience_s = 300;
  std::function<void(const std::string&)> log;  // null: standard error
  // Each job this worker ended, from its lane's thread (one at a time).
  std::function<void(const std::string& job_id, const std::string& candidate, const RemoteOutcome&)>
      on_outcome;
};

struct WorkerTotals {
  int64_t done = 0;       // outcomes with a verdict
  int64_t failed = 0;     // outcomes with an error
  int64_t reclaimed = 0;  // jobs taken over from a worker that stopped beating
};

// Runs until `stop` is set, then finishes the jobs in hand and leaves the cluster. Throws
// Error(connection) when the server cannot be reached at start or refuses the credentials.
WorkerTotals run_worker(const WorkerConfig& config, const std::atomic<bool>& stop);

}  // namespace cudal1
