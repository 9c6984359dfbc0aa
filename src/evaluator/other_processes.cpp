#include "evaluator/other_processes.h"

#include <algorithm>
#include <chrono>
#include <signal.h>
#include <string>
#include <thread>

#include "runner/gpu_processes.h"

using namespace std::chrono;

namespace cudal1 {

namespace {

// Long enough that a process spinning on a loaded machine shows tens of ms of CPU, short
// beside an evaluation; idle pools (torch.compile's, multiprocessing's) use next to none.
constexpr double kWatchMs = 400, kLimitMs = 50;
// Inductor's compile workers on an H100 were still starting (a core's worth of CPU) when a
// 19 s evaluation of a small module ended; a loaded two-core machine stretches a start further.
constexpr double kSettleLimitMs = 30000;

// CPU the candidate's other processes use in one watch window, nothing stopped.
double cpu_in_window(Process& p) {
  double before = p.others_cpu_ms();
  std::this_thread::sleep_for(microseconds(static_cast<long long>(kWatchMs * 1000)));
  return p.others_cpu_ms() - before;
}

// statistics.other_processes: the last window's CPU, and the wait for them to go quiet.
json watch_record(double cpu_ms, double settle_ms) {
  return {{"watch_ms", kWatchMs}, {"cpu_ms", cpu_ms}, {"settle_ms", settle_ms}};
}

}  // namespace

Verdict settle_other_processes(Session& s, Worker& cand, double others_cpu_before_ms,
                               EvalResult& r) {
  Process& p = cand.process();
  if (!p.sandboxed() || p.exit_info()) return {};
  if (p.others_cpu_ms() - others_cpu_before_ms < 1.0) return {};
  double waited = 0, used = 0;
  while (waited < kSettleLimitMs) {
    used = cpu_in_window(p);
    waited += kWatchMs;
    if (used <= kLimitMs) break;
  }
  s.others_settle_ms = waited;
  if (used <= kLimitMs) return {};
  std::string evidence = "processes the candidate started kept using CPU for " + std::to_string(int(waited / 1000)) +
                         " s after its warm-up calls, while it had no call to run (" + std::to_string(int(used)) +
                         " ms in the last " + std::to_string(int(kWatchMs)) + " ms): work kept going between calls, not a pool starting";
  r.statistics["other_processes"] = watch_record(used, waited);
  r.add_flag("background_process", Severity::block, evidence);
  return {Status::rejected, "timing could not be trusted: " + evidence, true};
}

void check_other_processes(Session& s, Worker& cand, EvalResult& r) {
  if (s.swarm_seen)
    r.add_flag("background_process", Severity::block,
               "the candidate's processes kept starting new ones while the reference ran, faster than they could be stopped");
  Process& p = cand.process();
  if (!p.sandboxed() || p.exit_info()) return;
  double used = cpu_in_window(p);
  r.statistics["other_processes"] = watch_record(used, s.others_settle_ms);
  if (used > kLimitMs)
    r.add_flag("background_process", Severity::block,
               "processes the candidate started used " + std::to_string(int(used)) + " ms of CPU in " +
                   std::to_string(int(kWatchMs)) + " ms in which it had no call to run: work kept going between calls");
}

void check_gpu_contexts(Session& s, Worker& cand, EvalResult& r) {
  if (!is_cuda_device(s.o.device)) return;
  auto colon = s.o.device.find(':');
  unsigned index = colon == std::string::npos ? 0u : unsigned(std::stoul(s.o.device.substr(colon + 1)));
  auto pids = gpu_compute_pids(index);
  json& seen = r.statistics["gpu_contexts"];
  if (!pids) {
    seen = {{"skipped", "NVML is not available"}};
    return;
  }
  if (!seen.is_object()) seen = {{"candidate_helpers", json::array()}, {"other_programs", json::array()}};
  for (pid_t p : *pids) {
    if (p == cand.process().main_pid() || p == s.ref.process().main_pid() || Process::is_live_program(p)) continue;
    bool helper = cand.process().owns(p);
    json& list = seen[helper ? "candidate_helpers" : "other_programs"];
    if (std::find(list.begin(), list.end(), json(p)) != list.end()) continue;
    list.push_back(p);
    if (helper)
      r.add_flag("foreign_gpu_context", Severity::block,
                 "process " + std::to_string(p) + ", started by the candidate beside its worker, held a CUDA context "
                 "of its own on the device around the timed calls: its kernels run on while the reference is timed");
    else if (kill(p, 0) == 0)  // a process of this machine (another container's pids mean nothing here)
      r.add_flag("device_shared", Severity::warn,
                 "process " + std::to_string(p) + ", not part of this evaluation, held a CUDA context on the device "
                 "while it was timed: the figures may carry its load");
  }
}

}  // namespace cudal1
