#include "evaluator/call_budget.h"

#include <algorithm>
#include <cctype>

#include "core/format.h"
#include "core/process_tree.h"

namespace fs = std::filesystem;

namespace cudal1 {

CallTimeouts fit_call_timeouts(std::optional<double> option_s, const std::vector<double>& reference_call_ms) {
  CallTimeouts t;
  if (!option_s) t.source = "reference";
  for (double ms : reference_call_ms)
    t.per_case_s.push_back(option_s ? *option_s : std::max(kMinCallTimeoutS, kReferenceCallFactor * ms / 1000.0));
  t.call_s = t.per_case_s.empty() ? option_s.value_or(kMinCallTimeoutS)
                                  : *std::max_element(t.per_case_s.begin(), t.per_case_s.end());
  return t;
}

std::vector<double> reference_call_ms(const json& loaded_cases) {
  std::vector<double> ms;
  for (auto& c : loaded_cases) ms.push_back(c.value("call_ms", 0.0));
  return ms;
}

json CallTimeouts::to_json(double build_timeout_s) const {
  return {{"call_timeout_s", call_s}, {"case_call_timeout_s", per_case_s}, {"call_timeout_source", source},
          {"build_timeout_s", build_timeout_s}, {"first_call_extended_for", nullptr},
          {"warmup_extended_for", nullptr}};
}

namespace {

constexpr std::string_view kCompilers[] = {
    "cc1plus", "cc1", "lto1", "collect2", "as", "ld", "ld.bfd", "ld.gold", "ld.lld", "lto-wrapper",
    "cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc", "cicc", "ptxas", "fatbinary", "nvlink",
    "cudafe++", "ninja", "make"};
// A cross-named compiler ("x86_64-linux-gnu-g++-12"): the kernel keeps 15 characters of its name.
constexpr std::string_view kTriplePrefixes[] = {"x86_64-linux-gn", "aarch64-linux-g"};

// "g++-12" -> "g++", "clang-15" -> "clang": distributions' versioned names.
std::string_view without_version(std::string_view name) {
  auto dash = name.rfind('-');
  if (dash == std::string_view::npos || dash + 1 == name.size()) return name;
  for (char c : name.substr(dash + 1))
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return name;
  return name.substr(0, dash);
}

}  // namespace

double precision_ladder_timeout_s(double call_timeout_s, int64_t output_elements) {
  const double oracle_gib = double(std::max<int64_t>(output_elements, 0)) * 8.0 / double(1ull << 30);
  return 6 * call_timeout_s + kLadderHostSecondsPerGiB * oracle_gib;
}

bool is_compiler_name(std::string_view comm) {
  for (auto prefix : kTriplePrefixes)
    if (comm.rfind(prefix, 0) == 0) return true;
  std::string_view base = without_version(comm);
  return std::find(std::begin(kCompilers), std::end(kCompilers), base) != std::end(kCompilers);
}

std::optional<std::string> compile_in_progress(const CompileSignals& signals) {
  if (std::any_of(signals.process_names.begin(), signals.process_names.end(),
                  [](const std::string& n) { return is_compiler_name(n); }))
    return "compiler process";
  if (signals.torch_compile_reported) return "torch.compile";
  return std::nullopt;
}

// The worker's marker name: runner/py/compile_report.py's COMPILING.
WorkerCompileProbe::WorkerCompileProbe(Worker& worker)
    : process_(worker.process()), marker_(fs::path(worker.workdir()) / ".cudal1_compiling") {}

CompileSignals WorkerCompileProbe::sample() {
  CompileSignals s;
  for (pid_t pid : process_.processes())
    if (pid != process_.main_pid()) s.process_names.push_back(read_proc_comm(pid));
  std::error_code ec;
  s.torch_compile_reported = fs::exists(fs::symlink_status(marker_, ec));
  return s;
}

bool FirstCallWait::keep_waiting(double waited_s, const std::optional<std::string>& compiling) {
  if (compiling) {
    compile_seen_at_s_ = waited_s;
    compile_seen_ = compiling;
  }
  double deadline = budget_.call_s;
  if (compile_seen_at_s_)
    deadline = std::min(std::max(deadline, *compile_seen_at_s_ + budget_.call_s), std::max(budget_.call_s, budget_.build_s));
  bool keep = waited_s < deadline;
  if (keep && waited_s >= budget_.call_s) extended_for_ = compile_seen_;
  return keep;
}

BudgetedReply first_call(Worker& worker, const json& req, CallBudget budget, CompileProbe& probe,
                         std::chrono::milliseconds slice) {
  FirstCallWait wait(budget);
  BudgetedReply out;
  out.reply = worker.request(req, slice, [&](std::chrono::milliseconds waited) {
    return wait.keep_waiting(double(waited.count()) / 1000.0, compile_in_progress(probe.sample()));
  });
  out.extended_for = wait.extended_for();
  if (out.reply.kind == WorkerReply::Kind::timeout) out.reply.detail += " (" + wait.timeout_reason() + ")";
  return out;
}

WorkerReply first_call(Worker& worker, const json& req, CallBudget budget, json& extended_for) {
  WorkerCompileProbe probe(worker);
  BudgetedReply b = first_call(worker, req, budget, probe);
  extended_for = b.extended_for ? json(*b.extended_for) : json(nullptr);
  return b.reply;
}

std::string FirstCallWait::timeout_reason() const {
  std::string call = "the call timeout of " + format_fixed(budget_.call_s, 1) + " s";
  if (!extended_for_)
    return call + ": a first call may run up to the build timeout only while it compiles, and nothing was compiling";
  std::string seen = "a " + *extended_for_ + " was seen until " + format_fixed(*compile_seen_at_s_, 0) + " s";
  if (*compile_seen_at_s_ + budget_.call_s >= budget_.build_s)
    return seen + ", and the build timeout of " + format_fixed(budget_.build_s, 0) + " s ran out";
  return seen + ", and " + call + " ran out after it";
}

}  // namespace cudal1
