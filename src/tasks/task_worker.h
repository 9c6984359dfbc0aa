// tasks/task_worker.h — the worker that runs task files outside an evaluation: to describe them
// (describe.py's FLOPs, bytes and shapes) and to time their eager forward.
//
// A task file may be a client's, as much code from outside as a candidate: it runs in the sandbox,
// able to read the task files it was started for, its own scratch and the interpreter, and never
// the store's folder, the caller's `hidden` paths or the sandbox's defaults (sandbox.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runner/worker.h"

namespace cudal1 {

class Store;

struct TaskWorkerQuery {
  std::string python, device = "cpu";
  std::filesystem::path scratch;                  // the worker's private folder
  std::vector<std::filesystem::path> task_files;  // what it may read
  Store* store = nullptr;                         // its folder is hidden
  std::vector<std::string> hidden;                // also out of sight
};

WorkerSpec task_worker_spec(const TaskWorkerQuery& query);

}  // namespace cudal1
