// runner/cpu_wait.h — how long a process's main thread waited for a CPU, from the kernel.
//
// The parent's clock over a timed batch includes every moment the worker sat on the run queue
// while other programs had the CPUs. On a loaded machine that stretch is noise, and it falls
// mostly outside the short timed calls, so the parent's clock and the worker's disagree for no
// fault of the worker (CI: an honest 0.2 ms call showed 38x while the reference showed 1.3x).
// The kernel's count (/proc/PID/schedstat) cannot be touched by the worker.
//
// The parent's own thread waits too: once the worker has written its reply, the parent must be
// given a CPU to read it, and on a loaded host (several lanes' threads in one process, other
// programs beside) that wait lands on the parent's clock after the call is over (CI: an honest
// call showed 64x against the reference's 3.9x with the worker's wait already taken out). That
// wait is taken out as well. The parent sleeps in poll() while the worker computes, so its
// run-queue delay falls before the request is sent or after the reply came, never over work the
// worker hides.
//
// Taking all of it back out gives a lying candidate nothing: a call whose claimed time is short
// but whose real work is long does that work on the main thread (running, not waiting), on the
// GPU, or in its own threads while the main thread sleeps; none of that is run-queue delay.
#pragma once

#include <optional>
#include <sys/types.h>

namespace cudal1 {

// The main thread's run-queue delay so far, ms; nullopt when the kernel does not keep it
// (no CONFIG_SCHED_INFO) or the process is gone.
std::optional<double> run_queue_delay_ms(pid_t pid);

// The calling thread's run-queue delay so far, ms (/proc/thread-self/schedstat); nullopt as above.
std::optional<double> this_thread_run_queue_delay_ms();

}  // namespace cudal1
