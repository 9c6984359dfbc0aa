#include "runner/cpu_wait.h"

#include <fstream>
#include <string>

namespace cudal1 {

namespace {

// "<ns on a CPU> <ns runnable but waiting> <timeslices>", for one thread.
std::optional<double> delay_from(const std::string& schedstat) {
  std::ifstream sched(schedstat);
  unsigned long long on_cpu_ns = 0, delay_ns = 0;
  if (!(sched >> on_cpu_ns >> delay_ns)) return std::nullopt;
  return double(delay_ns) / 1e6;
}

}  // namespace

std::optional<double> run_queue_delay_ms(pid_t pid) {
  return delay_from("/proc/" + std::to_string(pid) + "/schedstat");
}

std::optional<double> this_thread_run_queue_delay_ms() { return delay_from("/proc/thread-self/schedstat"); }

}  // namespace cudal1
