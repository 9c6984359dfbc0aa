#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runner/cpu_wait.h"

using namespace cudal1;

namespace {

// Pins the calling thread to one CPU it is allowed on; false when it cannot.
bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

int first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

void spin_for(std::chrono::milliseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  volatile unsigned long x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

}  // namespace

// The parent's own wait for a CPU is taken out of its clock (runner/worker.cpp), so the count
// must be this thread's, and must grow while the thread is runnable but kept off its CPU: here
// two spinning threads share its one CPU, so it waits about two thirds of its time on any
// machine, loaded or idle.
TEST(CpuWait, ThisThreadsWaitForItsCpuIsCounted) {
  if (!this_thread_run_queue_delay_ms()) GTEST_SKIP() << "the kernel keeps no schedstat (CONFIG_SCHED_INFO)";
  int cpu = first_allowed_cpu();
  ASSERT_GE(cpu, 0);
  std::atomic<bool> stop{false};
  std::atomic<int> pinned{0}, tried{0};
  bool measured_pinned = false;
  std::vector<std::thread> rivals;
  for (int i = 0; i < 2; ++i)
    rivals.emplace_back([&] {
      pinned += pin_to(cpu);
      ++tried;
      volatile unsigned long x = 0;
      while (!stop) x = x + 1;
    });
  std::thread measured([&] {
    measured_pinned = pin_to(cpu);
    while (tried < 2) std::this_thread::yield();
    if (!measured_pinned || pinned < 2) return;
    double before = *this_thread_run_queue_delay_ms();
    double other_before = *run_queue_delay_ms(getpid());
    spin_for(std::chrono::milliseconds(300));
    double waited = *this_thread_run_queue_delay_ms() - before;
    EXPECT_GT(waited, 50.0) << "three threads on one CPU, yet this one waited only " << waited << " ms";
    // The process's main thread sleeps in join(): it is not the thread that waited.
    EXPECT_LT(*run_queue_delay_ms(getpid()) - other_before, waited);
  });
  measured.join();
  stop = true;
  for (auto& t : rivals) t.join();
  // A container that forbids setting affinity cannot stage the contention (the run never measured).
  if (!measured_pinned || pinned != 2) GTEST_SKIP() << "could not pin three threads to CPU " << cpu;
}
