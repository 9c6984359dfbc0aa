// tasks/speed_of_light.h — how far a task's time is from what the device allows.
//
// The device's two ceilings (matrix-multiply rate per dtype, copy bandwidth counting bytes read
// plus written) are measured once by the trusted worker and cached in the store by device name
// and torch version. A task's speed-of-light time is max(FLOPs / rate, minimum bytes /
// bandwidth); its fraction is that over a measured time (eager, or a candidate's).
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace cudal1 {

class Store;
class Worker;

// The ceilings of `device` (flops_per_s per dtype, bytes_per_s, the TF32 defaults), from the store's
// cache (by device name and torch version) or measured by `worker`, a reference worker on
// `device`, and cached. `before_measuring` runs just before a measurement (not on a cache hit): the
// measurement runs large matmuls and copies, so a caller sharing the device takes it alone there.
nlohmann::json device_ceilings(Worker& worker, const std::string& device, Store* store,
                               const std::function<void()>& before_measuring = {});

// Adds "sol_ms" (and, when `eager`, "eager_ms" and "sol_fraction") to every task of `metas`
// (from describe_tasks), on `device`; the tasks' eager forwards run in the sandbox
// (tasks/task_worker.h). Returns the ceilings used:
// {"device", "device_name", "flops_per_s": {dtype: rate}, "bytes_per_s", ...}.
nlohmann::json add_speed_of_light(nlohmann::json& metas, const std::string& device, bool eager,
                                  Store* store, const std::string& python,
                                  const std::function<void(std::size_t done, std::size_t total)>& progress);

// max(flops / rate of the task's widest-used reduced dtype (else float32), bytes / bandwidth), ms.
double speed_of_light_ms(const nlohmann::json& task_meta, const nlohmann::json& ceilings);

}  // namespace cudal1
