// cli/optimize: `cudal1 optimize TASK...` — the contrastive-RL loop (rl/loop.h) with a policy:
// the built-in rewrite policy (no model), any OpenAI-compatible endpoint, or a replayed kernel set.
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/judge_options.h"
#include "cli/loop_options.h"
#include "cli/queue_setup.h"
#include "cli/status_line.h"
#include "core/error.h"
#include "policy/replay_policy.h"
#include "policy/rewrite_policy.h"
#include "report/optimize_report.h"
#include "report/table.h"
#include "rl/loop.h"
#include "task_facts/store_task_facts.h"
#include "tasks/suite.h"
#ifdef CUDAL1_HAVE_HTTP
#include "cli/openai_options.h"
#include "policy/openai_policy.h"
#endif
#ifdef CUDAL1_HAVE_TRAINER
#include "cli/model_policy_options.h"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace cudal1::cli {

namespace {

struct OptimizeArgs {
  LoopArgs loop;
  std::string policy = "builtin", replay, run_dir, name, device = "auto", db;
  int rounds = 8, patience = 3;
  bool json_out = false;
  JudgeArgs judge;
#ifdef CUDAL1_HAVE_HTTP
  OpenAIArgs openai;
#endif
#ifdef CUDAL1_HAVE_TRAINER
  ModelPolicyArgs model;
#endif
};

std::unique_ptr<policy::Policy> make_policy(const OptimizeArgs& a) {
  if (a.policy == "builtin") return std::make_unique<policy::RewritePolicy>();
  if (a.policy == "replay") {
    if (a.replay.empty())
      throw Error(ErrorKind::usage, "--policy replay needs --replay", "name a CUDA-L1 JSON-lines file or a folder of ModelNew files");
    return std::make_unique<policy::ReplayPolicy>(a.replay);
  }
#ifdef CUDAL1_HAVE_TRAINER
  if (a.policy == "model") return make_model_policy(a.model);
#endif
  if (a.policy == "openai") {
#ifdef CUDAL1_HAVE_HTTP
    return std::make_unique<policy::OpenAIPolicy>(openai_config(a.openai));
#else
    throw Error(ErrorKind::usage, "this build of cudal1 has no HTTP client (the static build for GPU machines)",
                "run the OpenAI-compatible policy from a regular build (make), or use --policy builtin or replay");
#endif
  }
  throw Error(ErrorKind::usage, "unknown policy '" + a.policy + "'", "use builtin, openai, replay or model");
}

// The device asked; "auto" is CUDA where a GPU is visible, else the CPU, said aloud.
std::string optimize_device(const OptimizeArgs& a) {
  if (a.device != "auto") return a.device;
  if (a.loop.redis.enabled()) return "cuda";  // the workers' GPUs, not this host's
  try {
    lane_devices("cuda", a.loop.gpus, a.loop.lanes, false);
    return "cuda";
  } catch (const Error&) {
    std::cerr << "cudal1 optimize: no GPU is visible. CUDA kernels and CUDA timing need one; candidates are "
                 "checked and timed on the CPU instead (plain PyTorch rewrites only mean something there).\n";
    return "cpu";
  }
}

std::string speed_text(const std::optional<double>& s) { return s ? format_fixed(*s, 2) + "x" : "-"; }

std::string tasks_text(std::size_t n) { return std::to_string(n) + (n == 1 ? " task" : " tasks"); }

// "no task improved" rather than a count of tasks whose best is no better than where they started.
std::string improved_text(std::size_t improved) { return improved ? tasks_text(improved) + " improved" : "no task improved"; }

std::string progress_text(const rl::LoopProgress& p) {
  std::string t = "round " + std::to_string(p.round) + "/" + std::to_string(p.rounds) + " · " + std::to_string(p.active) +
                  "/" + tasks_text(p.tasks) + " · " + p.stage;
  if (p.stage == "evaluating")
    t += " " + std::to_string(p.jobs_done) + "/" + std::to_string(p.jobs) + " (" + std::to_string(p.jobs_accepted) + " accepted)";
  t += " · tried " + std::to_string(p.tried) + " · correct " + std::to_string(p.correct) + " · " + improved_text(p.improved);
  if (p.with_best) t += " · geomean best " + speed_text(p.best_geomean) + " over " + tasks_text(p.with_best) + " with an accepted file";
  return t + (p.task.empty() ? "" : " · " + p.task);
}

void print_outcomes(const std::vector<rl::TaskOutcome>& outcomes) {
  std::set<std::string> baselines;  // every baseline some best file was measured against
  for (auto& o : outcomes)
    for (auto& [k, v] : o.best_speedups.items()) if (k != "eager") baselines.insert(k);
  std::vector<std::string> head = {"task", "rounds", "tried", "evaluated", "correct", "hacks", "to beat", "best vs eager"};
  for (auto& b : baselines) head.push_back("vs " + b);
  head.insert(head.end(), {"best (label)", "best file", "stopped"});
  std::vector<bool> right(head.size(), true);
  right[0] = right[head.size() - 3] = right[head.size() - 1] = false;
  Table t(head, right);
  for (auto& o : outcomes) {
    std::vector<std::string> row = {o.id, std::to_string(o.rounds), std::to_string(o.tried), std::to_string(o.evaluated),
                                    std::to_string(o.correct), std::to_string(o.hacks), speed_text(o.start),
                                    speed_text(o.best)};
    for (auto& b : baselines)
      row.push_back(o.best_speedups.contains(b) ? speed_text(o.best_speedups[b].get<double>()) : "-");
    row.push_back(o.best_label.empty() ? "-" : o.best_label);
    // The file a user takes from best/: none unless an answer beat the reference beyond the noise.
    row.push_back(o.best_file.empty() ? "none" : speed_text(o.best_file_speedup));
    row.push_back(o.stopped_early ? "early" : "-");
    t.add_row(row);
  }
  t.print(std::cout);
  for (auto& o : outcomes)
    if (!o.best_note.empty()) std::cout << o.id << ": " << o.best_note << "\n";
  std::size_t improved = std::count_if(outcomes.begin(), outcomes.end(), [](const rl::TaskOutcome& o) { return o.improved(); });
  std::cout << "\n" << (improved ? std::to_string(improved) + " of " + tasks_text(outcomes.size()) + " improved" : "no task improved")
            << " (improved: the run's best file beats \"to beat\", eager's 1.00x or the fastest accepted file the store knew "
               "before the run)\n";
}

// A run whose every answer failed before it could be judged (an endpoint down, a URL without /v1)
// found nothing, and must not end as if it had.
void check_some_answer_was_judged(const std::vector<RlSample>& samples, policy::Policy& policy, const fs::path& run_dir) {
  std::optional<rl::AllFailed> f = rl::all_failed(samples);
  if (!f) return;
  std::string message = "every answer of the run failed (" + std::to_string(f->answers) + "): " + f->message;
  if (f->messages > 1)
    message = "every answer of the run failed (" + std::to_string(f->answers) + ", for " + std::to_string(f->messages) +
              " reasons); the most common (" + std::to_string(f->with_message) + "): " + f->message;
  std::string fix = "fix what the error says";
#ifdef CUDAL1_HAVE_HTTP
  if (auto* chat = dynamic_cast<policy::OpenAIPolicy*>(&policy)) fix = chat->failure_hint(f->message);
#endif
  std::string hint = fix + ", then run the same command with --run " + run_dir.string() + " to ask again (" +
                     (run_dir / "samples.jsonl").string() + " holds every answer's error)";
  throw Error(ErrorKind::runner, message, hint);
}

void run_optimize(const OptimizeArgs& a) {
  std::vector<rl::LoopTask> tasks = resolve_loop_tasks(a.loop);
  rl::LoopConfig c = loop_config(a.loop, optimize_device(a));
  c.rounds = a.rounds;
  c.patience = a.patience;
  c.judge = judge_config(a.judge);
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  c.run_dir = a.run_dir.empty() ? fs::path("cudal1-runs") / stamp : fs::path(a.run_dir);
  c.run = a.name.empty() ? fs::absolute(c.run_dir).lexically_normal().string() : a.name;
  std::unique_ptr<policy::Policy> policy = make_policy(a);  // a policy that cannot work leaves nothing behind
  fs::create_directories(c.run_dir);
  std::unique_ptr<Store> store = open_store(a.db, false);
  c.eval.task_facts = store_task_facts(store.get());
  for (auto& f : store->private_files()) c.eval.protect_files.push_back(f);

  // Candidates' load_inline extensions are built ahead of the lanes, in parallel, and cached.
  std::unique_ptr<BuildService> builds;
  if (!a.loop.redis.enabled()) builds = attach_build_service(c.queue, {});
  const std::size_t samples_before = store->run_samples(c.run).size();
  StatusLine status;
  auto outcomes = rl::run_loop(
      tasks, *policy, *store, c, [&](const rl::LoopProgress& p) { status.show(progress_text(p), p.stage == "round done"); },
      [&](const rl::LoopFailure& f) { status.note("cudal1 optimize: " + f.task + ": " + f.message); });
  status.finish();
  json summary = {{"run", c.run}, {"run_dir", c.run_dir.string()}, {"policy", policy->name()},
                  {"device", c.eval.device}, {"lanes", c.queue.devices}, {"turns", c.turns}, {"gamma", c.gamma},
                  {"tasks", json::array()}};
  for (auto& o : outcomes) summary["tasks"].push_back(o.to_json());
#ifdef CUDAL1_HAVE_HTTP
  if (auto* chat = dynamic_cast<policy::OpenAIPolicy*>(policy.get())) {
    auto t = chat->accounting();
    summary["tokens"] = {{"prompt", t.prompt_tokens}, {"completion", t.completion_tokens}, {"requests", t.requests},
                         {"failures", t.failures}};
  }
#endif
  if (c.judge) {
    summary["judge"] = {{"model", c.judge->model}, {"mode", judge::judge_mode_name(c.judge->mode)}};
    summary["judgements"] = judge::run_judgements(*store, store->run_samples(c.run));
  }
  std::ofstream(c.run_dir / "summary.json") << summary.dump(2) << "\n";
  std::ofstream(c.run_dir / "report.html") << optimize_report_html(store->run_samples(c.run), summary);
  if (a.json_out) {
    std::cout << summary.dump() << std::endl;
  } else {
    print_outcomes(outcomes);
    std::cout << "\nrun " << c.run_dir.string() << ": best files in best/ (only answers that beat the reference by more than the noise), every answer in samples.jsonl (prompt, "
              << "completion, reward, advantage, verdict, error), the report in report.html; run the same command with --run "
              << c.run_dir.string() << " to go on\n";
  }
  std::vector<RlSample> samples = store->run_samples(c.run);
  samples.erase(samples.begin(), samples.begin() + std::ptrdiff_t(std::min(samples_before, samples.size())));
  check_some_answer_was_judged(samples, *policy, c.run_dir);
}

}  // namespace

void register_optimize(CLI::App& app) {
  auto a = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = app.add_subcommand("optimize", "Optimise tasks with a policy in CUDA-L1's contrastive loop, every candidate verified");
  add_loop_options(cmd, a->loop);
  cmd->add_option("--policy", a->policy, "builtin (mechanical rewrites, no model), openai (--openai-url and --openai-model, "
                  "or CUDAL1_OPENAI_BASE_URL and CUDAL1_OPENAI_MODEL; OPENAI_API_KEY), replay (--replay) or model (--model, a local model sampled "
                  "in this process; builds with the trainer)")->capture_default_str();
#ifdef CUDAL1_HAVE_HTTP
  add_openai_options(cmd, a->openai);
#endif
  cmd->add_option("--replay", a->replay, "with --policy replay: a CUDA-L1 JSON-lines file or a folder of ModelNew files");
  cmd->add_option("--rounds", a->rounds, "rounds per task at most")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--patience", a->patience, "rounds without a better best before a task stops")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--run", a->run_dir, "run folder (default cudal1-runs/<time>); an existing one resumes");
  cmd->add_option("--name", a->name, "run name in the store (default: the run folder's path)");
  cmd->add_option("-d,--device", a->device, "auto (CUDA when a GPU is visible, else cpu), cuda, cuda:N or cpu")->transform(device_names(true))->capture_default_str();
  cmd->add_option("--db", a->db, std::string("SQLite store (") + kDefaultStoreHelp + ")");
  cmd->add_flag("--json", a->json_out, "print the summary as one JSON object");
  add_judge_options(cmd, a->judge);
#ifdef CUDAL1_HAVE_TRAINER
  add_model_policy_options(cmd, a->model);
#endif
  cmd->callback([a] { run_optimize(*a); });
}

}  // namespace cudal1::cli
