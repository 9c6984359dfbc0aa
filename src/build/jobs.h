// build/jobs.h — compiler runs: a pool bounded by cores and memory, each run sandboxed.
//
// nvcc and g++ on torch's headers take 1-2.5 GB each, so the pool admits a step only while the
// memory estimates of the running steps fit the budget (a step larger than the whole budget
// still runs, alone). Every step is a command for /bin/sh, as ninja runs torch's, started as a
// cudal1 Process: unprivileged, output bounded, with the cache root hidden except the step's own
// job folder (writable) and at most one precompiled header folder (read-only). The sources it
// compiles are the candidate's, and a compiler flag can run code.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>

namespace cudal1 {

struct Step {
  std::string name;              // "main.cpp", "device TU", "link", for people
  std::string command;           // for sh -c
  std::filesystem::path cwd;     // the job folder (inside the cache root)
  std::filesystem::path read_only;  // a folder inside the cache root the step may read, or empty
  std::size_t memory_mb = 1000;  // estimate, for the pool
};

struct StepResult {
  bool ok = false;
  bool deterministic = true;  // false: killed (deadline, output flood), not a compiler's verdict
  std::string problem;        // what went wrong, for a person (empty when ok)
  std::string output;         // the tail of stdout and stderr
  double seconds = 0, queued_seconds = 0;
};

class JobPool {
 public:
  // jobs 0: the machine's cores; memory_budget_mb 0: 80 % of MemAvailable.
  JobPool(std::filesystem::path cache_root, int jobs, std::size_t memory_budget_mb);

  // Waits for room, runs the step, returns when it ended or `deadline` passed (then killed).
  StepResult run(const Step& step, std::chrono::steady_clock::time_point deadline);

  int jobs() const { return jobs_; }
  std::size_t memory_budget_mb() const { return budget_mb_; }

 private:
  StepResult execute(const Step& step, std::chrono::steady_clock::time_point deadline);

  std::filesystem::path root_;
  int jobs_;
  std::size_t budget_mb_;
  std::mutex mutex_;
  std::condition_variable freed_;
  int running_ = 0;
  std::size_t used_mb_ = 0;
};

// MemAvailable from /proc/meminfo, in MiB (0 when unknown).
std::size_t available_memory_mb();

}  // namespace cudal1
