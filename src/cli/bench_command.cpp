// cli/bench: scores a kernel set against a suite: every candidate through the queue (build
// service, every visible GPU), with speedups against eager and each baseline, then a table on
// the terminal, the bench JSON (--json), an HTML report and a Markdown summary. Results go to the
// store as each evaluation ends, so a run that is interrupted resumes where it stopped.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>

#include "baselines/baselines.h"
#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/error_first_lines.h"
#include "cli/queue_setup.h"
#include "core/error.h"
#include "core/hash.h"
#include "evaluator/options.h"
#include "queue/jobs.h"
#include "report/bench_carried_rows.h"
#include "report/bench_provenance.h"
#include "report/bench_report.h"
#include "report/html.h"
#include "report/result_notes.h"
#include "report/table.h"
#include "runner/python.h"
#include "store/store.h"
#include "task_facts/store_task_facts.h"
#include "tasks/speed_of_light.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1::cli {

namespace {

struct BenchArgs {
  std::string jsonl, folder, suite, levels, device = "cuda", db, work, html, markdown, title;
  std::vector<std::string> rows_from;
  std::vector<std::string> rows_from_protocols;  // --rows-from-protocol: earlier versions also taken
  std::size_t limit = 0;
  int gpus = 0, lanes = 1;
  int sample = 0;  // --sample: of a KernelBench run folder
  double memory_budget_gb = 0;
  double finish_within_s = 0;  // --finish-within
  bool json_out = false, no_baselines = false, force = false, no_sol = false, stored_only = false;
  bool error_first_lines = false;
  BuildServiceFlags builds;
};

// The protocol keys a carried row may have been scored under: this run's, then the same settings
// under each earlier version the person named (--rows-from-protocol), newest named first.
std::vector<std::string> carried_protocol_keys(const std::string& protocol, const std::vector<std::string>& earlier) {
  std::vector<std::string> keys = {protocol};
  const std::string current = kProtocolVersion;
  for (const std::string& version : earlier)
    if (protocol.rfind(current, 0) == 0) keys.push_back(version + protocol.substr(current.size()));
  return keys;
}

void check_earlier_protocols(const std::vector<std::string>& versions, bool rows_from) {
  for (const std::string& v : versions) {
    if (v.rfind("cudal1-eval/", 0) != 0 || v == kProtocolVersion)
      throw Error(ErrorKind::usage, "--rows-from-protocol " + v + " is not an earlier protocol version",
                  std::string("name one such as cudal1-eval/8 (this cudal1 scores under ") + kProtocolVersion + ")");
    if (!rows_from)
      throw Error(ErrorKind::usage, "--rows-from-protocol takes rows from the files of --rows-from, and none was given",
                  "add --rows-from BENCH.json");
  }
}

// The SHA-256 of a job's task and candidate files: what the store and a carried row key it by.
struct JobHashes {
  std::string task, candidate;
};

// What a row says of its job, whoever scored it: name, level, the files' hashes, the set's claims.
json job_fields(const QueueJob& job, const JobHashes& hashes, json row = json::object()) {
  row["task"] = job.id, row["level"] = job.meta.value("level", 0);
  row["task_hash"] = hashes.task, row["candidate_hash"] = hashes.candidate;
  row.erase("claimed"), row.erase("claimed_speedup");
  if (const json c = job.meta.value("claimed", json::object()); !c.empty()) {
    row["claimed"] = c;
    if (c.contains("eager")) row["claimed_speedup"] = c["eager"];
  }
  return row;
}

// A job's row of the bench JSON (report/bench_report.h), from its result or its error.
// not_scored: why the row has neither (a stop, --stored-only); such a row is outside the statistics.
json bench_row(const QueueJob& job, const JobHashes& hashes, const std::optional<EvalResult>& r,
               const std::string& error, const std::string& not_scored) {
  json row = job_fields(job, hashes);
  if (!r && !not_scored.empty()) {
    row["status"] = "not_scored";
    row["accepted"] = false;
    row["reason"] = not_scored;
    row["flags"] = json::array();
    return row;
  }
  if (!r) {
    row["status"] = "error";
    row["accepted"] = false;
    row["flags"] = json::array({{{"name", "evaluation_error"}, {"severity", "block"}, {"evidence", error}}});
    return row;
  }
  row["status"] = status_name(r->status);
  // What failed and where in the candidate (a traceback's last frames); the whole stays in the store.
  if (!r->error.empty()) row["error"] = first_and_last_lines(r->error, 300, 300);
  row["from_store"] = r->from_store;  // a resumed run's rows were measured before it
  row["provenance"] = r->provenance;  // with the protocol a later run takes the row again under (--rows-from)
  row["provenance"].erase("host");  // a lent machine's name says nothing of the figures
  if (r->infrastructure_failure()) row["infrastructure"] = r->infrastructure;  // no verdict: never carried
  if (r->provenance.contains("device_name") && r->provenance["device_name"].is_string())
    row["device_name"] = r->provenance["device_name"];  // a resumed run may hold several cards' rows
  if (std::string note = noise_note(*r); !note.empty()) row["note"] = note;
  row["accepted"] = r->accepted;
  row["speedup"] = r->speedup;
  row["runtime_ms"] = r->runtime_ms;
  json unavailable = json::object();
  const json figures = r->statistics.value("baselines", json::object()).value("figures", json::object());
  for (auto& [name, f] : figures.items())  // a named object: items() of a temporary would dangle
    if (f.contains("unavailable")) unavailable[name] = f["unavailable"];
  if (!unavailable.empty()) row["baseline_unavailable"] = unavailable;
  json flags = json::array();
  for (auto& f : r->flags) flags.push_back({{"name", f.id}, {"severity", severity_name(f.severity)}, {"evidence", f.evidence}});
  row["flags"] = flags;
  return row;
}

// sol_fraction per row: the task's speed-of-light time over the candidate's measured time.
void add_sol_fractions(json& rows, const std::vector<QueueJob>& jobs, const std::string& device, Store* store) {
  std::vector<TaskEntry> tasks;
  for (auto& j : jobs) tasks.push_back({j.id, j.meta.value("level", 0), j.options.task_path});
  std::string python = find_python();
  json metas = describe_tasks(tasks, store, python, nullptr, {}, /*skip_failing=*/true);
  json ceilings = add_speed_of_light(metas, device, false, store, python, nullptr);
  std::vector<double> sol_ms;
  for (auto& m : metas) sol_ms.push_back(m.value("sol_ms", 0.0));
  std::string card = ceilings.value("device_name", "");
  if (std::size_t other = cudal1::add_sol_fractions(rows, sol_ms, card))
    std::fprintf(stderr, "cudal1 bench: %zu accepted rows measured on another card than %s have no speed-of-light fraction\n",
                 other, card.c_str());
}

// The speed of light needs each task's ceilings on the device; a report is worth more than that
// column, so a failure there leaves the column out and says why instead of losing the report.
void add_sol_fractions_or_say_why(json& rows, const std::vector<QueueJob>& jobs, const std::string& device, Store* store) {
  try {
    add_sol_fractions(rows, jobs, device, store);
  } catch (const Error& e) {
    std::fprintf(stderr, "cudal1 bench: the report leaves out the speed-of-light fractions: %s (--no-sol skips them)\n",
                 e.what());
  }
}

// The lanes' devices; a report of the store's results alone (--stored-only) looks on every CUDA
// device the store names when asked for "cuda", so a machine without a GPU can write it.
std::vector<std::string> bench_devices(const BenchArgs& a, Store& store) {
  if (!a.stored_only || a.device != "cuda") return lane_devices(a.device, a.gpus, a.lanes, false);
  std::vector<std::string> cuda;
  for (auto& d : store.devices())
    if (d.starts_with("cuda")) cuda.push_back(d);
  if (cuda.empty() && !a.rows_from.empty()) return {"cuda"};  // every row from the files, if any
  if (cuda.empty())
    throw Error(ErrorKind::input, "the store " + store.path().string() + " holds no result measured on a CUDA device",
                "name the store that the GPU run wrote (--db), or the device its results were measured on (--device)");
  return cuda;
}

void print_summary(const json& bench) {
  BenchStats st = bench_stats(bench);
  Table t({"level", "tasks", "correct", "baseline", "measured", "mean", "median", "geomean", "> 1.01x"},
          {false, true, true, false, true, true, true, true, true});
  auto num = [](const std::optional<double>& v) { return v ? format_fixed(*v, 2) + "x" : std::string("-"); };
  for (auto& level : st.levels) {
    if (level.tasks == 0) continue;
    for (auto& b : level.baselines)
      t.add_row({level.level, std::to_string(level.tasks), format_fixed(100 * level.correct_rate, 0) + "%", b.baseline,
                 std::to_string(b.measured), num(b.mean), num(b.median), num(b.geomean),
                 format_fixed(100 * b.share_above, 0) + "%"});
  }
  t.print(std::cout);
  std::cout << "\nflags: " << st.flags;
  for (auto& [name, n] : st.flag_counts) std::cout << (name == st.flag_counts.begin()->first ? " (" : ", ") << name << " " << n;
  std::cout << (st.flag_counts.empty() ? "" : ")") << "\n";
  if (st.not_scored) std::cout << "not scored yet: " << st.not_scored << " (left out of every figure above)\n";
  if (std::string note = carried_rows_note(bench); !note.empty()) std::cout << note << "\n";
  std::vector<std::string> mixed = mixed_provenance(bench);
  for (const std::string& key : mixed) std::cout << key << ": " << bench["provenance"].value(key, "") << "\n";
  if (!mixed.empty()) std::cout << mixed_provenance_note(mixed) << "\n";
}

// The reports' baseline columns: eager, then every baseline in its order.
json shown_baselines() {
  json names = json::array({"eager"});
  for (const std::string& n : baseline_names()) names.push_back(n);
  return names;
}

void run_bench(const BenchArgs& a) {
  if (a.jsonl.empty() == a.folder.empty())
    throw Error(ErrorKind::usage, "name the kernel set once", "use --jsonl CUDA-L1.jsonl or --folder DIR (with --suite)");
  fs::path work = a.work.empty() ? fs::path("cudal1-bench-work") : fs::path(a.work);
  fs::path suite = a.suite.empty() ? default_suite_dir() : fs::path(a.suite);
  std::vector<QueueJob> jobs =
      a.jsonl.empty() ? jobs_from_folder(a.folder, suite, a.sample) : jobs_from_cuda_l1(a.jsonl, a.levels, work);
  if (a.jsonl.empty())
    std::erase_if(jobs, [&](const QueueJob& j) { return !level_selected(a.levels, j.meta.value("level", 0)); });
  if (a.limit && jobs.size() > a.limit) jobs.resize(a.limit);
  if (jobs.empty()) throw Error(ErrorKind::input, "no candidate to score", "check the file (and --levels)");
  std::unique_ptr<Store> store = open_store(a.db, false);  // the store is what makes a run resumable
  StopOnSignal stop("cudal1 bench");  // before any thread: Ctrl-C keeps the evaluations in hand
  QueueConfig config;
  config.stop_starting = stop.flag();
  config.devices = bench_devices(a, *store);
  config.memory_budget_bytes = eval_memory_bytes(a.memory_budget_gb);
  config.finish_within_s = a.finish_within_s;
  for (auto& j : jobs) {
    j.options.baselines = !a.no_baselines;
    j.options.task_facts = store_task_facts(store.get());
    j.options.protect_files = store->private_files();
  }

  // Resume: what the store already has for this protocol, on any of these lanes' devices, then
  // what the files of --rows-from carried from earlier machines.
  std::vector<CarriedRows> carried_files;
  check_earlier_protocols(a.rows_from_protocols, !a.rows_from.empty());
  for (auto& f : a.rows_from) carried_files.push_back(read_carried_rows(f));
  std::vector<JobHashes> hashes(jobs.size());
  std::vector<std::optional<EvalResult>> results(jobs.size());
  std::vector<std::optional<json>> carried(jobs.size());
  std::vector<std::string> errors(jobs.size());
  std::vector<QueueJob> pending;
  std::vector<std::size_t> pending_index;
  std::size_t stored = 0;
  std::vector<std::size_t> taken_from(carried_files.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    hashes[i] = {sha256_hex(read_file(jobs[i].options.task_path)), sha256_hex(read_file(jobs[i].options.candidate_path))};
    const std::string protocol = jobs[i].options.protocol_key();
    if (!a.force) {
      for (auto& d : config.devices)
        if (!results[i]) results[i] = store->find(hashes[i].task, hashes[i].candidate, protocol, d);
      for (const std::string& key : carried_protocol_keys(protocol, a.rows_from_protocols))
        for (std::size_t f = 0; f < carried_files.size() && !results[i] && !carried[i]; ++f)
          if ((carried[i] = find_carried_row(carried_files[f], hashes[i].task, hashes[i].candidate, key, config.devices.front())))
            carried[i] = job_fields(jobs[i], hashes[i], *carried[i]), ++taken_from[f];
    }
    stored += results[i].has_value();
    if (!results[i] && !carried[i]) pending.push_back(jobs[i]), pending_index.push_back(i);
  }
  for (std::size_t f = 0; f < carried_files.size(); ++f)
    std::fprintf(stderr, "%s\n", carried_rows_tally(carried_files[f], taken_from[f]).c_str());
  const std::size_t taken = std::accumulate(taken_from.begin(), taken_from.end(), std::size_t(0));
  if (pending.size() < jobs.size() || a.stored_only)
    std::fprintf(stderr, "%zu of %zu already scored in %s%s; %s the other %zu\n", stored, jobs.size(), store->path().c_str(),
                 taken ? (", " + std::to_string(taken) + " taken from --rows-from").c_str() : "",
                 a.stored_only ? "--stored-only leaves out" : "scoring", pending.size());
  if (!pending.empty() && !a.stored_only) {
    std::unique_ptr<BuildService> builds = attach_build_service(config, a.builds);
    ProgressLine progress(jobs.size(), jobs.size() - pending.size());
    run_queue(pending, config, [&](const QueueResult& r) {
      std::size_t i = pending_index[r.index];
      if (r.result) {
        results[i] = r.result;
        store->save(*r.result, jobs[i].options.protocol_key(), r.device, read_file(jobs[i].options.candidate_path));
      } else {
        errors[i] = r.error ? r.error->message() : "the evaluation did not run";
      }
      progress.tick();
    });
    progress.finish();
  }
  std::vector<std::string> not_scored(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (results[i] || carried[i] || !errors[i].empty()) continue;
    if (a.stored_only)
      not_scored[i] = "the store holds no result for it (run the same command without --stored-only to score it)";
    else if (*stop.flag())
      not_scored[i] = "the run was stopped before it started (run the same command again to go on)";
  }

  json rows = json::array();
  std::vector<json> row_provenance;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    rows.push_back(carried[i] ? *carried[i] : bench_row(jobs[i], hashes[i], results[i], errors[i], not_scored[i]));
    if (results[i] || carried[i]) row_provenance.push_back(rows.back().value("provenance", json::object()));
    if (a.error_first_lines) {
      keep_first_lines(rows.back(), {"error"});
      if (auto flags = rows.back().find("flags"); flags != rows.back().end() && flags->is_array())
        for (auto& flag : *flags) keep_first_lines(flag, {"evidence"});  // an evaluation_error's is the whole error
    }
  }
  BenchProvenance pooled = pool_bench_provenance(row_provenance);
  const json& provenance = pooled.provenance;
  if (!a.no_sol) add_sol_fractions_or_say_why(rows, jobs, config.devices.front(), store.get());
  std::string set = a.jsonl.empty() ? a.folder : a.jsonl;
  const bool cards_mixed = std::find(pooled.mixed.begin(), pooled.mixed.end(), "device_name") != pooled.mixed.end();
  const std::string where = cards_mixed ? "several cards" : provenance.value("device_name", a.device);
  json bench = {{"title", a.title.empty() ? fs::path(set).filename().string() + " on " + where : a.title},
                {"suite", a.jsonl.empty() ? suite.string() : "the rows' ref_code"}, {"kernel_set", set},
                {"provenance", provenance}, {"mixed_provenance", pooled.mixed}, {"rows", rows},
                {"carried_rows", {{"count", taken}, {"files", a.rows_from}}},
                {"baselines", shown_baselines()}};
  if (!a.html.empty()) std::ofstream(a.html) << bench_html(bench);
  if (!a.markdown.empty()) std::ofstream(a.markdown) << bench_markdown(bench);
  if (a.json_out) {
    std::cout << bench.dump() << std::endl;
    return;
  }
  print_summary(bench);
  if (!a.html.empty()) std::cout << "report: " << a.html << "\n";
  if (!a.markdown.empty()) std::cout << "summary: " << a.markdown << "\n";
}

}  // namespace

void register_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Score a kernel set against a suite, against eager and every baseline: "
                                              "table, JSON, HTML report, Markdown summary; resumable");
  cmd->add_option("--jsonl", args->jsonl, "a CUDA-L1 JSON-lines file: each row's custom_code against its ref_code");
  cmd->add_option("--folder", args->folder, "a folder of ModelNew files named after the suite's tasks (DIR/level1/NAME.py), "
                                            "or a KernelBench run folder (level_1_problem_23_sample_0_kernel.py, ...)");
  cmd->add_option("--sample", args->sample, "with a KernelBench run folder: which sample of each problem to score")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--suite", args->suite, "with --folder: the task suite (default: the bundled one)");
  cmd->add_option("--levels", args->levels, "only these levels, e.g. 12");
  cmd->add_option("--limit", args->limit, "score at most this many");
  cmd->add_option("-d,--device", args->device, "cuda (every visible GPU), cuda:N, or cpu")->transform(device_names())->capture_default_str();
  cmd->add_option("--gpus", args->gpus, "use at most this many GPUs (0: all)");
  cmd->add_option("--lanes", args->lanes, "evaluations side by side on each device; on one device their checks overlap and their timing takes turns")->capture_default_str();
  add_eval_memory_option(*cmd, args->memory_budget_gb);
  add_finish_within_option(*cmd, args->finish_within_s);
  cmd->add_option("--html", args->html, "write the HTML report here");
  cmd->add_option("--markdown", args->markdown, "write the Markdown summary here");
  cmd->add_option("--title", args->title, "the report's title");
  cmd->add_option("--work", args->work, "with --jsonl: folder for the rows' files (default ./cudal1-bench-work)");
  cmd->add_option("--db", args->db, "SQLite store: results, baselines, task metadata (default as for eval)");
  cmd->add_option("--rows-from-protocol", args->rows_from_protocols,
                  "with --rows-from, also take rows scored under this earlier protocol version (e.g. cudal1-eval/8) "
                  "with otherwise the same settings; the report counts rows per protocol; repeatable");
  cmd->add_option("--rows-from", args->rows_from, "take the scored rows of an earlier run's bench JSON (--json) for the same "
                                                  "task and candidate files under the same protocol instead of scoring "
                                                  "them again (carries a set's verdicts from one machine to the next); "
                                                  "repeatable")->check(CLI::ExistingFile);
  cmd->add_flag("--force", args->force, "score again what the store already has (and what --rows-from carries)");
  cmd->add_flag("--stored-only", args->stored_only, "score nothing: report what the store already holds for the set "
                                                    "(needs no GPU; the rows it lacks say so)")->excludes("--force");
  cmd->add_flag("--no-baselines", args->no_baselines, "eager only");
  cmd->add_flag("--no-sol", args->no_sol, "skip the speed-of-light fractions");
  cmd->add_option("--clang", args->builds.clang, kClangOptionHelp);
  cmd->add_option("--build-cache", args->builds.cache, "the build service's cache folder");
  cmd->add_option("--build-jobs", args->builds.jobs, "compilers the build service runs at once (0: all cores)");
  cmd->add_flag("--json", args->json_out, "print the bench JSON (the report's input)");
  cmd->add_flag("--error-first-lines", args->error_first_lines, kErrorFirstLinesHelp);
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace cudal1::cli
