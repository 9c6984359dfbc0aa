// core/device_memory.h — how much memory a CUDA device has: the capacity of the budget that the
// lanes sharing the device reserve from before their workers load a task onto it (queue/queue.h).
// Without one, a dozen workers' caching allocators filled an 80 GB H100 with the inputs of
// KernelBench's large tasks, and evaluations died of `CUDA error: out of memory` while starting.
//
// Asked of nvidia-smi, which knows the device without creating a CUDA context here. "cuda:N" is
// the process's N-th visible device: with CUDA_VISIBLE_DEVICES set, its N-th entry (an index or a
// UUID, both of which nvidia-smi -i takes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cudal1 {

// Total memory of `device` ("cuda" or "cuda:N") in bytes; nullopt for a CPU device, a name that
// is no device, or when nvidia-smi is missing, fails, or names no such device.
std::optional<uint64_t> cuda_device_total_bytes(const std::string& device);

}  // namespace cudal1
