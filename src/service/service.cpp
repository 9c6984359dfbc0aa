// service/service.cpp — the reward service's lifecycle, lanes and jobs (see service.h); the HTTP
// routes are in routes.cpp.
#include "service/service.h"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>

#include "cluster/cluster_status.h"
#include "cluster/job_stream.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/prometheus.h"
#include "rl/reward.h"
#include "service/http_front.h"
#include "service/net_address.h"
#include "task_facts/store_task_facts.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cudal1::service {

json job_outcome(const EvalResult& result) {
  auto eager = result.speedup.find("eager");
  rl::Verdict v;
  v.accepted = result.accepted;
  v.blocking_flag = result.has_blocking_flag();
  if (result.accepted && eager != result.speedup.end()) v.speedup = eager->second;
  json flags = json::array();
  for (auto& f : result.flags) flags.push_back({{"id", f.id}, {"severity", severity_name(f.severity)}, {"evidence", f.evidence}});
  return {{"correct", result.status == Status::ok}, {"accepted", result.accepted},
          {"speedup", eager != result.speedup.end() ? json(eager->second) : json(nullptr)},
          {"reward", rl::raw_reward(v, rl::RewardConfig{})}, {"verdict", status_name(result.status)},
          {"flags", flags}, {"result", result.to_json()}};
}

json judged_job_outcome(Store& store, const std::optional<judge::JudgeConfig>& judge, const std::string& reference,
                        const std::string& code, EvalResult result, bool from_store) {
  json verdict;
  if (from_store) {
    result = judge::with_kept_verdict(store, judge, std::move(result));
  } else {
    judge::SecondOpinion o = judge::second_opinion(store, judge, reference, code, result, std::nullopt);
    if (o.judgement) verdict = o.judgement->to_json();
    if (!o.error.empty()) verdict = {{"error", o.error}};  // the evaluator's verdict stands
  }
  json out = job_outcome(result);
  if (!verdict.is_null()) out["judge"] = verdict;
  return out;
}

RewardService::RewardService(ServiceConfig config, Store& store)
    : config_(std::move(config)),
      store_(store),
      jobs_(config_.jobs_path),
      files_(config_.work_dir / "files"),
      http_(std::make_unique<Router>()) {
  // Decided on what the host resolves to: a name that merely starts with "127." may point anywhere.
  if (config_.no_auth && !resolves_to_loopback_only(config_.host))
    throw Error(ErrorKind::usage,
                "--no-auth on " + config_.host + " would let anyone who reaches it run code here: it does not resolve "
                "to loopback addresses alone",
                "listen on 127.0.0.1 without a token, or give a token (CUDAL1_SERVE_TOKEN or --token-file) to serve "
                "the network");
  if (!config_.no_auth && config_.token.empty())
    throw Error(ErrorKind::usage, "the service needs a bearer token",
                "set CUDAL1_SERVE_TOKEN or pass --token-file FILE (chmod 600); on loopback only, --no-auth turns auth off");
  if (config_.queue.devices.empty()) throw Error(ErrorKind::usage, "the service has no lane", "pass --lanes 1 or more");
  http_->set_payload_max_length(config_.max_body_bytes);
  FrontConfig front;
  front.host = config_.host;
  front.port = config_.port;
  front.max_per_address = config_.max_connections_per_address;
  front.header_timeout_s = config_.header_timeout_s;
  front_ = std::make_unique<HttpFront>(front, *http_);
  shares_ = lane_shares(config_.queue);
  if (fs::is_directory(config_.suite))
    for (auto& e : discover_tasks(config_.suite)) suite_tasks_[e.name] = e.path.string();
  routes();
}

RewardService::~RewardService() {
  stop();
  for (auto& t : lanes_)
    if (t.joinable()) t.join();
}

int RewardService::bind() { return front_->bind(); }

void RewardService::run() {
  for (auto& device : config_.queue.devices) lanes_.emplace_back([this, device] { lane(device); });
  if (!stopping_) front_->run();
  // However listening ended (stop(), or an accept error), the lanes end too.
  stopping_ = true;
  wake_.notify_all();
  for (auto& t : lanes_)
    if (t.joinable()) t.join();
}

void RewardService::stop() {
  stopping_ = true;
  wake_.notify_all();
  front_->stop();
}

void RewardService::lane(const std::string& device) {
  while (!stopping_) {
    if (run_next_job(device)) {
      wake_.notify_all();
      continue;
    }
    std::unique_lock lock(wake_m_);
    wake_.wait_for(lock, std::chrono::milliseconds(500));
  }
}

bool RewardService::run_next_job(const std::string& device) {
  std::optional<Job> job;
  try {
    job = jobs_.claim();
  } catch (const Error&) {
    return false;  // a busy job file: try again shortly
  }
  if (!job) return false;
  try {
    run_job(*job, device);
  } catch (const std::exception& e) {
    // Recording the end failed, so the job file cannot hold why: the job stays running there and
    // is queued again at the next start; this lane goes on.
    std::cerr << "cudal1 serve: job " << job->id << " ended but its end could not be recorded ("
              << e.what() << "); it runs again at the next start" << std::endl;
  }
  return true;
}

void RewardService::run_job(const Job& job, const std::string& device) {
  if (job.attempts > config_.max_attempts) {
    jobs_.finish(job.id, JobState::failed,
                 {{"error", "the service stopped " + std::to_string(job.attempts - 1) +
                                " times while evaluating this job; it is not tried again"}});
    return;
  }
  try {
    const json& r = job.request;
    EvalOptions o = config_.eval;
    o.device = device;
    o.task_path = r.at("task_path").get<std::string>();
    o.candidate_path = r.at("candidate_path").get<std::string>();
    o.timing = r.value("timing", o.timing);
    o.baselines = r.value("baselines", o.baselines);
    o.task_facts = store_task_facts(&store_);
    o.device_gate = shares_.gate_for(device);
    o.memory_budget = shares_.memory;
    o.device_memory_budget = shares_.device_memory_for(device);
    const std::string task_src = files_.read(o.task_path), cand_src = files_.read(o.candidate_path);
    // A job run again after a crash finds the verdict its first run saved: the same answer.
    std::optional<EvalResult> result;
    bool from_store = false;
    const std::string task_hash = sha256_hex(task_src), cand_hash = sha256_hex(cand_src), protocol = o.protocol_key();
    for (auto& d : config_.queue.devices)  // whichever lane judged it before
      if (!result) result = store_.find(task_hash, cand_hash, protocol, d);
    from_store = result.has_value();
    if (!result) {
      QueueConfig qc = config_.queue;
      qc.devices = {device};
      if (!qc.log)
        qc.log = [](const std::string& l) { std::cerr << "cudal1 serve: " << l << std::endl; };
      std::optional<Error> error;
      std::string lane_device = device;
      run_queue({QueueJob{job.id, o, json::object()}}, qc, [&](const QueueResult& q) {
        result = q.result, error = q.error, lane_device = q.device;
        std::lock_guard lock(metrics_.m);
        metrics_.evaluation_s += q.run_s, metrics_.build_s += q.prebuild_s;
        if (q.result && q.result->phase_seconds.contains("timing"))
          metrics_.device_s += q.result->phase_seconds["timing"].get<double>();
      });
      if (!result) {
        jobs_.finish(job.id, JobState::failed,
                     {{"error", error ? error->describe() : std::string("the evaluation did not run")}});
        return;
      }
      if (result->infrastructure_failure()) {  // the machine failed twice, not the candidate: no reward, not stored
        jobs_.finish(job.id, JobState::failed,
                     {{"error", "infrastructure failure, not the candidate's verdict (" + result->infrastructure.value("cause", "") +
                                    "): " + result->error + "; free host memory or run fewer --lanes, then submit it again"},
                      {"infrastructure", result->infrastructure}});
        return;
      }
      try {
        store_.save(*result, o.protocol_key(), lane_device, cand_src);
      } catch (const std::exception& e) {
        // The job row keeps the verdict; the store only serves later identical jobs, which are
        // then evaluated again. A verdict is never thrown away for a busy or full store.
        std::cerr << "cudal1 serve: job " << job.id << "'s verdict was not saved in the results store (" << e.what()
                  << "); the job keeps it" << std::endl;
      }
    }
    {
      std::lock_guard lock(metrics_.m);
      ++metrics_.evaluations[status_name(result->status)];
    }
    // A verdict from the store whose review never ended (the service stopped hard meanwhile) is
    // reviewed now, not answered unreviewed.
    if (config_.judge && judge::is_suspicious(*result, std::nullopt, config_.judge->threshold) &&
        (!from_store || !store_.find_judgement(task_hash, cand_hash))) {
      reviews_.post([this, id = job.id, task_src, cand_src, r = std::move(*result)]() mutable {
        finish_reviewed(id, task_src, cand_src, std::move(r));
      });
      return;
    }
    jobs_.finish(job.id, JobState::done,
                 judged_job_outcome(store_, config_.judge, task_src, cand_src, std::move(*result), from_store));
  } catch (const Error& e) {
    jobs_.finish(job.id, JobState::failed, {{"error", e.describe()}});
  } catch (const std::exception& e) {
    jobs_.finish(job.id, JobState::failed, {{"error", std::string("internal error: ") + e.what()}});
  }
}

void RewardService::finish_reviewed(const std::string& job_id, const std::string& reference, const std::string& code,
                                    EvalResult result) {
  try {
    try {
      jobs_.finish(job_id, JobState::done, judged_job_outcome(store_, config_.judge, reference, code, std::move(result), false));
    } catch (const Error& e) {
      jobs_.finish(job_id, JobState::failed, {{"error", "the judge's review failed: " + e.describe()}});
    }
  } catch (const std::exception& e) {
    std::cerr << "cudal1 serve: job " << job_id << " ended but its end could not be recorded (" << e.what()
              << "); it runs again at the next start" << std::endl;
  }
  wake_.notify_all();  // /reward's waiters
}

std::string RewardService::task_file(const std::string& task_id) {
  auto it = suite_tasks_.find(task_id);
  return it == suite_tasks_.end() ? std::string() : it->second;
}

int RewardService::retry_after_s() {
  JobCounts c = jobs_.counts();
  double mean = 10;  // seconds an evaluation takes, until some have been measured
  {
    std::lock_guard lock(metrics_.m);
    int64_t n = 0;
    for (auto& [k, v] : metrics_.evaluations) n += v;
    if (n > 0 && metrics_.evaluation_s > 0) mean = metrics_.evaluation_s / double(n);
  }
  double s = double(c.queued + c.running) * mean / double(config_.queue.devices.size()) / 2;  // half the queue drained
  return int(std::clamp(std::ceil(s), 1.0, 3600.0));
}

std::string RewardService::metrics_text() {
  JobCounts c = jobs_.counts();
  std::string t;
  auto metric = [&](const char* name, const char* type, const char* help) {
    t += prometheus_family(name, type, help);
  };
  metric("cudal1_queue_depth", "gauge", "Jobs stored and waiting for a lane.");
  t += "cudal1_queue_depth " + std::to_string(c.queued) + "\n";
  metric("cudal1_jobs_running", "gauge", "Jobs being evaluated, or reviewed by the judge.");
  t += "cudal1_jobs_running " + std::to_string(c.running) + "\n";
  metric("cudal1_judge_reviews_pending", "gauge", "Evaluated jobs waiting for the judge's review, or in it.");
  t += "cudal1_judge_reviews_pending " + std::to_string(reviews_.pending()) + "\n";
  metric("cudal1_jobs_total", "gauge", "Jobs in the job file by state.");
  for (auto [state, n] : {std::pair{"queued", c.queued}, {"running", c.running}, {"done", c.done}, {"failed", c.failed}})
    t += std::string("cudal1_jobs_total{status=\"") + state + "\"} " + std::to_string(n) + "\n";
  std::lock_guard lock(metrics_.m);
  metric("cudal1_evaluations_total", "counter", "Evaluations finished since start, by verdict.");
  for (auto& [status, n] : metrics_.evaluations)
    t += "cudal1_evaluations_total{status=\"" + status + "\"} " + std::to_string(n) + "\n";
  metric("cudal1_evaluation_seconds_total", "counter", "Seconds lanes spent evaluating.");
  t += "cudal1_evaluation_seconds_total " + std::to_string(metrics_.evaluation_s) + "\n";
  metric("cudal1_build_seconds_total", "counter", "Seconds spent building candidates' extensions ahead of the lanes.");
  t += "cudal1_build_seconds_total " + std::to_string(metrics_.build_s) + "\n";
  metric("cudal1_device_seconds_total", "counter", "Seconds of timing with the device held alone.");
  t += "cudal1_device_seconds_total " + std::to_string(metrics_.device_s) + "\n";
  if (config_.cluster) {
    metric("cudal1_cluster_up", "gauge", "1 when the cluster's Redis answered this scrape.");
    try {
      RedisSession redis(*config_.cluster, 0);
      std::string cluster = read_cluster_status(redis, config_.cluster_keys).prometheus_text();
      t += "cudal1_cluster_up 1\n" + cluster;
    } catch (const Error& e) {
      t += "cudal1_cluster_up 0\n";
      std::cerr << "cudal1 serve: /metrics could not read the cluster: " << e.describe() << std::endl;
    }
  }
  return t;
}

std::optional<std::string> RewardService::cluster_full() {
  if (!config_.cluster) return std::nullopt;
  try {
    RedisSession redis(*config_.cluster, 0);
    int64_t n = stream_length(redis, config_.cluster_keys);
    if (n >= config_.cluster_max_queued)
      return "the cluster's job stream holds " + std::to_string(n) + " jobs (--max-queued " +
             std::to_string(config_.cluster_max_queued) + ")";
  } catch (const Error& e) {
    return "the cluster's Redis at " + config_.cluster->url() + " cannot be reached (" + e.message() + ")";
  }
  return std::nullopt;
}

}  // namespace cudal1::service
