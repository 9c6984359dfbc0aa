// cli/loop_options.cpp — the loop's command-line settings, shared (see loop_options.h).
#include "cli/loop_options.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "cli/queue_setup.h"
#include "core/error.h"
#include "tasks/suite.h"

namespace fs = std::filesystem;

namespace cudal1::cli {

void add_loop_options(CLI::App* cmd, LoopArgs& a) {
  cmd->add_option("tasks", a.tasks, "tasks: files, or suite names (level1/23_silu, 23_silu or silu)");
  cmd->add_flag("--all", a.all, "every task of the suite");
  cmd->add_option("--suite", a.suite, "task suite folder (default: the bundled one)");
  cmd->add_option("--group", a.group, "answers per round (the group size G)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", a.seed, "seed of exemplar sampling and the policies' choices")->capture_default_str();
  cmd->add_option("--tau", a.tau, "softmax temperature over score buckets")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--buckets", a.buckets, "score buckets")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--exemplars", a.picks, "earlier variants a prompt shows (distinct buckets)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--exemplar-share", a.exemplar_share,
                  "share of each task's rounds whose prompt shows the exemplars (the others are first-round prompts; "
                  "0.5 alternates, half the tasks each round)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--max-prompt-tokens", a.max_prompt_tokens, "prompt budget; exemplars are shortened to fit")->capture_default_str();
  cmd->add_option("--prompts", a.prompts, "folder of prompt templates (default: the bundled prompts/)");
  cmd->add_option("--gpus", a.gpus, "use at most this many GPUs (0: all)");
  cmd->add_option("--lanes", a.lanes, "evaluations side by side on each device")->capture_default_str();
  add_eval_memory_option(*cmd, a.memory_budget_gb);
  add_baseline_options(cmd, a.baselines);
  cmd->add_flag("--no-timing", a.no_timing, "check correctness only (every reward is then 0 or the penalty)");
  cmd->add_option("--turns", a.turns, "answers per slot: after each, the policy is sent the evaluator's feedback and "
                  "revises it in the same conversation (1: no revision)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            try {
              std::size_t used = 0;
              int k = std::stoi(v, &used);
              if (used == v.size() && k >= 1 && k <= rl::kMaxTurns) return "";
            } catch (const std::exception&) {
            }
            return "--turns takes a whole number from 1 to " + std::to_string(rl::kMaxTurns) + " (got '" + v +
                   "'): 1 asks one answer per slot, K lets the policy revise it K - 1 times";
          },
          "1.." + std::to_string(rl::kMaxTurns)))
      ->capture_default_str();
  cmd->add_option("--gamma", a.gamma, "discount of later turns in each answer's return (samples.jsonl `return`)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            try {
              std::size_t used = 0;
              double g = std::stod(v, &used);
              if (used == v.size() && g >= 0 && g <= 1) return "";
            } catch (const std::exception&) {
            }
            return "--gamma takes a number from 0 to 1 (got '" + v + "'): 0 credits each turn with its own reward only, "
                   "1 with every later turn's in full";
          },
          "0..1"))
      ->capture_default_str();
  add_redis_options(cmd, a.redis);
}

std::vector<rl::LoopTask> resolve_loop_tasks(const LoopArgs& a) {
  fs::path suite = a.suite.empty() ? default_suite_dir() : fs::path(a.suite);
  std::vector<std::string> names = a.tasks;
  if (a.all)
    for (auto& e : discover_tasks(suite)) names.push_back(e.name);
  if (names.empty()) throw Error(ErrorKind::usage, "no task named", "name tasks by file or suite name (level1/23_silu, 23_silu or silu), or pass --all");
  std::vector<rl::LoopTask> tasks;
  std::set<std::string> ids;  // the store and the run folder key everything by task id
  for (auto& t : names) {
    TaskEntry e = find_task(suite, t);
    if (std::any_of(tasks.begin(), tasks.end(), [&](const rl::LoopTask& k) { return fs::equivalent(k.path, e.path); })) continue;
    std::string id = e.name;
    if (id == "task") id = e.path.parent_path().filename().string() + "/" + id;  // examples/<name>/task.py
    for (int n = 2; !ids.insert(id).second; ++n) id = e.name + "#" + std::to_string(n);
    tasks.push_back({id, e.path});
  }
  return tasks;
}

rl::LoopConfig loop_config(const LoopArgs& a, const std::string& eval_device) {
  if (a.exemplar_share < 1.0 && a.picks == 0)
    throw Error(ErrorKind::usage, "--exemplar-share sets which rounds show exemplars, but --exemplars 0 shows none in any round",
                "pass --exemplars 2 (or more) with --exemplar-share, or leave --exemplar-share out");
  rl::LoopConfig c;
  c.eval.device = eval_device;
  if (!use_cluster(a.redis, c.queue)) c.queue.devices = lane_devices(eval_device, a.gpus, a.lanes, false);
  c.queue.memory_budget_bytes = eval_memory_bytes(a.memory_budget_gb);
  c.group = a.group;
  c.turns = a.turns;
  c.gamma = a.gamma;
  c.seed = a.seed;
  c.sampler.tau = a.tau;
  c.sampler.buckets = a.buckets;
  c.sampler.picks = a.picks;
  c.sampler.share = a.exemplar_share;
  c.templates = policy::PromptTemplates::load(a.prompts.empty() ? policy::bundled_prompts_dir() : fs::path(a.prompts));
  c.budget.max_tokens = a.max_prompt_tokens;
  c.eval.timing = !a.no_timing;
  apply_baseline_args(a.baselines, c.eval);
  return c;
}

}  // namespace cudal1::cli
