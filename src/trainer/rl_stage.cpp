// trainer/rl_stage.cpp — stages 2 and 3: a loop round with the model as policy, then a step on it
// (see rl_stage.h).
#include "trainer/rl_stage.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "trainer/stage_io.h"

namespace fs = std::filesystem;

namespace cudal1::trainer {

const char* rl_objective_name(RlObjective objective) { return objective == RlObjective::selfsup ? "selfsup" : "crl"; }

namespace {

std::pair<double, double> mean_std(const std::vector<double>& xs) {
  if (xs.empty()) return {0, 0};
  double m = 0, v = 0;
  for (double x : xs) m += x;
  m /= double(xs.size());
  for (double x : xs) v += (x - m) * (x - m);
  return {m, std::sqrt(v / double(xs.size()))};
}

// The round's answers with their tokens: as sampled when this process sampled them, else (a
// resumed run) the stored text encoded again. Answers with nothing to train on are left out.
std::vector<RoundAnswer> round_rows(const std::vector<RlSample>& samples, ModelPolicy& policy, const ChatEncoder& encoder,
                                 RlRoundStats& stats) {
  std::vector<RoundAnswer> rows;
  std::vector<double> raw, normalised;
  std::string task;
  std::vector<SampledTokens> sampled;
  for (const RlSample& x : samples) {
    if (x.task_id != task) {
      task = x.task_id;
      sampled = policy.take_sampled(x.task_id, x.round);
    }
    ++stats.samples;
    stats.correct += x.accepted;
    raw.push_back(x.raw_reward), normalised.push_back(x.reward);
    if (x.outcome == "policy_error") continue;
    RoundAnswer r;
    if (std::size_t(x.slot) < sampled.size()) {
      r.prompt = sampled[x.slot].prompt;
      r.completion = sampled[x.slot].completion;
    } else {
      std::tie(r.prompt, r.completion) = encoder.prompt_and_answer(x.prompt, x.completion);
    }
    if (r.completion.empty()) continue;
    r.advantage = x.advantage;
    r.accepted = x.accepted;
    rows.push_back(std::move(r));
  }
  std::tie(stats.raw_reward_mean, stats.raw_reward_std) = mean_std(raw);
  std::tie(stats.reward_mean, stats.reward_std) = mean_std(normalised);
  return rows;
}

std::vector<std::vector<const RoundAnswer*>> chunks(const std::vector<const RoundAnswer*>& rows, int size) {
  std::vector<std::vector<const RoundAnswer*>> out;
  for (std::size_t i = 0; i < rows.size(); i += std::size_t(size))
    out.emplace_back(rows.begin() + std::ptrdiff_t(i), rows.begin() + std::ptrdiff_t(std::min(rows.size(), i + std::size_t(size))));
  return out;
}

TokenBatch batch_of(const std::vector<const RoundAnswer*>& rows, int64_t pad, torch::Device device) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pc;
  for (const RoundAnswer* r : rows) pc.push_back({r->prompt, r->completion});
  return make_batch(pc, pad, device);
}

// Every micro-batch's loss, its part of the round's (TokenReduction), is back-propagated; the
// last one's call takes the optimiser step, so the round's gradients add up to one update.
StepStats backward_share(Optimizer& opt, const torch::Tensor& loss, bool last) {
  if (!last) {
    loss.backward();
    return {};
  }
  return opt.backward_and_step(loss);
}

}  // namespace

void learn_from_round(CausalLM& model, CausalLM* frozen, Optimizer& opt, const std::vector<RoundAnswer>& rows,
                      const RlStepConfig& c, RlRoundStats& st) {
  const torch::Device device = model.embedding_weight().device();
  std::vector<const RoundAnswer*> used;
  for (const RoundAnswer& r : rows)
    if (c.objective == RlObjective::crl || r.accepted) used.push_back(&r);
  st.trained = used.size();
  auto parts = chunks(used, c.micro_batch);
  TokenReduction reduction{c.loss_aggregation, double(used.size()), 0, c.fixed_length};
  double longest = 0;
  for (const RoundAnswer* r : used) {
    reduction.tokens += double(r->completion.size());
    longest = std::max(longest, double(r->completion.size()));
  }
  // One divisor for the whole round, so that its micro-batches' parts add up: without a sampling
  // limit, the round's longest answer (a batch's own width would differ batch to batch).
  if (reduction.fixed_length <= 0) reduction.fixed_length = std::max(1.0, longest);

  if (c.objective == RlObjective::selfsup && !parts.empty()) {
    model.train();  // adapter dropout on: this is supervised learning on the model's own answers
    for (int epoch = 0; epoch < c.ppo_epochs; ++epoch) {
      st.loss = 0;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        TokenBatch b = batch_of(parts[i], c.pad_token_id, device);
        torch::Tensor ones = torch::ones({int64_t(parts[i].size())}, torch::TensorOptions().device(device));
        torch::Tensor loss = reinforce_loss(completion_logprobs(model, b), b.completion_mask, ones, reduction);
        st.loss += loss.item<double>();
        StepStats s = backward_share(opt, loss, i + 1 == parts.size());
        if (s.stepped) {
          st.lr = s.lr;
          st.grad_norm = s.grad_norm;
          st.updated = true;
        }
      }
    }
  } else if (c.objective == RlObjective::crl && !parts.empty()) {
    // The ratio's denominator and the reference, once per round, with dropout off: the policy
    // that sampled is the model as it is now.
    model.eval();
    std::vector<TokenBatch> batches;
    std::vector<torch::Tensor> old_lp, ref_lp, adv;
    {
      torch::NoGradGuard no_grad;
      for (auto& part : parts) {
        batches.push_back(batch_of(part, c.pad_token_id, device));
        old_lp.push_back(completion_logprobs(model, batches.back()));
        if (frozen != nullptr) {
          ref_lp.push_back(completion_logprobs(*frozen, batches.back()));
        } else {
          set_lora_enabled(model, false);
          ref_lp.push_back(completion_logprobs(model, batches.back()));
          set_lora_enabled(model, true);
        }
        std::vector<float> a;
        for (const RoundAnswer* r : part) a.push_back(float(r->advantage));
        adv.push_back(torch::tensor(a).to(device));
      }
    }
    for (int epoch = 0; epoch < c.ppo_epochs; ++epoch) {
      st.loss = st.kl = st.clip_fraction = st.ratio_mean = 0;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const double share = double(parts[i].size()) / double(used.size());
        const double token_share = batches[i].completion_mask.sum().item<double>() / std::max(1.0, reduction.tokens);
        GrpoTerms t = grpo_loss(completion_logprobs(model, batches[i]), old_lp[i], ref_lp[i], adv[i],
                                batches[i].completion_mask, c.grpo, reduction);
        st.loss += t.loss.item<double>();
        st.kl += t.kl_mean * share;  // a mean over answers; the clip fraction and ratio are over tokens
        st.clip_fraction += t.clip_fraction * token_share;
        st.ratio_mean += t.ratio_mean * token_share;
        StepStats s = backward_share(opt, t.loss, i + 1 == parts.size());
        if (s.stepped) {
          st.lr = s.lr;
          st.grad_norm = s.grad_norm;
          st.updated = true;
        }
      }
    }
  }
  model.eval();
}

RlStageSummary run_rl_stage(Store& store, const RlStageOptions& o, const std::function<void(const RlRoundStats&)>& progress,
                            const std::function<void(const rl::LoopProgress&)>& loop_progress) {
  if (o.tasks.empty()) throw Error(ErrorKind::usage, "no task to train on", "name suite tasks or KernelBench files");
  if (o.rounds < 1 || o.ppo_epochs < 1 || o.micro_batch < 1)
    throw Error(ErrorKind::usage, "rounds, PPO epochs and the micro-batch must be at least 1", "pass positive values");
  if (o.full && o.adapter_dir)
    throw Error(ErrorKind::usage, "--adapter continues a LoRA adapter; it cannot go with --full",
                "drop --full, or pass the merged model folder as --model");
  fs::create_directories(o.out_dir);
  const char* objective = rl_objective_name(o.objective);
  RlStageSummary summary;

  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_directory(o.model_dir);
  ChatEncoder encoder(tok, o.chat_format);
  torch::Device device(o.device);
  const torch::Dtype dtype = dtype_from_name(o.dtype);
  std::shared_ptr<CausalLM> model = load_causal_lm(o.model_dir, dtype, device);
  LoraConfig lora = o.lora;
  if (o.adapter_dir) {
    lora = load_lora(*model, *o.adapter_dir);
  } else if (!o.full) {
    apply_lora(*model, lora, o.seed);
  }
  // The KL's reference: the adapters switched off, or (full fine-tuning) the starting weights.
  std::shared_ptr<CausalLM> frozen;
  if (o.full && o.objective == RlObjective::crl) {
    frozen = load_causal_lm(o.model_dir, dtype, device);
    frozen->eval();
    for (auto& p : frozen->parameters()) p.set_requires_grad(false);
  }
  OptimConfig oc = o.optim;
  oc.total_steps = int64_t(o.rounds) * o.ppo_epochs;
  oc.accumulation = 1;
  Optimizer opt(trainable_parameters(*model, o.full), oc);
  rl::LoopConfig c = o.loop;
  if (c.run_dir.empty()) c.run_dir = o.out_dir / "loop";
  if (c.run.empty()) c.run = std::string(objective) + ":" + fs::absolute(o.out_dir).lexically_normal().string();
  if (auto state = load_stage_checkpoint(opt, o.out_dir, objective)) {
    summary.resumed_at = state->value("round", 0);
  } else if (fs::exists(o.out_dir / "adapter") || fs::exists(o.out_dir / "model")) {
    throw Error(ErrorKind::usage, o.out_dir.string() + " holds a finished stage",
                "use another --out (its answers stay in the store under the loop run's name)");
  } else if (!fs::exists(c.run_dir) && !store.run_samples(c.run).empty()) {
    // A stage's folder removed and started again: the loop would take up the store's answers of
    // the earlier run under the same name, and this model would learn from another policy's.
    throw Error(ErrorKind::usage, "the store already holds answers of loop run \"" + c.run + "\", from an earlier stage "
                "with this --out whose folder is gone", "use another --out, or another --db");
  }
  c.patience = INT_MAX;  // training keeps asking every task; the loop's early stop is for search
  summary.loop_run = c.run;
  ModelPolicyOptions po = o.sampling;
  if (po.label.empty()) po.label = model_label(o.model_dir);
  po.keep_tokens = true;  // each round trains on the very tokens it sampled
  ModelPolicy policy(model, encoder, po);
  const RlStepConfig step{o.objective, o.ppo_epochs, o.micro_batch, o.grpo, encoder.pad_token_id(), o.loss_aggregation,
                          double(o.sampling.sampling.max_new_tokens)};

  std::ofstream log = open_train_log(o.out_dir, summary.resumed_at);
  const auto start = std::chrono::steady_clock::now();
  for (int round = summary.resumed_at + 1; round <= o.rounds; ++round) {
    c.rounds = round;
    rl::run_loop(o.tasks, policy, store, c, loop_progress);
    std::vector<RlSample> samples;
    for (RlSample& x : store.run_samples(c.run))
      if (x.round == round) samples.push_back(std::move(x));
    RlRoundStats st;
    st.round = round;
    std::vector<RoundAnswer> rows = round_rows(samples, policy, encoder, st);
    learn_from_round(*model, frozen.get(), opt, rows, step, st);
    model->eval();

    nlohmann::json line = {{"stage", objective}, {"step", round}, {"round", round}, {"loss", st.loss}, {"lr", st.lr},
                           {"grad_norm", st.grad_norm}, {"samples", st.samples}, {"correct", st.correct},
                           {"correct_rate", st.correct_rate()}, {"raw_reward_mean", st.raw_reward_mean},
                           {"raw_reward_std", st.raw_reward_std}, {"reward_mean", st.reward_mean},
                           {"reward_std", st.reward_std}, {"trained", st.trained}, {"updated", st.updated},
                           {"optimizer_steps", opt.step()}, {"loss_agg", loss_aggregation_name(o.loss_aggregation)},
                           {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()}};
    if (o.objective == RlObjective::crl)
      line.update({{"kl", st.kl}, {"clip_fraction", st.clip_fraction}, {"ratio_mean", st.ratio_mean}});
    log << line.dump() << "\n";
    log.flush();
    save_stage_checkpoint(opt, {{"objective", objective}, {"round", round}}, o.out_dir);
    summary.trained.push_back(st);
    if (progress) progress(st);
  }
  summary.rounds = o.rounds;
  summary.output = save_stage_output(*model, o.full, lora, o.model_dir, o.out_dir);
  remove_stage_checkpoint(o.out_dir);  // finished: a later run with this OUT starts over
  return summary;
}

}  // namespace cudal1::trainer
