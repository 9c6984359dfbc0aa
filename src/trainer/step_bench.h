// trainer/step_bench.h — times the trainer's training step on a model, for the comparison with
// the same step in PyTorch from Python (bench/train_step_torch.py, issue 8).
//
// One step is what every stage does per micro-batch: completion_logprobs over the whole sequence
// (every token after the first is a completion token), sft_loss, backward, then the Optimizer's
// clipping and AdamW update. The batch is B rows of T random token ids (seeded), every row full
// length, so no attention mask is passed (the fused attention can then use its causal kernel; the
// Python script does the same). The learning rate is constant: the schedule is not being measured.
// Steps are timed wall-clock between device synchronisations, after `warmup` untimed steps.
//
// With `dump`, the run also writes what bench/train_step_torch.py --check needs to replay it
// exactly (the ids, the adapter's initial factors) and to compare (each step's loss and gradient
// norm), so the comparison does not depend on two random generators agreeing.
#pragma once

#include "trainer/lora.h"
#include "trainer/train.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cudal1::trainer {

struct StepBenchOptions {
  std::filesystem::path model_dir;
  bool full = false;            // every weight trains; else a LoRA adapter
  LoraConfig lora;              // dropout defaults to 0 here: masks would differ from Python's
  OptimConfig optim;
  int64_t batch = 4, seq = 512, steps = 10, warmup = 2;
  std::string device = "cpu";
  torch::Dtype dtype = torch::kFloat32;
  uint64_t seed = 0;            // token ids and the adapter's initialisation
  std::filesystem::path dump;   // empty: none (see above)

  StepBenchOptions() { lora.dropout = 0.0; }
};

struct StepBenchResult {
  std::string attention;        // attention_kind(): "sdpa" or "matmul"
  std::string torch_version, device, dtype;
  int64_t parameters = 0, trainable = 0;
  std::vector<double> losses, grad_norms;  // every step, warm-up included
  std::vector<double> step_ms;             // the timed steps
  double median_ms = 0, mean_ms = 0, tokens_per_s = 0;
  std::optional<int64_t> peak_memory_bytes;  // the CUDA caching allocator's peak, when on CUDA
};

// Throws Error(usage) for sizes that cannot run (seq < 2, a device this libtorch lacks) and what
// load_causal_lm throws for the model folder. `progress(step, total)` after each step.
StepBenchResult run_step_bench(const StepBenchOptions& options,
                               const std::function<void(int64_t, int64_t)>& progress = {});

// The result as bench/train_step_torch.py prints its own (the same field names).
nlohmann::json step_bench_json(const StepBenchOptions& options, const StepBenchResult& result);

}  // namespace cudal1::trainer
