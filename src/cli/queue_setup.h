// cli/queue_setup: what `cudal1 batch` and `cudal1 bench` share around the queue: the lanes
// (one per visible GPU), the build service in the prebuild stage, and the progress line.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "build/build.h"
#include "queue/queue.h"

namespace cudal1::cli {

// cpu: `lanes` cpu lanes; cuda: `lanes` lanes per visible GPU (at most `gpus` GPUs when > 0, one
// when `one_gpu`); cuda:N: `lanes` lanes on that GPU. Throws Error(usage) when cuda is asked for
// and none is visible.
std::vector<std::string> lane_devices(const std::string& device, int gpus, int lanes, bool one_gpu);

// --eval-memory-gb: the host memory a queue's lanes may hold at once (QueueConfig::
// memory_budget_bytes, from eval_memory_bytes); 0 leaves the queue its default.
void add_eval_memory_option(CLI::App& cmd, double& gb);
uint64_t eval_memory_bytes(double gb);

// --finish-within SECONDS: the queue's time limit (QueueConfig::finish_within_s); 0: none.
void add_finish_within_option(CLI::App& cmd, double& seconds);

inline constexpr const char* kClangOptionHelp =
    "the fast path's compiler for TUs that include torch: a clang++, or off for g++ only "
    "(default: $CUDAL1_CLANG, else clang++ on PATH)";

struct BuildServiceFlags {
  std::string cache;      // empty: $CUDAL1_CACHE/builds
  int jobs = 0;           // compilers at once; 0: the machine's cores
  int prebuild_threads = 0;  // candidates at once; 0: half the cores, at most 8
  std::string clang;         // BuildConfig::clang: empty finds one, "off" keeps g++
};

// Starts the build service and makes it the queue's prebuild stage. The service must outlive
// run_queue.
std::unique_ptr<BuildService> attach_build_service(QueueConfig& config, const BuildServiceFlags& flags);

// Ctrl-C (SIGINT) or SIGTERM stops a long queue gently: the first sets the flag the queue reads
// as QueueConfig::stop_starting, so the evaluations in hand finish and are kept, and says so on
// stderr; a second ends the process at once. Make one before any thread starts (it blocks both
// signals in the threads made after it, and one thread of its own waits for them).
class StopOnSignal {
 public:
  explicit StopOnSignal(std::string command);
  std::shared_ptr<std::atomic<bool>> flag() const { return flag_; }

 private:
  std::shared_ptr<std::atomic<bool>> flag_ = std::make_shared<std::atomic<bool>>(false);
};

// "[done/total] N evaluations/hour, ETA S s" on stderr, rewritten in place.
class ProgressLine {
 public:
  explicit ProgressLine(std::size_t total, std::size_t already_done = 0);
  void tick();    // one more done
  void finish();  // ends the line
 private:
  std::size_t total_, done_, base_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace cudal1::cli
