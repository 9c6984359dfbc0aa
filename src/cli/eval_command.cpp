#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/baseline_options.h"
#include "cli/commands.h"
#include "cli/device_option.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "evaluator/evaluator.h"
#include "core/stats.h"
#include "report/result_notes.h"
#include "report/table.h"
#include "store/store.h"
#include "task_facts/store_task_facts.h"
#include "tasks/suite.h"

namespace cudal1::cli {

namespace {

struct EvalArgs {
  EvalOptions options;
  std::vector<std::string> candidates;
  std::string tolerance = "standard";
  std::string db;
  bool json_out = false, force = false, no_store = false, no_timing = false;
  BaselineArgs baselines;
  int repeat = 1;
};

void print_summary(const EvalResult& r, const std::string& stored, std::ostream& os) {
  os << "task       " << r.task_path << "\n";
  os << "candidate  " << r.candidate_path << "\n";
  os << "verdict    " << (r.accepted ? "ACCEPTED" : "NOT ACCEPTED") << " (" << status_name(r.status) << ")\n";
  if (auto it = r.speedup.find("eager"); it != r.speedup.end()) {
    const json& s = r.statistics;
    os << "speedup    " << format_fixed(it->second, 2) << "x vs eager  (eager " << format_fixed(r.runtime_ms.at("eager"), 4)
       << " ms, candidate " << format_fixed(r.runtime_ms.at("candidate"), 4) << " ms; raw "
       << format_fixed(s.value("raw_speedup", 0.0), 3) << "x over " << s.value("buckets", 0)
       << " buckets, spread " << format_fixed(100 * s.value("spread", 0.0), 1) << "%)\n";
    // A figure noise shrank says so beside the medians it contradicts.
    if (std::string note = noise_note(r); !note.empty()) os << "           " << note << "\n";
  }
  if (r.correctness.contains("cases")) {
    int n = 0, ok = 0;
    double max_abs = 0;
    for (auto& c : r.correctness["cases"]) {
      ++n;
      ok += c.value("passed", false);
      for (auto& o : c.value("outputs", json::array())) max_abs = std::max(max_abs, o.value("max_abs_error", 0.0));
    }
    os << "correct    " << ok << "/" << n << " cases pass (" << r.correctness.value("tolerance", "")
       << " tolerance, max abs error " << max_abs << ")\n";
  }
  if (r.correctness.contains("precision")) {
    const json& p = r.correctness["precision"];
    if (p.contains("skipped")) os << "precision  not checked: " << p["skipped"].get<std::string>() << "\n";
    else if (p.value("verdict", "") == "reduced")
      os << "precision  REDUCED (like the reference in " << p.value("like", "?") << ")\n";
    else if (p.value("verdict", "") == "systematic")
      os << "precision  SYSTEMATIC ERROR (a bias, a wrong constant or an approximation, not rounding: incorrect)\n";
    else os << "precision  as the reference (float64 oracle ladder)\n";
  }
  if (r.statistics.contains("verified_calls")) {
    const json& v = r.statistics["verified_calls"];
    os << "verified   " << v.value("checked", 0) << " of " << v.value("sampled", 0) << " timed calls recomputed by the reference, "
       << v.value("failed", 0) << " wrong\n";
  }
  if (r.statistics.contains("attribution") && r.statistics["attribution"].contains("share")) {
    const json& sh = r.statistics["attribution"]["share"];
    os << "gpu time   own kernels " << format_fixed(100 * sh.value("own", 0.0), 0) << "%, compiled "
       << format_fixed(100 * sh.value("compiled", 0.0), 0) << "%, libraries " << format_fixed(100 * sh.value("library", 0.0), 0)
       << "%, PyTorch " << format_fixed(100 * sh.value("aten", 0.0), 0) << "%, other "
       << format_fixed(100 * sh.value("other", 0.0), 0) << "%\n";
  }
  for (auto& f : r.flags)
    os << "flag       " << f.id << " [" << severity_name(f.severity) << "] " << f.evidence
       << (f.occurrences > 1 ? " (and " + std::to_string(f.occurrences - 1) + " more)" : "") << "\n";
  if (!r.error.empty()) {
    std::istringstream lines(r.error);
    std::string line;
    bool first = true;
    while (std::getline(lines, line)) {
      os << (first ? "error      " : "           ") << line << "\n";
      first = false;
    }
  }
  const json& p = r.provenance;
  os << "device     " << p.value("device", "") << " (" << p.value("device_name", "") << "), torch "
     << p.value("torch", "") << ", " << p.value("protocol", "") << "\n";
  // Said only when it is not the whole sandbox: then what the candidate could reach differs.
  if (std::string sb = p.value("sandbox", ""); sb.rfind("fallback", 0) == 0) os << "sandbox    " << sb << "\n";
  if (!stored.empty()) os << "store      " << stored << "\n";
}

void check_arguments(EvalArgs& a) {
  EvalOptions& o = a.options;
  if (a.tolerance == "strict") o.tolerance = ToleranceMode::strict;
  else if (a.tolerance != "standard")
    throw Error(ErrorKind::usage, "unknown --tolerance '" + a.tolerance + "'", "use standard or strict");
  o.task_path = resolve_task_file(o.task_path);
  for (auto& p : a.candidates)
    if (!std::filesystem::is_regular_file(p))
      throw Error(ErrorKind::input, "no such file: " + p, "check the path");
  o.timing = !a.no_timing;
  apply_baseline_args(a.baselines, o);
}

// One candidate: from the store when it has this pair (unless --force), else evaluated and saved.
EvalResult evaluate_one(EvalOptions o, const std::string& candidate, Store* store, bool force,
                        std::string& stored) {
  o.candidate_path = candidate;
  if (store && !force) {
    auto task_hash = sha256_hex(read_file(o.task_path));
    auto cand_hash = sha256_hex(read_file(candidate));
    if (auto hit = store->find(task_hash, cand_hash, o.protocol_key(), o.device)) {
      stored = store->path().string() + " (answered from the store; --force re-evaluates)";
      return *hit;
    }
  }
  o.task_facts = store_task_facts(store);  // no store: the lint is computed every time
  fill_best_known_speedup(o);
  EvalResult r = evaluate(o);
  if (r.infrastructure_failure()) stored = "not stored: an infrastructure failure is no verdict on the candidate";
  else if (store) {
    int64_t id = store->save(r, o.protocol_key(), o.device, read_file(candidate));
    stored = store->path().string() + " (row " + std::to_string(id) + ")";
  }
  return r;
}

// One row per candidate; with --repeat, the speedup of each evaluation and their spread. "from"
// tells a stored answer from a fresh one; "note" explains a figure noise shrank.
void print_table(const std::vector<std::vector<EvalResult>>& runs, std::ostream& os) {
  bool repeated = !runs.empty() && runs[0].size() > 1;
  std::vector<std::string> headers = {"candidate", "verdict", "status", "speedup", "eager ms", "candidate ms"};
  if (repeated) headers.insert(headers.end(), {"each run", "spread"});
  headers.insert(headers.end(), {"flags", "from", "note"});
  std::vector<bool> right = {false, false, false, true, true, true};
  if (repeated) right.insert(right.end(), {false, true});
  Table t(headers, right);
  for (auto& reps : runs) {
    const EvalResult& r = reps.front();
    std::string flags;
    for (auto& f : r.flags) flags += (flags.empty() ? "" : ",") + f.id;
    std::vector<double> speedups, eager, cand;
    bool all_accepted = true;
    for (auto& x : reps) {
      all_accepted &= x.accepted;
      if (x.speedup.count("eager")) speedups.push_back(x.speedup.at("eager"));
      if (x.runtime_ms.count("eager")) eager.push_back(x.runtime_ms.at("eager"));
      if (x.runtime_ms.count("candidate")) cand.push_back(x.runtime_ms.at("candidate"));
    }
    std::vector<std::string> row = {
        std::filesystem::path(r.candidate_path).filename().string(),
        all_accepted ? "accepted" : "not accepted", status_name(r.status),
        speedups.empty() ? "-" : format_fixed(median(speedups), 2) + "x",
        eager.empty() ? "-" : format_fixed(median(eager), 4), cand.empty() ? "-" : format_fixed(median(cand), 4)};
    if (repeated) {
      std::string each;
      for (double v : speedups) each += (each.empty() ? "" : " ") + format_fixed(v, 2);
      double spread = speedups.empty() ? 0
          : *std::max_element(speedups.begin(), speedups.end()) - *std::min_element(speedups.begin(), speedups.end());
      row.insert(row.end(), {each.empty() ? "-" : each, speedups.empty() ? "-" : format_fixed(spread, 2)});
    }
    std::string from, note;  // each run's own, where they differ (with --repeat only the first may be stored)
    for (auto& x : reps) {
      if (std::string s = result_source(x); from.find(s) == std::string::npos) from += (from.empty() ? "" : ",") + s;
      if (std::string n = noise_note(x); !n.empty() && note.find(n) == std::string::npos) note += (note.empty() ? "" : "; ") + n;
    }
    row.insert(row.end(), {flags, from, note});
    t.add_row(row);
  }
  t.print(os);
}

void run_eval(EvalArgs& a) {
  check_arguments(a);
  EvalOptions& o = a.options;
  bool tty = isatty(2) && !a.json_out;
  std::unique_ptr<Store> store = open_store(a.db, a.no_store);
  if (store) o.protect_files = store->private_files();
  std::vector<std::vector<EvalResult>> runs;
  std::string machine_failures;  // evaluations the machine, not the candidate, ended
  int machine_failed = 0;
  json all = json::array();
  std::size_t total = a.candidates.size() * std::size_t(a.repeat), done = 0;
  for (auto& candidate : a.candidates) {
    std::string name = std::filesystem::path(candidate).filename().string();
    std::vector<EvalResult> reps;
    for (int rep = 0; rep < a.repeat; ++rep, ++done) {
      if (tty)
        o.progress = [&, done](const std::string& stage, double f) {
          std::fprintf(stderr, "\r\033[K[%zu/%zu] %s: %-9s %3d%%", done + 1, total, name.c_str(),
                       stage.c_str(), int(f * 100));
          std::fflush(stderr);
        };
      std::string stored;
      // Repeats are fresh evaluations: the point is to see the spread between them.
      EvalResult r = evaluate_one(o, candidate, store.get(), a.force || rep > 0, stored);
      if (tty) std::fprintf(stderr, "\r\033[K");
      if (r.infrastructure_failure()) {
        ++machine_failed;
        machine_failures += (machine_failures.empty() ? "" : "; ") + name + " (" +
                            r.infrastructure.value("cause", "") + ")";
      }
      if (a.json_out) all.push_back(r.to_json());
      else {
        if (done) std::cout << "\n";
        print_summary(r, stored, std::cout);
      }
      reps.push_back(std::move(r));
    }
    runs.push_back(std::move(reps));
  }
  if (a.json_out) {
    // One evaluation: its result object. Several: one object holding them all.
    std::cout << (all.size() == 1 ? all[0] : json{{"task", o.task_path}, {"results", all}}).dump() << std::endl;
  } else if (total > 1) {
    std::cout << "\n";
    print_table(runs, std::cout);
  }
  // Reported above as they are, but no verdict: the command did not do what was asked (exit 5).
  if (machine_failed)
    throw Error(ErrorKind::runner,
                std::to_string(machine_failed) + " evaluation(s) ended in an infrastructure failure twice in a row and "
                "gave no verdict, so nothing was stored: " + machine_failures,
                "free host memory, or run fewer evaluations at once (fewer --lanes in batch and serve), then run again");
}

}  // namespace

void register_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Evaluate one candidate (ModelNew) against one task (Model)");
  cmd->add_option("--task,-t", args->options.task_path, "KernelBench task file (Model, get_inputs, get_init_inputs), or a suite name (level1/28_log_softmax or log_softmax)")->required();
  cmd->add_option("--candidate,-c", args->candidates, "candidate file defining ModelNew (repeat for several)")->required();
  cmd->add_option("--device,-d", args->options.device, "cpu, cuda or cuda:N")->transform(device_names())->capture_default_str();
  cmd->add_flag("--json", args->json_out, "print exactly one JSON object on stdout");
  cmd->add_flag("--force", args->force, "evaluate again even if the store has this pair");
  cmd->add_option("--db", args->db, std::string("SQLite store (") + kDefaultStoreHelp + ")");
  cmd->add_flag("--no-store", args->no_store, "neither read nor write the store");
  cmd->add_option("--tolerance", args->tolerance, "standard (atol=rtol=1e-2) or strict (per dtype)")->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "fixed seed for inputs and weights (default: fresh secret seeds)");
  cmd->add_option("--python", args->options.python, "Python interpreter with torch (default: $CUDAL1_PYTHON, python3, /usr/bin/python3)");
  cmd->add_option("--repeat", args->repeat, "evaluate each candidate this many times (fresh each time) and show the spread")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--no-timing", args->no_timing, "check correctness only");
  add_baseline_options(cmd, args->baselines);
  cmd->add_flag("--allow-reduced-precision", args->options.allow_reduced_precision,
                "accept fp16/bf16/TF32 math in a float32 task (flagged as a warning and labelled, not rejected); "
                "an error that is systematic rather than rounding (a bias, a wrong constant) stays incorrect");
  cmd->add_option("--buckets", args->options.buckets, "timing buckets (default 5 on CPU, 7 on CUDA)");
  cmd->add_option("--calls", args->options.calls_per_bucket, "timed calls per bucket (default 8 on CPU, 20 on CUDA)");
  cmd->add_option("--call-timeout", args->options.call_timeout_s,
                  "seconds one forward call may take (default: 50 times the reference's own call, at least 10)");
  cmd->add_option("--build-timeout", args->options.build_timeout_s,
                  "seconds loading (and compiling) the candidate may take; a first call may take this long while it compiles")
      ->capture_default_str();
  cmd->add_option("--memory-limit-mb", args->options.memory_limit_mb, "resident memory limit of the candidate process")->capture_default_str();
  cmd->callback([args] { run_eval(*args); });
}

}  // namespace cudal1::cli
