// evaluator/call_budget.h — how long a call of the candidate may take before it is a timeout
// (internal to the evaluator).
//
// A call gets the call timeout: the user's --call-timeout, else max(10 s, 50 x the reference's
// own call on that case). A first call (case 0, the timing's warm-up) may compile — load_inline
// building lazily, torch.compile on first use — so while a compile is seen it may go on, up to
// the build timeout. A first call that hangs with nothing compiling is a timeout once the call
// timeout has passed, not after the build timeout's 15 minutes.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runner/worker.h"

namespace cudal1 {

inline constexpr double kMinCallTimeoutS = 10;
inline constexpr double kReferenceCallFactor = 50;

struct CallTimeouts {
  std::vector<double> per_case_s;   // case k's call timeout
  double call_s = 0;                // the largest: a call on any case (timing, checks) gets this
  std::string source = "option";    // "option" (the user's) or "reference" (fitted to it)
  // The result's "budgets": these, the build timeout, and first_call_extended_for and
  // warmup_extended_for (null unless those calls went past their call timeout while compiling).
  json to_json(double build_timeout_s) const;
};

// The option's timeout for every case when set; else each case's from the reference's call time
// on it (ms), never below kMinCallTimeoutS.
CallTimeouts fit_call_timeouts(std::optional<double> option_s, const std::vector<double>& reference_call_ms);
// The reference's call time per case, as its load_task reply gives them (0 where missing).
std::vector<double> reference_call_ms(const json& loaded_cases);

// The precision ladder runs the reference seven ways (a float64 oracle, as it is, TF32, bf16 and
// fp16 each by autocast and by cast), each compared with the oracle in float64: six call
// timeouts. Where the device is full (other lanes' memory) each step is done again on the host,
// at the host's pace, which grows with the outputs: kLadderHostSecondsPerGiB more per GiB of the
// oracle's float64 outputs (a 16384 x 16384 output took longer than the six call timeouts there).
inline constexpr double kLadderHostSecondsPerGiB = 120;
double precision_ladder_timeout_s(double call_timeout_s, int64_t output_elements);

// Whether a process's command name (/proc/PID/comm) is a compiler, linker or build driver.
bool is_compiler_name(std::string_view comm);

// What a compile in progress looks like from outside the candidate's worker.
struct CompileSignals {
  std::vector<std::string> process_names;  // command names of the processes the worker started
  bool torch_compile_reported = false;     // its marker file (runner/py/compile_report.py) exists
};
// "compiler process", "torch.compile", or nothing compiling.
std::optional<std::string> compile_in_progress(const CompileSignals& signals);

// Looks at the candidate's worker now; a class so the waiting can be tested with a double.
class CompileProbe {
 public:
  virtual ~CompileProbe() = default;
  virtual CompileSignals sample() = 0;
};

// The worker's processes through /proc, its own process left out (a child compiles; the worker
// renaming itself is not a compile), and the marker file in its folder.
class WorkerCompileProbe : public CompileProbe {
 public:
  explicit WorkerCompileProbe(Worker& worker);
  CompileSignals sample() override;

 private:
  Process& process_;
  std::filesystem::path marker_;
};

struct CallBudget {
  double call_s = 0;   // what the call may take
  double build_s = 0;  // the most it may take while compiling
};

// The decision, asked after every slice of waiting. A call may wait for its call budget, counted
// again from the last moment a compile was seen (time spent compiling is not the call's), but
// never past the build budget. Each compile signal can be faked by the candidate (a child named
// cc1plus, the marker file); faking one gains it at most the build budget, which every first call
// had before budgets were fitted.
class FirstCallWait {
 public:
  explicit FirstCallWait(CallBudget budget) : budget_(budget) {}
  bool keep_waiting(double waited_s, const std::optional<std::string>& compiling);
  // What the call was allowed past its call budget for, once it was, and when that was last seen.
  const std::optional<std::string>& extended_for() const { return extended_for_; }
  std::optional<double> compile_seen_at_s() const { return compile_seen_at_s_; }
  // Why a call under this budget timed out, for a person.
  std::string timeout_reason() const;

 private:
  CallBudget budget_;
  std::optional<double> compile_seen_at_s_;
  std::optional<std::string> compile_seen_, extended_for_;
};

struct BudgetedReply {
  WorkerReply reply;
  std::optional<std::string> extended_for;
};

// A first call under `budget`: the worker is asked, and the probe looked at, every `slice`. A
// timeout's detail says which budget ran out.
BudgetedReply first_call(Worker& worker, const json& req, CallBudget budget, CompileProbe& probe,
                         std::chrono::milliseconds slice = std::chrono::milliseconds(1000));
// The same, looking at the worker itself (WorkerCompileProbe); what the call was allowed past its
// call timeout for, or null, goes into `extended_for`.
WorkerReply first_call(Worker& worker, const json& req, CallBudget budget, json& extended_for);

}  // namespace cudal1
