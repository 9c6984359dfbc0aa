#include "runner/cpu_wait.h"

#include <fstream>
#include <string>

namespace cudal1 {

std::optional<double> run_queue_delay_ms(pid_t pid) {
  // "<ns on a CPU> <ns runnable but waiting> <timeslices>", for the thread whose id is pid.
  std::ifstream sched("/proc/" + std::to_string(pid) + "/schedstat");
  unsigned long long on_cpu_ns = 0, delay_ns = 0;
  if (!(sched >> on_cpu_ns >> delay_ns)) return std::nullopt;
  return double(delay_ns) / 1e6;
}

}  // namespace cudal1
