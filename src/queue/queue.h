// queue/queue.h — evaluations scheduled over every visible GPU.
//
// One lane per device runs evaluations one at a time: timing needs the device to itself. Ahead
// of the lanes, CPU threads do everything that needs no device: a prebuild stage (compiling each
// candidate's extensions, in parallel across cores) and, per lane, a preparer that starts the
// next evaluations' processes (prepare_evaluation), so a lane waits as little as possible
// between two evaluations. Works for any number of lanes; "cpu" lanes run side by side too.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "evaluator/evaluator.h"
#include "queue/evaluation_engine.h"

namespace cudal1 {

struct QueueJob {
  std::string id;       // the caller's name for it (a row, a file)
  EvalOptions options;  // options.device is replaced by the lane's device
  nlohmann::json meta = nlohmann::json::object();  // the caller's facts about it (level, claimed speedups)
};

struct QueueResult {
  std::size_t index = 0;       // position in the job list
  std::string id, device;
  std::optional<EvalResult> result;
  std::optional<Error> error;  // the evaluation could not run (a task that does not load, ...)
  double prebuild_s = 0;       // its prebuild stage
  double lane_wait_s = 0;      // the lane idle before it, waiting for this one to be prepared
  double run_s = 0;            // the lane busy with it
  // Seconds from the queue's start until this result came back: on a set no larger than the
  // lanes the last of them is a latency, not a rate (docs/throughput.md, "Sizing a run").
  double finished_s = 0;
};

struct QueueConfig {
  // One lane each. A device named more than once gets several lanes that share it through a
  // DeviceGate: their checks overlap, their timing does not.
  std::vector<std::string> devices = {"cpu"};
  int prefetch = 1;             // evaluations prepared ahead per lane; 0: prepare on the lane itself
  int prebuild_threads = 0;     // threads of the prebuild stage; 0: no prebuild stage
  // Builds a job's extensions (build/build.h); the outcome goes to its evaluation as
  // EvalOptions::prebuilt. The job it is given has the first lane's device as options.device.
  // May return null (nothing to hand over) or throw: the evaluation then
  // builds the stock way, and the failure is logged and kept in the job's result, as
  // build.prebuild_error, or in its error's context when no result came back.
  std::function<std::shared_ptr<const BuildOutcome>(const QueueJob&)> prebuild;
  // What prepares and runs the evaluations; null: the evaluator (real_evaluation_engine()).
  std::shared_ptr<EvaluationEngine> engine;
  // Hears each failure met on the way (a prebuild, an evaluation that could not run), one line
  // each, from any thread; null: standard error. The job's result keeps it too.
  std::function<void(const std::string&)> log;
  // Host memory the lanes' evaluations may hold at once (core/memory_budget.h), in bytes; 0:
  // three quarters of what is available when the queue starts. Only with more than one lane.
  uint64_t memory_budget_bytes = 0;
  // Memory of each CUDA device that the evaluations of its lanes may hold at once
  // (core/device_memory.h), in bytes; 0: nine tenths of the device's own (nvidia-smi), or
  // CUDAL1_DEVICE_MEMORY_GB when set (0 there: no budget). Only for a device with several lanes.
  uint64_t device_memory_bytes = 0;
  // Lanes on one device stop each other's processes while one times, instead of waiting for
  // their stages to end (core/device_gate.h, freezing). Also on with CUDAL1_FREEZE_LANES=1.
  bool freeze_lanes = false;
  // Once it reads true, no evaluation starts: those in hand finish and report, jobs never started
  // get no on_result (QueueStats::not_started counts them). A caller sets it on Ctrl-C, so a long
  // run stopped early keeps the work in flight (cli/queue_setup.h, StopOnSignal).
  std::shared_ptr<const std::atomic<bool>> stop_starting;
  // Seconds after the queue starts by which the run must be over (0: no limit). An evaluation
  // starts only if the 75th percentile of the run times finished so far says it ends in time;
  // once one would not, none starts (as stop_starting), and the log says why. A run cut from
  // outside at that limit loses only the evaluations the estimate misjudged.
  double finish_within_s = 0;
};

struct QueueStats {
  double wall_s = 0;
  std::vector<double> lane_busy_s;  // per lane: seconds inside run_evaluation
  std::size_t done = 0, failed = 0;
  std::size_t not_started = 0;      // left when stop_starting was set or finish_within_s came near
  double evaluations_per_hour() const { return wall_s > 0 ? 3600.0 * double(done + failed) / wall_s : 0; }
  double idle_share() const;        // over all lanes: 1 - busy / (lanes * wall)
};

// What the lanes of one queue share: each device named more than once gets a gate (checks
// overlap, timing does not), and with more than one lane all share the host's memory budget.
struct LaneShares {
  std::map<std::string, std::shared_ptr<DeviceGate>> gates;
  std::shared_ptr<MemoryBudget> memory;  // null with one lane
  std::map<std::string, std::shared_ptr<MemoryBudget>> device_memory;  // per CUDA device with several lanes
  std::shared_ptr<DeviceGate> gate_for(const std::string& device) const;  // null: the lane has it alone
  std::shared_ptr<MemoryBudget> device_memory_for(const std::string& device) const;  // null: none
};
LaneShares lane_shares(const QueueConfig& config);

// Runs every job; on_result is called once per job, from one thread at a time, as each ends.
QueueStats run_queue(const std::vector<QueueJob>& jobs, const QueueConfig& config,
                     const std::function<void(const QueueResult&)>& on_result);

}  // namespace cudal1
