// tasks/suite.h — the bundled task suite: finding task files, and their computed metadata.
//
// A suite is a folder with level1/, level2/, level3/ holding KernelBench task files (and
// solutions/, which is not part of the suite). Metadata (FLOPs, minimum bytes, shapes) is
// computed by running the task file in the sandbox (it may be a client's) and cached in the
// store by the task's content hash.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

class Store;

struct TaskEntry {
  std::string name;             // "level1/01_matmul_square"
  int level = 0;                // from the folder name levelN; 0 when not in one
  std::filesystem::path path;
};

// A task's file name split at the number KernelBench starts it with: "28_log_softmax" ->
// {28, "log_softmax"}; a name without one (or with more digits than an int holds) keeps number
// 0, and `rest` is the name after any leading digits and their '_'.
struct TaskStem {
  int number = 0;
  std::string rest;
};
TaskStem split_task_stem(const std::string& stem);

// $CUDAL1_TASKS_DIR, else the source tree's tasks/.
std::filesystem::path default_suite_dir();

// Every *.py under suite/levelN/ (sorted by name). Throws Error(input) if `suite` is missing.
std::vector<TaskEntry> discover_tasks(const std::filesystem::path& suite);

// The one resolver of task names, used by every command that takes a task (task_names.cpp): an
// existing file; else a task of `suite` by its name ("level1/28_log_softmax"), its file's stem
// ("28_log_softmax"), its short name ("log_softmax"), or a part of its name that only it has
// (".py" may end any of them). Throws Error(input) listing the tasks an ambiguous name fits, or
// the closest names when none fits.
TaskEntry find_task(const std::filesystem::path& suite, const std::string& name_or_path);

// find_task in default_suite_dir(), for commands without --suite: the task file's path.
std::string resolve_task_file(const std::string& name_or_path);

// The store's cache version of describe.py's metadata (key "task:<sha256 of the file>"): bumped
// when describe.py's definitions change, so cached metadata is recomputed.
inline constexpr const char* kDescribeVersion = "describe/2";

// Metadata of each task, from the store when cached, else computed (one sandboxed worker for all,
// tasks/task_worker.h: it sees neither the store's folder nor `hidden`) and saved. Each element:
// {"name", "level", "path", "sha256", ...describe.py's fields}. A task that does not load throws
// Error(task); with `skip_failing` its element holds {"error": why} instead, is not cached, and the
// other tasks are described (a report of 200 tasks is not lost to one missing import).
nlohmann::json describe_tasks(const std::vector<TaskEntry>& tasks, Store* store,
                              const std::string& python,
                              const std::function<void(std::size_t done, std::size_t total)>& progress,
                              const std::vector<std::string>& hidden = {}, bool skip_failing = false);

}  // namespace cudal1
