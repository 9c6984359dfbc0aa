// evaluator/infrastructure.h — a candidate worker killed by the machine is no verdict on it.
//
// cudal1 kills the candidate's worker itself on a timeout, the memory limit or an output flood,
// and reports each as such (runner/worker.h). A worker that dies of SIGKILL otherwise was killed
// from outside: by the kernel's out-of-memory killer, which picks a large process when the machine
// runs short (other lanes' work may be what filled it), or by a person or a program. Reporting that
// as the candidate's `crash` would store a zero it did not earn and answer it from the store ever
// after. So such an evaluation is run once more from scratch: a candidate that dies of SIGKILL
// again with no out-of-memory kill meanwhile dies by its own doing (it cannot dodge its verdict by
// dying), and its `crash` stands; one the out-of-memory killer takes again is reported as an
// infrastructure failure (EvalResult::infrastructure), which is never stored.
//
// The same holds for the GPU's memory: lanes of a queue, and other programs, share the device,
// and a CUDA out-of-memory error whose allocation would have fitted beside the failing process's
// own memory, had the others not held theirs, is the machine's shortage, not the candidate's.
// It is retried too; out of memory again for the same reason is an infrastructure failure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "evaluator/result.h"
#include "runner/process.h"

namespace cudal1 {

inline constexpr const char* kOomKillerCause = "out-of-memory killer";
inline constexpr const char* kOutsideKillCause = "killed by SIGKILL from outside the evaluation";
inline constexpr const char* kDeviceMemoryCause = "GPU memory held by other processes";

// What PyTorch's CUDA out-of-memory message says, in bytes: "Tried to allocate 512.00 MiB. GPU 0
// has a total capacity of 79.18 GiB of which 252.94 MiB is free. Including non-PyTorch memory,
// this process has 5.80 GiB memory in use."
struct DeviceOutOfMemory {
  double requested = 0, total = 0, free = 0, this_process = 0;
  bool request_known = true;  // false for a CUDA runtime error, which names no size
  // Held by every other process on the device.
  double others() const { return total - free - this_process; }
  // Whether the request would have fitted had the others held nothing (5 % of the device kept
  // for what the driver and allocator hold). Of a request of unknown size: whether the others
  // held more than this process and more than a quarter of the device.
  bool others_to_blame() const {
    if (!request_known) return this_process <= 0.95 * total && others() > this_process && others() > 0.25 * total;
    return this_process + requested <= 0.95 * total && others() > requested;
  }
};
// Parsed from an error's text: PyTorch's account of an allocation that failed, or the worker's
// note on a CUDA runtime error ("device memory when it failed: T bytes in all, F free, P held by
// this process"); nullopt when it holds neither.
std::optional<DeviceOutOfMemory> parse_device_out_of_memory(const std::string& error);

// How many processes the kernel's out-of-memory killer has killed since boot (the `oom_kill` line
// of /proc/vmstat, any cgroup's included); nullopt where it cannot be read.
std::optional<uint64_t> oom_kill_count();
// The count in a /proc/vmstat text; nullopt when the line is missing.
std::optional<uint64_t> parse_oom_kill_count(const std::string& vmstat);

// For tests: oom_kill_count() answers from `counter` while this lives.
class OomKillCounterOverride {
 public:
  explicit OomKillCounterOverride(std::function<std::optional<uint64_t>()> counter);
  ~OomKillCounterOverride();
  OomKillCounterOverride(const OomKillCounterOverride&) = delete;
  OomKillCounterOverride& operator=(const OomKillCounterOverride&) = delete;
};

// One run of an evaluation and what judging its end needs.
struct Attempt {
  EvalResult result;
  std::optional<ExitInfo> candidate_exit;  // how the candidate's worker ended, once it has
  std::optional<uint64_t> oom_kills_before, oom_kills_after;  // around the whole run
};

// Null, or {"cause", "detail", "oom_kills": [before, after]} when the attempt's crash was the
// candidate worker's death by a SIGKILL cudal1 did not send; or {"cause", "detail",
// "device_memory"} when it ended in a CUDA out-of-memory error that others_to_blame().
json infrastructure_cause(const Attempt& attempt);

// Runs attempt(0); when that ended in an infrastructure death, runs attempt(1) (which must start
// afresh) and applies the rules above. The first attempt's end is kept in the result's statistics
// ("infrastructure_retry"), or in its `infrastructure` object when the machine failed again.
EvalResult retry_infrastructure_faults(const std::function<Attempt(int attempt)>& attempt);

}  // namespace cudal1
