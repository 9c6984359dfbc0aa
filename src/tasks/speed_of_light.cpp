#include "tasks/speed_of_light.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/paths.h"
#include "runner/worker.h"
#include "store/store.h"
#include "tasks/task_worker.h"

namespace fs = std::filesystem;

namespace cudal1 {

namespace {
constexpr const char* kCeilingsVersion = "ceilings/2";
}

double speed_of_light_ms(const nlohmann::json& meta, const nlohmann::json& ceilings) {
  const auto& rates = ceilings.at("flops_per_s");
  auto dtypes = meta.value("float_dtypes", nlohmann::json::array());
  // A task in bf16 or fp16 runs its products on that rate; everything else on float32's.
  std::string dtype = "float32";
  for (const char* reduced : {"bfloat16", "float16"})
    if (std::find(dtypes.begin(), dtypes.end(), reduced) != dtypes.end() && rates.contains(reduced)) dtype = reduced;
  double rate = rates.value(dtype, 0.0), bw = ceilings.value("bytes_per_s", 0.0);
  double flops = meta.value("flops", 0.0), conv = std::min(meta.value("conv_flops", 0.0), flops);
  // Eager float32 may legally run on TF32 tensor cores (cuDNN convolutions by default, matmuls
  // when enabled); its ceiling is then the TF32 rate, or a measured eager time beats "light".
  double conv_rate = rate, other_rate = rate;
  if (dtype == "float32" && rates.contains("tfloat32")) {
    if (ceilings.value("cudnn_allow_tf32", false)) conv_rate = rates["tfloat32"].get<double>();
    if (ceilings.value("matmul_allow_tf32", false)) other_rate = rates["tfloat32"].get<double>();
  }
  double compute_s = rate > 0 ? conv / conv_rate + (flops - conv) / other_rate : 0.0;
  double memory_s = bw > 0 ? meta.value("bytes", 0.0) / bw : 0.0;
  return 1e3 * std::max(compute_s, memory_s);
}

nlohmann::json device_ceilings(Worker& worker, const std::string& device, Store* store,
                               const std::function<void()>& before_measuring) {
  auto minutes = std::chrono::minutes(10);
  nlohmann::json env = reference_call(worker, {{"op", "env"}}, minutes, "").body["env"];
  std::string key = "ceilings:" + device + ":" + env.value("device_name", "") + ":" + env.value("torch", "");
  if (store)
    if (auto cached = store->find_cached(key, kCeilingsVersion)) return *cached;
  if (before_measuring) before_measuring();
  nlohmann::json ceilings = reference_call(worker, {{"op", "ceilings"}}, minutes, "").body["ceilings"];
  ceilings["device"] = device;
  ceilings["device_name"] = env.value("device_name", "");
  ceilings["torch"] = env.value("torch", "");
  if (store) store->save_cached(key, kCeilingsVersion, ceilings);
  return ceilings;
}

nlohmann::json add_speed_of_light(nlohmann::json& metas, const std::string& device, bool eager, Store* store,
                                  const std::string& python,
                                  const std::function<void(std::size_t, std::size_t)>& progress) {
  fs::path scratch = make_private_dir("cudal1-sol");
  TaskWorkerQuery query{.python = python, .device = device, .scratch = scratch, .store = store};
  if (eager)
    for (auto& m : metas) query.task_files.push_back(m.at("path").get<std::string>());
  Worker worker(task_worker_spec(query));
  auto minutes = std::chrono::minutes(10);
  nlohmann::json ceilings = device_ceilings(worker, device, store);
  for (std::size_t i = 0; i < metas.size(); ++i) {
    if (progress) progress(i, metas.size());
    auto& m = metas[i];
    double sol = speed_of_light_ms(m, ceilings);
    m["sol_ms"] = sol;
    m["device"] = device;
    if (!eager || m.contains("error")) continue;  // a task describe_tasks could not load has no time
    std::string path = fs::absolute(m.at("path").get<std::string>()).string();
    auto reply = reference_call(worker, {{"op", "eager_time"}, {"task", path}}, minutes, path);
    double eager_ms = reply.body.value("eager_ms", 0.0);
    m["eager_ms"] = eager_ms;
    m["sol_fraction"] = eager_ms > 0 ? sol / eager_ms : 0.0;
  }
  worker.shutdown();
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (progress) progress(metas.size(), metas.size());
  return ceilings;
}

}  // namespace cudal1
