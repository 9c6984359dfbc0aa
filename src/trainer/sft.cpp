#include "trainer/sft.h"

#include "trainer/chat_data.h"
#include "trainer/objectives.h"
#include "trainer/stage_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <numeric>
#include <random>

#include "core/error.h"
#include "core/hash.h"
#include "rl/sft_dataset.h"
#include "tokenizer/tokenizer.h"

namespace fs = std::filesystem;

namespace cudal1::trainer {

namespace {

using Row = std::pair<std::vector<int64_t>, std::vector<int64_t>>;

// How many tokens the sampler writes for this answer: up to and including the first stop token
// (the template's closing after it, a newline for ChatML, is never sampled).
std::size_t sampled_length(const std::vector<int64_t>& answer, const std::vector<int64_t>& stops) {
  auto stop = std::find_first_of(answer.begin(), answer.end(), stops.begin(), stops.end());
  return stop == answer.end() ? answer.size() : std::size_t(stop - answer.begin()) + 1;
}

// Micro-batch m of the whole run (epochs one after another, each in its own seeded order). The
// order is drawn once per epoch and kept for that epoch's micro-batches.
class MicroBatches {
 public:
  MicroBatches(const std::vector<Row>& rows, int batch, uint64_t seed) : rows_(rows), batch_(batch), seed_(seed) {}
  int64_t per_epoch() const { return (int64_t(rows_.size()) + batch_ - 1) / batch_; }
  std::vector<Row> get(int64_t m) {
    const int64_t epoch = m / per_epoch(), first = (m % per_epoch()) * batch_;
    if (epoch != epoch_) {
      order_.resize(rows_.size());
      std::iota(order_.begin(), order_.end(), 0);
      std::shuffle(order_.begin(), order_.end(), std::mt19937_64(seed_ + uint64_t(epoch)));
      epoch_ = epoch;
    }
    std::vector<Row> out;
    for (int64_t i = first; i < std::min<int64_t>(first + batch_, int64_t(rows_.size())); ++i) out.push_back(rows_[order_[i]]);
    return out;
  }

 private:
  const std::vector<Row>& rows_;
  int batch_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<std::size_t> order_;
};

// Every rank resumes from its own reading of OUT/checkpoint; unless they all read the same step
// their micro-batches would not pair up. The step's variance over the ranks is 0 exactly then.
void check_same_resume_step(DataParallel& dp, int64_t step) {
  const double w = dp.world_size(), mean = dp.all_reduce_sum(double(step)) / w,
               mean_square = dp.all_reduce_sum(double(step) * double(step)) / w;
  if (mean_square - mean * mean > 1e-6)
    throw Error(ErrorKind::input,
                "rank " + std::to_string(dp.rank()) + " resumes at step " + std::to_string(step) +
                    " and another rank at a different one",
                "give every rank the same --out, a folder they all see (one host, or a shared file system)");
}

}  // namespace

SftRunSummary run_sft(Store& store, const SftRunOptions& o, const std::function<void(int64_t, int64_t, double)>& progress) {
  SftRunSummary s;
  DataParallel* dp = o.data_parallel;
  const int world = dp ? dp->world_size() : 1, rank = dp ? dp->rank() : 0;
  const bool writes = rank == 0;
  if (writes) fs::create_directories(o.out_dir);
  auto examples = rl::select_sft_examples(store, {o.store_run, o.per_task_and_source});
  if (examples.empty())
    throw Error(ErrorKind::input, "the store holds no accepted answer to fine-tune on" +
                                      (o.store_run.empty() ? std::string() : " in run " + o.store_run),
                "run `cudal1 optimize` (or bench a kernel set) into this store first, or name another --run");
  ChatEncoder encoder(tokenizer::Tokenizer::from_directory(o.model_dir), o.chat_format);
  if (o.contrastive.copies > 0) {
    rl::ContrastiveCopies c = o.contrastive;
    c.budget.max_tokens = std::size_t(std::max<int64_t>(0, o.max_tokens));
    c.budget.count_tokens = [&encoder](const std::string& text) { return encoder.prompt(text).size(); };
    c.answer_tokens = [&encoder](const std::string& text) { return encoder.prompt_and_answer("", text).second.size(); };
    std::vector<rl::SftExample> copies = rl::contrastive_copies(store, {o.store_run, o.per_task_and_source}, examples, c);
    examples.insert(examples.end(), copies.begin(), copies.end());
  }
  if (writes) rl::write_sft_jsonl(examples, o.out_dir / "sft.jsonl");

  std::vector<Row> rows;
  const std::vector<int64_t> stops = encoder.stop_token_ids();
  for (auto& e : examples) {
    Row r = encoder.prompt_and_answer(e.prompt, e.completion);
    if (int64_t(r.first.size() + r.second.size()) > o.max_tokens || r.second.empty()) {
      ++s.too_long;
      continue;
    }
    if (o.max_answer_tokens > 0 && int64_t(sampled_length(r.second, stops)) > o.max_answer_tokens) {
      ++s.answer_too_long;
      continue;
    }
    if (!e.shown.empty()) ++s.contrastive;
    rows.push_back(std::move(r));
  }
  s.examples = rows.size();
  if (rows.empty())
    throw Error(ErrorKind::input,
                "every example is too long: " + std::to_string(s.too_long) + " longer than --max-tokens " + std::to_string(o.max_tokens) +
                    ", " + std::to_string(s.answer_too_long) + " with an answer longer than --max-answer-tokens " +
                    std::to_string(o.max_answer_tokens),
                "raise the limit that left them out");

  const torch::Device device = rank_device(o.device, dp ? dp->config() : DistributedConfig{});
  auto model = load_causal_lm(o.model_dir, dtype_from_name(o.dtype), device);
  if (!o.full) apply_lora(*model, o.lora, o.seed);
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> params = trainable_parameters(*model, o.full);
  const int accumulation = int(std::max<int64_t>(1, o.optim.accumulation));
  MicroBatches batches(rows, o.batch * world, o.seed);
  const int64_t micro_total = batches.per_epoch() * o.epochs;
  OptimConfig oc = o.optim;
  oc.total_steps = micro_total / accumulation;
  if (oc.total_steps == 0)
    throw Error(ErrorKind::usage, "fewer micro-batches (" + std::to_string(micro_total) + ") than --accumulation",
                "lower --accumulation or --batch, or add --epochs");
  Optimizer opt(params, oc);
  if (load_stage_checkpoint(opt, o.out_dir, "sft")) s.resumed_at = opt.step();
  if (dp && world > 1) {
    check_same_resume_step(*dp, opt.step());
    // Factors drawn from the same seed already agree; the broadcast makes sure, whatever drew them.
    std::vector<torch::Tensor> tensors;
    for (auto& [name, t] : params) tensors.push_back(t);
    dp->broadcast_from_rank0(tensors);
    opt.set_gradient_sync([dp](std::vector<torch::Tensor>& grads) { dp->all_reduce_mean(grads); });
  }
  const int64_t pad = encoder.pad_token_id();
  std::ofstream log;
  if (writes) log = open_train_log(o.out_dir, s.resumed_at);  // cut back to what the checkpoint holds
  const auto start = std::chrono::steady_clock::now();
  double step_loss = 0;
  bool first = true;
  for (int64_t m = opt.step() * accumulation; m < oc.total_steps * accumulation; ++m) {
    // This rank's rows of the global micro-batch, a contiguous share. Its mean loss weighs
    // share = rows / global rows of the global mean; scaled by world, the all-reduce's mean over
    // ranks then gives exactly the global mean's gradient, even for an uneven last batch.
    const std::vector<Row> global = batches.get(m);
    const std::size_t from = global.size() * rank / world, to = global.size() * (rank + 1) / world;
    const double share = double(to - from) / double(global.size());
    torch::Tensor loss;
    if (to > from) {
      TokenBatch b = make_batch(std::vector<Row>(global.begin() + from, global.begin() + to), pad, device);
      loss = sft_loss(completion_logprobs(*model, b), b.completion_mask);
      step_loss += loss.item<double>() * share / accumulation;
      if (world > 1) loss = loss * (share * world);
    }
    StepStats st = opt.backward_and_step(loss);
    if (!st.stepped) continue;
    if (dp) step_loss = dp->all_reduce_sum(step_loss);
    if (first) {
      s.first_loss = step_loss;
      first = false;
    }
    s.last_loss = step_loss;
    if (writes) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      log << nlohmann::json{{"stage", "sft"}, {"step", st.step}, {"loss", step_loss}, {"lr", st.lr},
                            {"grad_norm", st.grad_norm}, {"seconds", secs}}.dump() << "\n";
      log.flush();
    }
    if (progress) progress(st.step, oc.total_steps, step_loss);
    step_loss = 0;
    if (writes && o.checkpoint_every > 0 && st.step % o.checkpoint_every == 0 && st.step < oc.total_steps)
      save_stage_checkpoint(opt, {{"objective", "sft"}}, o.out_dir);
  }
  s.steps = opt.step();
  model->eval();
  s.output = o.out_dir / (o.full ? "model" : "adapter");
  if (writes) {
    save_stage_output(*model, o.full, o.lora, o.model_dir, o.out_dir);
    remove_stage_checkpoint(o.out_dir);  // finished: a later run with this OUT starts over
  }
  if (dp) dp->barrier();  // every rank returns once the output is there
  return s;
}

}  // namespace cudal1::trainer
