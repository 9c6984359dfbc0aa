#include "tasks/task_speed_of_light.h"

#include <map>
#include <mutex>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "runner/worker.h"
#include "store/store.h"
#include "tasks/speed_of_light.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cudal1 {

namespace {

// For the life of the process: task hash -> description, device -> ceilings.
std::mutex memo_mutex;
std::map<std::string, json> described, ceilings_of;

// A private folder, removed when the work is done.
struct Scratch {
  fs::path root;
  explicit Scratch(const char* prefix) : root(make_private_dir(prefix)) {}
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

json describe_task(const TaskLightQuery& q) {
  return describe_tasks({TaskEntry{.path = q.task_path}}, q.store, q.python, nullptr, q.hidden).at(0);
}

json measure_ceilings(const TaskLightQuery& q) {
  Scratch scratch("cudal1-ceilings");
  // No task code runs here: the worker only times matmuls and copies.
  WorkerSpec spec{WorkerRole::reference, q.python, scratch.root.string(), q.device, {}, {}};
  spec.limits.output_bytes = std::size_t(1) << 20;
  Worker worker(spec);
  json ceilings = device_ceilings(worker, q.device, q.store, q.before_measuring);
  worker.shutdown();
  return ceilings;
}

}  // namespace

TaskLight task_speed_of_light(const TaskLightQuery& q) {
  std::string hash = sha256_hex(read_file(q.task_path));
  json meta, ceilings;
  {
    std::lock_guard lock(memo_mutex);
    if (auto it = described.find(hash); it != described.end()) meta = it->second;
    if (auto it = ceilings_of.find(q.device); it != ceilings_of.end()) ceilings = it->second;
  }
  if (meta.is_null()) meta = describe_task(q);
  if (ceilings.is_null()) ceilings = measure_ceilings(q);
  {
    std::lock_guard lock(memo_mutex);
    described[hash] = meta;
    ceilings_of[q.device] = ceilings;
  }
  TaskLight light;
  light.sol_ms = speed_of_light_ms(meta, ceilings);
  double bandwidth = ceilings.value("bytes_per_s", 0.0);
  double out_bytes = meta.value("bytes_detail", json::object()).value("outputs", 0.0);
  light.floor_ms = bandwidth > 0 ? 1e3 * out_bytes / bandwidth : 0.0;
  light.record = {{"flops", meta.value("flops", 0.0)},
                  {"bytes", meta.value("bytes", 0.0)},
                  {"output_bytes", out_bytes},
                  {"flops_per_s", ceilings.value("flops_per_s", json::object())},
                  {"bytes_per_s", bandwidth},
                  {"device_name", ceilings.value("device_name", "")},
                  {"sol_ms", light.sol_ms},
                  {"floor_ms", light.floor_ms}};
  return light;
}

}  // namespace cudal1
