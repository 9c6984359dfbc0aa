#include "cluster/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include "cluster/job_stream.h"
#include "core/hash.h"
#include "core/host.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1 {

namespace {

using Clock = std::chrono::steady_clock;

std::string default_worker_name() { return host_name() + "-" + std::to_string(getpid()); }

class Worker {
 public:
  Worker(const WorkerConfig& config, const std::atomic<bool>& stop)
      : c_(config), stop_(stop), name_(config.name.empty() ? default_worker_name() : config.name) {
    QueueConfig shared = c_.queue;
    shared.devices = c_.lanes;
    shares_ = lane_shares(shared);
  }

  WorkerTotals run() {
    RedisSession redis(c_.endpoint, c_.reconnect_patience_s);
    redis.connect();  // bad credentials or no server: said now, before any thread starts
    ensure_job_group(redis, c_.keys);
    redis.command({"SADD", c_.keys.workers(), name_});
    say("worker " + name_ + " takes jobs from " + c_.endpoint.url() + " on " +
        std::to_string(c_.lanes.size()) + " lane(s)");
    std::thread beat([this] { heartbeat(); });
    std::vector<std::thread> lanes;
    for (const std::string& device : c_.lanes) lanes.emplace_back([this, device] { lane(device); });
    for (auto& t : lanes) t.join();
    {
      std::lock_guard l(m_);
      lanes_done_ = true;
    }
    wake_.notify_all();
    beat.join();
    return totals();
  }

 private:
  void say(const std::string& line) {
    std::lock_guard l(log_m_);
    if (c_.log) {
      c_.log(line);
    } else {
      std::cerr << "cudal1 worker: " << line << std::endl;
    }
  }

  WorkerTotals totals() {
    std::lock_guard l(m_);
    return totals_;
  }

  // One lane: takes a job, evaluates it, writes its outcome, acknowledges it, again. A lost
  // server is waited for (RedisSession); past that patience the lane says so and tries again.
  void lane(const std::string& device) {
    RedisSession redis(c_.endpoint, c_.reconnect_patience_s);
    while (!stop_) {
      try {
        bool reclaimed = false;
        std::optional<StreamEntry> entry = next_entry(redis, reclaimed);
        if (entry) handle(redis, *entry, reclaimed, device);
      } catch (const Error& e) {
        say("lane " + device + ": " + e.describe());
        std::this_thread::sleep_for(std::chrono::seconds(2));
      } catch (const std::exception& e) {  // the job stays pending: claimed again after the timeout
        say("lane " + device + ": internal error: " + e.what());
        std::this_thread::sleep_for(std::chrono::seconds(2));
      }
    }
  }

  // A job whose worker stopped beating first, then a new one (waiting up to a second).
  std::optional<StreamEntry> next_entry(RedisSession& redis, bool& reclaimed) {
    try {
      return claim_or_read(redis, reclaimed);
    } catch (const Error& e) {
      if (e.message().find("NOGROUP") == std::string::npos) throw;
      ensure_job_group(redis, c_.keys);  // a server restarted without its data
      return std::nullopt;
    }
  }

  std::optional<StreamEntry> claim_or_read(RedisSession& redis, bool& reclaimed) {
    const std::string idle_ms = std::to_string(int64_t(c_.visibility_timeout_s * 1000));
    RedisReply claimed = redis.command(
        {"XAUTOCLAIM", c_.keys.stream(), ClusterKeys::kGroup, name_, idle_ms, "0-0", "COUNT", "1"});
    if (claimed.elements.size() >= 2) {
      if (auto e = first_entry(claimed.elements[1])) {
        reclaimed = true;
        redis.command({"INCR", c_.keys.stat("retries")});
        return e;
      }
    }
    RedisReply read = redis.command({"XREADGROUP", "GROUP", ClusterKeys::kGroup, name_, "COUNT",
                                     "1", "BLOCK", "1000", "STREAMS", c_.keys.stream(), ">"});
    if (read.is_nil() || read.elements.empty() || read.elements[0].elements.size() < 2)
      return std::nullopt;
    return first_entry(read.elements[0].elements[1]);
  }

  int64_t deliveries(RedisSession& redis, const std::string& stream_id) {
    RedisReply p = redis.command(
        {"XPENDING", c_.keys.stream(), ClusterKeys::kGroup, stream_id, stream_id, "1"});
    if (p.elements.empty() || p.elements[0].elements.size() < 4) return 1;
    return p.elements[0].elements[3].integer;
  }

  // Keeps a job's idle time reset by the heartbeat while its lane has it, and no longer: a job
  // its lane gave up on (the server gone past patience) is left for the visibility timeout.
  struct Held {
    Worker& w;
    std::string id;
    Held(Worker& worker, std::string stream_id) : w(worker), id(std::move(stream_id)) {
      w.hold(id, true);
    }
    ~Held() { w.hold(id, false); }
  };

  void handle(RedisSession& redis, const StreamEntry& entry, bool reclaimed,
              const std::string& device) {
    Held held(*this, entry.stream_id);
    RemoteJob job;
    try {
      job = RemoteJob::from_json(json::parse(entry.job));
    } catch (const std::exception& e) {
      say("dropped stream entry " + entry.stream_id +
          ", which holds no job cudal1 can read: " + e.what());
      acknowledge(redis, entry.stream_id);
      return;
    }
    RemoteOutcome outcome;
    outcome.worker = name_;
    outcome.device = device;
    if (!redis.command({"EXISTS", c_.keys.result(job.id)}).integer) {
      int64_t n = reclaimed ? deliveries(redis, entry.stream_id) : 1;
      if (n > c_.max_deliveries) {
        outcome.error = Error(ErrorKind::runner,
                              "job " + job.id + " was handed out " + std::to_string(n) +
                                  " times and its worker stopped each time before finishing it; it "
                                  "is not tried again",
                              "evaluate the candidate alone (`cudal1 eval`) to see whether it "
                              "brings its worker down");
        redis.command({"INCR", c_.keys.stat("abandoned")});
      } else {
        outcome = evaluate(redis, job, device);
      }
      write_outcome(redis, job.id, outcome);
      count(outcome, reclaimed);
      if (c_.on_outcome) c_.on_outcome(job.id, job.candidate.name, outcome);
    }
    acknowledge(redis, entry.stream_id);
  }

  // The job's file from Redis, checked against its hash, written once under files_dir.
  fs::path fetch(RedisSession& redis, const JobFile& file, const char* fallback) {
    if (file.sha256.size() != 64 ||
        file.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw Error(ErrorKind::input,
                  "the job names a file by '" + file.sha256 + "', which is no SHA-256",
                  "producer and worker must run the same cudal1 version");
    fs::path dir = c_.files_dir / file.sha256, path = dir / safe_file_name(file.name, fallback);
    if (fs::exists(path)) return path;
    RedisReply blob = redis.command({"GET", c_.keys.blob(file.sha256)});
    if (blob.is_nil())
      throw Error(
          ErrorKind::input,
          "the job's file " + file.name + " is no longer in Redis (it expired or was deleted)",
          "submit the evaluation again: its producer stores the file anew");
    if (sha256_hex(blob.str) != file.sha256)
      throw Error(ErrorKind::input,
                  "the job's file " + file.name + " in Redis does not match its hash",
                  "something other than cudal1 wrote the key " + c_.keys.blob(file.sha256));
    fs::create_directories(dir);
    fs::path tmp = dir / (".tmp-" + std::to_string(getpid()) + "-" +
                          std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())));
    {
      std::ofstream out(tmp, std::ios::binary);
      out << blob.str;
      if (!out)
        throw Error(ErrorKind::input, "cannot write " + tmp.string(),
                    "check the disk and --files-dir");
    }
    fs::rename(tmp, path);
    return path;
  }

  RemoteOutcome evaluate(RedisSession& redis, const RemoteJob& job, const std::string& device) {
    RemoteOutcome outcome;
    outcome.worker = name_;
    outcome.device = device;
    try {
      // The job carries the best known speedup from its producer's store, which holds the
      // cluster's verdicts (under its lanes' name, "remote"); this host's store keeps task facts
      // and no verdicts of the cluster, so the queue below reads it only for a job that carries none.
      EvalOptions o = job.options;
      o.task_path = fetch(redis, job.task, "task.py").string();
      o.candidate_path = fetch(redis, job.candidate, "candidate.py").string();
      if (c_.host_options) c_.host_options(o);
      o.device_gate = shares_.gate_for(device);
      o.memory_budget = shares_.memory;
      o.device_memory_budget = shares_.device_memory_for(device);
      QueueConfig qc = c_.queue;
      qc.devices = {device};
      if (!qc.log) qc.log = [this](const std::string& l) { say(l); };
      run_queue({QueueJob{job.id, o, json::object()}}, qc, [&](const QueueResult& q) {
        outcome.result = q.result;
        outcome.error = q.error;
        outcome.run_s = q.run_s;
        outcome.prebuild_s = q.prebuild_s;
      });
      if (!outcome.result && !outcome.error)
        outcome.error = Error(ErrorKind::internal, "the queue gave no outcome for job " + job.id,
                              "report this as a bug");
    } catch (const Error& e) {
      outcome.error = e;
    } catch (const std::exception& e) {  // a file that cannot be written under --files-dir, ...
      outcome.error =
          Error(ErrorKind::input, std::string("the worker could not prepare the job: ") + e.what(),
                "check the worker's --files-dir (its disk and permissions)");
    }
    return outcome;
  }

  // SET NX: the first evaluation of a job to end is its result; a later one (a job claimed again
  // while its first worker was only slow) is dropped.
  void write_outcome(RedisSession& redis, const std::string& job_id, const RemoteOutcome& outcome) {
    RedisReply set = redis.command({"SET", c_.keys.result(job_id), outcome.to_json().dump(), "NX",
                                    "EX", std::to_string(kResultTtlS)});
    if (set.is_nil()) return;
    redis.command({"INCR", c_.keys.stat("results")});
    redis.command({"RPUSH", c_.keys.done(job_id), "1"});
    redis.command({"EXPIRE", c_.keys.done(job_id), std::to_string(kResultTtlS)});
  }

  void acknowledge(RedisSession& redis, const std::string& stream_id) {
    redis.command({"XACK", c_.keys.stream(), ClusterKeys::kGroup, stream_id});
    redis.command({"XDEL", c_.keys.stream(), stream_id});
  }

  void hold(const std::string& stream_id, bool held) {
    std::lock_guard l(m_);
    if (held) {
      held_.insert(stream_id);
    } else {
      held_.erase(stream_id);
    }
  }

  void count(const RemoteOutcome& outcome, bool reclaimed) {
    std::lock_guard l(m_);
    ++(outcome.result ? totals_.done : totals_.failed);
    totals_.reclaimed += reclaimed;
  }

  // Every third of the visibility timeout: the held jobs claimed again by this worker (which
  // resets their idle time, so no other worker takes them), and the worker's own record.
  void heartbeat() {
    RedisSession redis(c_.endpoint, c_.reconnect_patience_s);
    // Often enough that `cudal1 workers` is current, and three beats fit in a visibility timeout.
    const auto every =
        std::chrono::duration<double>(std::clamp(c_.visibility_timeout_s / 3, 0.5, 5.0));
    const auto started = Clock::now();
    const int ttl = std::max(10, int(c_.visibility_timeout_s));
    for (;;) {
      std::vector<std::string> held;
      WorkerTotals t;
      {
        std::lock_guard l(m_);
        held.assign(held_.begin(), held_.end());
        t = totals_;
      }
      double up_s = std::chrono::duration<double>(Clock::now() - started).count();
      json record = {
          {"name", name_},
          {"lanes", c_.lanes},
          {"in_flight", held.size()},
          {"done", t.done},
          {"failed", t.failed},
          {"reclaimed", t.reclaimed},
          {"up_s", up_s},
          {"evaluations_per_hour", up_s > 0 ? 3600.0 * double(t.done + t.failed) / up_s : 0.0},
          {"seen_unix",
           std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
               .count()}};
      try {
        if (!held.empty()) {
          std::vector<std::string> argv = {"XCLAIM", c_.keys.stream(), ClusterKeys::kGroup, name_,
                                           "0"};
          argv.insert(argv.end(), held.begin(), held.end());
          argv.push_back("JUSTID");
          redis.command(argv);
        }
        redis.command({"SET", c_.keys.worker(name_), record.dump(), "EX", std::to_string(ttl)});
      } catch (const Error& e) {
        say("heartbeat: " + e.describe());
      } catch (const std::exception& e) {
        say(std::string("heartbeat: internal error: ") + e.what());
      }
      std::unique_lock l(m_);
      if (wake_.wait_for(l, every, [this] { return lanes_done_; })) break;
    }
    try {
      redis.command({"DEL", c_.keys.worker(name_)});
      redis.command({"SREM", c_.keys.workers(), name_});
    } catch (const Error& e) {
      say("leaving the cluster: " + e.describe());
    }
  }

  const WorkerConfig& c_;
  const std::atomic<bool>& stop_;
  const std::string name_;
  LaneShares shares_;
  std::mutex log_m_;
  std::mutex m_;  // guards held_, totals_, lanes_done_
  std::condition_variable wake_;
  std::set<std::string> held_;
  WorkerTotals totals_;
  bool lanes_done_ = false;
};

}  // namespace

WorkerTotals run_worker(const WorkerConfig& config, const std::atomic<bool>& stop) {
  return Worker(config, stop).run();
}

}  // namespace cudal1
