// evaluator/timing.h — turning paired timings into a speedup a person can trust.
//
// The parent times reference and candidate in alternating batches ("buckets", random order in
// each). Each bucket gives one ratio median(ref)/median(candidate); the speedup is the median of
// bucket ratios. A spread (interquartile range over median) above the limit asks for more
// buckets. The reported figure is shrunk toward 1.00 by half the interquartile range (at least
// 0.01) and rounded toward 1.00 at two decimals, so noise never shows up as a gain.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/stats.h"

namespace cudal1 {

// How a timed comparison runs, the same for a candidate against eager and for a baseline against
// eager, so their figures can be set side by side: warm-up calls before the first bucket, then
// per bucket and side `settle` untimed calls (the other side just had the device) and `calls`
// timed ones. A setting of 0 takes the default: 7 buckets of 20 calls after 10 warm-up calls on
// CUDA, 5 of 8 after 3 on the host; always 2 settle calls.
struct TimingSettings {
  int buckets, calls, warmup, settle;
};
TimingSettings timing_settings(bool cuda, int buckets = 0, int calls = 0, int warmup = 0);

struct Bucket {
  std::vector<double> ref_ms, cand_ms;         // per call, the worker's device clock
  std::vector<double> ref_host_ms, cand_host_ms;  // per call, the worker's host clock
  std::vector<double> ref_stream_ms, cand_stream_ms;  // per call, until the current stream is done
  double ref_wall_ms = 0, cand_wall_ms = 0;    // the parent's clock over each batch
  double ref_stalled_ms = 0, cand_stalled_ms = 0;  // of that, waiting for a CPU (runner/cpu_wait.h)
  // The parent's clock over an empty batch (a call that does nothing), less its stall: the fixed
  // cost of each side's loop. The candidate's may exceed the reference's (its process carries
  // the guard's audit hook) but only within an allowance (measure.cpp).
  double ref_overhead_ms = 0, cand_overhead_ms = 0;
  int calls = 0;
};

struct SpeedupEstimate {
  double ref_ms = 0, cand_ms = 0;      // medians of all calls
  std::vector<double> bucket_ratios;
  double raw = 1.0;                    // median of bucket ratios
  double q25 = 1.0, q75 = 1.0;
  double spread = 0.0;                 // (q75 - q25) / raw
  double reported = 1.0;               // conservative figure
};

SpeedupEstimate estimate_speedup(const std::vector<Bucket>& buckets);

// Shrinks raw toward 1 by max(0.01, (q75 - q25) / 2), then rounds toward 1 at 0.01.
double conservative_speedup(double raw, double q25, double q75);

// True when the shrink alone took the figure to 1.00: the buckets said otherwise, but disagreed
// too much for any of it to stand (a raw figure within 0.01 of 1.00 does not count).
bool shrunk_to_one(const SpeedupEstimate& e);

// The rule for a figure still noisy after its re-measures: a fresh set of buckets is measured
// (`try_once` returns its spread, or nullopt when the candidate failed), up to `extra_tries` more
// times, until one is within `spread_limit`. The first quiet try stands, else the quietest.
struct TimingTries {
  std::size_t chosen = 0;        // index of the try that stands
  std::vector<double> spreads;   // of every try, in order
};
std::optional<TimingTries> measure_until_quiet(const std::function<std::optional<double>()>& try_once,
                                               double spread_limit, int extra_tries);

// The second clock: the parent's wall time per call, less the per-call cost of an empty timed
// call and the time the worker waited for a CPU, should not be far above what the worker's
// clock claims. Returns the ratio
// (wall-derived ms) / (claimed ms), the median over buckets, for the candidate.
double clock_disagreement(const std::vector<Bucket>& buckets, bool candidate);

// The worker's device clock against its own host clock, per call: true when the candidate's
// device events claim under half of its host time and its host-minus-device gap exceeds twice
// the reference's (plus 0.05 ms). A shared or time-sliced GPU stretches both sides' host time
// alike; a faked event pair stretches only the candidate's.
bool host_device_gap_disagrees(const std::vector<Bucket>& buckets);

// Work the call leaves running on other streams: the median gap between "current stream done"
// and "device done", candidate minus reference (the reference shows the sync's own latency), ms.
double unsynchronised_work_ms(const std::vector<Bucket>& buckets);

}  // namespace cudal1
