#include "trainer/sft.h"

#include "trainer/objectives.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"
#include "rl/sft_dataset.h"
#include "tokenizer/tokenizer.h"

namespace fs = std::filesystem;

namespace cudal1::trainer {

namespace {

using Row = std::pair<std::vector<int64_t>, std::vector<int64_t>>;

std::vector<int64_t> widen(const std::vector<int32_t>& ids) { return {ids.begin(), ids.end()}; }

// The prompt as the chat template puts it before the answer, and the answer with whatever the
// template closes an assistant turn with (ChatML's <|im_end|>, Llama-3's <|eot_id|>).
Row render(const tokenizer::Tokenizer& tok, const rl::SftExample& e, std::optional<tokenizer::ChatFormat> format) {
  std::vector<tokenizer::ChatMessage> turn = {{"user", e.prompt}};
  std::string prompt = tok.apply_chat_template(turn, true, format);
  turn.push_back({"assistant", e.completion});
  std::string whole = tok.apply_chat_template(turn, false, format);
  std::string answer = whole.compare(0, prompt.size(), prompt) == 0 ? whole.substr(prompt.size()) : e.completion;
  return {widen(tok.encode(prompt)), widen(tok.encode(answer))};
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

}  // namespace

SftRunSummary run_sft(Store& store, const SftRunOptions& o, const std::function<void(int64_t, int64_t, double)>& progress) {
  SftRunSummary s;
  fs::create_directories(o.out_dir);
  auto examples = rl::select_sft_examples(store, {o.store_run, o.per_task_and_source});
  if (examples.empty())
    throw Error(ErrorKind::input, "the store holds no accepted answer to fine-tune on" +
                                      (o.store_run.empty() ? std::string() : " in run " + o.store_run),
                "run `cudal1 optimize` (or bench a kernel set) into this store first, or name another --run");
  rl::write_sft_jsonl(examples, o.out_dir / "sft.jsonl");

  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_directory(o.model_dir);
  std::vector<Row> rows;
  for (auto& e : examples) {
    Row r = render(tok, e, o.chat_format);
    if (int64_t(r.first.size() + r.second.size()) > o.max_tokens || r.second.empty()) {
      ++s.too_long;
      continue;
    }
    rows.push_back(std::move(r));
  }
  s.examples = rows.size();
  if (rows.empty())
    throw Error(ErrorKind::input, "every example is longer than --max-tokens " + std::to_string(o.max_tokens),
                "raise --max-tokens");

  torch::Device device(o.device);
  auto model = load_causal_lm(o.model_dir, dtype_from_name(o.dtype), device);
  if (!o.full) apply_lora(*model, o.lora, o.seed);
  model->train();
  std::vector<std::pair<std::string, torch::Tensor>> params;
  if (o.full) {
    for (auto& p : model->named_parameters()) params.push_back({p.key(), p.value()});
  } else {
    params = lora_parameters(*model);
  }
  const int accumulation = int(std::max<int64_t>(1, o.optim.accumulation));
  MicroBatches batches(rows, o.batch, o.seed);
  const int64_t micro_total = batches.per_epoch() * o.epochs;
  OptimConfig oc = o.optim;
  oc.total_steps = micro_total / accumulation;
  if (oc.total_steps == 0)
    throw Error(ErrorKind::usage, "fewer micro-batches (" + std::to_string(micro_total) + ") than --accumulation",
                "lower --accumulation or --batch, or add --epochs");
  Optimizer opt(params, oc);
  fs::path ckpt = o.out_dir / "checkpoint";
  if (fs::exists(ckpt / "trainer_state.json")) {
    opt.load_checkpoint(ckpt);
    s.resumed_at = opt.step();
  }
  const int64_t pad = tok.special_tokens().pad.value_or(tok.special_tokens().eos.value_or(0));
  // The log keeps the steps the checkpoint holds; later ones are trained again.
  fs::path log_path = o.out_dir / "train_log.jsonl";
  std::string kept;
  if (fs::exists(log_path)) {
    std::istringstream old(read_file(log_path));
    for (std::string line; std::getline(old, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("step", int64_t(0)) <= s.resumed_at) kept += line + "\n";
    }
  }
  write_file(log_path, kept, "check that the output folder is writable");
  std::ofstream log(log_path, std::ios::app);
  double step_loss = 0;
  bool first = true;
  for (int64_t m = opt.step() * accumulation; m < oc.total_steps * accumulation; ++m) {
    TokenBatch b = make_batch(batches.get(m), pad, device);
    torch::Tensor loss = sft_loss(completion_logprobs(*model, b), b.completion_mask);
    step_loss += loss.item<double>() / accumulation;
    StepStats st = opt.backward_and_step(loss);
    if (!st.stepped) continue;
    if (first) s.first_loss = step_loss, first = false;
    s.last_loss = step_loss;
    log << nlohmann::json{{"step", st.step}, {"loss", step_loss}, {"lr", st.lr}, {"grad_norm", st.grad_norm}}.dump() << "\n";
    log.flush();
    if (progress) progress(st.step, oc.total_steps, step_loss);
    step_loss = 0;
    if (o.checkpoint_every > 0 && st.step % o.checkpoint_every == 0 && st.step < oc.total_steps) {
      // Written aside, then swapped in: a crash while saving leaves the previous checkpoint.
      fs::path next = o.out_dir / "checkpoint.new";
      fs::remove_all(next);
      opt.save_checkpoint(next);
      fs::remove_all(ckpt);
      fs::rename(next, ckpt);
    }
  }
  s.steps = opt.step();
  model->eval();
  if (o.full) {
    s.output = o.out_dir / "model";
    model->save_pretrained(s.output);
  } else {
    s.output = o.out_dir / "adapter";
    LoraConfig lc = o.lora;
    lc.base_model_name_or_path = fs::absolute(o.model_dir).string();
    save_lora(*model, lc, s.output);
  }
  fs::remove_all(ckpt);  // finished: a later run with this OUT starts over
  return s;
}

}  // namespace cudal1::trainer
