// cluster/remote_engine.h — the producer's side of scale-out: an EvaluationEngine
// (queue/evaluation_engine.h) that pushes each evaluation to the cluster's job stream and waits
// for a worker's outcome, so `batch`, `optimize` and `serve` keep their queue, store, rewards
// and reports and only the place the evaluation runs changes.
//
// A queue over this engine runs one lane per job in flight (remote_lanes()); its lanes hold no
// device, so timing on the producer's host is never involved.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "queue/evaluation_engine.h"

namespace cudal1 {

// The name of a producer's lanes: the device is whichever a worker's lane has.
inline constexpr const char* kRemoteLane = "remote";

struct RemoteConfig {
  RedisEndpoint endpoint;
  ClusterKeys keys;
  // Back-pressure: a job is not pushed while the stream holds this many (waiting or held).
  int64_t max_queued = 10000;
  // How long a lost server is waited for before the evaluation fails (a restart takes seconds).
  double reconnect_patience_s = 300;
  // Hears what a waiting producer should know (the stream full, no worker alive), from any lane.
  std::function<void(const std::string&)> log;
};

// Connects once to check the server and the credentials (Error(connection) at once, not at the
// first job), creates the job group, and returns the engine.
std::shared_ptr<EvaluationEngine> remote_evaluation_engine(RemoteConfig config);

// `in_flight` lanes named kRemoteLane, for QueueConfig::devices.
std::vector<std::string> remote_lanes(int in_flight);

}  // namespace cudal1
