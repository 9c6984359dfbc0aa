// evaluator/infrastructure.cpp — deaths by the machine's hand, and the retry rule (see infrastructure.h).
#include "evaluator/infrastructure.h"

#include <signal.h>

#include <fstream>
#include <map>
#include <mutex>
#include <regex>
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

namespace {

double bytes_of(const std::string& number, const std::string& unit) {
  static const std::map<std::string, double> scale = {
      {"B", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  auto it = scale.find(unit);
  return std::stod(number) * (it == scale.end() ? 1.0 : it->second);
}

json device_memory_cause(const EvalResult& r) {
  if (r.status != Status::runtime_error && r.status != Status::crash) return nullptr;
  auto oom = parse_device_out_of_memory(r.error);
  if (!oom || !oom->others_to_blame()) return nullptr;
  const double gib = 1073741824.0;
  return {{"cause", kDeviceMemoryCause},
          {"detail", "CUDA ran out of memory while other processes held " + std::to_string(int(oom->others() / gib)) +
                         " GiB of the device's " + std::to_string(int(oom->total / gib)) +
                         (oom->request_known ? " GiB; the failing allocation would have fitted beside this evaluation's own memory"
                                             : " GiB, more than this evaluation's own")},
          {"device_memory", {{"requested", oom->requested}, {"total", oom->total}, {"free", oom->free},
                             {"this_process", oom->this_process}}}};
}

}  // namespace

std::optional<DeviceOutOfMemory> parse_device_out_of_memory(const std::string& error) {
  static const std::regex pattern(
      R"(Tried to allocate ([0-9.]+) ([KMGT]?i?B)\. GPU [0-9]+ has a total capacity of ([0-9.]+) ([KMGT]?i?B) of which )"
      R"(([0-9.]+) ([KMGT]?i?B) is free\.[^\n]*?this process has ([0-9.]+) ([KMGT]?i?B) memory in use)");
  static const std::regex note(
      R"(device memory when it failed: ([0-9]+) bytes in all, ([0-9]+) free, ([0-9]+) held by this process)");
  std::smatch m;
  if (std::regex_search(error, m, note)) {
    DeviceOutOfMemory o;
    o.request_known = false;
    o.total = std::stod(m[1]);
    o.free = std::stod(m[2]);
    o.this_process = std::stod(m[3]);
    return o;
  }
  if (!std::regex_search(error, m, pattern)) return std::nullopt;
  DeviceOutOfMemory o;
  o.requested = bytes_of(m[1], m[2]);
  o.total = bytes_of(m[3], m[4]);
  o.free = bytes_of(m[5], m[6]);
  o.this_process = bytes_of(m[7], m[8]);
  return o;
}

json infrastructure_cause(const Attempt& a) {
  if (json device = device_memory_cause(a.result); !device.is_null()) return device;
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
  if (again["cause"] == kOomKillerCause || again["cause"] == kDeviceMemoryCause) {
    const bool device = again["cause"] == kDeviceMemoryCause;
    again["first_attempt"] = cause;
    r.infrastructure = std::move(again);
    r.accepted = false;
    r.error = std::string("infrastructure failure, no verdict: ") +
              (device ? "CUDA ran out of memory again while other processes held the device's memory"
                      : "the out-of-memory killer took the candidate's worker in a second evaluation too") +
              " (" + r.error + ")";
    return r;
  }
  // Killed again with no out-of-memory kill: the death repeats with the candidate, so it is its own.
  r.statistics["infrastructure_retry"] = {{"first_attempt", cause}, {"second_attempt", again}};
  r.error += "\n(it died of SIGKILL again when evaluated afresh, with no out-of-memory kill meanwhile: the death is "
             "the candidate's own)";
  return r;
}

}  // namespace cudal1
