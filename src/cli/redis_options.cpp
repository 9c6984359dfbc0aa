#include "cli/redis_options.h"

#include <regex>

#include "cluster/remote_engine.h"
#include "core/error.h"

namespace cudal1::cli {

namespace {

CLI::Validator prefix_names() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        static const std::regex ok(R"([A-Za-z0-9._:-]{1,64})");
        return std::regex_match(v, ok) ? "" : "a prefix is 1 to 64 of A-Z a-z 0-9 . _ : -";
      },
      "PREFIX");
}

}  // namespace

void add_redis_server_options(CLI::App* cmd, RedisArgs& a) {
  cmd->add_option("--redis", a.url,
                  "the cluster's Redis, redis://HOST[:PORT][/DB]; credentials come from "
                  "CUDAL1_REDIS_USERNAME and "
                  "CUDAL1_REDIS_PASSWORD");
  cmd->add_option("--redis-prefix", a.prefix,
                  "key prefix that keeps clusters sharing one server apart")
      ->check(prefix_names())
      ->capture_default_str();
}

void add_redis_options(CLI::App* cmd, RedisArgs& a) {
  add_redis_server_options(cmd, a);
  cmd->add_option("--in-flight", a.in_flight,
                  "with --redis: jobs this command keeps in the cluster at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--max-queued", a.max_queued,
                  "with --redis: no job is pushed while the stream holds this many (waiting or "
                  "being evaluated)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

bool use_cluster(const RedisArgs& a, QueueConfig& config) {
  if (!a.enabled()) return false;
  RemoteConfig remote;
  remote.endpoint = a.endpoint();
  remote.keys = a.keys();
  remote.max_queued = a.max_queued;
  config.engine = remote_evaluation_engine(remote);
  config.devices = remote_lanes(a.in_flight);
  config.prefetch = 0;  // pushing is preparing: a lane holds one job from push to outcome
  config.prebuild = nullptr;
  config.prebuild_threads = 0;
  return true;
}

}  // namespace cudal1::cli
