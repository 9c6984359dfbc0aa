// cluster/cluster_status.h — what a cluster is doing, read from Redis alone: jobs waiting and
// held, each worker's record (lanes, counts, rate, last heartbeat), and the cluster's counters.
// `cudal1 workers` prints it as a table; `serve --redis` adds it to /metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/keys.h"
#include "cluster/redis_client.h"

namespace cudal1 {

struct WorkerStatus {
  std::string name;
  bool alive = false;     // its heartbeat record has not expired
  nlohmann::json record;  // what its last heartbeat said (cluster/worker.cpp); empty when gone
  int64_t pending = 0;    // jobs the stream's group counts as held by it
};

struct ClusterStatus {
  int64_t waiting = 0;                              // pushed, not yet handed to a worker
  int64_t in_flight = 0;                            // handed to a worker, not yet acknowledged
  int64_t results = 0, retries = 0, abandoned = 0;  // counters since the cluster's first job
  std::vector<WorkerStatus> workers;

  nlohmann::json to_json() const;
  std::string prometheus_text() const;  // the cudal1_cluster_* families, HELP and TYPE included
};

ClusterStatus read_cluster_status(RedisSession& redis, const ClusterKeys& keys);

}  // namespace cudal1
