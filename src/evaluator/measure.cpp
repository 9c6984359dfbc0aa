#include "evaluator/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>

#include "core/format.h"
#include "evaluator/attribution.h"
#include "evaluator/call_budget.h"
#include "evaluator/oracle.h"
#include "evaluator/other_processes.h"
#include "evaluator/evaluation.h"
#include "evaluator/timed_precision.h"
#include "evaluator/timing.h"
#include "evaluator/verdicts.h"

using namespace std::chrono;

namespace cudal1 {

namespace {

// Untimed first calls of each batch (the other context just had the GPU): the baselines settle
// as many (evaluator/timing.h).
const int kSettle = timing_settings(false).settle;

// Verified timed calls also judged against the float64 oracle (one oracle run each): a candidate
// that computes cheaply on every timed call shows it in any one, and a share of calls it cheats on
// gains only that share of the speed.
constexpr std::size_t kTimedPrecisionCalls = 4;

milliseconds to_ms(double s) { return milliseconds(static_cast<long long>(s * 1000)); }

TimingSettings settings_of(const EvalOptions& o) {
  return cudal1::timing_settings(is_cuda_device(o.device), o.buckets, o.calls_per_bucket, o.warmup);
}

// A call whose outputs were sampled, waiting for the reference to check it.
struct SampledCall {
  json call, samples;
};

json batch(Session& s, int n) {
  return {{"op", "calls"}, {"calls", make_calls(s, n)}, {"samples", s.o.sample_elements}};
}

// The reply's per-call records, after checking their shape; exact checks of every call apply.
// Null (flagged fake_worker_output) for a reply of the wrong shape: see malformed_reply.
const json* call_records(const json& request, const WorkerReply& rep, EvalResult& r) {
  auto it = rep.body.find("calls");
  if (it == rep.body.end() || !it->is_array() || it->size() != request["calls"].size()) {
    r.add_flag("fake_worker_output", Severity::block, "a reply to timed calls had the wrong shape");
    return nullptr;
  }
  const json& recs = *it;
  for (std::size_t i = 0; i < recs.size(); ++i) apply_exact_checks(recs[i], request["calls"][i]["case"].get<int>(), r);
  return &recs;
}

Verdict malformed_reply() {
  return {Status::rejected,
          "the candidate's process answered timed calls with a malformed reply", true};
}

std::vector<double> field(const json& recs, const char* name) {
  std::vector<double> v;
  for (std::size_t i = kSettle; i < recs.size(); ++i) v.push_back(recs[i].value(name, 0.0));
  return v;
}

// Recomputes a random subset of the sampled calls in the reference and compares. Wrong values
// reject, without stopping the evaluation. On a float32 task the first few are also judged
// against the float64 oracle for the precision they were computed in (timed_precision.h).
Verdict verify_calls(Session& s, std::vector<SampledCall>& pool, EvalResult& r) {
  std::shuffle(pool.begin(), pool.end(), s.rng);
  std::size_t want = std::max<std::size_t>(std::size_t(s.o.verify_min),
                                           std::size_t(std::ceil(s.o.verify_fraction * double(pool.size()))));
  std::size_t n = std::min(want, pool.size()), failed = 0;
  TimedPrecision timed;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& c = pool[i];
    json positions = json::array();
    for (auto& smp : c.samples.is_array() ? c.samples : json::array())
      positions.push_back(smp.is_null() ? json() : smp["positions"]);
    bool precision = s.ladder_rungs.is_object() && i < kTimedPrecisionCalls;
    json req = {{"op", "sample"}, {"case", c.call["case"]}, {"variant", c.call["variant"]}, {"positions", positions},
                {"oracle", s.reference_imprecise || precision}};
    json reply = reference_alone(s, req, to_ms(s.call_timeout_s)).body;
    std::string problem = compare_samples(c.samples, reply["samples"], s.o.tolerance);
    if (!problem.empty() && s.reference_imprecise)
      problem = samples_against_oracle(c.samples, reply["samples"], reply.value("oracle_samples", json()), s.o.tolerance);
    if (problem.empty() && precision) timed.add(c.samples, reply["samples"], reply.value("oracle_samples", json()));
    if (problem.empty()) continue;
    if (failed++ == 0)
      r.add_flag("timed_output_incorrect", Severity::block,
                 "a timed call on case " + std::to_string(c.call["case"].get<int>()) +
                     " with permuted inputs returned wrong values: " + problem);
  }
  r.statistics["verified_calls"] = {{"checked", n}, {"sampled", pool.size()}, {"failed", failed},
                                    {"elements_per_output", s.o.sample_elements}};
  if (failed)
    return {Status::rejected, std::to_string(failed) + " of " + std::to_string(n) +
                                  " verified timed calls returned wrong values: the candidate is "
                                  "right only when checked"};
  if (timed.calls() == 0) return {};
  PrecisionVerdict v = timed.judge(s.ladder_rungs);
  r.statistics["verified_calls"]["precision"] = {{"calls", timed.calls()}, {"outputs", v.detail}};
  return precision_verdict(v, s.o.allow_reduced_precision, r);
}

// The parent's clock against the candidate's claims, on one set of buckets.
struct ClockCheck {
  double candidate = 1.0, reference = 1.0;  // wall over claimed, per call
  bool disagrees = false;
  json to_json() const { return {{"candidate", candidate}, {"reference", reference}}; }
};

ClockCheck check_clocks(const std::vector<Bucket>& buckets, const SpeedupEstimate& est, bool gpu, double jitter_ms) {
  ClockCheck c{clock_disagreement(buckets, true), clock_disagreement(buckets, false)};
  // The candidate's own clock may be lied to; the parent's may not. Allow for the reference's
  // own gap between the two, plus slack for scheduling noise: several evaluations may share the
  // host (on an H200 with four at once, tiny kernels showed gaps near 0.1 ms; on a 2-core CPU
  // running two tests at once, an honest 0.3 ms call showed 4.6x against the reference's 1.7x).
  // The batch's fixed cost varies from batch to batch (jitter_ms over the empty batches): twice
  // that, per call, is noise too.
  int calls = buckets.empty() ? 1 : std::max(1, buckets.front().calls);
  // And what one call of the harness costs the reference with nothing to compute (its empty
  // batch, per call), measured under the load of the moment: the candidate's worker runs more
  // of the harness per call (its guard), and on a loaded host that difference grows with it. On
  // an H100 shared by 16 lanes, honest small kernels showed 0.6-1.2 ms per call unexplained,
  // where an empty call cost the reference 0.5-1.1 ms; alone, 0.2-0.3 ms.
  double empty_call_ms = buckets.empty() ? 0.0 : std::max(0.0, buckets.front().ref_overhead_ms) / (calls + kSettle);
  double slack_ms = (gpu ? 0.25 : 5.0) + 2.0 * jitter_ms / calls + empty_call_ms;
  double ratio_limit = gpu ? std::max(3.0, 2.0 * c.reference) : std::max(4.0, 2.5 * c.reference);
  // Unexplained time per call, on the parent's clock: under contention (two tests sharing two
  // cores) both sides are stretched alike, so the candidate's must also exceed twice the
  // reference's; a fast candidate against a slow reference otherwise shows a large ratio from
  // scheduling noise alone (CPU: 29x on 0.23 ms calls while the reference showed 2.2x on 10 ms).
  double cand_unexplained = (c.candidate - 1.0) * est.cand_ms;
  double ref_unexplained = std::max(0.0, (c.reference - 1.0) * est.ref_ms);
  c.disagrees = c.candidate > ratio_limit && cand_unexplained > slack_ms && cand_unexplained > 2.0 * ref_unexplained;
  return c;
}

// Flags from the bucket statistics: side streams, device events against the host clock.
void stream_flags(const std::vector<Bucket>& buckets, const SpeedupEstimate& est, bool gpu, EvalResult& r) {
  // Work still running on another stream when the call returns: whoever uses the output next
  // on the current stream would race it.
  double side_ms = unsynchronised_work_ms(buckets);
  r.statistics["unsynchronised_ms"] = side_ms;
  if (gpu && side_ms > std::max(0.05, 0.25 * est.cand_ms))
    r.add_flag("side_stream_work", Severity::block,
               "about " + std::to_string(side_ms) + " ms of each call's GPU work finishes after the "
               "current stream does: work on a side stream that the current stream never waits for");
  if (gpu && host_device_gap_disagrees(buckets))
    r.add_flag("clock_disagreement", Severity::block,
               "device events report under half of the host clock's time per call");
}

}  // namespace

json make_calls(Session& s, int n) {
  json calls = json::array();
  for (int i = 0; i < n; ++i)
    calls.push_back({{"case", int(s.rng() % uint64_t(std::max(1, s.cases)))},
                     {"variant", int64_t(s.rng() & ((uint64_t(1) << 52) - 1))},
                     {"slot", i}});
  return calls;
}

OthersStopped::OthersStopped(Session& s) : p_(s.candidate ? &s.candidate->process() : nullptr) {
  if (p_ && !p_->stop_others()) s.swarm_seen = true;
}

OthersStopped::~OthersStopped() {
  if (p_) p_->continue_others();
}

WorkerReply reference_alone(Session& s, const json& req, milliseconds timeout) {
  OthersStopped stopped(s);
  return reference_call(s.ref, req, timeout, s.task);
}

void apply_guard_evidence(const json& reply, bool threads_count, EvalResult& r) {
  for (auto& name : reply.value("tampered", json::array()))
    r.add_flag("harness_tampered", Severity::block,
               "the candidate replaced " + name.get<std::string>() + ", which timing or checking relies on");
  for (auto& e : reply.value("audit", json::array()))
    r.add_flag("introspection", Severity::block,
               "candidate code called " + e.value("event", std::string()) + " " + e.value("detail", std::string()) +
                   " at " + e.value("where", std::string()) + " (looking for the harness's or another process's state)");
  if (!threads_count) return;
  for (auto& rec : reply.value("calls", json::array()))
    for (auto& t : rec.value("new_threads", json::array()))
      r.add_flag("background_thread", Severity::block,
                 "a call left a new thread running after it returned (" + t.get<std::string>() +
                     "): work done outside the timed interval");
}

namespace {

// What the timed buckets collect besides the buckets themselves.
struct TimedRun {
  std::vector<SampledCall> pool;  // sampled calls, for verify_calls
  // The candidate's other threads while it waited: the CPU they used, and what they wanted (that
  // CPU plus their wait on the run queue: on a loaded machine a spinning thread gets only a share).
  double idle_ms = 0, idle_cpu_ms = 0, idle_demand_ms = 0;
  double ref_idle_ms = 0, ref_idle_cpu_ms = 0, ref_idle_demand_ms = 0;  // the reference's, for what torch and the driver do anyway
  double topped_up_ms = 0;  // waiting added after the buckets (top_up_idle)

  // A worker's report of its idle time since its last batch, added to one side's totals.
  static void add_idle(const json& body, double& ms, double& cpu_ms, double& demand_ms) {
    if (!body.contains("idle") || !body["idle"].is_object()) return;
    ms += body["idle"].value("idle_ms", 0.0);
    double cpu = body["idle"].value("other_threads_cpu_ms", 0.0);
    cpu_ms += cpu;
    demand_ms += cpu + body["idle"].value("other_threads_wait_ms", 0.0);
  }

  void keep(const json& req, const json& recs, std::size_t from) {
    for (std::size_t i = from; i < recs.size(); ++i) pool.push_back({req["calls"][i], recs[i].value("samples", json())});
  }
};

// The fixed cost of a timed batch on the parent's clock, per side: batches of calls that do
// nothing, alternating, the least of each side's (noise only ever adds). The candidate's
// process runs no candidate code in them, yet it might slow them down to excuse time hidden
// elsewhere, so its figure counts only up to the reference's plus a per-call allowance for the
// guard's audit hook.
struct Overheads {
  double reference = 0, candidate = 0;
  double jitter_ms = 0;  // the widest range of either side's empty batches: the noise floor
  double candidate_measured = 0;  // the candidate's fastest empty batch, before the cap
  json to_json() const {
    return {{"reference_ms", reference}, {"candidate_ms", candidate}, {"candidate_measured_ms", candidate_measured},
            {"jitter_ms", jitter_ms}};
  }
};

// Empty when the candidate failed: `failed` says how.
std::optional<Overheads> measure_overheads(Session& s, Worker& cand, const TimingSettings& ts,
                                           EvalResult& r, Verdict& failed) {
  constexpr int kRepeats = 3;
  json empty = batch(s, ts.calls + kSettle);
  empty["empty"] = true;
  auto timeout = to_ms(s.call_timeout_s) * (ts.calls + kSettle);
  std::vector<double> ref, mine;
  for (int i = 0; i < kRepeats; ++i) {
    WorkerReply rr = reference_alone(s, empty, timeout);
    ref.push_back(rr.wall_ms - rr.stalled_ms);
    WorkerReply cr = cand.request(empty, timeout);
    failed = candidate_failure(cr, "timed calls", cand.stderr_tail(), r);
    if (!failed.ok()) return std::nullopt;
    apply_guard_evidence(cr.body, true, r);
    mine.push_back(cr.wall_ms - cr.stalled_ms);
  }
  auto [rlo, rhi] = std::minmax_element(ref.begin(), ref.end());
  auto [clo, chi] = std::minmax_element(mine.begin(), mine.end());
  double allowance_ms = (is_cuda_device(s.o.device) ? 0.1 : 1.0) * (ts.calls + kSettle);
  // The candidate's jitter counts only as far as its figure counts.
  double cand_hi = std::min(*chi, *rlo + allowance_ms), cand_lo = std::min(*clo, *rlo + allowance_ms);
  return Overheads{*rlo, cand_lo, std::max(*rhi - *rlo, cand_hi - cand_lo), *clo};
}

// One bucket: the same batch on both sides, in random order. Not ok when the candidate failed.
Verdict time_bucket(Session& s, Worker& cand, const TimingSettings& ts, const Overheads& overhead,
                    TimedRun& run, EvalResult& r, Bucket& bucket) {
  auto batch_timeout = to_ms(s.call_timeout_s) * (ts.calls + kSettle);
  bucket.calls = ts.calls;
  bucket.ref_overhead_ms = overhead.reference;
  bucket.cand_overhead_ms = overhead.candidate;
  json req = batch(s, ts.calls + kSettle);
  bool cand_first = s.rng() & 1;
  for (int side = 0; side < 2; ++side) {
    if ((side == 0) == cand_first) {
      WorkerReply rep = cand.request(req, batch_timeout);
      Verdict failed = candidate_failure(rep, "timed calls", cand.stderr_tail(), r);
      if (!failed.ok()) return failed;
      apply_guard_evidence(rep.body, true, r);
      TimedRun::add_idle(rep.body, run.idle_ms, run.idle_cpu_ms, run.idle_demand_ms);
      const json* recs = call_records(req, rep, r);
      if (!recs) return malformed_reply();
      run.keep(req, *recs, kSettle);
      bucket.cand_ms = field(*recs, "device_ms");
      bucket.cand_host_ms = field(*recs, "host_ms");
      bucket.cand_stream_ms = field(*recs, "stream_ms");
      bucket.cand_wall_ms = rep.wall_ms;
      bucket.cand_stalled_ms = rep.stalled_ms;
    } else {
      WorkerReply rep = reference_alone(s, req, batch_timeout);
      TimedRun::add_idle(rep.body, run.ref_idle_ms, run.ref_idle_cpu_ms, run.ref_idle_demand_ms);
      const json& recs = rep.body["calls"];
      bucket.ref_ms = field(recs, "device_ms");
      bucket.ref_host_ms = field(recs, "host_ms");
      bucket.ref_stream_ms = field(recs, "stream_ms");
      bucket.ref_wall_ms = rep.wall_ms;
      bucket.ref_stalled_ms = rep.stalled_ms;
    }
  }
  return {};
}

// The idle test needs enough waiting to tell work kept going between calls from a thread pool's
// brief spin-wait. Fast calls leave the candidate waiting a tenth of a second in all (a thread
// that worked whenever no call ran showed only 50 ms of CPU in 89 ms of waiting on a loaded
// two-core machine: under any sane floor). So it waits on, with nothing else run, until it has
// waited kMinIdleMs in all; one empty call then brings its report. Not ok when the candidate
// failed.
Verdict top_up_idle(Session& s, Worker& cand, TimedRun& run, EvalResult& r) {
  constexpr double kMinIdleMs = 400;
  if (run.idle_ms >= kMinIdleMs) return {};
  if (s.timing_done) s.timing_done();
  const double extra_ms = kMinIdleMs - run.idle_ms;
  std::this_thread::sleep_for(microseconds(static_cast<long long>(extra_ms * 1000)));
  json empty = batch(s, 1);
  empty["empty"] = true;
  WorkerReply rep = cand.request(empty, to_ms(s.call_timeout_s));
  Verdict failed = candidate_failure(rep, "an empty call", cand.stderr_tail(), r);
  if (!failed.ok()) return failed;
  apply_guard_evidence(rep.body, true, r);
  TimedRun::add_idle(rep.body, run.idle_ms, run.idle_cpu_ms, run.idle_demand_ms);
  run.topped_up_ms = extra_ms;
  return {};
}

// One set of buckets with the fixed costs it is measured against: buckets are added while their
// ratios spread more than the limit, at most max_remeasure times.
struct TimedTry {
  Overheads overhead;
  std::vector<Bucket> buckets;
  int rounds = 0;
  SpeedupEstimate est;
};

// Empty when the candidate failed: `failed` says how.
std::optional<TimedTry> timed_try(Session& s, Worker& cand, const TimingSettings& ts, int tries_before, TimedRun& run,
                                  EvalResult& r, Verdict& failed) {
  const EvalOptions& o = s.o;
  // Measured before the buckets, so the two sides alternate in each bucket with nothing else
  // run in between.
  auto overhead = measure_overheads(s, cand, ts, r, failed);
  if (!overhead) return std::nullopt;
  TimedTry t{*overhead, {}, 0, {}};
  double planned = double(ts.buckets * (1 + o.max_remeasure) * (1 + o.noisy_retries));
  for (;;) {
    for (int b = 0; b < ts.buckets; ++b) {
      Bucket bucket;
      failed = time_bucket(s, cand, ts, t.overhead, run, r, bucket);
      if (!failed.ok()) return std::nullopt;
      t.buckets.push_back(std::move(bucket));
      if (o.progress) o.progress("timing", std::min(1.0, double(tries_before * ts.buckets * (1 + o.max_remeasure) + t.buckets.size()) / planned));
    }
    t.est = estimate_speedup(t.buckets);
    if (t.est.spread <= o.spread_limit || t.rounds >= o.max_remeasure) return t;
    ++t.rounds;
  }
}

// The warm-up calls: the candidate's first calls (which may compile), untimed, after the
// reference's own; other processes it started must have settled before anything is timed.
Verdict warm_up(Session& s, Worker& cand, const TimingSettings& ts, TimedRun& run, EvalResult& r) {
  json warm = batch(s, ts.warmup);
  const double others_before_warmup = cand.process().others_cpu_ms();
  reference_alone(s, warm, to_ms(s.call_timeout_s) * (ts.warmup + 1));
  // The first calls of a fresh process (re-timing) may compile again (evaluator/call_budget.h).
  double calls_s = s.call_timeout_s * ts.warmup;
  json extended_for;
  WorkerReply cw = first_call(cand, warm, {calls_s, s.o.build_timeout_s + calls_s}, extended_for);
  if (!extended_for.is_null()) r.budgets["warmup_extended_for"] = extended_for;
  Verdict failed = candidate_failure(cw, "warm-up calls", cand.stderr_tail(), r);
  if (!failed.ok()) return failed;
  apply_guard_evidence(cw.body, false, r);
  const json* warm_recs = call_records(warm, cw, r);
  if (!warm_recs) return malformed_reply();
  run.keep(warm, *warm_recs, 0);
  return settle_other_processes(s, cand, others_before_warmup, r);
}

// The chosen try's figures and how they were had; a figure still noisy is flagged.
void record_estimate(const EvalOptions& o, const TimingSettings& ts, const TimedTry& chosen, const TimingTries& tries,
                     EvalResult& r) {
  const SpeedupEstimate& est = chosen.est;
  r.runtime_ms["eager"] = est.ref_ms;
  r.runtime_ms["candidate"] = est.cand_ms;
  r.speedup["eager"] = est.reported;
  r.statistics = {
      {"buckets", chosen.buckets.size()}, {"calls_per_bucket", ts.calls}, {"warmup", ts.warmup},
      {"bucket_ratios", est.bucket_ratios}, {"raw_speedup", est.raw}, {"q25", est.q25},
      {"q75", est.q75}, {"spread", est.spread}, {"remeasured", chosen.rounds},
      {"tries", tries.spreads.size()}, {"try_spreads", tries.spreads}, {"shrunk_to_one", shrunk_to_one(est)},
      {"clock", is_cuda_device(o.device) ? "cuda events + host, device-wide sync" : "host steady clock"},
      {"inputs", "a random case per call, permuted, in rotating buffers"},
  };
  r.statistics["batch_overhead"] = chosen.overhead.to_json();
  if (est.spread > o.spread_limit)
    r.add_flag("timing_noisy", Severity::warn,
               "bucket ratios still spread " + format_fixed(100 * est.spread, 0) + "% (limit " +
                   format_fixed(100 * o.spread_limit, 0) + "%) in each of " + std::to_string(tries.spreads.size()) +
                   " tries on fresh buckets; the quietest stands, its raw " + format_fixed(est.raw, 2) + "x shrunk to " +
                   format_fixed(est.reported, 2) + "x");
}

// A clock disagreement is confirmed on a fresh set of buckets before it counts: a lying clock
// lies every time, a burst of load on the host does not.
Verdict check_clocks_twice(Session& s, Worker& cand, const TimingSettings& ts, const TimedTry& chosen, TimedRun& run,
                           EvalResult& r) {
  const bool gpu = is_cuda_device(s.o.device);
  ClockCheck clocks = check_clocks(chosen.buckets, chosen.est, gpu, chosen.overhead.jitter_ms);
  if (clocks.disagrees) {
    Verdict failed;
    auto overhead_again = measure_overheads(s, cand, ts, r, failed);
    if (!overhead_again) return failed;
    std::vector<Bucket> again;
    for (int b = 0; b < ts.buckets; ++b) {
      Bucket bucket;
      failed = time_bucket(s, cand, ts, *overhead_again, run, r, bucket);
      if (!failed.ok()) return failed;
      again.push_back(std::move(bucket));
    }
    ClockCheck confirm = check_clocks(again, estimate_speedup(again), gpu, overhead_again->jitter_ms);
    r.statistics["clock_rechecked"] = {{"first", clocks.to_json()}, {"again", confirm.to_json()}};
    if (!confirm.disagrees) clocks = confirm;
  }
  r.statistics["wall_over_claimed"] = clocks.to_json();
  if (clocks.disagrees)
    r.add_flag("clock_disagreement", Severity::block,
               "the parent's clock saw " + std::to_string(clocks.candidate) +
                   "x the time per call that the candidate's process reported (reference: " +
                   std::to_string(clocks.reference) + "x), twice over");
  return {};
}

// Threads burning CPU while the worker waited (the reference was timed meanwhile): a machine
// kept busy except during the candidate's own calls. A pool's spin-wait after a parallel region
// lasts about a millisecond; this asks for a third of all the waiting and more than 50 ms, and
// for more than twice the reference's rate (an honest torch process on the H200 once showed
// 450 ms in 668 ms: what its runtime's threads do, the reference's do too).
void flag_background_threads(const TimedRun& run, EvalResult& r) {
  r.statistics["idle"] = {{"wait_ms", run.idle_ms}, {"other_threads_cpu_ms", run.idle_cpu_ms},
                          {"other_threads_demand_ms", run.idle_demand_ms}, {"topped_up_ms", run.topped_up_ms},
                          {"reference_wait_ms", run.ref_idle_ms}, {"reference_other_threads_cpu_ms", run.ref_idle_cpu_ms},
                          {"reference_other_threads_demand_ms", run.ref_idle_demand_ms}};
  // Judged on what the threads wanted (CPU used plus run-queue wait), against the reference's
  // own rate: a busy machine shrinks what a spinning thread gets, not what it wants.
  double ref_rate = run.ref_idle_ms > 0 ? run.ref_idle_demand_ms / run.ref_idle_ms : 0.0;
  if (run.idle_cpu_ms > 20.0 && run.idle_demand_ms > 50.0 && run.idle_demand_ms > std::max(0.3, 2.0 * ref_rate) * run.idle_ms)
    r.add_flag("background_thread", Severity::block,
               "the candidate's other threads used " + std::to_string(int(run.idle_cpu_ms)) + " ms of CPU and waited " +
                   std::to_string(int(run.idle_demand_ms - run.idle_cpu_ms)) + " ms for more, during " +
                   std::to_string(int(run.idle_ms)) + " ms in which it had no call to run: work kept going between calls");
}

}  // namespace

Verdict measure(Session& s, Worker& cand, EvalResult& r) {
  TimingSettings ts = settings_of(s.o);
  TimedRun run;
  Verdict failed = warm_up(s, cand, ts, run, r);
  if (!failed.ok()) return failed;

  // A figure still noisy after its re-measures is measured again on fresh buckets before it
  // stands: a burst of load on the host passes, and a figure it shrank to nothing would
  // otherwise be stored as final.
  std::vector<TimedTry> tries;
  auto chosen = measure_until_quiet([&]() -> std::optional<double> {
    auto t = timed_try(s, cand, ts, int(tries.size()), run, r, failed);
    if (!t) return std::nullopt;
    tries.push_back(std::move(*t));
    return tries.back().est.spread;
  }, s.o.spread_limit, s.o.noisy_retries);
  if (!chosen) return failed;
  const TimedTry& chosen_try = tries[chosen->chosen];
  record_estimate(s.o, ts, chosen_try, *chosen, r);
  failed = check_clocks_twice(s, cand, ts, chosen_try, run, r);
  if (!failed.ok()) return failed;
  stream_flags(chosen_try.buckets, chosen_try.est, is_cuda_device(s.o.device), r);
  check_gpu_contexts(s, cand, r);
  failed = top_up_idle(s, cand, run, r);
  if (!failed.ok()) return failed;
  if (s.timing_done && run.topped_up_ms == 0) s.timing_done();
  check_other_processes(s, cand, r);
  flag_background_threads(run, r);
  return verify_calls(s, run.pool, r);
}

void attribute(Session& s, Worker& cand, const std::string& candidate_source, EvalResult& r) {
  if (!is_cuda_device(s.o.device)) return;
  json req = {{"op", "profile"}, {"calls", make_calls(s, 3)}};
  WorkerReply rep = cand.request(req, to_ms(s.call_timeout_s) * 4);
  if (rep.kind != WorkerReply::Kind::ok || !rep.body.value("ok", false)) {
    r.statistics["attribution"] = {{"skipped", "the profiled calls failed: " + rep.detail}};
    return;
  }
  apply_guard_evidence(rep.body, false, r);
  if (rep.body.contains("skipped")) {
    r.statistics["attribution"] = {{"skipped", rep.body["skipped"]}};
    return;
  }
  Attribution a = attribute_kernels(rep.body.value("kernels", json::array()), own_kernel_names(candidate_source));
  r.statistics["attribution"] = a.to_json();
  if (a.decoy())
    r.add_flag("decoy", Severity::block, decoy_evidence(a, r.build));
}

}  // namespace cudal1
