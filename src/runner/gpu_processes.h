// runner/gpu_processes.h — which processes hold a compute context on a GPU, from NVML.
//
// A candidate's helper process with a CUDA context of its own can keep kernels running on the
// device while the reference is timed, even while the helper itself is stopped: the evaluator
// looks for such contexts around the timed buckets. NVML is the driver's own library, loaded at
// run time (a machine without a GPU has none).
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

namespace cudal1 {

// The pids (as this process's PID namespace numbers them, when NVML's view is the same) that
// hold a compute context on GPU `index` (NVML's numbering); nullopt when NVML cannot be loaded
// or does not answer.
std::optional<std::vector<pid_t>> gpu_compute_pids(unsigned index);

}  // namespace cudal1
