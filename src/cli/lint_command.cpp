// cli/lint-task: would a kernel that does no work pass the check on these tasks? One row per
// task (and tolerance); CUDA-L1 JSON-lines files are linted row by row, a broken row being a
// reported failure rather than the end of the run.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/text.h"
#include "lint/lint.h"
#include "report/table.h"
#include "tasks/cuda_l1.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1::cli {

namespace {

struct LintArgs {
  std::vector<std::string> tasks;
  std::string jsonl, device = "cpu", tolerance = "standard", db, python;
  std::vector<double> atol_rtol;
  bool json_out = false, no_store = false;
  double timeout_s = 900;
  std::size_t memory_limit_mb = 0;
};

struct Target {
  std::string name, path;
  std::optional<Error> error;           // could not be linted
  std::vector<LintResult> results;      // one per tolerance
};

std::vector<LintTolerance> tolerances(const LintArgs& a) {
  LintTolerance base;
  if (a.tolerance == "strict") base.mode = ToleranceMode::strict;
  else if (a.tolerance != "standard")
    throw Error(ErrorKind::usage, "unknown --tolerance '" + a.tolerance + "'", "use standard or strict, or --atol-rtol 1e-4");
  if (a.atol_rtol.empty()) return {base};
  std::vector<LintTolerance> out;
  for (double v : a.atol_rtol) {
    if (!(v > 0 && v < 1))
      throw Error(ErrorKind::usage, "--atol-rtol " + std::to_string(v) + " is not between 0 and 1",
                  "give a tolerance such as 1e-2 or 1e-4");
    out.push_back({base.mode, v});
  }
  return out;
}

// Each row's ref_code, written to `scratch`; a row that is not a CUDA-L1 row becomes a target
// that carries its error.
std::vector<Target> jsonl_targets(const std::string& file, const fs::path& scratch) {
  std::vector<Target> out;
  for (auto& row : read_cuda_l1(file)) {
    Target t{row.name, {}, row.error, {}};
    if (!row.error) t.path = write_row_file(row, scratch, "task.py", row.text("ref_code")).string();
    out.push_back(std::move(t));
  }
  return out;
}

// A message's first line, clipped to fit a table's column.
std::string clipped_first_line(const std::string& s, std::size_t max = 160) {
  std::string l(first_line(s));
  return l.size() > max ? l.substr(0, max - 3) + "..." : l;
}

std::string finding_ids(const LintResult& r) {
  std::string ids;
  for (auto& f : r.findings) ids += (ids.empty() ? "" : ",") + f.id;
  return ids;
}

json error_json(const Target& t) {
  const Error& e = *t.error;
  return {{"name", t.name}, {"task", {{"path", t.path}}},
          {"error", {{"kind", error_kind_name(e.kind())}, {"message", e.message()}, {"hint", e.hint()},
                     {"context", e.context()}}}};
}

void print_json(const std::vector<Target>& targets, const std::vector<LintTolerance>& tols, const LintArgs& a) {
  json results = json::array(), summary = json::object();
  for (auto& tol : tols) summary[tol.name()] = {{"tasks", targets.size()}, {"degenerate", 0}, {"failed", 0}};
  for (auto& t : targets) {
    if (t.error) {
      results.push_back(error_json(t));
      for (auto& tol : tols) summary[tol.name()]["failed"] = summary[tol.name()]["failed"].get<int>() + 1;
    }
    for (auto& r : t.results) {
      json j = r.to_json();
      j["name"] = t.name;
      results.push_back(j);
      if (r.degenerate) summary[r.tolerance]["degenerate"] = summary[r.tolerance]["degenerate"].get<int>() + 1;
    }
  }
  bool single = results.size() == 1 && a.jsonl.empty();
  json names = json::array();
  for (auto& tol : tols) names.push_back(tol.name());
  json all = {{"device", a.device}, {"tolerances", names}, {"results", results}, {"summary", summary}};
  std::cout << (single ? results[0] : all).dump() << std::endl;
}

void print_table(const std::vector<Target>& targets, const std::vector<LintTolerance>& tols) {
  Table t({"task", "tolerance", "verdict", "findings", "evidence"});
  for (auto& x : targets) {
    if (x.error) t.add_row({x.name, "", "error", "", clipped_first_line(x.error->message())});
    for (auto& r : x.results)
      t.add_row({x.name, r.tolerance, r.degenerate ? "DEGENERATE" : "ok", finding_ids(r),
                 r.findings.empty() ? "" : clipped_first_line(r.findings[0].evidence, 400)});
  }
  t.print(std::cout);
  for (auto& x : targets)
    if (!x.results.empty() && x.results[0].fixed_weights)
      std::cout << "warning: " << x.name << ": " << kFixedWeightsWarning << "\n";
  if (targets.size() == 1 && !targets[0].results.empty()) {
    std::cout << "\n";
    for (auto& r : targets[0].results)
      for (auto& c : r.checks)
        std::cout << r.tolerance << "  " << c.id << ": " << (c.passes() ? "PASSES" : c.tested ? "fails" : "n/a")
                  << "  " << c.evidence << "\n";
  }
  for (auto& tol : tols) {
    int degenerate = 0, failed = 0;
    for (auto& x : targets) {
      failed += x.error.has_value();
      for (auto& r : x.results) degenerate += r.degenerate && r.tolerance == tol.name();
    }
    std::cout << targets.size() << " tasks at tolerance " << tol.name() << ": " << degenerate << " degenerate, "
              << failed << " could not be linted\n";
  }
}

void run_lint(const LintArgs& a) {
  std::vector<LintTolerance> tols = tolerances(a);
  if (a.device != "cpu" && a.device.rfind("cuda", 0) != 0)
    throw Error(ErrorKind::usage, "unknown --device '" + a.device + "'", "use cpu, cuda or cuda:N");
  if (a.tasks.empty() && a.jsonl.empty())
    throw Error(ErrorKind::usage, "no task to lint", "name task files, or a CUDA-L1 file with --jsonl FILE");
  std::vector<Target> targets;
  for (auto& p : a.tasks) targets.push_back({p, resolve_task_file(p), std::nullopt, {}});
  struct Scratch {  // the JSON-lines rows as files, gone when the run ends
    std::optional<fs::path> root;
    ~Scratch() {
      std::error_code ec;
      if (root) fs::remove_all(*root, ec);
    }
  } scratch;
  if (!a.jsonl.empty()) {
    scratch.root = make_private_dir("cudal1-lint-rows");
    for (auto& t : jsonl_targets(a.jsonl, *scratch.root)) targets.push_back(std::move(t));
  }
  std::unique_ptr<Store> store = open_store(a.db, a.no_store);
  bool one = targets.size() == 1 && a.jsonl.empty();
  std::optional<Error> first_error;
  for (std::size_t k = 0; k < targets.size(); ++k) {
    Target& t = targets[k];
    auto start = std::chrono::steady_clock::now();
    if (!t.error) try {
        LintOptions o{t.path, a.device, a.python, tols[0], a.timeout_s, a.memory_limit_mb};
        t.results = lint_task_cached(o, tols, store.get());
      } catch (const Error& e) {
        if (one) throw;
        t.error = e;
      }
    if (t.error && !first_error && a.jsonl.empty()) first_error = t.error;
    if (one) continue;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string what = t.error ? "error: " + clipped_first_line(t.error->message(), 200) : "";
    for (auto& r : t.results) what += (what.empty() ? "" : "; ") + r.tolerance + " " + (r.degenerate ? "DEGENERATE (" + finding_ids(r) + ")" : "ok");
    std::fprintf(stderr, "[%zu/%zu] %s: %s (%.1f s)\n", k + 1, targets.size(), t.name.c_str(), what.c_str(), s);
  }
  if (a.json_out) print_json(targets, tols, a);
  else print_table(targets, tols);
  if (first_error) throw *first_error;  // files named on the command line: a failure is an error
}

}  // namespace

void register_lint(CLI::App& app) {
  auto args = std::make_shared<LintArgs>();
  auto* cmd = app.add_subcommand("lint-task", "Is a task degenerate? Checks whether a kernel that does no work "
                                              "(zeros, a constant, ignoring inputs or weights) passes the check");
  cmd->add_option("tasks", args->tasks, "KernelBench task files or suite names (level1/28_log_softmax, log_softmax)");
  cmd->add_option("--jsonl", args->jsonl, "a CUDA-L1 JSON-lines file: lint each row's ref_code");
  cmd->add_option("--device,-d", args->device, "cpu, cuda or cuda:N")->transform(device_names())->capture_default_str();
  cmd->add_option("--tolerance", args->tolerance, "standard (atol=rtol=1e-2) or strict (per dtype)")->capture_default_str();
  cmd->add_option("--atol-rtol", args->atol_rtol, "one number as atol and rtol of float outputs; repeat (or "
                  "separate by commas) to decide at several from one run")->delimiter(',');
  cmd->add_flag("--json", args->json_out, "print one JSON object on stdout");
  cmd->add_option("--db", args->db, "SQLite store caching results (default as for eval)");
  cmd->add_flag("--no-store", args->no_store, "neither read nor write the store");
  cmd->add_option("--python", args->python, "Python interpreter with torch");
  cmd->add_option("--timeout", args->timeout_s, "seconds one task's probe (load, build, 8 forward calls) may take")
      ->capture_default_str();
  cmd->add_option("--memory-limit-mb", args->memory_limit_mb, "resident memory limit of the worker; 0: none")
      ->capture_default_str();
  cmd->callback([args] { run_lint(*args); });
}

}  // namespace cudal1::cli
