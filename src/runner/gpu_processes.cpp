#include "runner/gpu_processes.h"

#include <dlfcn.h>

#include <mutex>

namespace cudal1 {

namespace {

// NVML's types, as its header (not installed on machines without the driver) declares them.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct NvmlProcessInfo {  // nvmlProcessInfo_t, the layout of the _v2 and _v3 calls
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
constexpr nvmlReturn_t kSuccess = 0, kInsufficientSize = 7;

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int*, NvmlProcessInfo*) = nullptr;
  bool ready = false;
};

const Nvml& nvml() {
  static Nvml n = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return n;
    n.init = reinterpret_cast<decltype(n.init)>(dlsym(lib, "nvmlInit_v2"));
    n.handle = reinterpret_cast<decltype(n.handle)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    n.processes = reinterpret_cast<decltype(n.processes)>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    if (!n.processes)
      n.processes = reinterpret_cast<decltype(n.processes)>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2"));
    n.ready = n.init && n.handle && n.processes && n.init() == kSuccess;
    return n;
  }();
  return n;
}

}  // namespace

std::optional<std::vector<pid_t>> gpu_compute_pids(unsigned index) {
  const Nvml& n = nvml();
  if (!n.ready) return std::nullopt;
  nvmlDevice_t dev = nullptr;
  if (n.handle(index, &dev) != kSuccess) return std::nullopt;
  std::vector<NvmlProcessInfo> infos(64);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int count = static_cast<unsigned int>(infos.size());
    nvmlReturn_t rc = n.processes(dev, &count, infos.data());
    if (rc == kInsufficientSize) {
      infos.resize(count + 16);
      continue;
    }
    if (rc != kSuccess) return std::nullopt;
    std::vector<pid_t> pids;
    for (unsigned int i = 0; i < count; ++i) pids.push_back(static_cast<pid_t>(infos[i].pid));
    return pids;
  }
  return std::nullopt;
}

}  // namespace cudal1
