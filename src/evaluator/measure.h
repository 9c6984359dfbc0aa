// evaluator/measure.h — timing a candidate against the reference, and what the candidate's
// process reports about itself while it runs (internal to the evaluator).
//
// Every call, warm-up and timed alike, takes the worker's one call path (runner/py/calls.py):
// a random case, permuted into a variant never computed before, copied into a rotating slot.
// Each call's outputs are sampled at positions drawn after it returns; a random subset of the
// calls is recomputed by the reference and compared, so "honest while checked, fast while
// timed", caches keyed by address or call count, and partial work all fail.
#pragma once

#include <functional>
#include <random>
#include <string>

#include "evaluator/evaluator.h"
#include "evaluator/status.h"
#include "runner/worker.h"

namespace cudal1 {

struct Session {
  const EvalOptions& o;
  Worker& ref;
  std::string task;  // the task's path, for the reference's errors
  int cases = 0;     // how many cases both workers hold
  std::mt19937_64 rng;
  // Called when measure() is done with the device and only waits on the candidate's idle
  // threads (top_up_idle): the device need not stay held alone meanwhile. May be empty.
  std::function<void()> timing_done;
  // The candidate whose other processes are stopped while the reference runs; may be null.
  Worker* candidate = nullptr;
  bool swarm_seen = false;  // they kept multiplying when told to stop
  double others_settle_ms = 0;  // how long they took to go quiet after the warm-up
  double call_timeout_s = 0;    // what one call may take (evaluator/call_budget.h)
  // Some case passed against the float64 oracle, not the reference (oracle.h): timed calls that
  // disagree with the reference are judged against the oracle too.
  bool reference_imprecise = false;
  // The precision ladder's rungs on case 0 (precision.h), null where it did not run: verified
  // timed calls are judged against the oracle with them (timed_precision.h).
  nlohmann::json ladder_rungs;
};

// While it lives, every process the candidate started beside its worker is stopped (SIGSTOP to
// its sandbox's process tree); a candidate whose processes kept multiplying is remembered.
class OthersStopped {
 public:
  explicit OthersStopped(Session& s);
  ~OthersStopped();
  OthersStopped(const OthersStopped&) = delete;
  OthersStopped& operator=(const OthersStopped&) = delete;

 private:
  Process* p_;
};

// The reference's call, with every process the candidate started beside its worker stopped
// meanwhile: nothing it runs can take the reference's CPU or GPU while the reference is
// measured or checked. Throws as reference_call does.
WorkerReply reference_alone(Session& s, const json& req, std::chrono::milliseconds timeout);

// A batch of `n` calls: random cases, fresh variant seeds, rotating slots.
json make_calls(Session& s, int n);

// The evidence every candidate reply carries: harness functions replaced (harness_tampered),
// introspection (introspection) and, when `threads_count`, threads a call left running
// (background_thread).
void apply_guard_evidence(const json& reply, bool threads_count, EvalResult& r);

// Warm-up, then paired buckets; fills runtime_ms, speedup, statistics and flags, and verifies a
// random subset of the calls. Not ok when the candidate failed meanwhile (stops) or the verified
// calls returned wrong values.
Verdict measure(Session& s, Worker& cand, EvalResult& r);

// A few calls under the profiler: statistics.attribution and the decoy flag (CUDA only).
void attribute(Session& s, Worker& cand, const std::string& candidate_source, EvalResult& r);

}  // namespace cudal1
