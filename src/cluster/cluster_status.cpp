#include "cluster/cluster_status.h"

#include <map>

#include "cluster/job_stream.h"
#include "core/prometheus.h"

using json = nlohmann::json;

namespace cudal1 {

namespace {

int64_t counter(RedisSession& redis, const std::string& key) {
  RedisReply r = redis.command({"GET", key});
  return r.is_nil() ? 0 : std::stoll(r.str);
}

// Held jobs per consumer, from XPENDING's summary form.
std::map<std::string, int64_t> pending_by_worker(RedisSession& redis, const ClusterKeys& keys,
                                                 int64_t& total) {
  std::map<std::string, int64_t> by;
  RedisReply p = redis.command({"XPENDING", keys.stream(), ClusterKeys::kGroup});
  if (p.elements.size() < 4) return by;
  total = p.elements[0].integer;
  for (const RedisReply& c : p.elements[3].elements)
    if (c.elements.size() >= 2) by[c.elements[0].str] = std::stoll(c.elements[1].str);
  return by;
}

}  // namespace

ClusterStatus read_cluster_status(RedisSession& redis, const ClusterKeys& keys) {
  ensure_job_group(redis, keys);
  ClusterStatus s;
  std::map<std::string, int64_t> pending = pending_by_worker(redis, keys, s.in_flight);
  s.waiting = std::max<int64_t>(0, stream_length(redis, keys) - s.in_flight);
  s.results = counter(redis, keys.stat("results"));
  s.retries = counter(redis, keys.stat("retries"));
  s.abandoned = counter(redis, keys.stat("abandoned"));
  for (const RedisReply& name : redis.command({"SMEMBERS", keys.workers()}).elements) {
    WorkerStatus w;
    w.name = name.str;
    RedisReply record = redis.command({"GET", keys.worker(w.name)});
    w.alive = !record.is_nil();
    w.record = w.alive ? json::parse(record.str, nullptr, false) : json::object();
    if (w.record.is_discarded()) w.record = json::object();
    w.pending = pending.count(w.name) ? pending[w.name] : 0;
    s.workers.push_back(std::move(w));
  }
  return s;
}

json ClusterStatus::to_json() const {
  json ws = json::array();
  for (auto& w : workers)
    ws.push_back(
        {{"name", w.name}, {"alive", w.alive}, {"pending", w.pending}, {"record", w.record}});
  return {{"waiting", waiting}, {"in_flight", in_flight}, {"results", results},
          {"retries", retries}, {"abandoned", abandoned}, {"workers", ws}};
}

std::string ClusterStatus::prometheus_text() const {
  std::string t;
  auto family = [&](const std::string& name, const char* type, const char* help) {
    t += prometheus_family(name, type, help);
  };
  auto line = [&](const std::string& name, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.6g\n", v);
    t += name + buf;
  };
  family("cudal1_cluster_queue_depth", "gauge",
         "Jobs in the cluster's stream not yet handed to a worker.");
  line("cudal1_cluster_queue_depth", double(waiting));
  family("cudal1_cluster_jobs_in_flight", "gauge",
         "Jobs handed to a worker and not yet acknowledged.");
  line("cudal1_cluster_jobs_in_flight", double(in_flight));
  family("cudal1_cluster_results_total", "counter",
         "Job outcomes written by the cluster's workers.");
  line("cudal1_cluster_results_total", double(results));
  family("cudal1_cluster_retries_total", "counter",
         "Jobs claimed again after their worker stopped beating.");
  line("cudal1_cluster_retries_total", double(retries));
  family("cudal1_cluster_abandoned_total", "counter",
         "Jobs ended with an error after too many deliveries.");
  line("cudal1_cluster_abandoned_total", double(abandoned));
  family("cudal1_cluster_worker_up", "gauge", "1 while a worker's heartbeat is current.");
  for (auto& w : workers) line("cudal1_cluster_worker_up{worker=\"" + w.name + "\"}", w.alive);
  family("cudal1_cluster_worker_evaluations_per_hour", "gauge",
         "A worker's evaluations per hour since it started.");
  for (auto& w : workers)
    if (w.alive)
      line("cudal1_cluster_worker_evaluations_per_hour{worker=\"" + w.name + "\"}",
           w.record.value("evaluations_per_hour", 0.0));
  family("cudal1_cluster_worker_jobs_in_flight", "gauge", "Jobs a worker holds.");
  for (auto& w : workers)
    line("cudal1_cluster_worker_jobs_in_flight{worker=\"" + w.name + "\"}", double(w.pending));
  return t;
}

}  // namespace cudal1
