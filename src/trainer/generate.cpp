// trainer/generate.cpp — batched sampling with the KV cache (see generate.h).
#include "trainer/generate.h"

#include "core/error.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <algorithm>
#include <set>

namespace cudal1::trainer {

const char* finish_reason_name(FinishReason reason) { return reason == FinishReason::stop ? "stop" : "length"; }

namespace {

// Next tokens [G] from logits [G, V] (float32, CPU).
torch::Tensor pick(const torch::Tensor& logits, const SamplingOptions& options, at::Generator& gen) {
  if (options.temperature <= 0.0) return logits.argmax(-1);
  auto probs = at::softmax(logits / options.temperature, -1);  // [G, V]
  if (options.top_p < 1.0) {
    // Keep the most probable tokens until their mass reaches top_p (at least one); a token is
    // dropped when the mass before it already reached top_p.
    auto sorted = probs.sort(-1, /*descending=*/true);
    auto values = std::get<0>(sorted), order = std::get<1>(sorted);
    auto before = values.cumsum(-1) - values;
    values = values.masked_fill(before >= options.top_p, 0.0);
    probs = torch::zeros_like(probs).scatter(-1, order, values);
  }
  return at::multinomial(probs, 1, /*replacement=*/false, gen).squeeze(-1);
}

}  // namespace

std::vector<Generation> generate(CausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                                 const SamplingOptions& options) {
  if (prompts.empty()) return {};
  if (options.max_new_tokens <= 0) return std::vector<Generation>(prompts.size());
  if (options.top_p <= 0.0 || options.top_p > 1.0)
    throw Error(ErrorKind::usage, "top_p must be in (0, 1]", "pass a nucleus mass such as 0.95, or 1 for none");
  size_t longest = 0;
  for (const auto& p : prompts) {
    if (p.empty()) throw Error(ErrorKind::usage, "a prompt has no tokens", "every prompt needs at least one token");
    longest = std::max(longest, p.size());
  }
  const int64_t G = static_cast<int64_t>(prompts.size()), T = static_cast<int64_t>(longest);
  const auto device = model.embedding_weight().device();

  // Left padding: every prompt ends at column T - 1, so the next token of each is read from the
  // same column and appended at the same one.
  std::vector<int64_t> id_buf(static_cast<size_t>(G * T), options.pad_token_id), mask_buf(static_cast<size_t>(G * T), 0);
  for (int64_t g = 0; g < G; ++g) {
    const auto& p = prompts[g];
    const size_t row = static_cast<size_t>(g * T), pad = static_cast<size_t>(T) - p.size();
    std::copy(p.begin(), p.end(), id_buf.begin() + static_cast<std::ptrdiff_t>(row + pad));
    std::fill(mask_buf.begin() + static_cast<std::ptrdiff_t>(row + pad), mask_buf.begin() + static_cast<std::ptrdiff_t>(row + T), 1);
  }
  auto ids = torch::from_blob(id_buf.data(), {G, T}, torch::kInt64).clone();   // [G, T]
  auto mask = torch::from_blob(mask_buf.data(), {G, T}, torch::kInt64).clone();

  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.train(false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  const std::set<int64_t> stops(options.stop_token_ids.begin(), options.stop_token_ids.end());
  KvCache cache(model.config(), G, T + options.max_new_tokens,
                torch::TensorOptions().dtype(model.embedding_weight().scalar_type()).device(device));

  std::vector<Generation> out(prompts.size());
  std::vector<bool> done(prompts.size(), false);
  auto full_mask = mask.to(device);
  auto logits = model.forward(ids.to(device), full_mask, &cache).select(1, T - 1);  // [G, V]
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    auto cpu_logits = logits.to(torch::kCPU, torch::kFloat32);
    auto logprobs = at::log_softmax(cpu_logits, -1);
    auto next = pick(cpu_logits, options, gen);  // [G]
    auto chosen = logprobs.gather(-1, next.unsqueeze(-1)).squeeze(-1);
    auto next_acc = next.accessor<int64_t, 1>();
    auto lp_acc = chosen.accessor<float, 1>();
    bool all_done = true;
    for (int64_t g = 0; g < G; ++g) {
      if (done[g]) continue;
      out[g].tokens.push_back(next_acc[g]);
      out[g].logprobs.push_back(lp_acc[g]);
      if (stops.count(next_acc[g])) {
        out[g].finish = FinishReason::stop;
        done[g] = true;
      }
      all_done = all_done && done[g];
    }
    if (all_done || step + 1 == options.max_new_tokens) break;
    // Finished rows keep decoding (their tokens are ignored): one batch, no reshuffling.
    full_mask = torch::cat({full_mask, torch::ones({G, 1}, full_mask.options())}, 1);
    logits = model.forward(next.unsqueeze(1).to(device), full_mask, &cache).select(1, 0);
  }
  model.train(was_training);
  return out;
}

}  // namespace cudal1::trainer
