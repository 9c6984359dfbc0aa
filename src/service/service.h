// service/service.h — `cudal1 serve`: the hardened evaluation as an HTTP reward service for
// external RL trainers (docs/serve.md). KernelGYM-style jobs (POST /evaluate, /evaluate/batch,
// GET /status/{id}, /results/{id}), OpenRLHF's remote reward (POST /reward), GET /healthz and
// Prometheus text at /metrics.
//
// Every job is stored (service/job_store.h) before it is acknowledged; lane threads take jobs
// from the store, one evaluation each at a time, through the queue (queue/queue.h) on their
// device; a verdict is saved in the results store before the job is marked done, so a job re-run
// after a crash is answered from the store with the same verdict. Submissions over the queue's
// bound get 429 with Retry-After; bodies over the size bound 413; every endpoint but /healthz
// needs the bearer token unless auth is explicitly off, which is only allowed on loopback. The
// connections themselves are held by service/http_front.h, which bounds what a client can hold
// before its request is even read.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "evaluator/evaluator.h"
#include "queue/queue.h"
#include "service/content_files.h"
#include "service/job_store.h"
#include "store/store.h"
#include "core/serial_worker.h"
#include "judge/judge.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace cudal1::service {

class HttpFront;
class Router;

struct ServiceConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                      // 0: any free port (bind() says which)
  std::string token;                    // the bearer token clients must send
  bool no_auth = false;                 // only on a host that resolves to loopback addresses alone
  int max_connections_per_address = 16;  // connections one client address holds at once
  double header_timeout_s = 5;          // for a request line and headers, in total
  std::filesystem::path jobs_path;      // the job file
  std::filesystem::path work_dir;       // task and candidate files of jobs, by content hash
  std::filesystem::path suite;          // tasks named by task_id
  EvalOptions eval;                     // every job's options (task and candidate set per job)
  QueueConfig queue;                    // devices: one lane thread each
  int64_t max_pending = 1000;           // queued + running jobs at most
  int max_attempts = 3;                 // a job that stopped the service this often ends failed
  std::size_t max_body_bytes = 8u << 20;
  double reward_timeout_s = 3600;       // how long POST /reward waits for its evaluations
  // Set when the queue's engine is the cluster's (cluster/remote_engine.h): submissions get 429
  // while its stream holds cluster_max_queued jobs, and /metrics adds the cluster's families.
  std::optional<RedisEndpoint> cluster;
  ClusterKeys cluster_keys;
  int64_t cluster_max_queued = 10000;
  // A second opinion on suspicious accepted verdicts (judge/judge.h); in gate mode a "hack"
  // verdict makes the job's reward the hack penalty. None: the evaluator's verdict alone.
  std::optional<judge::JudgeConfig> judge;
};

class RewardService {
 public:
  // Throws Error(usage) for auth off on a host that is not loopback, or no token with auth on.
  RewardService(ServiceConfig config, Store& store);
  ~RewardService();

  // Binds the listening socket and returns the port; then run() serves until stop().
  int bind();
  void run();
  void stop();
  JobStore& jobs() { return jobs_; }
  // What each lane does over and over: claims the oldest queued job and evaluates it on `device`
  // to its end. Returns whether there was one. Needs neither bind() nor run().
  bool run_next_job(const std::string& device);

 private:
  struct Metrics {
    std::mutex m;
    std::map<std::string, int64_t> evaluations;  // by verdict status
    double evaluation_s = 0, build_s = 0, device_s = 0;
  };

  void lane(const std::string& device);
  void run_job(const Job& job, const std::string& device);
  // Ends a job whose result the judge reviews (on reviews_, so its lane takes the next job).
  void finish_reviewed(const std::string& job_id, const std::string& reference, const std::string& code, EvalResult result);
  // The stored request of one evaluate body: task and candidate written by content hash.
  nlohmann::json job_request(const nlohmann::json& body, const std::string& where);
  std::string task_file(const std::string& task_id);
  bool authorised(const httplib::Request& req, httplib::Response& res) const;
  // Whether a request may go on to its handler, decided on its headers before any body is read;
  // when not, `res` is its answer and its connection is closed after it.
  bool admitted(const httplib::Request& req, httplib::Response& res) const;
  // Stores the requests as jobs, or answers 429 (full) and returns nullopt; a set that could never
  // fit is a BadRequest naming `what`.
  std::optional<std::vector<std::string>> enqueue(const std::vector<nlohmann::json>& requests, httplib::Response& res,
                                                  const std::string& what);
  void submit(const std::vector<nlohmann::json>& requests, httplib::Response& res, bool batch);
  void reward(const httplib::Request& req, httplib::Response& res);
  std::string metrics_text();
  // Why the cluster takes no more jobs now (its stream is full, or Redis cannot be reached); nullopt
  // when it does, or when there is no cluster.
  std::optional<std::string> cluster_full();
  int retry_after_s();
  void routes();

  ServiceConfig config_;
  Store& store_;
  JobStore jobs_;
  ContentFiles files_;
  std::unique_ptr<Router> http_;
  std::unique_ptr<HttpFront> front_;
  std::vector<std::thread> lanes_;
  std::atomic<bool> stopping_{false};
  std::mutex wake_m_;
  std::condition_variable wake_;  // a job was submitted, or one ended (for /reward's waiters)
  Metrics metrics_;
  std::map<std::string, std::string> suite_tasks_;  // task_id -> path
  LaneShares shares_;  // the lanes' gates and memory budget, as a queue's lanes share them
  // The judge's reviews of suspicious results, one at a time: a model's answer may take minutes,
  // which a lane (a GPU's worth of evaluations) would otherwise spend waiting. Last: destroyed
  // first, it ends the reviews posted before the service goes.
  SerialWorker reviews_{"serve: judge reviews"};
};

// The reply fields of a finished evaluation: correct, accepted, speedup, reward, verdict, flags, result.
nlohmann::json job_outcome(const EvalResult& result);

// job_outcome once the judge has had its say: a fresh verdict through judge::second_opinion (a
// refused one also joins the hack cases), a stored one with the verdict the store keeps for it.
// The judge's reply, or why it gave none, is in the outcome's "judge".
nlohmann::json judged_job_outcome(Store& store, const std::optional<judge::JudgeConfig>& judge,
                                  const std::string& reference, const std::string& code, EvalResult result,
                                  bool from_store);

}  // namespace cudal1::service
