#include "queue/queue.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "core/device_memory.h"

namespace cudal1 {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What the prebuild stage left for one job.
struct Prebuilt {
  double seconds = 0;
  std::shared_ptr<const BuildOutcome> outcome;
  std::string error;  // why the prebuild failed; empty when it did not
};

// Which jobs the prebuild stage has finished, for preparers that must not start a candidate
// before its extensions exist. Preparers take the first job whose build is done, so a candidate
// still compiling does not hold up the ones behind it.
class BuildGate {
 public:
  // `stop`: QueueConfig::stop_starting (null: never).
  BuildGate(std::size_t n, std::shared_ptr<const std::atomic<bool>> stop)
      : done_(n, false), taken_(n, false), built_(n), stop_(std::move(stop)) {}
  // Once set, no job is taken: take_ready answers nullopt, and lanes start nothing in hand.
  bool stopping() const { return (stop_ && *stop_) || stopped_; }
  // The queue's own stop (its time limit), heard by a waiting take_ready at once. True for the
  // call that stopped it, so that one lane, not each, says why.
  bool stop_starting() {
    std::lock_guard<std::mutex> l(m_);
    if (stopped_) return false;
    stopped_ = true;
    cv_.notify_all();
    return true;
  }
  // The lowest-numbered job not yet taken whose build is done, waiting for one if need be;
  // nullopt once every job is taken or the queue is stopping.
  std::optional<std::size_t> take_ready() {
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      if (stopping()) return std::nullopt;
      bool left = false;
      for (std::size_t i = 0; i < done_.size(); ++i) {
        if (taken_[i]) continue;
        left = true;
        if (done_[i]) {
          taken_[i] = true;
          return i;
        }
      }
      if (!left) return std::nullopt;
      // The stop flag is set from outside, with no notice to this gate: look again now and then.
      if (stop_) cv_.wait_for(l, std::chrono::milliseconds(100));
      else cv_.wait(l);
    }
  }
  void finish(std::size_t i, Prebuilt built) {
    std::lock_guard<std::mutex> l(m_);
    done_[i] = true;
    built_[i] = std::move(built);
    cv_.notify_all();
  }
  Prebuilt wait(std::size_t i) {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return bool(done_[i]); });
    return built_[i];
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<bool> done_, taken_;
  std::vector<Prebuilt> built_;
  std::shared_ptr<const std::atomic<bool>> stop_;
  std::atomic<bool> stopped_{false};
};

struct Prepared {
  std::size_t index;
  double prebuild_s = 0;
  std::string prebuild_error;
  std::unique_ptr<PreparedRun> eval;  // null when preparing failed
  std::optional<Error> error;
};

// A lane's bounded hand-over from its preparer to its runner.
class Handover {
 public:
  explicit Handover(std::size_t capacity) : capacity_(std::max<std::size_t>(1, capacity)) {}
  // Blocks until a prepared evaluation could be put. The one producer waits here before it
  // prepares the next: one prepared and waiting to be put would be one more than the capacity,
  // holding its workers (a CUDA context each) outside the device's memory budget.
  void wait_for_room() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return items_.size() < capacity_; });
  }
  void put(Prepared p) {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return items_.size() < capacity_; });
    items_.push_back(std::move(p));
    cv_.notify_all();
  }
  void close() {
    std::lock_guard<std::mutex> l(m_);
    closed_ = true;
    cv_.notify_all();
  }
  std::optional<Prepared> take() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    Prepared p = std::move(items_.front());
    items_.pop_front();
    cv_.notify_all();
    return p;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Prepared> items_;
  std::size_t capacity_;
  bool closed_ = false;
};

// The job's result keeps its prebuild's failure beside what the evaluation found.
void keep_prebuild_error(QueueResult& qr, const std::string& why) {
  if (qr.result) {
    qr.result->build["prebuild_error"] = why;
  } else if (qr.error) {
    const Error& e = *qr.error;
    std::string context = e.context().empty() ? "" : e.context() + "; ";
    qr.error = Error(e.kind(), e.message(), e.hint(), context + "its prebuild had failed: " + why);
  }
}

Prepared prepare_job(const QueueJob& job, std::size_t index, const std::string& device,
                     const LaneShares& shares, BuildGate& gate, EvaluationEngine& engine) {
  Prebuilt built = gate.wait(index);
  Prepared p{index, built.seconds, built.error, nullptr, std::nullopt};
  EvalOptions o = job.options;
  o.device = device;
  if (auto device_gate = shares.gate_for(device)) o.device_gate = device_gate;
  if (shares.memory) o.memory_budget = shares.memory;
  if (auto device_memory = shares.device_memory_for(device)) o.device_memory_budget = device_memory;
  if (built.outcome) o.prebuilt = built.outcome;
  try {
    fill_best_known_speedup(o);  // for the lane's device: what the store keys its verdicts by
    p.eval = engine.prepare(o);
  } catch (const Error& e) {
    p.error = e;
  } catch (const std::exception& e) {
    p.error = Error(ErrorKind::internal, std::string("preparing the evaluation failed: ") + e.what(), "report this as a bug");
  }
  return p;
}

// The budget of `device`'s memory for its lanes; 0: none (a CPU, or nothing known of the device).
uint64_t device_memory_capacity(const QueueConfig& config, const std::string& device) {
  // Only a CUDA device has such memory; a cluster's lanes ("remote") are no device of this host.
  if (!is_cuda_device(device)) return 0;
  if (config.device_memory_bytes) return config.device_memory_bytes;
  if (const char* gb = std::getenv("CUDAL1_DEVICE_MEMORY_GB"); gb && *gb) return uint64_t(std::atof(gb) * double(1ull << 30));
  // A tenth stays free: each allocator's fragmentation, and whatever else uses the device.
  std::optional<uint64_t> total = cuda_device_total_bytes(device);
  return total ? *total / 10 * 9 : 0;
}

}  // namespace

double QueueStats::idle_share() const {
  if (lane_busy_s.empty() || wall_s <= 0) return 0;
  double busy = 0;
  for (double b : lane_busy_s) busy += b;
  return std::max(0.0, 1.0 - busy / (wall_s * double(lane_busy_s.size())));
}

LaneShares lane_shares(const QueueConfig& config) {
  LaneShares shares;
  std::map<std::string, int> lanes_on;
  for (auto& d : config.devices) lanes_on[d]++;
  const char* env = std::getenv("CUDAL1_FREEZE_LANES");
  bool freeze = config.freeze_lanes || (env && std::string(env) == "1");
  for (auto& [d, n] : lanes_on)
    if (n > 1) shares.gates[d] = std::make_shared<DeviceGate>(freeze);
  if (config.devices.size() > 1)
    shares.memory = std::make_shared<MemoryBudget>(config.memory_budget_bytes ? config.memory_budget_bytes : default_memory_budget());
  for (auto& [d, n] : lanes_on)
    if (n > 1)
      if (uint64_t bytes = device_memory_capacity(config, d)) shares.device_memory[d] = std::make_shared<MemoryBudget>(bytes);
  return shares;
}

std::shared_ptr<MemoryBudget> LaneShares::device_memory_for(const std::string& device) const {
  auto it = device_memory.find(device);
  return it == device_memory.end() ? nullptr : it->second;
}

std::shared_ptr<DeviceGate> LaneShares::gate_for(const std::string& device) const {
  auto it = gates.find(device);
  return it == gates.end() ? nullptr : it->second;
}

QueueStats run_queue(const std::vector<QueueJob>& jobs, const QueueConfig& config,
                     const std::function<void(const QueueResult&)>& on_result) {
  if (config.devices.empty()) throw Error(ErrorKind::usage, "no device to run evaluations on", "name at least one device");
  auto start = Clock::now();
  QueueStats stats;
  stats.lane_busy_s.assign(config.devices.size(), 0.0);
  BuildGate gate(jobs.size(), config.stop_starting);
  std::mutex report_m;
  std::vector<double> run_times;  // of the evaluations run so far; guarded by report_m
  const std::shared_ptr<EvaluationEngine> engine =
      config.engine ? config.engine : real_evaluation_engine();
  std::mutex log_m;
  auto log = [&](const std::string& line) {
    std::lock_guard<std::mutex> l(log_m);
    if (config.log) {
      config.log(line);
    } else {
      std::cerr << "cudal1: " << line << std::endl;
    }
  };

  // Prebuild: in job order, so the jobs the lanes take first are built first.
  std::atomic<std::size_t> next_build{0};
  std::vector<std::thread> builders;
  if (config.prebuild && config.prebuild_threads > 0) {
    for (int t = 0; t < config.prebuild_threads; ++t)
      builders.emplace_back([&] {
        for (std::size_t i; !gate.stopping() && (i = next_build++) < jobs.size();) {
          auto t0 = Clock::now();
          Prebuilt built;
          // A prebuild that fails leaves the job to build the stock way; the failure is said.
          try {
            // For the lanes' device (its CUDA arch; a capture that records calls made only
            // where CUDA is), not the job's own default: a lane gives the job its device later.
            QueueJob target = jobs[i];
            if (!config.devices.empty()) target.options.device = config.devices.front();
            built.outcome = config.prebuild(target);
          } catch (const Error& e) {
            built.error = e.describe();
          } catch (const std::exception& e) {
            built.error = std::string("internal error: ") + e.what();
          }
          if (!built.error.empty())
            log("job " + jobs[i].id + ": its prebuild failed, so its evaluation builds its "
                "extensions itself: " + built.error);
          built.seconds = seconds_since(t0);
          gate.finish(i, std::move(built));
        }
      });
  } else {
    for (std::size_t i = 0; i < jobs.size(); ++i) gate.finish(i, Prebuilt{});
  }

  auto run_one = [&](std::size_t lane, Prepared p, double waited) {
    QueueResult qr;
    qr.index = p.index;
    qr.id = jobs[p.index].id;
    qr.device = config.devices[lane];
    qr.prebuild_s = p.prebuild_s;
    qr.lane_wait_s = waited;
    qr.error = p.error;
    const bool ran = bool(p.eval);
    if (p.eval) {
      auto t0 = Clock::now();
      try {
        qr.result = p.eval->run();
      } catch (const Error& e) {
        qr.error = e;
      } catch (const std::exception& e) {
        qr.error = Error(ErrorKind::internal, std::string("the evaluation failed: ") + e.what(), "report this as a bug");
      }
      p.eval.reset();  // its processes and folders go before the next evaluation starts
      qr.run_s = seconds_since(t0);
    }
    if (!p.prebuild_error.empty()) keep_prebuild_error(qr, p.prebuild_error);
    if (qr.error)
      log("job " + qr.id + " on " + qr.device + " could not be evaluated: " + qr.error->describe());
    std::lock_guard<std::mutex> l(report_m);
    qr.finished_s = seconds_since(start);
    stats.lane_busy_s[lane] += qr.run_s;
    if (ran) run_times.push_back(qr.run_s);
    (qr.result ? stats.done : stats.failed)++;
    on_result(qr);
  };

  // QueueConfig::finish_within_s: whether an evaluation starting now ends in time, judged by the
  // run times finished so far (none yet: it starts, there is nothing to judge by).
  auto in_time = [&] {
    if (config.finish_within_s <= 0) return true;
    double expected = 0;
    std::size_t finished = 0;
    {
      std::lock_guard<std::mutex> l(report_m);
      if (run_times.empty()) return true;
      std::vector<double> sorted = run_times;
      std::sort(sorted.begin(), sorted.end());
      finished = sorted.size();
      expected = sorted[(finished - 1) * 3 / 4];
    }
    const double now = seconds_since(start);
    if (now + expected <= config.finish_within_s) return true;
    if (gate.stop_starting())
      log("no evaluation starts after " + std::to_string(int(now)) + " s: they have taken " + std::to_string(int(expected)) +
           " s (75th percentile of " + std::to_string(finished) + " finished), and the run must end within " +
          std::to_string(int(config.finish_within_s)) + " s; those in hand finish");
    return false;
  };

  const LaneShares shares = lane_shares(config);

  std::vector<std::thread> threads;
  for (std::size_t lane = 0; lane < config.devices.size(); ++lane) {
    const std::string& device = config.devices[lane];
    if (config.prefetch <= 0) {  // the stock way: prepare and run on the lane, one after the other
      threads.emplace_back([&, lane, device] {
        for (;;) {
          auto t0 = Clock::now();
          std::optional<std::size_t> i = gate.take_ready();
          if (!i) break;
          Prepared p = prepare_job(jobs[*i], *i, device, shares, gate, *engine);
          if (gate.stopping() || !in_time()) continue;
          run_one(lane, std::move(p), seconds_since(t0));
        }
      });
      continue;
    }
    auto handover = std::make_shared<Handover>(std::size_t(config.prefetch));
    threads.emplace_back([&, device, handover] {
      for (;;) {
        handover->wait_for_room();  // before taking a job: another lane may be free for it sooner
        std::optional<std::size_t> i = gate.take_ready();
        if (!i) break;
        handover->put(prepare_job(jobs[*i], *i, device, shares, gate, *engine));
      }
      handover->close();
    });
    threads.emplace_back([&, lane, handover] {
      for (;;) {
        auto t0 = Clock::now();
        std::optional<Prepared> p = handover->take();
        if (!p) break;
        if (gate.stopping() || !in_time()) continue;  // prepared, never started: its processes go with it
        run_one(lane, std::move(*p), seconds_since(t0));
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& t : builders) t.join();
  stats.wall_s = seconds_since(start);
  stats.not_started = jobs.size() - stats.done - stats.failed;
  return stats;
}

}  // namespace cudal1
