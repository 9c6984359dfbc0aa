// tasks/task_speed_of_light.h — one task's speed of light on one device, for the evaluator's
// physics check (evaluator/light_check.h): the task's FLOPs and fewest bytes (describe.py) at the
// device's measured ceilings (speed_of_light.h), and the floor no correct program can beat on this
// device, writing the task's outputs once.
//
// The task's description runs the task file on the CPU in the sandbox (a task may be a client's);
// it is cached in the store under the file's hash, the ceilings under the device's name and torch
// version. Both are also kept for the life of the process, so a run without a store measures them
// once.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

class Store;

struct TaskLightQuery {
  std::filesystem::path task_path;
  std::string device, python;
  std::vector<std::string> hidden;        // out of the describing worker's sight (sandbox.h)
  Store* store = nullptr;                 // null: nothing cached across processes
  std::function<void()> before_measuring;  // called before the device's ceilings are measured
};

struct TaskLight {
  double sol_ms = 0;    // max(FLOPs / matmul rate, fewest bytes / bandwidth), speed_of_light_ms()
  double floor_ms = 0;  // the outputs' bytes / bandwidth: the outputs written once, nothing else
  nlohmann::json record = nlohmann::json::object();  // the figures both come from
};

// Throws Error when the task cannot be described or the device's ceilings cannot be measured.
TaskLight task_speed_of_light(const TaskLightQuery& query);

}  // namespace cudal1
