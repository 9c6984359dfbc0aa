// cudal1 train sft — CUDA-L1's first stage on the store's accepted answers (trainer/sft.h). Built
// only with the trainer (libtorch found at configure time); see main.cpp for the build without it.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "report/table.h"
#include "trainer/sft.h"

namespace cudal1::cli {

namespace {

struct TrainArgs {
  trainer::SftRunOptions o;
  std::string model, out, db, chat_format, targets;
  bool json_out = false;
};

void run_train_sft(TrainArgs& a) {
  a.o.model_dir = a.model, a.o.out_dir = a.out;
  if (!a.chat_format.empty()) a.o.chat_format = tokenizer::parse_chat_format(a.chat_format);
  if (!a.targets.empty()) {
    a.o.lora.target_modules.clear();
    for (std::size_t p = 0; p <= a.targets.size();) {
      std::size_t q = a.targets.find(',', p);
      if (q == std::string::npos) q = a.targets.size();
      if (q > p) a.o.lora.target_modules.push_back(a.targets.substr(p, q - p));
      p = q + 1;
    }
  }
  std::unique_ptr<Store> store = open_store(a.db, false);
  auto start = std::chrono::steady_clock::now();
  trainer::SftRunSummary s = trainer::run_sft(*store, a.o, [&](int64_t step, int64_t total, double loss) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "\rstep %lld/%lld · loss %.4f · %.1f s/step   ", static_cast<long long>(step),
                 static_cast<long long>(total), loss, secs / double(step));
  });
  std::fprintf(stderr, "\n");
  nlohmann::json j = {{"examples", s.examples}, {"too_long", s.too_long}, {"steps", s.steps},
                      {"resumed_at", s.resumed_at}, {"first_loss", s.first_loss}, {"last_loss", s.last_loss},
                      {"output", s.output.string()}, {"dataset", (a.o.out_dir / "sft.jsonl").string()},
                      {"log", (a.o.out_dir / "train_log.jsonl").string()}};
  if (a.json_out) {
    std::cout << j.dump() << std::endl;
    return;
  }
  Table t({"examples", "left out (too long)", "steps", "resumed at", "first loss", "last loss", "output"},
          {true, true, true, true, true, true, false});
  t.add_row({std::to_string(s.examples), std::to_string(s.too_long), std::to_string(s.steps),
             s.resumed_at ? std::to_string(s.resumed_at) : "-", format_fixed(s.first_loss, 4),
             format_fixed(s.last_loss, 4), s.output.string()});
  t.print(std::cout);
  std::cout << "\ndataset " << j["dataset"].get<std::string>() << ", per-step log " << j["log"].get<std::string>()
            << (a.o.full ? "" : "; the adapter loads in PEFT (PeftModel.from_pretrained) and vLLM (--lora-modules)") << "\n";
}

}  // namespace

void register_train(CLI::App& app) {
  CLI::App* train = app.add_subcommand("train", "Train a model on the evaluator's verdicts (CUDA-L1's stages)");
  train->require_subcommand(1);
  auto a = std::make_shared<TrainArgs>();
  CLI::App* sft = train->add_subcommand("sft", "Stage 1: supervised fine-tuning on the store's accepted answers "
                                               "(at most N per task and source), LoRA or every weight");
  sft->add_option("--model", a->model, "Hugging Face model folder (config.json, safetensors, tokenizer.json)")->required();
  sft->add_option("--out", a->out, "output folder; an unfinished run there resumes from its checkpoint")->required();
  sft->add_option("--db", a->db, "SQLite store (default $CUDAL1_DB, else ~/.cache/cudal1/results.db)");
  sft->add_option("--run", a->o.store_run, "only this optimisation run's answers (default: every run)");
  sft->add_option("--per-task", a->o.per_task_and_source, "answers per task and source at most")->capture_default_str();
  sft->add_flag("--full", a->o.full, "train every weight instead of a LoRA adapter");
  sft->add_option("--lora-r", a->o.lora.r, "adapter rank")->check(CLI::PositiveNumber)->capture_default_str();
  sft->add_option("--lora-alpha", a->o.lora.alpha, "adapter alpha (scaling alpha / r)")->capture_default_str();
  sft->add_option("--lora-dropout", a->o.lora.dropout, "dropout on the adapter's input")->capture_default_str();
  sft->add_option("--lora-targets", a->targets, "comma-separated linear layers (default: every attention and MLP projection)");
  sft->add_option("--lr", a->o.optim.lr, "peak learning rate")->capture_default_str();
  sft->add_option("--min-lr-ratio", a->o.optim.min_lr_ratio, "final learning rate as a share of the peak")->capture_default_str();
  sft->add_option("--warmup", a->o.optim.warmup_steps, "warm-up steps")->capture_default_str();
  sft->add_option("--weight-decay", a->o.optim.weight_decay, "AdamW weight decay")->capture_default_str();
  sft->add_option("--max-grad-norm", a->o.optim.max_grad_norm, "gradient-norm clip (0: none)")->capture_default_str();
  sft->add_option("--accumulation", a->o.optim.accumulation, "micro-batches per optimiser step")->check(CLI::PositiveNumber)->capture_default_str();
  sft->add_option("--epochs", a->o.epochs, "passes over the data")->check(CLI::PositiveNumber)->capture_default_str();
  sft->add_option("--batch", a->o.batch, "examples per micro-batch")->check(CLI::PositiveNumber)->capture_default_str();
  sft->add_option("--max-tokens", a->o.max_tokens, "longer examples (prompt + answer) are left out")->capture_default_str();
  sft->add_option("--seed", a->o.seed, "data order and adapter initialisation")->capture_default_str();
  sft->add_option("--checkpoint-every", a->o.checkpoint_every, "optimiser steps between checkpoints")->capture_default_str();
  sft->add_option("-d,--device", a->o.device, "cpu, cuda or cuda:N")->capture_default_str();
  sft->add_option("--dtype", a->o.dtype, "float32, bfloat16 or float16")->capture_default_str();
  sft->add_option("--chat-format", a->chat_format, "chatml or llama3, when the model's chat template is not recognised");
  sft->add_flag("--json", a->json_out, "print the summary as one JSON object");
  sft->callback([a] { run_train_sft(*a); });
}

}  // namespace cudal1::cli
