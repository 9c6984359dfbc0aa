// queue/fake_engine.h — a double of EvaluationEngine for unit tests: no Python, no torch. Each
// evaluation's verdict, and any fault to inject at preparing or running it, comes from the
// test's `judge`; the engine records what it was asked, in order, and how many ran at once.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "queue/evaluation_engine.h"

namespace cudal1::fakes {

// Where an injected fault strikes.
enum class Stage { prepare, run };

class FakeEngine : public EvaluationEngine {
 public:
  // Called at both stages; throwing injects a fault there. At Stage::prepare its result is
  // ignored; at Stage::run it is the verdict.
  std::function<EvalResult(const EvalOptions&, Stage)> judge = [](const EvalOptions&, Stage) {
    return EvalResult{};
  };
  std::chrono::milliseconds run_time{0};  // how long each run holds its lane

  std::unique_ptr<PreparedRun> prepare(const EvalOptions& options) override {
    note(prepared_, options);
    judge(options, Stage::prepare);
    return std::make_unique<Run>(*this, options);
  }
  // The most evaluations prepared and not yet running as a run ended (a real one's prepared
  // workers hold their processes). Counted then, not at every change: a lane takes its next
  // evaluation a moment before it runs it, while its preparer may already prepare the one after.
  int most_waiting_as_runs_end() {
    std::lock_guard<std::mutex> l(m_);
    return most_waiting_;
  }

  std::vector<EvalOptions> prepared() { return copy(prepared_); }
  std::vector<EvalOptions> ran() { return copy(ran_); }
  int most_at_once() {
    std::lock_guard<std::mutex> l(m_);
    return most_at_once_;
  }

 private:
  class Run : public PreparedRun {
   public:
    Run(FakeEngine& engine, EvalOptions options) : engine_(engine), options_(std::move(options)) {
      engine_.waiting(+1);
    }
    ~Run() override {
      if (!started_) engine_.waiting(-1);
    }
    EvalResult run() override {
      started_ = true;
      engine_.waiting(-1);
      return engine_.run(options_);
    }

   private:
    FakeEngine& engine_;
    EvalOptions options_;
    bool started_ = false;
  };

  void waiting(int change) {
    std::lock_guard<std::mutex> l(m_);
    waiting_ += change;
  }

  EvalResult run(const EvalOptions& options) {
    note(ran_, options);
    {
      std::lock_guard<std::mutex> l(m_);
      most_at_once_ = std::max(most_at_once_, ++running_);
    }
    std::this_thread::sleep_for(run_time);
    {
      std::lock_guard<std::mutex> l(m_);
      --running_;
      most_waiting_ = std::max(most_waiting_, waiting_);
    }
    EvalResult r = judge(options, Stage::run);
    r.task_path = options.task_path;
    r.candidate_path = options.candidate_path;
    return r;
  }
  void note(std::vector<EvalOptions>& seen, const EvalOptions& options) {
    std::lock_guard<std::mutex> l(m_);
    seen.push_back(options);
  }
  std::vector<EvalOptions> copy(const std::vector<EvalOptions>& seen) {
    std::lock_guard<std::mutex> l(m_);
    return seen;
  }

  std::mutex m_;
  std::vector<EvalOptions> prepared_, ran_;
  int running_ = 0, most_at_once_ = 0, waiting_ = 0, most_waiting_ = 0;
};

// Verdicts a judge hands back.
inline EvalResult accepted_result(double speedup) {
  EvalResult r;
  r.accepted = true;
  r.speedup["eager"] = speedup;
  return r;
}
inline EvalResult verdict_result(Status status) {
  EvalResult r;
  r.status = status;
  return r;
}
inline EvalResult rejected_result(const std::string& flag) {
  EvalResult r;
  r.status = Status::rejected;
  r.add_flag(flag, Severity::block, "planted by the test");
  return r;
}

}  // namespace cudal1::fakes
