#include "task_facts/store_task_facts.h"

#include "baselines/baselines.h"
#include "core/hash.h"
#include "lint/lint.h"
#include "store/store.h"
#include "tasks/task_speed_of_light.h"

namespace cudal1 {

namespace {

class StoreTaskFacts : public TaskFacts {
 public:
  explicit StoreTaskFacts(Store* store) : store_(store) {}

  TaskLint lint(const TaskQuery& task) override {
    LintResult lint = lint_task_cached(task.task_path, task.device, task.tolerance, store_,
                                       task.python, task.hidden);
    TaskLint out;
    out.record = lint.to_json();
    for (auto& f : lint.findings)
      out.flags.push_back({"degenerate_task", Severity::warn,
                           "the task is degenerate (" + f.id + "): " + f.evidence});
    if (lint.fixed_weights)
      out.flags.push_back({"weights_fixed", Severity::warn, kFixedWeightsWarning});
    return out;
  }

  TaskBaselines baselines(const TaskQuery& task, const BaselineRequest& request) override {
    BaselineOptions bo;
    bo.task_path = task.task_path;
    bo.device = task.device;
    bo.python = task.python;
    bo.store = store_;
    bo.env = request.env;
    bo.names = request.names;
    bo.buckets = request.buckets;
    bo.calls = request.calls;
    bo.warmup = request.warmup;
    bo.hidden = task.hidden;
    bo.before_timing = request.before_timing;
    BaselineSet b = measure_baselines(bo);
    TaskBaselines out;
    out.record = b.to_json();
    for (auto& f : b.figures) out.ratios.emplace_back(f.name, f.ratio);
    return out;
  }

  std::optional<TaskLightFacts> speed_of_light(const TaskQuery& task,
                                               const std::function<void()>& before_measuring) override {
    TaskLight light = task_speed_of_light(
        {task.task_path, task.device, task.python, task.hidden, store_, before_measuring});
    return TaskLightFacts{light.sol_ms, light.floor_ms, light.record};
  }

  std::optional<double> best_accepted_speedup(const std::string& task_path, const std::string& device,
                                              const std::string& protocol_key) override {
    if (!store_) return std::nullopt;
    return store_->best_speedup(sha256_hex(read_file(task_path)), protocol_key, device);
  }

  bool shared() const override { return store_ != nullptr; }

 private:
  Store* store_;
};

}  // namespace

std::shared_ptr<TaskFacts> store_task_facts(Store* store) {
  return std::make_shared<StoreTaskFacts>(store);
}

}  // namespace cudal1
