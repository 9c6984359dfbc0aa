// cli/enrich: every task's CUDA Graph version as a KernelBench candidate file
// (baselines/graph_task.h), each verified by the evaluator on the target device, so the
// enriched set can be reused. Verified files go to OUT mirroring the suite; the rest to
// OUT/_failed/ (kept for inspection, never mixed with verified ones); OUT/enrich.jsonl has one
// line per task saying which, and why not.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "baselines/graph_task.h"
#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/enrich_carried_lines.h"
#include "cli/error_first_lines.h"
#include "cli/queue_setup.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "queue/queue.h"
#include "report/table.h"
#include "task_facts/store_task_facts.h"
#include "tasks/cuda_l1.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1::cli {

namespace {

constexpr const char* kNeedsCuda = "CUDA graphs need a CUDA device (--device cpu)";

struct EnrichArgs {
  std::string suite, out, device = "cuda", jsonl, db, python;
  std::vector<std::string> lines_from;
  std::size_t limit = 0;
  int gpus = 0, lanes = 4;
  double memory_budget_gb = 0;
  double finish_within_s = 0;  // --finish-within
  bool json_out = false, no_store = false, force = false, error_first_lines = false;
};

// One task on its way through: generated, written, verified (or not, and why).
struct EnrichTask {
  std::string name;      // "level1/01_matmul_square", "gemm_relu", "level1/task37"
  fs::path rel;          // its file's path under OUT (and under OUT/_failed)
  fs::path task_path;    // the task file the evaluator loads
  std::string sha256;    // of the task's source
  std::string code;      // the generated file; empty when it could not be generated
  bool generated = false;
  std::string reason, detail;  // when not generated: a short reason to group by, and the full story
  std::optional<EvalResult> result;
  bool from_store = false;
  std::string carried_from;  // the earlier enrich.jsonl its verdict was taken from (--lines-from)
};

EnrichTask suite_task(std::string name, fs::path rel, fs::path path) {
  EnrichTask t;
  t.name = std::move(name);
  t.rel = std::move(rel);
  t.task_path = std::move(path);
  return t;
}

// Every task of SUITE: a task file; or a folder, its levelN/*.py (the suite layout) and the
// *.py directly in it (a flat folder of tasks, like tests/fixtures/tasks).
std::vector<EnrichTask> suite_tasks(const fs::path& suite) {
  std::vector<EnrichTask> out;
  if (fs::is_regular_file(suite)) {
    out.push_back(suite_task(suite.stem().string(), suite.filename(), suite));
    return out;
  }
  for (auto& t : discover_tasks(suite)) out.push_back(suite_task(t.name, fs::path(t.name + ".py"), t.path));
  std::vector<fs::path> flat;
  for (auto& f : fs::directory_iterator(suite))
    if (f.is_regular_file() && f.path().extension() == ".py") flat.push_back(f.path());
  std::sort(flat.begin(), flat.end());
  for (auto& p : flat) out.push_back(suite_task(p.stem().string(), p.filename(), p));
  if (out.empty())
    throw Error(ErrorKind::input, "no task files in " + suite.string(),
                "name a folder of KernelBench task files (*.py, or levelN/*.py), or use --jsonl FILE");
  return out;
}

// Each row's ref_code is a task: written to `work` for the evaluator, its graph version to
// OUT/level{N}/task{M}.py (task{M}_line{L}.py for a second row of the same task).
std::vector<EnrichTask> cuda_l1_tasks(const std::string& file, const fs::path& work) {
  std::vector<EnrichTask> out;
  for (auto& row : read_cuda_l1(file)) {
    EnrichTask t;
    if (row.error) {
      t.name = row.name;
      t.reason = "not a CUDA-L1 row";
      t.detail = row.error->message();
    } else {
      t.task_path = write_row_file(row, work, "task.py", row.text("ref_code"));
      t.rel = fs::path("level" + std::to_string(row.level)) / (t.task_path.parent_path().filename().string() + ".py");
      t.name = (t.rel.parent_path() / t.rel.stem()).generic_string();
    }
    out.push_back(std::move(t));
  }
  if (out.empty()) throw Error(ErrorKind::input, file + " has no rows", "pass a CUDA-L1 JSON-lines file (one task per line)");
  return out;
}

void write_text(const fs::path& p, const std::string& text) { write_file(p, text, "check that --out names a writable folder"); }

// The short reason a verification did not accept: the graph code's own error (capture failed,
// no replay), else the evaluator's status and its blocking flags.
std::string rejection_reason(const EvalResult& r) {
  if (std::string ours = graph_failure_reason(r.error); !ours.empty()) return ours;
  std::string blocking;
  for (auto& f : r.flags)
    if (f.severity == Severity::block) blocking += (blocking.empty() ? "" : ", ") + f.id;
  return std::string("not accepted: ") + status_name(r.status) + (blocking.empty() ? "" : " (" + blocking + ")");
}

// One line of enrich.jsonl. With the generated file's hash and the protocol, a later run on
// another machine takes its verdict again (cli/enrich_carried_lines.h).
json task_line(const EnrichTask& t, const std::string& device, const std::string& protocol_key, bool error_first_lines) {
  json j = {{"task", t.name}, {"task_sha256", t.sha256}, {"device", device}, {"generated", t.generated},
            {"file", t.code.empty() ? json(nullptr) : json(((t.generated ? fs::path() : fs::path("_failed")) / t.rel).generic_string())}};
  if (!t.code.empty()) j["candidate_sha256"] = sha256_hex(t.code), j["protocol_key"] = protocol_key;
  if (!t.carried_from.empty()) j["carried_from"] = t.carried_from;
  if (!t.generated) {
    j["reason"] = t.reason;
    j["detail"] = t.detail;
  }
  if (t.result) {
    json flags = json::array();
    for (auto& f : t.result->flags) flags.push_back({{"id", f.id}, {"severity", severity_name(f.severity)}, {"evidence", f.evidence}});
    j["status"] = status_name(t.result->status);
    j["accepted"] = t.result->accepted;
    j["error"] = t.result->error;
    j["flags"] = flags;
    j["from_store"] = t.from_store;
    if (t.result->infrastructure_failure()) j["infrastructure"] = t.result->infrastructure;  // no verdict: never carried
    const json& verified_on = t.result->provenance.is_object() ? t.result->provenance.value("device", json()) : json();
    if (!t.carried_from.empty() && verified_on.is_string()) j["device"] = verified_on;  // not this run's device
    const json& card = t.result->provenance.is_object() ? t.result->provenance.value("device_name", json()) : json();
    if (card.is_string()) j["device_name"] = card;
  }
  if (error_first_lines) keep_first_lines(j, {"error", "detail"});
  return j;
}

void run_enrich(const EnrichArgs& a) {
  StopOnSignal stop("cudal1 enrich");  // before any thread: Ctrl-C keeps the evaluations in hand
  bool cpu = a.device == "cpu";
  if (a.jsonl.empty() == a.suite.empty())
    throw Error(ErrorKind::usage, a.suite.empty() ? "no tasks named" : "tasks named twice",
                "give a SUITE folder (or one task file), or --jsonl FILE, not both");
  // Not a file or folder: one task of the bundled suite by name, written where the suite puts it.
  std::optional<TaskEntry> named;
  if (!a.suite.empty() && !fs::exists(a.suite)) named = find_task(default_suite_dir(), a.suite);
  // Verification times nothing, so several evaluations share each GPU. Asked before any file is
  // written, so a machine without a GPU is told first.
  std::vector<std::string> lanes = cpu ? std::vector<std::string>() : lane_devices(a.device, a.gpus, a.lanes, false);
  fs::path out = a.out;
  // CUDA-L1 rows' task files, removed however the command ends (each generated file holds its task).
  struct RemovedAtExit {
    fs::path dir;
    ~RemovedAtExit() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } work;
  std::vector<EnrichTask> tasks;
  if (!a.jsonl.empty()) {
    work.dir = make_private_dir("cudal1-enrich");
    tasks = cuda_l1_tasks(a.jsonl, work.dir);
  } else if (named) {
    tasks = {suite_task(named->name, fs::path(named->name + ".py"), named->path)};
  } else {
    tasks = suite_tasks(a.suite);
  }
  if (a.limit && tasks.size() > a.limit) tasks.resize(a.limit);
  std::vector<CarriedEnrichLines> carried;  // read before anything is written: a bad file stops the run first
  for (auto& f : a.lines_from) carried.push_back(read_carried_enrich_lines(f));
  std::error_code ec;
  if (fs::create_directories(out, ec); ec)
    throw Error(ErrorKind::input, "cannot create " + out.string() + ": " + ec.message(), "check the path of --out");

  // Generate every file first, into _failed/: a file is only ever under OUT itself once
  // verified, so a run cut short leaves nothing unverified among the verified files.
  for (auto& t : tasks) {
    if (!t.reason.empty()) continue;
    std::string source = read_file(t.task_path);
    t.sha256 = sha256_hex(source);
    try {
      t.code = graph_task_source(t.name, source);
    } catch (const Error& e) {
      t.reason = "not a KernelBench task";
      t.detail = e.message();
      continue;
    }
    write_text(out / "_failed" / t.rel, t.code);
    fs::remove(out / t.rel, ec);  // a verified file from an earlier run: this run decides again
  }

  std::unique_ptr<Store> store = cpu ? nullptr : open_store(a.db, a.no_store);
  // The strict graph code raises where it would fall back to eager, so acceptance means the
  // graphs were replayed; stored under a key of its own, apart from plain evaluations of the file.
  EvalOptions base;
  base.extra_env[kGraphStrictEnv] = "1";
  base.device = a.device;
  base.python = a.python;
  base.timing = false;
  base.lint = false;
  base.task_facts = store_task_facts(store.get());
  if (store) base.protect_files = store->private_files();
  std::string key = base.protocol_key() + ";enrich=" + kGraphTaskVersion + ";strict";

  std::ofstream lines(out / "enrich.jsonl", std::ios::trunc);
  if (!lines) throw Error(ErrorKind::input, "cannot write " + (out / "enrich.jsonl").string(), "check that --out names a writable folder");
  auto finish = [&](EnrichTask& t) { lines << task_line(t, a.device, key, a.error_first_lines).dump() << "\n" << std::flush; };

  std::vector<std::size_t> pending;  // indices of tasks the evaluator still has to verify
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (tasks[i].reason.empty()) pending.push_back(i);
    else finish(tasks[i]);

  auto settle = [&](EnrichTask& t, const EvalResult& r) {
    t.result = r;
    if (r.accepted) {
      std::error_code ec;
      fs::create_directories((out / t.rel).parent_path(), ec);
      fs::rename(out / "_failed" / t.rel, out / t.rel, ec);
      t.generated = !ec;
      if (ec) {
        t.reason = "cannot move the verified file out of _failed/";
        t.detail = ec.message();
      }
    } else {
      t.reason = rejection_reason(r);
      t.detail = r.error;
    }
    finish(t);
  };

  // A verdict already had (the store's, then one carried from an earlier machine's enrich.jsonl,
  // which counts on the CPU too); else a job for the GPU.
  std::vector<QueueJob> jobs;
  std::vector<std::size_t> job_task;
  std::size_t needs_cuda = 0;
  std::vector<std::size_t> taken(carried.size());
  for (std::size_t i : pending) {
    EnrichTask& t = tasks[i];
    fs::path file = out / "_failed" / t.rel;
    const std::string code_sha = sha256_hex(t.code);
    if (store && !a.force)
      if (auto hit = store->find(t.sha256, code_sha, key, a.device)) {
        t.from_store = true;
        settle(t, *hit);
        continue;
      }
    std::optional<EvalResult> carried_verdict;
    for (std::size_t c = 0; c < carried.size() && !a.force && !carried_verdict; ++c)
      if ((carried_verdict = find_carried_verdict(carried[c], t.sha256, code_sha, key))) t.carried_from = carried[c].file, ++taken[c];
    if (carried_verdict) {
      settle(t, *carried_verdict);
      continue;
    }
    if (cpu) {
      t.reason = kNeedsCuda;
      t.detail = "verifying on the CPU would only exercise ModelNew's eager fallback";
      ++needs_cuda;
      finish(t);
      continue;
    }
    QueueJob j;
    j.id = t.name;
    j.options = base;
    j.options.task_path = t.task_path.string();
    j.options.candidate_path = file.string();
    jobs.push_back(std::move(j));
    job_task.push_back(i);
  }

  for (std::size_t c = 0; c < carried.size(); ++c) std::cerr << "cudal1 enrich: " << carried_lines_tally(carried[c], taken[c]) << "\n";
  if (needs_cuda)
    std::cerr << "cudal1 enrich: " << kNeedsCuda << ". Nothing is verified on the CPU: ModelNew would fall back to the "
                 "eager Model and pass, which proves nothing about its graphs. The files are written to "
              << (out / "_failed").string() << " for inspection; run with --device cuda on a GPU machine to verify them.\n";
  if (!jobs.empty()) {
    QueueConfig config;
    config.devices = lanes;
    config.memory_budget_bytes = eval_memory_bytes(a.memory_budget_gb);
    config.finish_within_s = a.finish_within_s;
    config.stop_starting = stop.flag();
    ProgressLine progress(jobs.size());
    run_queue(jobs, config, [&](const QueueResult& r) {
      EnrichTask& t = tasks[job_task[r.index]];
      if (r.result) {
        if (store) store->save(*r.result, key, a.device, t.code);
        settle(t, *r.result);
      } else {
        bool task_error = r.error && r.error->kind() == ErrorKind::task;
        t.reason = task_error ? "the task does not load" : "the evaluation could not run";
        t.detail = r.error ? r.error->describe() : "unknown error";
        finish(t);
      }
      progress.tick();
    });
    progress.finish();
    for (std::size_t i : job_task)
      if (tasks[i].reason.empty() && !tasks[i].generated) {
        tasks[i].reason = "not decided: the run was stopped before it started";
        tasks[i].detail = "run the same command again to go on";
      }
  }

  // The summary: how many have a verified graph version, and why not the rest, most common first.
  std::map<std::string, int> reasons;
  int generated = 0;
  json rows = json::array();
  Table table({"task", "graph version", "status", "file or reason"});
  for (auto& t : tasks) {
    rows.push_back(task_line(t, a.device, key, a.error_first_lines));
    generated += t.generated;
    if (!t.generated) reasons[t.reason]++;
    table.add_row({t.name, t.generated ? "verified" : "not generated", t.result ? status_name(t.result->status) : "-",
                   t.generated ? (out / t.rel).string() : t.reason});
  }
  std::vector<std::pair<std::string, int>> sorted(reasons.begin(), reasons.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& x, auto& y) { return x.second > y.second; });
  std::string summary = std::to_string(generated) + " of " + std::to_string(tasks.size()) +
                        " tasks have a verified CUDA Graph version";
  if (!sorted.empty()) {
    summary += "; reasons for the rest:";
    for (std::size_t i = 0; i < sorted.size(); ++i)
      summary += std::string(i ? "," : "") + " " + sorted[i].first + " (" + std::to_string(sorted[i].second) + ")";
  }
  if (a.json_out) {
    std::cout << json{{"out", out.string()}, {"device", a.device}, {"tasks", tasks.size()}, {"generated", generated},
                      {"reasons", reasons}, {"summary", summary}, {"rows", rows}}.dump()
              << std::endl;
    return;
  }
  table.print(std::cout);
  std::cout << "\n" << summary << "\nverified files: " << out.string() << "; the rest: " << (out / "_failed").string()
            << "; one line per task: " << (out / "enrich.jsonl").string() << "\n";
}

}  // namespace

void register_enrich(CLI::App& app) {
  auto args = std::make_shared<EnrichArgs>();
  auto* cmd = app.add_subcommand("enrich", "Write each task's CUDA Graph version as a KernelBench candidate file, "
                                           "each verified by the evaluator on the device (docs/baselines.md)");
  cmd->add_option("suite", args->suite, "folder of tasks (levelN/*.py and/or *.py), one task file, or a suite name (level1/23_silu)");
  cmd->add_option("--out", args->out, "folder for the files: verified ones mirror the suite, the rest go to _failed/")->required();
  cmd->add_option("-d,--device", args->device, "cuda, cuda:N (verify there) or cpu (write only: graphs need CUDA)")->transform(device_names())->capture_default_str();
  cmd->add_option("--gpus", args->gpus, "with --device cuda: verify on at most N GPUs, side by side (0: every visible one)")->capture_default_str();
  cmd->add_option("--lanes", args->lanes, "verifications side by side on each GPU (nothing is timed)")->capture_default_str();
  add_eval_memory_option(*cmd, args->memory_budget_gb);
  add_finish_within_option(*cmd, args->finish_within_s);
  cmd->add_option("--jsonl", args->jsonl, "a CUDA-L1 JSON-lines file: each row's ref_code is a task");
  cmd->add_option("--limit", args->limit, "only the first N tasks");
  cmd->add_option("--lines-from", args->lines_from, "take the verdicts of an earlier run's enrich.jsonl (another machine's) "
                                                    "for the same task and generated file under the same protocol "
                                                    "instead of verifying again; also on the CPU; repeatable")->check(CLI::ExistingFile);
  cmd->add_flag("--force", args->force, "verify again even when the store (or --lines-from) has the file's verdict");
  cmd->add_option("--db", args->db, std::string("SQLite store (") + kDefaultStoreHelp + ")");
  cmd->add_flag("--no-store", args->no_store, "neither read nor write the store");
  cmd->add_option("--python", args->python, "Python interpreter with torch");
  cmd->add_flag("--json", args->json_out, "print one JSON object: the summary and one row per task");
  cmd->add_flag("--error-first-lines", args->error_first_lines, kErrorFirstLinesHelp);
  cmd->callback([args] { run_enrich(*args); });
}

}  // namespace cudal1::cli
