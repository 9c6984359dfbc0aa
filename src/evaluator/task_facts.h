// evaluator/task_facts.h — what an evaluation learns about its task rather than its candidate:
// the task's degenerate-task lint, its baselines' figures, its speed of light and the best figure
// accepted for it so far. The evaluator and the queue ask for them
// through this interface; the layer above it (src/task_facts) computes them and decides whether
// they are cached, so the evaluator depends on neither the lint, the baselines nor the store.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "evaluator/result.h"
#include "tensors/compare.h"

namespace cudal1 {

// The task an evaluation runs, as the facts about it need it.
struct TaskQuery {
  std::string task_path;
  std::string device;
  std::string python;  // the Python the evaluation's workers run
  ToleranceMode tolerance = ToleranceMode::standard;
  std::vector<std::string> hidden;  // out of the workers' sight (sandbox/sandbox.h)
};

// The task's speed of light on the evaluation's device (tasks/task_speed_of_light.h): the time
// its FLOPs and fewest bytes take at the device's measured ceilings, and the time writing its
// outputs once takes, which no correct program beats.
struct TaskLightFacts {
  double sol_ms = 0, floor_ms = 0;
  json record = json::object();
};

// The task's lint as a result carries it: its JSON record and the flags it raises.
struct TaskLint {
  json record = json::object();
  std::vector<Flag> flags;
};

// What the baselines are timed as: the candidate's timing settings and which baselines.
struct BaselineRequest {
  std::vector<std::string> names;  // empty: every one
  int buckets = 0, calls = 0, warmup = 0;
  json env = json::object();  // the reference worker's environment, when known
  // Called once the baselines are built and checked, before they are timed.
  std::function<void()> before_timing;
};

// The baselines' figures: their record, and each one's ratio to eager (none: unavailable).
struct TaskBaselines {
  json record = json::object();
  std::vector<std::pair<std::string, std::optional<double>>> ratios;
};

class TaskFacts {
 public:
  virtual ~TaskFacts() = default;
  // Throws Error when the task cannot be linted (it does not load, the worker breaks down).
  virtual TaskLint lint(const TaskQuery& task) = 0;
  // Throws Error when the baselines cannot be measured.
  virtual TaskBaselines baselines(const TaskQuery& task, const BaselineRequest& request) = 0;
  // nullopt when these facts do not compute it. Throws Error when it cannot be computed.
  // `before_measuring` is called before the device's ceilings are measured (large matmuls and
  // copies: the caller takes the device alone there).
  virtual std::optional<TaskLightFacts> speed_of_light(const TaskQuery& task,
                                                       const std::function<void()>& before_measuring) {
    (void)task, (void)before_measuring;
    return std::nullopt;
  }
  // The best accepted eager speedup on record for the task on `device` under `protocol_key`;
  // nullopt when there is none, or when these facts keep no record. Throws Error when the record
  // cannot be read.
  virtual std::optional<double> best_accepted_speedup(const std::string& task_path,
                                                      const std::string& device,
                                                      const std::string& protocol_key) {
    (void)task_path, (void)device, (void)protocol_key;
    return std::nullopt;
  }
  // True when one answer serves every evaluation of the task (a cache): lanes evaluating the
  // same task then compute it one at a time, the later ones reading the first one's answer.
  virtual bool shared() const = 0;
};

}  // namespace cudal1
