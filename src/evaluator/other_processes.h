// evaluator/other_processes.h — what the processes a candidate starts beside its worker do
// while it is measured (internal to the evaluator). They are stopped while the reference runs
// (OthersStopped in measure.h); these checks judge what they do the rest of the time.
#pragma once

#include "evaluator/measure.h"

namespace cudal1 {

// Before timing: a pool the candidate started may still be starting (inductor's compile workers
// import their libraries after the first compile, seconds of CPU). It gets up to
// kSettleLimitMs to go quiet; starting is not work between calls. Processes that never go quiet
// are working, not starting: flagged background_process (block), and a rejection that stops
// the timing, so timing is not spent on them. The wait is kept in s.others_settle_ms. Nothing is
// waited for when they used no CPU since `others_cpu_before_ms` (Process::others_cpu_ms, read
// before the warm-up calls): the usual case, a candidate that starts no process.
Verdict settle_other_processes(Session& s, Worker& cand, double others_cpu_before_ms,
                               EvalResult& r);

// After timing, with nothing stopped, while the candidate waits between calls: CPU its other
// processes use then is work done outside the timed calls (background_process, blocking). Also
// flags a candidate whose processes kept multiplying while the reference ran. Records
// statistics.other_processes (the watch, and the settle wait before timing).
void check_other_processes(Session& s, Worker& cand, EvalResult& r);

// On CUDA: compute contexts on the device (NVML) beside the evaluation's own workers. One held
// by a process the candidate started is flagged foreign_gpu_context (block); one of a program
// outside cudal1, device_shared (warn). Recorded in statistics.gpu_contexts.
void check_gpu_contexts(Session& s, Worker& cand, EvalResult& r);

}  // namespace cudal1
