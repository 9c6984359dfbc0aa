#include "tasks/suite.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "runner/worker.h"
#include "store/store.h"
#include "tasks/task_worker.h"

namespace fs = std::filesystem;

namespace cudal1 {

fs::path default_suite_dir() {
  if (const char* env = std::getenv("CUDAL1_TASKS_DIR")) return env;
  return CUDAL1_SOURCE_TASKS_DIR;
}

std::vector<TaskEntry> discover_tasks(const fs::path& suite) {
  if (!fs::is_directory(suite))
    throw Error(ErrorKind::input, "no task suite at " + suite.string(),
                "pass --suite DIR (a folder with level1/, level2/, level3/) or set CUDAL1_TASKS_DIR");
  std::vector<TaskEntry> out;
  for (auto& dir : fs::directory_iterator(suite)) {
    std::string folder = dir.path().filename().string();
    if (!dir.is_directory() || folder.rfind("level", 0) != 0) continue;
    int level = std::atoi(folder.c_str() + 5);
    for (auto& f : fs::directory_iterator(dir.path()))
      if (f.path().extension() == ".py")
        out.push_back({folder + "/" + f.path().stem().string(), level, f.path()});
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

nlohmann::json describe_tasks(const std::vector<TaskEntry>& tasks, Store* store, const std::string& python,
                              const std::function<void(std::size_t, std::size_t)>& progress,
                              const std::vector<std::string>& hidden, bool skip_failing) {
  // What the store already knows, looked up once; the others are what the worker may read.
  std::vector<std::string> hashes;
  std::vector<nlohmann::json> metas;
  std::vector<fs::path> uncached;
  for (auto& t : tasks) {
    hashes.push_back(sha256_hex(read_file(t.path)));
    std::optional<nlohmann::json> cached;
    if (store) cached = store->find_cached("task:" + hashes.back(), kDescribeVersion);
    metas.push_back(cached ? *cached : nlohmann::json());
    if (!cached) uncached.push_back(t.path);
  }
  nlohmann::json out = nlohmann::json::array();
  std::unique_ptr<Worker> worker;  // started on the first cache miss only
  fs::path scratch;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const TaskEntry& t = tasks[i];
    if (progress) progress(i, tasks.size());
    nlohmann::json& meta = metas[i];
    if (meta.is_null()) {
      if (!worker) {
        scratch = make_private_dir("cudal1-describe");
        worker = std::make_unique<Worker>(task_worker_spec(
            {.python = python, .scratch = scratch, .task_files = uncached, .store = store, .hidden = hidden}));
      }
      try {
        WorkerReply reply = reference_call(*worker, {{"op", "describe"}, {"task", fs::absolute(t.path).string()}},
                                           std::chrono::minutes(10), t.path.string());
        meta = reply.body["meta"];
        meta["torch"] = reply.body["env"].value("torch", "");
        if (store) store->save_cached("task:" + hashes[i], kDescribeVersion, meta);
      } catch (const Error& e) {
        if (!skip_failing || e.kind() != ErrorKind::task) throw;
        meta = {{"error", e.what()}};
      }
    }
    meta["name"] = t.name;
    meta["level"] = t.level;
    meta["path"] = t.path.string();
    meta["sha256"] = hashes[i];
    out.push_back(meta);
  }
  if (worker) worker->shutdown();
  if (!scratch.empty()) {
    std::error_code ec;
    fs::remove_all(scratch, ec);
  }
  if (progress) progress(tasks.size(), tasks.size());
  return out;
}

}  // namespace cudal1
