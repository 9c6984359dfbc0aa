#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "evaluator/evaluator.h"
#include "store/store.h"

namespace cudal1::cli {

namespace {

struct EvalArgs {
  EvalOptions options;
  std::string tolerance = "standard";
  std::string db;
  bool json_out = false, force = false, no_store = false, no_timing = false;
  uint64_t seed = 0;
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void print_summary(const EvalResult& r, const std::string& stored, std::ostream& os) {
  os << "task       " << r.task_path << "\n";
  os << "candidate  " << r.candidate_path << "\n";
  os << "verdict    " << (r.accepted ? "ACCEPTED" : "NOT ACCEPTED") << " (" << status_name(r.status) << ")\n";
  if (auto it = r.speedup.find("eager"); it != r.speedup.end()) {
    const json& s = r.statistics;
    os << "speedup    " << fixed(it->second, 2) << "x vs eager  (eager " << fixed(r.runtime_ms.at("eager"), 4)
       << " ms, candidate " << fixed(r.runtime_ms.at("candidate"), 4) << " ms; raw "
       << fixed(s.value("raw_speedup", 0.0), 3) << "x over " << s.value("buckets", 0)
       << " buckets, spread " << fixed(100 * s.value("spread", 0.0), 1) << "%)\n";
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
  for (auto& f : r.flags)
    os << "flag       " << f.id << " [" << severity_name(f.severity) << "] " << f.evidence << "\n";
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
  if (!stored.empty()) os << "store      " << stored << "\n";
}

void run_eval(EvalArgs& a) {
  EvalOptions& o = a.options;
  if (a.tolerance == "strict") o.tolerance = ToleranceMode::strict;
  else if (a.tolerance != "standard")
    throw Error(ErrorKind::usage, "unknown --tolerance '" + a.tolerance + "'", "use standard or strict");
  if (o.device != "cpu" && o.device.rfind("cuda", 0) != 0)
    throw Error(ErrorKind::usage, "unknown --device '" + o.device + "'", "use cpu, cuda or cuda:N");
  for (auto* p : {&o.task_path, &o.candidate_path})
    if (!std::filesystem::is_regular_file(*p))
      throw Error(ErrorKind::input, "no such file: " + *p, "check the path");
  if (a.seed) o.seed = a.seed;
  o.timing = !a.no_timing;
  bool tty = isatty(2) && !a.json_out;
  if (tty)
    o.progress = [](const std::string& stage, double f) {
      std::fprintf(stderr, "\r\033[K[%-9s] %3d%%", stage.c_str(), int(f * 100));
      if (f >= 1.0) std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    };

  std::unique_ptr<Store> store;
  if (!a.no_store) store = std::make_unique<Store>(a.db.empty() ? default_store_path() : std::filesystem::path(a.db));
  std::string stored;
  EvalResult r;
  bool have = false;
  if (store && !a.force) {
    auto task_hash = sha256_hex(read_file(o.task_path));
    auto cand_hash = sha256_hex(read_file(o.candidate_path));
    if (auto hit = store->find(task_hash, cand_hash, o.protocol_key(), o.device)) {
      r = *hit;
      have = true;
      stored = store->path().string() + " (answered from the store; --force re-evaluates)";
    }
  }
  if (!have) {
    r = evaluate(o);
    if (store) {
      int64_t id = store->save(r, o.protocol_key(), o.device, read_file(o.candidate_path));
      stored = store->path().string() + " (row " + std::to_string(id) + ")";
    }
  }
  if (a.json_out) std::cout << r.to_json().dump() << std::endl;
  else print_summary(r, stored, std::cout);
}

}  // namespace

void register_eval(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Evaluate one candidate (ModelNew) against one task (Model)");
  cmd->add_option("--task,-t", args->options.task_path, "KernelBench task file (Model, get_inputs, get_init_inputs)")->required();
  cmd->add_option("--candidate,-c", args->options.candidate_path, "candidate file defining ModelNew")->required();
  cmd->add_option("--device,-d", args->options.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_flag("--json", args->json_out, "print exactly one JSON object on stdout");
  cmd->add_flag("--force", args->force, "evaluate again even if the store has this pair");
  cmd->add_option("--db", args->db, "SQLite store (default $CUDAL1_DB or ~/.cache/cudal1/results.db)");
  cmd->add_flag("--no-store", args->no_store, "neither read nor write the store");
  cmd->add_option("--tolerance", args->tolerance, "standard (atol=rtol=1e-2) or strict (per dtype)")->capture_default_str();
  cmd->add_option("--seed", args->seed, "fixed seed for inputs and weights (default: fresh secret seeds)");
  cmd->add_option("--python", args->options.python, "Python interpreter with torch (default: $CUDAL1_PYTHON, python3, /usr/bin/python3)");
  cmd->add_flag("--no-timing", args->no_timing, "check correctness only");
  cmd->add_option("--buckets", args->options.buckets, "timing buckets (default 5 on CPU, 7 on CUDA)");
  cmd->add_option("--calls", args->options.calls_per_bucket, "timed calls per bucket (default 8 on CPU, 20 on CUDA)");
  cmd->add_option("--call-timeout", args->options.call_timeout_s, "seconds one forward call may take")->capture_default_str();
  cmd->add_option("--build-timeout", args->options.build_timeout_s, "seconds loading (and compiling) the candidate may take")->capture_default_str();
  cmd->add_option("--memory-limit-mb", args->options.memory_limit_mb, "resident memory limit of the candidate process")->capture_default_str();
  cmd->callback([args] { run_eval(*args); });
}

}  // namespace cudal1::cli
