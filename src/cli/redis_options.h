// cli/redis_options: --redis and its kin on the commands that produce evaluations (batch,
// optimize, serve). With --redis URL their queue sends every evaluation to the cluster's
// workers (cluster/remote_engine.h) instead of running lanes on this host; everything else
// (store, rewards, reports) stays as it is.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "queue/queue.h"

namespace cudal1::cli {

struct RedisArgs {
  std::string url;     // empty: evaluate on this host
  int in_flight = 32;  // jobs this producer keeps in the stream at once
  int64_t max_queued = 10000;
  std::string prefix = "cudal1:";

  bool enabled() const { return !url.empty(); }
  RedisEndpoint endpoint() const { return RedisEndpoint::parse(url); }
  ClusterKeys keys() const { return ClusterKeys{prefix}; }
};

// --redis, --in-flight, --max-queued, --redis-prefix.
void add_redis_options(CLI::App* cmd, RedisArgs& args);

// Only what a worker and `cudal1 workers` need: --redis (required) and --redis-prefix.
void add_redis_server_options(CLI::App* cmd, RedisArgs& args);

// With --redis: the queue's lanes become args.in_flight remote lanes over the cluster's engine,
// without a prebuild stage (workers build on their own hosts). Checks the server and the
// credentials now. Returns whether it did.
bool use_cluster(const RedisArgs& args, QueueConfig& config);

}  // namespace cudal1::cli
