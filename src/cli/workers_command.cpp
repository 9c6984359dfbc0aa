// cli/workers: `cudal1 workers`, the state of a Redis cluster (cluster/cluster_status.h) as a
// table: each worker's lanes, jobs held, jobs done and rate, then the stream's depth and counters.
#include <chrono>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/redis_options.h"
#include "cluster/cluster_status.h"
#include "core/error.h"
#include "report/table.h"

using json = nlohmann::json;

namespace cudal1::cli {

namespace {

struct WorkersArgs {
  RedisArgs redis;
  bool json_out = false, forget_gone = false;
};

std::string seen_ago(const json& record) {
  double seen = record.value("seen_unix", 0.0);
  if (seen <= 0) return "-";
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return format_fixed(std::max(0.0, now - seen), 0) + " s ago";
}

void run_workers(const WorkersArgs& a) {
  if (!a.redis.enabled())
    throw Error(ErrorKind::usage, "name the cluster's Redis", "pass --redis redis://HOST:PORT");
  RedisSession redis(a.redis.endpoint(), 0);
  redis.connect();
  ClusterStatus s = read_cluster_status(redis, a.redis.keys());
  if (a.forget_gone) {  // a gone worker that holds nothing is only history
    std::erase_if(s.workers, [&](const WorkerStatus& w) {
      bool forget = !w.alive && w.pending == 0;
      if (forget) redis.command({"SREM", a.redis.keys().workers(), w.name});
      return forget;
    });
  }
  if (a.json_out) {
    std::cout << s.to_json().dump() << std::endl;
    return;
  }
  Table t({"worker", "state", "lanes", "held", "done", "failed", "evaluations/hour", "heartbeat"},
          {false, false, true, true, true, true, true, false});
  for (auto& w : s.workers) {
    const json& r = w.record;
    t.add_row({w.name, w.alive ? "alive" : "gone",
               w.alive ? std::to_string(r.value("lanes", json::array()).size()) : "-",
               std::to_string(w.pending), w.alive ? std::to_string(r.value("done", 0)) : "-",
               w.alive ? std::to_string(r.value("failed", 0)) : "-",
               w.alive ? format_fixed(r.value("evaluations_per_hour", 0.0), 0) : "-", seen_ago(r)});
  }
  t.print(std::cout);
  std::cout << "\n"
            << s.waiting << " job(s) waiting, " << s.in_flight << " held by workers; " << s.results
            << " results written, " << s.retries << " jobs taken over from stopped workers, "
            << s.abandoned << " abandoned (" << a.redis.endpoint().url() << ")\n";
}

}  // namespace

void register_workers(CLI::App& app) {
  auto a = std::make_shared<WorkersArgs>();
  CLI::App* cmd = app.add_subcommand(
      "workers", "The state of a Redis cluster: its workers, jobs waiting and held");
  add_redis_server_options(cmd, a->redis);
  cmd->add_flag("--json", a->json_out, "print it as one JSON object");
  cmd->add_flag("--forget-gone", a->forget_gone, "drop workers that stopped and hold no job from the list");
  cmd->callback([a] { run_workers(*a); });
}

}  // namespace cudal1::cli
