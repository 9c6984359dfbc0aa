// trainer/step_bench.cpp — the timed training step (see step_bench.h).
#include "trainer/step_bench.h"

#include "core/error.h"
#include "trainer/device.h"
#include "trainer/objectives.h"
#include "trainer/safetensors.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>
#include <torch/version.h>

#ifdef CUDAL1_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>

namespace cudal1::trainer {

namespace {

// Where the step's work has finished: CUDA kernels run behind the host's back.
void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

std::optional<int64_t> reset_peak_memory(const torch::Device& device, bool read) {
#ifdef CUDAL1_TORCH_CUDA
  if (device.is_cuda()) {
    const c10::DeviceIndex index = device.has_index() ? device.index() : 0;
    if (!read) {
      c10::cuda::CUDACachingAllocator::resetPeakStats(index);
      return std::nullopt;
    }
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  }
#endif
  return std::nullopt;
}

}  // namespace

StepBenchResult run_step_bench(const StepBenchOptions& o, const std::function<void(int64_t, int64_t)>& progress) {
  if (o.seq < 2) throw Error(ErrorKind::usage, "a sequence needs at least 2 tokens", "pass --seq 2 or more");
  if (o.batch < 1 || o.steps < 1 || o.warmup < 0)
    throw Error(ErrorKind::usage, "batch and steps must be positive, warm-up not negative", "fix --batch, --steps, --warmup");
  const torch::Device device = parse_device(o.device, "-d");

  auto model = load_causal_lm(o.model_dir, o.dtype, device);
  StepBenchResult r;
  r.attention = attention_kind();
  r.torch_version = TORCH_VERSION;
  r.device = device.str();
  r.dtype = dtype_name(o.dtype);
  for (auto& [name, p] : model->base_parameters()) r.parameters += p.numel();

  std::vector<std::pair<std::string, torch::Tensor>> trainable;
  if (o.full) {
    trainable = model->base_parameters();
    for (auto& [name, p] : trainable) p.set_requires_grad(true);
  } else {
    apply_lora(*model, o.lora, o.seed);
    trainable = lora_parameters(*model);
  }
  for (auto& [name, p] : trainable) r.trainable += p.numel();
  std::map<std::string, torch::Tensor> dumped;
  if (!o.dump.empty() && !o.full)
    for (auto& [name, p] : trainable) dumped["init." + name] = p.detach().clone();

  OptimConfig optim = o.optim;
  optim.warmup_steps = 0;
  optim.total_steps = o.warmup + o.steps;
  optim.min_lr_ratio = 1.0;
  optim.accumulation = 1;
  Optimizer optimizer(trainable, optim);
  model->train(true);

  auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed);
  TokenBatch batch;
  batch.ids = torch::randint(model->config().vocab_size, {o.batch, o.seq}, gen, torch::kInt64);
  batch.completion_mask = torch::ones({o.batch, o.seq - 1}, torch::kFloat32).to(device);
  if (!o.dump.empty()) dumped["input_ids"] = batch.ids.clone();
  batch.ids = batch.ids.to(device);

  synchronize(device);
  reset_peak_memory(device, false);
  const int64_t total = o.warmup + o.steps;
  for (int64_t i = 0; i < total; ++i) {
    synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    torch::Tensor loss = sft_loss(completion_logprobs(*model, batch), batch.completion_mask);
    StepStats stats = optimizer.backward_and_step(loss);
    synchronize(device);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= o.warmup) r.step_ms.push_back(ms);
    // Read after the clock stops: the copy to the host is not part of the step.
    r.losses.push_back(loss.item<double>());
    r.grad_norms.push_back(stats.grad_norm);
    if (progress) progress(i + 1, total);
  }
  r.peak_memory_bytes = reset_peak_memory(device, true);

  std::vector<double> sorted = r.step_ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  r.median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  r.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / double(n);
  r.tokens_per_s = double(o.batch * o.seq) / (r.mean_ms / 1000.0);

  if (!o.dump.empty()) {
    dumped["loss"] = torch::tensor(r.losses, torch::kFloat64);
    dumped["grad_norm"] = torch::tensor(r.grad_norms, torch::kFloat64);
    save_safetensors(o.dump, dumped, {{"attention", r.attention}, {"torch_version", r.torch_version}});
  }
  return r;
}

nlohmann::json step_bench_json(const StepBenchOptions& o, const StepBenchResult& r) {
  nlohmann::json j = {
      {"implementation", "cudal1 (C++, libtorch)"},
      {"torch_version", r.torch_version},
      {"attention", r.attention},
      {"device", r.device},
      {"dtype", r.dtype},
      {"mode", o.full ? "full" : "lora"},
      {"lora_r", o.full ? nlohmann::json(nullptr) : nlohmann::json(o.lora.r)},
      {"batch", o.batch},
      {"seq", o.seq},
      {"steps", o.steps},
      {"warmup", o.warmup},
      {"parameters", r.parameters},
      {"trainable", r.trainable},
      {"median_ms", r.median_ms},
      {"mean_ms", r.mean_ms},
      {"tokens_per_s", r.tokens_per_s},
      {"peak_memory_bytes", r.peak_memory_bytes ? nlohmann::json(*r.peak_memory_bytes) : nlohmann::json(nullptr)},
      {"first_loss", r.losses.front()},
      {"last_loss", r.losses.back()},
      {"step_ms", r.step_ms},
  };
  return j;
}

}  // namespace cudal1::trainer
