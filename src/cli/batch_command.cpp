// cli/batch: many evaluations through the queue, over every visible GPU. Candidates come as
// task/candidate pairs or from a CUDA-L1 JSON-lines file; --stock runs them the way KernelBench
// and CUDA-L1 do (one after the other, each building its own extensions in its own processes),
// which the throughput benchmark compares against.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "build/build.h"
#include "cli/baseline_options.h"
#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/queue_setup.h"
#include "cli/redis_options.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "queue/jobs.h"
#include "queue/queue.h"
#include "report/result_notes.h"
#include "report/table.h"
#include "task_facts/store_task_facts.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace cudal1::cli {

namespace {

struct BatchArgs {
  std::string pairs, jsonl, device = "cuda", db, out, work, levels;
  std::size_t limit = 0;
  int gpus = 0, lanes = 1, prefetch = 1, prebuild_threads = 0, build_jobs = 0;
  double memory_budget_gb = 0;
  double finish_within_s = 0;  // --finish-within
  bool stock = false, no_timing = false, json_out = false, no_store = false, no_build_service = false;
  BaselineArgs baselines;
  std::string build_cache, clang;
  RedisArgs redis;
};

// What the build service did over the batch: modules compiled (and how long each took), taken
// from the cache, by which path, and calls it left to the candidates' own processes.
struct BuildTally {
  std::vector<double> miss_s;
  int hits = 0, fast = 0, plain = 0, in_process = 0, failed = 0;

  void add(const json& build) {
    for (auto& m : build.value("modules", json::array())) {
      if (m.value("cache_hit", false)) ++hits;
      else miss_s.push_back(m.value("seconds", 0.0));
      (m.value("path", "").rfind("fast", 0) == 0 ? fast : plain) += 1;
      failed += m.contains("error");
    }
    in_process += int(build.value("in_process", json::array()).size());
  }
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(q * double(v.size() - 1) + 0.5))];
}

void run_batch(const BatchArgs& a) {
  if (a.pairs.empty() == a.jsonl.empty())
    throw Error(ErrorKind::usage, "name the candidates once", "use --pairs FILE or --jsonl FILE");
  fs::path work = a.work.empty() ? fs::path("cudal1-batch-work") : fs::path(a.work);
  std::vector<QueueJob> jobs = a.pairs.empty() ? jobs_from_cuda_l1(a.jsonl, a.levels, work) : jobs_from_pairs(a.pairs);
  if (a.limit && jobs.size() > a.limit) jobs.resize(a.limit);
  if (jobs.empty()) throw Error(ErrorKind::input, "no candidate to evaluate", "check the file (and --levels)");
  std::unique_ptr<Store> store = open_store(a.db, a.no_store);
  StopOnSignal stop("cudal1 batch");  // before any thread: Ctrl-C keeps the evaluations in hand
  for (auto& j : jobs) {
    j.options.timing = !a.no_timing;
    apply_baseline_args(a.baselines, j.options);
    j.options.task_facts = store_task_facts(store.get());
    j.options.reuse_extension_builds = !a.stock;
    if (store) j.options.protect_files = store->private_files();
  }
  QueueConfig config;
  config.stop_starting = stop.flag();
  std::unique_ptr<BuildService> builds;
  if (a.redis.enabled() && a.stock)
    throw Error(ErrorKind::usage, "--stock runs on this host, one evaluation after the other; --redis sends them to the cluster",
                "drop one of the two");
  if (!use_cluster(a.redis, config)) {
    // The stock way: one lane on one GPU. Otherwise --lanes per device, sharing it through a gate.
    config.devices = lane_devices(a.device, a.gpus, a.stock ? 1 : a.lanes, a.stock);
    config.prefetch = a.stock ? 0 : a.prefetch;
    config.memory_budget_bytes = eval_memory_bytes(a.memory_budget_gb);
    config.finish_within_s = a.finish_within_s;
    // The build service compiles every candidate's extensions ahead of the lanes, across the
    // machine's cores, each distinct module once (the stock way: each candidate's own process).
    if (!a.stock && !a.no_build_service)
      builds = attach_build_service(config, {a.build_cache, a.build_jobs, a.prebuild_threads, a.clang});
  }

  std::vector<std::optional<QueueResult>> results(jobs.size());
  ProgressLine progress(jobs.size());
  std::ofstream out;
  if (!a.out.empty()) out.open(a.out, std::ios::app);
  QueueStats stats = run_queue(jobs, config, [&](const QueueResult& r) {
    results[r.index] = r;
    if (r.result && store) store->save(*r.result, jobs[r.index].options.protocol_key(), r.device, read_file(jobs[r.index].options.candidate_path));
    if (out) {
      json line = {{"id", r.id}, {"device", r.device}, {"run_s", r.run_s}, {"lane_wait_s", r.lane_wait_s},
                   {"finished_s", r.finished_s}};
      if (r.result && r.result->provenance.contains("cluster")) line["cluster"] = r.result->provenance["cluster"];
      if (r.result) line["result"] = r.result->to_json();
      else line["error"] = r.error->message();
      out << line.dump() << "\n" << std::flush;
    }
    progress.tick();
  });
  progress.finish();

  std::vector<double> loads;
  BuildTally tally;
  std::map<std::string, int> statuses;
  int accepted = 0;
  Table t({"candidate", "device", "verdict", "status", "speedup", "load s", "run s", "note"},
          {false, false, false, false, true, true, true, false});
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!results[i]) {  // a stop came before it started
      statuses["not_started"]++;
      t.add_row({jobs[i].id, "-", "not run", "-", "-", "-", "-", "stopped before it started"});
      continue;
    }
    const QueueResult& r = *results[i];
    if (!r.result) {
      statuses["error"]++;
      t.add_row({r.id, r.device, "error", "-", "-", "-", format_fixed(r.run_s, 1)});
      continue;
    }
    const EvalResult& e = *r.result;
    double load = e.phase_seconds.value("candidate", 0.0);  // loading the candidate: its builds included
    loads.push_back(load);
    tally.add(e.build);
    statuses[status_name(e.status)]++;
    accepted += e.accepted;
    auto sp = e.speedup.find("eager");
    std::string where = r.device;  // a cluster's job: the worker's lane
    if (e.provenance.contains("cluster"))
      where = e.provenance["cluster"].value("device", "") + "@" + e.provenance["cluster"].value("worker", "");
    t.add_row({r.id, where, e.accepted ? "accepted" : "not accepted", status_name(e.status),
               sp == e.speedup.end() ? "-" : format_fixed(sp->second, 2) + "x", format_fixed(load, 1), format_fixed(r.run_s, 1),
               noise_note(e)});
  }
  json summary = {{"mode", a.stock ? "stock" : a.redis.enabled() ? "cluster" : "queue"}, {"evaluations", jobs.size()}, {"not_started", stats.not_started}, {"lanes", config.devices},
                  {"wall_s", stats.wall_s}, {"evaluations_per_hour", stats.evaluations_per_hour()},
                  {"lane_idle_share", stats.idle_share()}, {"accepted", accepted}, {"statuses", statuses},
                  {"load_s_median", percentile(loads, 0.5)}, {"load_s_p90", percentile(loads, 0.9)},
                  {"build_service", bool(builds)}};
  if (builds)
    summary["builds"] = {{"compiled", tally.miss_s.size()}, {"cache_hits", tally.hits}, {"fast", tally.fast},
                         {"plain", tally.plain}, {"failed", tally.failed}, {"in_process", tally.in_process},
                         {"compile_s_median", percentile(tally.miss_s, 0.5)}, {"compile_s_p90", percentile(tally.miss_s, 0.9)}};
  if (a.json_out) {
    std::cout << summary.dump() << std::endl;
    return;
  }
  t.print(std::cout);
  if (a.redis.enabled()) {
    std::cout << "\n" << jobs.size() << " evaluations through the cluster at " << a.redis.endpoint().url() << " ("
              << a.redis.in_flight << " in flight at most) in " << format_fixed(stats.wall_s, 1) << " s: "
              << format_fixed(stats.evaluations_per_hour(), 0) << " evaluations/hour; " << accepted << " accepted\n";
    return;
  }
  std::cout << "\n" << jobs.size() - stats.not_started << " evaluations on " << config.devices.size() << " lane(s) ("
            << (a.stock ? "stock: one after the other, each building its own extensions" : "queue") << ") in "
            << format_fixed(stats.wall_s, 1) << " s: " << format_fixed(stats.evaluations_per_hour(), 0)
            << " evaluations/hour; " << accepted << " accepted; lanes idle " << format_fixed(100 * stats.idle_share(), 1)
            << "% of the time; candidate load (builds included) median " << format_fixed(percentile(loads, 0.5), 1)
            << " s, p90 " << format_fixed(percentile(loads, 0.9), 1) << " s\n";
  if (stats.not_started)
    std::cout << "stopped: " << stats.not_started << " of " << jobs.size()
              << " never started; the store and --out hold the " << jobs.size() - stats.not_started << " that ran\n";
  if (builds)
    std::cout << "build service: " << tally.miss_s.size() << " modules compiled (median "
              << format_fixed(percentile(tally.miss_s, 0.5), 1) << " s, p90 " << format_fixed(percentile(tally.miss_s, 0.9), 1)
              << " s; " << tally.fast << " fast path, " << tally.plain << " plain), " << tally.hits << " from the cache, "
              << tally.failed << " failed, " << tally.in_process << " left to the candidate's process\n";
}

}  // namespace

void register_batch(CLI::App& app) {
  auto args = std::make_shared<BatchArgs>();
  CLI::App* cmd = app.add_subcommand("batch", "Evaluate many candidates, queued over every visible GPU");
  cmd->add_option("--pairs", args->pairs, "file of TASK CANDIDATE lines (or JSON lines with task, candidate, id); a TASK is a file or a suite name (level1/28_log_softmax or log_softmax)");
  cmd->add_option("--jsonl", args->jsonl, "a CUDA-L1 JSON-lines file: each row's custom_code against its ref_code");
  cmd->add_option("--levels", args->levels, "with --jsonl: only these levels, e.g. 12");
  cmd->add_option("--limit", args->limit, "evaluate at most this many");
  cmd->add_option("-d,--device", args->device, "cuda (every visible GPU, one lane each), cuda:N, or cpu")->transform(device_names())->capture_default_str();
  cmd->add_option("--gpus", args->gpus, "use at most this many GPUs (0: all)");
  cmd->add_option("--lanes", args->lanes, "evaluations side by side on each device; on one device their checks overlap and their timing takes turns")->capture_default_str();
  add_eval_memory_option(*cmd, args->memory_budget_gb);
  add_finish_within_option(*cmd, args->finish_within_s);
  cmd->add_option("--prefetch", args->prefetch, "evaluations prepared ahead per lane")->capture_default_str();
  cmd->add_flag("--stock", args->stock, "the stock way: one lane, one evaluation after the other, every build from scratch");
  cmd->add_flag("--no-build-service", args->no_build_service, "let each candidate's process compile its own extensions");
  cmd->add_option("--prebuild-threads", args->prebuild_threads, "candidates the build service takes at once (0: half the cores, at most 8)");
  cmd->add_option("--build-jobs", args->build_jobs, "compilers the build service runs at once (0: the machine's cores)");
  cmd->add_option("--clang", args->clang, kClangOptionHelp);
  cmd->add_option("--build-cache", args->build_cache, "the build service's cache folder (default $CUDAL1_CACHE/builds)");
  cmd->add_flag("--no-timing", args->no_timing, "check correctness only");
  add_baseline_options(cmd, args->baselines);
  add_redis_options(cmd, args->redis);
  cmd->add_option("--out", args->out, "append one JSON line per evaluation to this file");
  cmd->add_option("--work", args->work, "with --jsonl: folder for the rows' task and candidate files (default ./cudal1-batch-work)");
  cmd->add_option("--db", args->db, "SQLite store (default as for eval)");
  cmd->add_flag("--no-store", args->no_store, "neither read nor write the store");
  cmd->add_flag("--json", args->json_out, "print the summary as one JSON object");
  cmd->callback([args] { run_batch(*args); });
}

}  // namespace cudal1::cli
