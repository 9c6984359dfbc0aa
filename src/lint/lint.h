// lint/lint.h — the degenerate-task lint: would a candidate that does no work pass the check?
//
// Defines the lint's options (LintOptions, LintTolerance), its result (LintResult, with its
// checks and findings, and its JSON form), and three entry points: lint_task (runs the trusted
// reference worker), lint_task_cached (the same through the store's cache, for the evaluator
// and the CLI) and lint_decide (the decision alone, from output tensors already in memory).
//
// A task is degenerate when a "null kernel" passes compare_values, at the tolerance in use, on
// every case: all zeros; one constant per output; the outputs the same weights give for other
// inputs; or, when the task has weights, the outputs other weights give for the same inputs.
// A speedup measured on such a task says nothing about the candidate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensors/compare.h"
#include "tensors/tensor_file.h"

namespace cudal1 {

class Store;

// The cache version of lint results: bumped whenever a change can alter a finding.
inline constexpr const char* kLintVersion = "lint/2";

// What a task with fixed_weights means for its results, for a person.
inline constexpr const char* kFixedWeightsWarning =
    "every weight init of the task gave the same parameters (its initialisation ignores the seed): a candidate "
    "that ignores or hard-codes them cannot be told apart; draw them at random in the task's __init__ "
    "(e.g. nn.init.normal_), as the bundled tasks do";

struct LintTolerance {
  ToleranceMode mode = ToleranceMode::standard;
  std::optional<double> atol_rtol;  // when set, replaces `mode` for every float dtype

  Tolerance for_dtype(DType dtype) const;
  std::string name() const;  // "standard", "strict", or the number ("1e-4")
  static std::string number(double v);  // powers of ten as "1e-4", others as "%.3g"
};

struct LintOptions {
  std::string task_path;
  std::string device = "cpu";
  std::string python;               // empty: find_python()
  LintTolerance tolerance;
  double timeout_s = 900;           // the whole probe: loading, building and 8 forward calls
  std::size_t memory_limit_mb = 0;  // resident memory of the reference worker; 0: none
  std::vector<std::string> hidden;  // out of its sandbox's sight beside the defaults (sandbox/sandbox.h)
};

// One null candidate tried on every case.
struct LintCheck {
  std::string id;          // all_zeros, constant, input_independent, weight_independent
  bool tested = true;      // false when it cannot apply (weight_independent without weights)
  int passed_cases = 0, cases = 0;
  std::string evidence;    // for a person: why it passes, where it fails, or why not tested
  bool passes() const { return tested && cases > 0 && passed_cases == cases; }
};

// A check that passes every case: a null kernel that the evaluator would accept.
struct LintFinding {
  std::string id;
  std::string evidence;
};

struct LintResult {
  bool degenerate = false;             // at least one finding
  // The task has parameters or buffers, and every init gave the same ones (its initialisation
  // ignores the seed, e.g. ones): a candidate that ignores them passes every check.
  bool fixed_weights = false;
  std::vector<LintFinding> findings;
  std::vector<LintCheck> checks;       // every null candidate, passed or not
  std::string tolerance;               // LintTolerance::name()
  nlohmann::json cases = nlohmann::json::array();    // [{case, init, init_seed, dist, input_seed}]
  nlohmann::json outputs = nlohmann::json::array();  // [{index, dtype, shape, atol, rtol, min, max}]
  std::string task_path, task_hash, device;
  nlohmann::json env = nlohmann::json::object();     // the worker's torch, python, device name
  bool from_store = false;

  nlohmann::json to_json() const;
  static LintResult from_json(const nlohmann::json& j);
};

// What the reference produced: outputs[j][i] is Model under init j on input draw i. The last
// draw is the probe (a fresh normal draw); every other draw, under every init, is a case.
struct LintGrid {
  std::vector<std::vector<std::vector<TensorValue>>> outputs;
  std::vector<std::string> draw_dists;
  std::vector<uint64_t> init_seeds, draw_seeds;
  bool weights_differ = false;  // two inits give different parameters and buffers
  bool has_weights = false;     // the task has parameters or buffers at all
  nlohmann::json env = nlohmann::json::object();
};

// Decides from the grid alone (no processes): checks, findings, cases and outputs.
LintResult lint_decide(const LintGrid& grid, const LintTolerance& tolerance);

// Runs the reference worker once on the task: the grid lint_decide works on. Throws
// Error(input) for a missing file, Error(task) when the task does not load or its Model fails,
// Error(runner) when the worker times out, runs out of memory or breaks down.
LintGrid lint_probe(const LintOptions& options);

// lint_probe, then lint_decide at options.tolerance; nothing cached.
LintResult lint_task(const LintOptions& options);

// One result per tolerance, from one probe at most: each is looked up in the store's generic
// cache (key "lint:<task sha256>:<device>:<tolerance name>", version kLintVersion) and saved
// there when computed. A hit comes back with from_store = true. store may be nullptr.
std::vector<LintResult> lint_task_cached(const LintOptions& options,
                                         const std::vector<LintTolerance>& tolerances, Store* store);

// The evaluator's entry point: one task at one tolerance mode, cached as above.
LintResult lint_task_cached(const std::string& task_path, const std::string& device, ToleranceMode mode,
                            Store* store, const std::string& python, const std::vector<std::string>& hidden = {});

}  // namespace cudal1
