// baselines/baselines.h — a task's Model against the faster forms of itself that cost no
// insight: torch.compile (default and reduce-overhead), a CUDA graph replay, cuDNN autotuning.
//
// Measured by the trusted reference worker (runner/py/baselines.py) as ratios to eager, in paired
// buckets, on a fixed seed; cached in the store per task content, device model, driver, torch,
// CUDA and protocol, so a task's baselines are measured once per machine and software stack. An
// evaluation's speedup against baseline B is its speedup against eager times B's ratio
// (baseline ms / eager ms). A baseline that cannot be built, or whose outputs differ from
// eager's, is unavailable, with the reason.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evaluator/timing.h"

namespace cudal1 {

class Store;

// Bumped whenever a change can alter a figure: cached baselines of another version are not used.
inline constexpr const char* kBaselinesVersion = "baselines/2";

// The names, in the order reports show them.
const std::vector<std::string>& baseline_names();

struct BaselineFigure {
  std::string name;
  std::optional<double> ratio;  // median over buckets of baseline ms / eager ms
  double eager_ms = 0, baseline_ms = 0;  // medians over all buckets
  double spread = 0;            // (q75 - q25) / median of the bucket ratios
  std::string unavailable;      // why not, when ratio is empty
  // Timed calls that came with inputs the baseline was not prepared for (cuda_graph: buffers it
  // has no graph of, so they were copied into a graph's static inputs inside the call).
  int copied_calls = 0;
};

struct BaselineSet {
  std::vector<BaselineFigure> figures;
  nlohmann::json env = nlohmann::json::object();  // the worker's environment: what the key covers
  bool from_cache = false;
  const BaselineFigure* find(const std::string& name) const;
  nlohmann::json to_json() const;
  static BaselineSet from_json(const nlohmann::json& j);
};

struct BaselineOptions {
  std::string task_path;
  std::string device = "cpu";
  std::string python;          // empty: find_python()
  std::vector<std::string> names;  // empty: baseline_names()
  // 0: as the evaluator times a candidate on this device (evaluator/timing.h), settle calls
  // included, so a baseline's ratio and a candidate's speedup are measured alike.
  int buckets = 0, calls = 0, warmup = 0;
  double timeout_s = 1800;     // torch.compile of a large model takes minutes
  Store* store = nullptr;      // cache; null: measured every time
  // The worker environment (runner/py roles.py `env`) when the caller already has it from a
  // worker on the same device and Python; empty: asked of a fresh worker.
  nlohmann::json env = nlohmann::json::object();
  // Called between building the baselines (compiling, capturing, checking: the device may be
  // shared) and timing them (it should not be): the evaluator takes the device to itself here.
  std::function<void()> before_timing;
  std::vector<std::string> hidden;  // out of its sandbox's sight beside the defaults (sandbox/sandbox.h)
};

// Throws Error(task) when the task does not load, Error(runner) when the worker breaks down.
BaselineSet measure_baselines(const BaselineOptions& o);

// The store key of a set of figures: everything one depends on (the task, the worker's
// environment, the protocol, the names asked for, the timing settings). Exposed for tests.
std::string baselines_cache_key(const std::string& task_hash, const nlohmann::json& env,
                                const std::vector<std::string>& names, const TimingSettings& ts);

// Figures from per-bucket [eager ms, baseline ms] pairs (exposed for tests).
BaselineFigure baseline_figure(const std::string& name, const nlohmann::json& buckets);

}  // namespace cudal1
