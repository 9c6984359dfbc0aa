// evaluator/result.h — the result of one evaluation, and its JSON form
// (docs/evaluation.md, "The JSON result").
//
// Stable fields: accepted, status, flags [{id, severity, evidence}], runtime_ms and speedup keyed
// by baseline, error; then correctness, statistics and provenance objects.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

using json = nlohmann::json;

enum class Status { ok, compile_error, runtime_error, timeout, crash, incorrect, rejected };
const char* status_name(Status s);
Status status_from_name(const std::string& name);  // throws Error(internal) when unknown

// The baselines' names in results: eager, compile (torch.compile's default mode), compile_ro
// (its reduce-overhead mode), cuda_graph, cudnn_autotune. Results and baseline sets written
// before compile and compile_ro were named so used the earlier names below.
struct RenamedBaseline {
  const char* earlier;
  const char* now;
};
inline constexpr RenamedBaseline kRenamedBaselines[] = {{"compile_default", "compile"},
                                                        {"compile_reduce_overhead", "compile_ro"}};
// Today's name for an earlier one; any other name as it is.
std::string canonical_baseline_name(const std::string& name);

enum class Severity { block, warn, info };
const char* severity_name(Severity s);

struct Flag {
  std::string id;
  Severity severity = Severity::block;
  std::string evidence;  // the first occurrence
  int occurrences = 1;   // how many places (cases, outputs) raised it
};

struct EvalResult {
  bool accepted = false;
  Status status = Status::ok;
  std::vector<Flag> flags;
  std::map<std::string, double> runtime_ms;  // "eager" (the reference), "candidate"
  std::map<std::string, double> speedup;     // keyed by baseline: "eager", ...
  std::string error;                         // for a person: what failed, where, what to do
  json correctness = json::object();         // per case: seed, distribution, comparison
  json statistics = json::object();          // buckets, ratios, spread, re-measures
  json provenance = json::object();          // device, driver, versions, protocol, seeds
  json phase_seconds = json::object();       // wall time per phase: where an evaluation's time went
  json task_lint = json::object();           // the task's degenerate-task lint (lint/lint.h), if run
  json build = json::object();               // the build service's outcome and which calls it served, if used
  // The time limits the candidate's calls had: {call_timeout_s, build_timeout_s, call_timeout_source,
  // first_call_extended_for, ...} (evaluator/call_budget.h); empty when no call ran.
  json budgets = json::object();
  // Null, or why the machine rather than the candidate ended the evaluation ({"cause", "detail",
  // ...}, evaluator/infrastructure.h): such a result is no verdict and is never stored.
  json infrastructure = nullptr;
  std::string task_path, candidate_path, task_hash, candidate_hash;
  bool from_store = false;

  bool has_blocking_flag() const;
  bool infrastructure_failure() const { return !infrastructure.is_null(); }
  void add_flag(std::string id, Severity severity, std::string evidence);

  json to_json() const;
  static EvalResult from_json(const json& j);
};

}  // namespace cudal1
