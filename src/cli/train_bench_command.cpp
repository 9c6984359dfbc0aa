// cli/train_bench_command: `cudal1 train bench-step` — times the trainer's training step
// (trainer/step_bench.h) for the comparison with bench/train_step_torch.py, the same step in
// PyTorch from Python.
#include <cstdio>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/device_option.h"
#include "report/table.h"
#include "trainer/step_bench.h"

namespace cudal1::cli {

namespace {

struct BenchArgs {
  trainer::StepBenchOptions o;
  std::string model, dump, dtype = "float32";
  bool json_out = false;
};

void run_train_bench(BenchArgs& a) {
  a.o.model_dir = a.model;
  a.o.dump = a.dump;
  a.o.dtype = trainer::dtype_from_name(a.dtype);
  const trainer::StepBenchResult r = trainer::run_step_bench(a.o, [](int64_t step, int64_t total) {
    std::fprintf(stderr, "\rstep %lld/%lld   ", static_cast<long long>(step), static_cast<long long>(total));
  });
  std::fprintf(stderr, "\n");
  const nlohmann::json j = trainer::step_bench_json(a.o, r);
  if (a.json_out) {
    std::cout << j.dump() << std::endl;
    return;
  }
  Table t({"attention", "device", "dtype", "trains", "batch x seq", "median ms", "mean ms", "tokens/s", "peak MiB",
           "first loss", "last loss"},
          {false, false, false, false, true, true, true, true, true, true, true});
  t.add_row({r.attention, r.device, r.dtype, a.o.full ? "every weight" : "LoRA r=" + std::to_string(a.o.lora.r),
             std::to_string(a.o.batch) + " x " + std::to_string(a.o.seq), format_fixed(r.median_ms, 2),
             format_fixed(r.mean_ms, 2), format_fixed(r.tokens_per_s, 0),
             r.peak_memory_bytes ? format_fixed(double(*r.peak_memory_bytes) / (1 << 20), 0) : "-",
             format_fixed(r.losses.front(), 4), format_fixed(r.losses.back(), 4)});
  t.print(std::cout);
  std::cout << "\nlibtorch " << r.torch_version << "; " << r.trainable << " of " << r.parameters
            << " parameters train; " << a.o.steps << " timed steps after " << a.o.warmup << " of warm-up\n";
}

}  // namespace

void register_train_bench(CLI::App& train) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = train.add_subcommand(
      "bench-step", "Time one training step (log-probabilities, SFT loss, backward, clipped AdamW) on random tokens, "
                    "to compare with bench/train_step_torch.py");
  cmd->add_option("--model", a->model, "Hugging Face model folder (e.g. one `cudal1 train init` made)")->required();
  cmd->add_flag("--full", a->o.full, "train every weight instead of a LoRA adapter");
  cmd->add_option("--lora-r", a->o.lora.r, "adapter rank")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--lora-alpha", a->o.lora.alpha, "adapter alpha (scaling alpha / r)")->capture_default_str();
  cmd->add_option("--lora-targets", a->o.lora.target_modules, "comma-separated linear layers (default: every projection)")
      ->delimiter(',');
  cmd->add_option("--batch", a->o.batch, "rows per step")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seq", a->o.seq, "tokens per row")->capture_default_str();
  cmd->add_option("--steps", a->o.steps, "timed steps")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--warmup", a->o.warmup, "untimed steps first")->capture_default_str();
  cmd->add_option("--lr", a->o.optim.lr, "AdamW learning rate (constant)")->capture_default_str();
  cmd->add_option("--weight-decay", a->o.optim.weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--max-grad-norm", a->o.optim.max_grad_norm, "gradient-norm clip (0: none)")->capture_default_str();
  cmd->add_option("--seed", a->o.seed, "token ids and adapter initialisation")->capture_default_str();
  cmd->add_option("-d,--device", a->o.device, "cpu, cuda or cuda:N")->transform(device_names())->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "the model's dtype: float32, bfloat16 or float16")->capture_default_str();
  cmd->add_option("--dump", a->dump, "write the ids, initial adapter and per-step losses here (.safetensors) for "
                                     "bench/train_step_torch.py --check");
  cmd->add_flag("--json", a->json_out, "print the result as one JSON object");
  cmd->callback([a] { run_train_bench(*a); });
}

}  // namespace cudal1::cli
