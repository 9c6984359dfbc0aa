// evaluator/infrastructure.cpp — deaths by the machine's hand, and the retry rule (see infrastructure.h).
#include "evaluator/infrastructure.h"

#include <signal.h>

#include <fstream>
#include <mutex>
#include <sstream>

namespace cudal1 {

namespace {

std::mutex g_counter_m;
std::function<std::optional<uint64_t>()> g_counter;  // set by a test's override

}  // namespace

std::optional<uint64_t> parse_oom_kill_count(const std::string& vmstat) {
  std::istringstream in(vmstat);
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return std::nullopt;
}

std::optional<uint64_t> oom_kill_count() {
  {
    std::lock_guard lock(g_counter_m);
    if (g_counter) return g_counter();
  }
  std::ifstream in("/proc/vmstat");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return parse_oom_kill_count(text.str());
}

OomKillCounterOverride::OomKillCounterOverride(std::function<std::optional<uint64_t>()> counter) {
  std::lock_guard lock(g_counter_m);
  g_counter = std::move(counter);
}

OomKillCounterOverride::~OomKillCounterOverride() {
  std::lock_guard lock(g_counter_m);
  g_counter = nullptr;
}

json infrastructure_cause(const Attempt& a) {
  const auto& exit = a.candidate_exit;
  if (a.result.status != Status::crash || !exit || !exit->signaled || exit->signal != SIGKILL) return nullptr;
  const bool oom = a.oom_kills_before && a.oom_kills_after && *a.oom_kills_after > *a.oom_kills_before;
  json cause = {{"cause", oom ? kOomKillerCause : kOutsideKillCause},
                {"detail", oom ? "the candidate's worker died of SIGKILL while the kernel's out-of-memory killer was "
                                 "killing processes: the machine ran short of memory"
                               : "the candidate's worker died of a SIGKILL that cudal1 did not send, and the "
                                 "out-of-memory killer did not act meanwhile"}};
  if (a.oom_kills_before && a.oom_kills_after) cause["oom_kills"] = {*a.oom_kills_before, *a.oom_kills_after};
  return cause;
}

EvalResult retry_infrastructure_faults(const std::function<Attempt(int attempt)>& run) {
  Attempt first = run(0);
  json cause = infrastructure_cause(first);
  if (cause.is_null()) return std::move(first.result);
  Attempt second = run(1);
  json again = infrastructure_cause(second);
  EvalResult r = std::move(second.result);
  if (again.is_null()) {  // the second evaluation gave the candidate's verdict
    r.statistics["infrastructure_retry"] = {{"first_attempt", cause}};
    return r;
  }
  if (again["cause"] == kOomKillerCause) {
    again["first_attempt"] = cause;
    r.infrastructure = std::move(again);
    r.accepted = false;
    r.error = "infrastructure failure, no verdict: the out-of-memory killer took the candidate's worker in a "
              "second evaluation too (" + r.error + ")";
    return r;
  }
  // Killed again with no out-of-memory kill: the death repeats with the candidate, so it is its own.
  r.statistics["infrastructure_retry"] = {{"first_attempt", cause}, {"second_attempt", again}};
  r.error += "\n(it died of SIGKILL again when evaluated afresh, with no out-of-memory kill meanwhile: the death is "
             "the candidate's own)";
  return r;
}

}  // namespace cudal1
