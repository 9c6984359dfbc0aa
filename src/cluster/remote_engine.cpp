#include "cluster/remote_engine.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <thread>

#include "cluster/job_stream.h"
#include "cluster/remote_job.h"
#include "core/hash.h"
#include "core/host.h"

namespace cudal1 {

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

std::string this_host() {
  std::string name = host_name();
  return name.empty() ? "host" : name;
}

// Unique over every producer of the cluster: host, process, a random tag and a counter.
std::string new_job_id() {
  static const std::string tag = [] {
    std::random_device rd;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%08x%08x", rd(), rd());
    return this_host() + "-" + std::to_string(getpid()) + "-" + hex;
  }();
  static std::atomic<uint64_t> counter{0};
  return tag + "-" + std::to_string(++counter);
}

class RemoteRun : public PreparedRun {
 public:
  RemoteRun(const RemoteConfig& config, RemoteJob job, std::string task_src, std::string cand_src,
            std::string task_path, std::string cand_path)
      : config_(config),
        job_(std::move(job)),
        task_src_(std::move(task_src)),
        cand_src_(std::move(cand_src)),
        task_path_(std::move(task_path)),
        cand_path_(std::move(cand_path)) {}

  EvalResult run() override {
    RedisSession redis(config_.endpoint, config_.reconnect_patience_s);
    put_blob(redis, config_.keys, job_.task.sha256, task_src_);
    put_blob(redis, config_.keys, job_.candidate.sha256, cand_src_);
    push(redis);
    RemoteOutcome outcome = wait_for_outcome(redis);
    if (outcome.error) throw *outcome.error;
    EvalResult r = std::move(*outcome.result);
    r.task_path =
        task_path_;  // the worker's copies were named by content; the producer's names stand
    r.candidate_path = cand_path_;
    r.provenance["cluster"] = {{"worker", outcome.worker},
                               {"device", outcome.device},
                               {"job", job_.id},
                               {"run_s", outcome.run_s}};
    return r;
  }

 private:
  void say(const std::string& line) const {
    if (config_.log) {
      config_.log(line);
    } else {
      std::cerr << "cudal1: " << line << std::endl;
    }
  }

  // Back-pressure: the job goes in only while the stream holds fewer than max_queued.
  void push(RedisSession& redis) const {
    const std::string job = job_.to_json().dump();
    bool said = false;
    while (!push_job_if_room(redis, config_.keys, job, config_.max_queued)) {
      if (!said)
        say("the job stream at " + config_.endpoint.url() + " holds " +
            std::to_string(config_.max_queued) +
            " jobs or more; waiting for the workers to take some");
      said = true;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }

  RemoteOutcome wait_for_outcome(RedisSession& redis) const {
    const std::string result_key = config_.keys.result(job_.id),
                      done_key = config_.keys.done(job_.id);
    auto start = Clock::now(), said = start;
    for (;;) {
      redis.command({"BLPOP", done_key, "2"});
      RedisReply got = redis.command({"GET", result_key});
      if (!got.is_nil()) {
        redis.command({"EXPIRE", result_key, std::to_string(kResultReadTtlS)});
        redis.command({"DEL", done_key});
        json j = json::parse(got.str, nullptr, false);
        if (j.is_discarded())
          throw Error(ErrorKind::input, "the result of job " + job_.id + " in Redis is not JSON",
                      "producer and worker must run the same cudal1 version");
        return RemoteOutcome::from_json(j);
      }
      if (Clock::now() - said > std::chrono::seconds(60)) {
        said = Clock::now();
        say("job " + job_.id + " (" + job_.candidate.name + ") has waited " +
            std::to_string(int(std::chrono::duration<double>(said - start).count())) +
            " s for its outcome; `cudal1 workers --redis " + config_.endpoint.url() +
            "` shows whether workers are alive and how busy");
      }
    }
  }

  const RemoteConfig config_;
  RemoteJob job_;
  std::string task_src_, cand_src_, task_path_, cand_path_;
};

class RemoteEngine : public EvaluationEngine {
 public:
  explicit RemoteEngine(RemoteConfig config) : config_(std::move(config)) {}

  std::unique_ptr<PreparedRun> prepare(const EvalOptions& options) override {
    std::string task_src = read_job_file(options.task_path, "task");
    std::string cand_src = read_job_file(options.candidate_path, "candidate");
    RemoteJob job;
    job.id = new_job_id();
    job.producer = this_host() + ":" + std::to_string(getpid());
    job.options = options;
    job.task = {safe_file_name(options.task_path, "task.py"), sha256_hex(task_src)};
    job.candidate = {safe_file_name(options.candidate_path, "candidate.py"), sha256_hex(cand_src)};
    return std::make_unique<RemoteRun>(config_, std::move(job), std::move(task_src),
                                       std::move(cand_src), options.task_path,
                                       options.candidate_path);
  }

 private:
  RemoteConfig config_;
};

}  // namespace

std::shared_ptr<EvaluationEngine> remote_evaluation_engine(RemoteConfig config) {
  RedisSession redis(config.endpoint, config.reconnect_patience_s);
  redis.connect();
  ensure_job_group(redis, config.keys);
  return std::make_shared<RemoteEngine>(std::move(config));
}

std::vector<std::string> remote_lanes(int in_flight) {
  return std::vector<std::string>(std::size_t(std::max(1, in_flight)), kRemoteLane);
}

}  // namespace cudal1
