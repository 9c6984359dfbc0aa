// cli/baselines: a task's Model against torch.compile (both modes), a CUDA graph replay and cuDNN
// autotuning, as ratios to eager; cached in the store per task and machine (baselines/baselines.h).
#include <iostream>
#include <memory>

#include "baselines/baselines.h"
#include "cli/commands.h"
#include "cli/device_option.h"
#include "core/error.h"
#include "report/table.h"
#include "store/store.h"
#include "tasks/suite.h"

namespace cudal1::cli {

namespace {

struct BaselinesArgs {
  std::vector<std::string> tasks;
  std::string device = "cpu", db, python;
  bool json_out = false, no_store = false, control = false;
  int buckets = 0, calls = 0;  // 0: as the evaluator times candidates
};

void run_baselines(const BaselinesArgs& a) {
  std::unique_ptr<Store> store = open_store(a.db, a.no_store);
  nlohmann::json all = nlohmann::json::array();
  Table t({"task", "baseline", "eager ms", "baseline ms", "speedup over eager", "spread", "note"},
          {false, false, true, true, true, true, false});
  for (auto& task : a.tasks) {
    BaselineOptions o;
    o.task_path = resolve_task_file(task);
    o.device = a.device;
    o.python = a.python;
    o.store = store.get();
    o.buckets = a.buckets;
    o.calls = a.calls;
    o.names = baseline_names();
    if (a.control) o.names.push_back("eager_control");
    BaselineSet s = measure_baselines(o);
    all.push_back({{"task", task}, {"baselines", s.to_json()}});
    for (auto& f : s.figures) {
      if (f.ratio)
        t.add_row({task, f.name, format_fixed(f.eager_ms, 3), format_fixed(f.baseline_ms, 3), format_fixed(1.0 / *f.ratio, 2) + "x",
                   format_fixed(f.spread, 2), s.from_cache ? "from the cache" : ""});
      else
        t.add_row({task, f.name, "-", "-", "-", "-", "unavailable: " + f.unavailable});
    }
  }
  if (a.json_out) {
    std::cout << (all.size() == 1 ? all[0] : all).dump() << std::endl;
    return;
  }
  t.print(std::cout);
}

}  // namespace

void register_baselines(CLI::App& app) {
  auto args = std::make_shared<BaselinesArgs>();
  auto* cmd = app.add_subcommand("baselines", "Time a task's Model against torch.compile (default, reduce-overhead), a CUDA "
                                              "graph replay and cuDNN autotuning (ratios to eager, cached per task and machine)");
  cmd->add_option("tasks", args->tasks, "KernelBench task files or suite names (level1/28_log_softmax, log_softmax)")->required();
  cmd->add_option("-d,--device", args->device, "cpu, cuda or cuda:N")->transform(device_names())->capture_default_str();
  cmd->add_option("--buckets", args->buckets, "paired buckets per baseline (default: as candidates are timed, 7 on CUDA, 5 on CPU)");
  cmd->add_option("--calls", args->calls, "timed calls per side and bucket (default: as candidates are timed, 20 on CUDA, 8 on CPU)");
  cmd->add_flag("--control", args->control, "also time eager against itself: the noise floor of these ratios");
  cmd->add_option("--db", args->db, std::string("SQLite store (") + kDefaultStoreHelp + ")");
  cmd->add_flag("--no-store", args->no_store, "neither read nor write the cache");
  cmd->add_option("--python", args->python, "Python interpreter with torch");
  cmd->add_flag("--json", args->json_out, "print one JSON object (an array for several tasks)");
  cmd->callback([args] { run_baselines(*args); });
}

}  // namespace cudal1::cli
