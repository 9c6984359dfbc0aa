// cli/train_command: `cudal1 train sft|selfsup|crl` — CUDA-L1's three stages (trainer/sft.h,
// trainer/rl_stage.h). Built only with the trainer (libtorch found at configure time); see main.cpp
// for the build without it.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "cli/judge_options.h"
#include "cli/loop_options.h"
#include "cli/model_policy_options.h"
#include "cli/queue_setup.h"
#include "core/error.h"
#include "core/hash.h"
#include "report/table.h"
#include "report/train_report.h"
#include "task_facts/store_task_facts.h"
#include "tasks/suite.h"
#include "tasks/task_texts.h"
#include "trainer/distributed.h"
#include "trainer/rl_stage.h"
#include "trainer/sft.h"

namespace cudal1::cli {

namespace {

// What every stage is told the same way: the model, the output, the store, how it trains.
struct StageArgs {
  std::string model, out, db, chat_format, targets, device = "cpu", dtype = "auto";
  bool json_out = false;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  for (std::size_t p = 0; p <= text.size();) {
    std::size_t q = text.find(',', p);
    if (q == std::string::npos) q = text.size();
    if (q > p) parts.push_back(text.substr(p, q - p));
    p = q + 1;
  }
  return parts;
}

// SftRunOptions and RlStageOptions name these fields alike.
template <typename Options>
void add_stage_options(CLI::App* cmd, StageArgs& a, Options& o) {
  cmd->add_option("--model", a.model, "Hugging Face model folder (config.json, safetensors, tokenizer.json)")->required();
  cmd->add_option("--out", a.out, "output folder; an unfinished run there resumes from its checkpoint")->required();
  cmd->add_option("--db", a.db, std::string("SQLite store (") + kDefaultStoreHelp + ")");
  cmd->add_flag("--full", o.full, "train every weight instead of a LoRA adapter");
  cmd->add_option("--lora-r", o.lora.r, "adapter rank")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--lora-alpha", o.lora.alpha, "adapter alpha (scaling alpha / r)")->capture_default_str();
  cmd->add_option("--lora-dropout", o.lora.dropout, "dropout on the adapter's input")->capture_default_str();
  cmd->add_option("--lora-targets", a.targets, "comma-separated linear layers (default: every attention and MLP projection)");
  cmd->add_option("--lr", o.optim.lr, "peak learning rate")->capture_default_str();
  cmd->add_option("--min-lr-ratio", o.optim.min_lr_ratio, "final learning rate as a share of the peak")->capture_default_str();
  cmd->add_option("--warmup", o.optim.warmup_steps, "warm-up steps")->capture_default_str();
  cmd->add_option("--weight-decay", o.optim.weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--max-grad-norm", o.optim.max_grad_norm, "gradient-norm clip (0: none)")->capture_default_str();
  cmd->add_option("-d,--device", a.device, "where the model trains: cpu, cuda or cuda:N")->transform(device_names())->capture_default_str();
  cmd->add_option("--dtype", a.dtype, "auto (bfloat16 on a GPU, else float32), float32, bfloat16 or float16")->capture_default_str();
  cmd->add_option("--chat-format", a.chat_format, "chatml or llama3, when the model's chat template is not recognised");
  cmd->add_flag("--json", a.json_out, "print the summary as one JSON object");
}

template <typename Options>
void apply_stage_args(const StageArgs& a, Options& o) {
  o.model_dir = a.model;
  o.out_dir = a.out;
  o.device = a.device;
  o.dtype = model_dtype(a.dtype, a.device);
  if (!a.chat_format.empty()) o.chat_format = tokenizer::parse_chat_format(a.chat_format);
  if (!a.targets.empty()) o.lora.target_modules = split_commas(a.targets);
}

// OUT/report.html: the stage's own curves (`cudal1 train report` puts stages side by side).
std::filesystem::path write_stage_report(const std::filesystem::path& out_dir) {
  std::filesystem::path page = out_dir / "report.html";
  write_file(page, train_report_html({load_train_log(out_dir)}), "check that the output folder is writable");
  return page;
}

struct SftArgs {
  StageArgs stage;
  trainer::SftRunOptions o;
  std::string suite, prompts, eval_device = "auto";
  std::vector<std::string> tasks;
};

// Where candidates run, and so what prompts name: as asked, else cuda when the model trains on a
// GPU (a GPU's kernels need one), else cpu.
std::string eval_device_for(const std::string& asked, const std::string& training_device) {
  if (asked != "auto") return asked;
  return training_device.rfind("cuda", 0) == 0 ? "cuda" : "cpu";
}

// Contrastive copies show the task's reference as the loop does: the file the store's answers
// were judged against (tasks/task_texts.h).
void set_contrastive_copies(SftArgs& a) {
  rl::ContrastiveCopies& c = a.o.contrastive;
  if (c.copies <= 0) return;
  c.templates = policy::PromptTemplates::load(a.prompts.empty() ? policy::bundled_prompts_dir() : std::filesystem::path(a.prompts));
  c.device = eval_device_for(a.eval_device, a.o.device);
  c.seed = a.o.seed;
  auto texts = std::make_shared<TaskTexts>(a.suite.empty() ? default_suite_dir() : std::filesystem::path(a.suite), a.tasks);
  c.reference = [texts](const rl::SftExample& e) {
    return texts->text(e.task_id, e.task_hash, "name the task files the optimisation run used with --task, or leave out --contrastive");
  };
}

void run_train_sft(SftArgs& a) {
  apply_stage_args(a.stage, a.o);
  set_contrastive_copies(a);
  // Launched N times with torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), the
  // ranks train data-parallel; without them, alone.
  const trainer::DistributedConfig dist = trainer::distributed_from_env();
  trainer::DataParallel dp(dist, trainer::rank_device(a.o.device, dist));
  a.o.data_parallel = &dp;
  std::unique_ptr<Store> store = open_store(a.stage.db, false);
  auto start = std::chrono::steady_clock::now();
  trainer::SftRunSummary s = trainer::run_sft(*store, a.o, [&](int64_t step, int64_t total, double loss) {
    if (!dp.is_main()) return;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "\rstep %lld/%lld · loss %.4f · %.1f s/step   ", static_cast<long long>(step),
                 static_cast<long long>(total), loss, secs / double(step));
  });
  if (!dp.is_main()) return;  // rank 0 wrote OUT and speaks for the run
  std::fprintf(stderr, "\n");
  const std::filesystem::path page = write_stage_report(a.o.out_dir);
  nlohmann::json j = {{"report", page.string()}, {"world_size", dp.world_size()}, {"examples", s.examples}, {"contrastive", s.contrastive}, {"too_long", s.too_long},
                      {"answer_too_long", s.answer_too_long}, {"steps", s.steps},
                      {"resumed_at", s.resumed_at}, {"first_loss", s.first_loss}, {"last_loss", s.last_loss},
                      {"output", s.output.string()}, {"dataset", (a.o.out_dir / "sft.jsonl").string()},
                      {"log", (a.o.out_dir / "train_log.jsonl").string()}};
  if (a.stage.json_out) {
    std::cout << j.dump() << std::endl;
    return;
  }
  Table t({"examples", "contrastive", "left out (too long)", "left out (answer too long)", "steps", "resumed at", "first loss",
           "last loss", "output"},
          {true, true, true, true, true, true, true, true, false});
  t.add_row({std::to_string(s.examples), std::to_string(s.contrastive), std::to_string(s.too_long),
             std::to_string(s.answer_too_long), std::to_string(s.steps),
             s.resumed_at ? std::to_string(s.resumed_at) : "-", format_fixed(s.first_loss, 4),
             format_fixed(s.last_loss, 4), s.output.string()});
  t.print(std::cout);
  std::cout << "\ndataset " << j["dataset"].get<std::string>() << ", per-step log " << j["log"].get<std::string>()
            << ", curves " << page.string()
            << (a.o.full ? "" : "; the adapter loads in PEFT (PeftModel.from_pretrained) and vLLM (--lora-modules)") << "\n";
}

void register_sft(CLI::App* train) {
  auto a = std::make_shared<SftArgs>();
  CLI::App* sft = train->add_subcommand("sft", "Stage 1: supervised fine-tuning on the store's accepted answers "
                                               "(at most N per task and source), LoRA or every weight");
  add_stage_options(sft, a->stage, a->o);
  sft->add_option("--seed", a->o.seed, "data order and adapter initialisation")->capture_default_str();
  sft->add_option("--run", a->o.store_run, "only this optimisation run's answers (default: every run)");
  sft->add_option("--per-task", a->o.per_task_and_source, "answers per task and source at most")->capture_default_str();
  sft->add_option("--accumulation", a->o.optim.accumulation, "micro-batches per optimiser step")->check(CLI::PositiveNumber)->capture_default_str();
  sft->add_option("--epochs", a->o.epochs, "passes over the data")->check(CLI::PositiveNumber)->capture_default_str();
  sft->add_option("--batch", a->o.batch, "examples per micro-batch")->check(CLI::PositiveNumber)->capture_default_str();
  sft->add_option("--max-tokens", a->o.max_tokens, "longer examples (prompt + answer) are left out")->capture_default_str();
  sft->add_option("--max-answer-tokens", a->o.max_answer_tokens,
                  "examples whose answer is longer are left out: give the --max-new-tokens the later stages sample with, "
                  "so the model never learns answers they would cut (0: no limit)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  sft->add_option("--checkpoint-every", a->o.checkpoint_every, "optimiser steps between checkpoints")->capture_default_str();
  sft->add_option("--contrastive", a->o.contrastive.copies,
                  "contrastive copies per answer: the answer again under a stage-3 prompt showing slower files of its task")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  sft->add_option("--exemplars", a->o.contrastive.sampler.picks, "files a contrastive copy shows (distinct score buckets)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  sft->add_option("--task", a->tasks, "a task file (or suite name) the answers were for, shown in contrastive copies; repeatable");
  sft->add_option("--suite", a->suite, "where tasks not named with --task are found by name (default: the bundled suite)");
  sft->add_option("--prompts", a->prompts, "prompt template folder (default: the bundled prompts/)");
  sft->add_option("--eval-device", a->eval_device, "the device contrastive prompts name: auto (cuda when training on a GPU), cuda, cpu")->transform(device_names(true))
      ->capture_default_str();
  sft->callback([a] { run_train_sft(*a); });
}

struct RlArgs {
  StageArgs stage;
  LoopArgs loop;
  JudgeArgs judge;
  std::string adapter, eval_device = "auto", loss_agg = "seq-mean-token-mean";
  trainer::RlStageOptions o;
};

std::string percent(double share) { return format_fixed(100.0 * share, 0) + "%"; }

void run_train_rl(RlArgs& a) {
  if (trainer::distributed_from_env().world_size > 1)
    throw Error(ErrorKind::usage, std::string("train ") + trainer::rl_objective_name(a.o.objective) +
                                      " runs in one process (its lanes already spread evaluations over the GPUs)",
                "launch it once, without WORLD_SIZE; data-parallel training is for train sft");
  // The stage trains each round on the very tokens the model sampled, one answer per slot; a
  // slot's later turns would be matched to its first turn's tokens.
  if (a.loop.turns != 1)
    throw Error(ErrorKind::usage, std::string("train ") + trainer::rl_objective_name(a.o.objective) +
                                      " trains on one answer per slot and takes no --turns",
                "leave --turns out here; multi-turn refinement is for cudal1 optimize");
  apply_stage_args(a.stage, a.o);
  a.o.loss_aggregation = *trainer::parse_loss_aggregation(a.loss_agg);  // --loss-agg admits only the names
  if (!a.adapter.empty()) a.o.adapter_dir = a.adapter;
  a.o.tasks = resolve_loop_tasks(a.loop);
  a.o.seed = a.loop.seed;  // one seed: exemplar sampling, the answers drawn and the adapter's start
  a.o.loop = loop_config(a.loop, eval_device_for(a.eval_device, a.o.device));
  a.o.loop.judge = judge_config(a.judge);  // a gated hack verdict is the hack penalty in training too
  std::unique_ptr<Store> store = open_store(a.stage.db, false);
  a.o.loop.eval.task_facts = store_task_facts(store.get());
  for (auto& f : store->private_files()) a.o.loop.eval.protect_files.push_back(f);
  std::unique_ptr<BuildService> builds;
  if (!a.loop.redis.enabled()) builds = attach_build_service(a.o.loop.queue, {});  // workers build on their hosts
  const char* name = trainer::rl_objective_name(a.o.objective);

  trainer::RlStageSummary s = trainer::run_rl_stage(
      *store, a.o,
      [&](const trainer::RlRoundStats& r) {
        std::fprintf(stderr, "\r%s round %d/%d · correct %s · reward %.3f ± %.3f · loss %.4f%s                    \n", name,
                     r.round, a.o.rounds, percent(r.correct_rate()).c_str(), r.raw_reward_mean, r.raw_reward_std, r.loss,
                     a.o.objective == trainer::RlObjective::crl
                         ? (" · kl " + format_fixed(r.kl, 4) + " · clipped " + percent(r.clip_fraction)).c_str()
                         : (r.updated ? "" : " · no correct answer, no update"));
      },
      [&](const rl::LoopProgress& p) {
        std::fprintf(stderr, "\rround %d · %s %zu/%zu evaluations (%zu accepted)%s        ", p.round, p.stage.c_str(),
                     p.jobs_done, p.jobs, p.jobs_accepted, p.task.empty() ? "" : (" · " + p.task).c_str());
      });
  const std::filesystem::path page = write_stage_report(a.o.out_dir);
  nlohmann::json rounds = nlohmann::json::array();
  for (auto& r : s.trained)
    rounds.push_back({{"round", r.round}, {"samples", r.samples}, {"correct_rate", r.correct_rate()},
                      {"raw_reward_mean", r.raw_reward_mean}, {"loss", r.loss}, {"kl", r.kl}, {"updated", r.updated}});
  nlohmann::json j = {{"stage", name}, {"rounds", s.rounds}, {"resumed_at", s.resumed_at}, {"trained", rounds},
                      {"output", s.output.string()}, {"loop_run", s.loop_run}, {"report", page.string()},
                      {"log", (a.o.out_dir / "train_log.jsonl").string()}};
  if (a.stage.json_out) {
    std::cout << j.dump() << std::endl;
    return;
  }
  Table t({"round", "answers", "correct", "raw reward mean", "std", "loss", "kl", "clipped", "updated"},
          {true, true, true, true, true, true, true, true, false});
  for (auto& r : s.trained)
    t.add_row({std::to_string(r.round), std::to_string(r.samples), percent(r.correct_rate()), format_fixed(r.raw_reward_mean, 3),
               format_fixed(r.raw_reward_std, 3), format_fixed(r.loss, 4), format_fixed(r.kl, 4), percent(r.clip_fraction),
               r.updated ? "yes" : "no"});
  t.print(std::cout);
  std::cout << "\noutput " << s.output.string() << "; per-round log " << j["log"].get<std::string>() << ", curves " << page.string()
            << "; every answer in the store under run '" << s.loop_run << "' and in "
            << (a.o.out_dir / "loop" / "samples.jsonl").string() << "\n";
}

std::vector<std::string> loss_aggregation_names() {
  std::vector<std::string> names;
  for (trainer::LossAggregation m : trainer::kLossAggregations) names.emplace_back(trainer::loss_aggregation_name(m));
  return names;
}

void register_rl(CLI::App* train, trainer::RlObjective objective) {
  auto a = std::make_shared<RlArgs>();
  a->o.objective = objective;
  const bool crl = objective == trainer::RlObjective::crl;
  // Self-supervised prompts show no earlier variants (the model learns to answer at all);
  // contrastive ones show two, with their speedups.
  a->loop.picks = crl ? 2 : 0;
  CLI::App* cmd = train->add_subcommand(
      trainer::rl_objective_name(objective),
      crl ? "Stage 3: contrastive RL — GRPO on the loop's rounds (prompts with earlier variants and their speedups), "
            "rewards from the evaluator, KL to the model with adapters off"
          : "Stage 2: self-supervised — sample, evaluate, train on the answers that ran and were correct (REINFORCE, 0/1 reward)");
  add_stage_options(cmd, a->stage, a->o);
  add_loop_options(cmd, a->loop);
  add_judge_options(cmd, a->judge);
  add_sampling_options(cmd, a->o.sampling);
  cmd->add_option("--adapter", a->adapter, "go on training this PEFT adapter (a `train sft` output's adapter/)");
  cmd->add_option("--rounds", a->o.rounds, "rounds of the loop, one training step each")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--ppo-epochs", a->o.ppo_epochs, "optimiser steps on each round's answers")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--micro-batch", a->o.micro_batch, "answers per forward and backward pass")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--loss-agg", a->loss_agg,
                  "how a round's per-token terms make the loss: seq-mean-token-mean (each answer's mean, then over answers; "
                  "GRPO's), token-mean (over every token; DAPO's), seq-mean-token-sum-norm (token sums over the sampling "
                  "limit; Dr. GRPO's)")
      ->check(CLI::IsMember(loss_aggregation_names()))
      ->capture_default_str();
  cmd->add_option("--eval-device", a->eval_device, "where candidates are evaluated: auto (cuda when the model trains on a GPU), cuda, cuda:N, cpu")->transform(device_names(true))->capture_default_str();
  if (crl) {
    cmd->add_option("--clip-epsilon", a->o.grpo.clip_epsilon, "the ratio is clipped to 1 ± epsilon")->capture_default_str();
    cmd->add_option("--kl-beta", a->o.grpo.kl_beta, "weight of the KL term to the reference policy")->capture_default_str();
  }
  cmd->callback([a] { run_train_rl(*a); });
}

struct ReportArgs {
  std::vector<std::string> stages;
  std::string out = "train_report.html";
};

void register_report(CLI::App* train) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = train->add_subcommand("report", "One HTML page of stages' logs: a table per stage and curves "
                                                  "(loss, reward mean and std, correct rate, KL, clip fraction), stage over stage");
  cmd->add_option("stages", a->stages, "the stages' OUT folders, in the order they ran (sft, selfsup, crl)")->required();
  cmd->add_option("-o,--out", a->out, "the page to write")->capture_default_str();
  cmd->callback([a] {
    std::vector<TrainLog> logs;
    for (auto& dir : a->stages) logs.push_back(load_train_log(dir));
    write_file(a->out, train_report_html(logs), "check that the report's folder exists and is writable");
    std::cout << "report " << a->out << " (" << logs.size() << " stage" << (logs.size() == 1 ? "" : "s") << ")\n";
  });
}

}  // namespace

void register_train(CLI::App& app) {
  CLI::App* train = app.add_subcommand("train", "Train a model on the evaluator's verdicts (CUDA-L1's stages)");
  train->require_subcommand(1);
  register_sft(train);
  register_rl(train, trainer::RlObjective::selfsup);
  register_rl(train, trainer::RlObjective::crl);
  register_report(train);
  register_train_init(*train);
  register_train_bench(*train);
}

}  // namespace cudal1::cli
