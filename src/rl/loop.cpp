#include "rl/loop.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "core/hash.h"
#include "policy/response.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cudal1::rl {

namespace {

// "level1/19_ReLU" -> "level1__19_ReLU": one file name per task.
std::string file_stem(const std::string& task_id) {
  std::string s;
  for (char c : task_id) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return s == "." || s == ".." ? "_" + s : s;
}

void write_text(const fs::path& file, const std::string& text) { write_file(file, text, "check that the run folder is on a writable disk"); }

// What a task's earlier rounds of this run leave behind: where to go on from.
struct TaskState {
  int next_round = 1, since_better = 0;
  TaskOutcome outcome;
  std::map<std::string, std::string> labels;  // candidate hash -> the label of the answer that wrote it
};

TaskState replay_history(const std::vector<RlSample>& samples, const std::string& id, RewardNormalizer& normalizer) {
  TaskState st;
  st.outcome.id = id;
  int round = 0;
  bool better_this_round = false;
  for (auto& x : samples) {
    if (x.round != round) {
      if (round > 0) st.since_better = better_this_round ? 0 : st.since_better + 1;
      round = x.round, better_this_round = false;
    }
    normalizer.normalise(x.raw_reward);
    ++st.outcome.tried;
    st.outcome.evaluated += !x.status.empty();
    st.outcome.correct += x.accepted;
    if (!x.candidate_hash.empty()) st.labels[x.candidate_hash] = x.label;
    if (x.accepted && x.speedup && (!st.outcome.best || *x.speedup > *st.outcome.best))
      st.outcome.best = x.speedup, st.outcome.best_label = x.label, better_this_round = true;
  }
  if (round > 0) st.since_better = better_this_round ? 0 : st.since_better + 1;
  st.outcome.rounds = round;
  st.next_round = round + 1;
  return st;
}

// One answer on its way through a round.
struct Slot {
  policy::PolicyAnswer answer;
  policy::ParsedResponse parsed;
  fs::path file;
  std::string hash;
  std::optional<EvalResult> result;
};

}  // namespace

json TaskOutcome::to_json() const {
  json j = {{"task", id}, {"rounds", rounds}, {"tried", tried}, {"evaluated", evaluated}, {"correct", correct},
            {"hacks", hacks}, {"best_speedup", best ? json(*best) : json(nullptr)}, {"best_speedups", best_speedups},
            {"best_label", best_label}, {"stopped_early", stopped_early}, {"flags", flags}};
  if (!best_file.empty()) j["best_file"] = best_file.string();
  return j;
}

std::vector<TaskOutcome> run_loop(const std::vector<LoopTask>& tasks, policy::Policy& policy, Store& store,
                                  const LoopConfig& c, const std::function<void(const LoopProgress&)>& progress) {
  const std::string protocol = c.eval.protocol_key(), device = c.eval.device;
  // Results are stored under the lane's device ("cuda:0"); every lane's count.
  std::set<std::string> lanes(c.queue.devices.begin(), c.queue.devices.end());
  auto exemplars_of = [&](const std::string& task_hash) {
    std::vector<Store::Exemplar> all;
    for (auto& d : lanes)
      for (auto& e : store.exemplars(task_hash, protocol, d)) all.push_back(e);
    return all;
  };
  auto judged = [&](const std::string& task_hash, const std::string& hash) -> std::optional<EvalResult> {
    for (auto& d : lanes)
      if (auto r = store.find(task_hash, hash, protocol, d)) return r;
    return std::nullopt;
  };
  RewardNormalizer normalizer(c.reward);
  std::vector<TaskOutcome> outcomes;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const LoopTask& task = tasks[t];
    std::string reference = read_file(task.path.string());
    std::string task_hash = sha256_hex(reference);
    TaskState st = replay_history(store.run_samples(c.run, task.id), task.id, normalizer);
    TaskOutcome& out = st.outcome;
    fs::path best_file = c.run_dir / "best" / (file_stem(task.id) + ".py");
    if (out.best && fs::exists(best_file)) out.best_file = best_file;
    auto tell = [&](int round, const char* stage) {
      if (progress) progress({task.id, t, tasks.size(), round, c.rounds, out.tried, out.correct, out.best, stage});
    };
    for (int round = st.next_round; round <= c.rounds && st.since_better < c.patience; ++round) {
      std::mt19937_64 rng(c.seed ^ std::hash<std::string>{}(task.id) ^ (uint64_t(round) * 0x9e3779b97f4a7c15ull));
      // The prompt: earlier accepted variants of this task on this device, by score bucket.
      std::vector<Store::Exemplar> known = exemplars_of(task_hash);
      std::vector<Exemplar> scored;
      for (auto& e : known) scored.push_back({e.candidate_hash, e.speedup});
      policy::PolicyRequest req{task.id, task.path.string(), reference, device, "", {}, {}, c.group, round, rng()};
      json shown = json::array();
      for (std::size_t i : sample_exemplars(scored, c.sampler, rng)) {
        req.exemplars.push_back({known[i].source, known[i].speedup});
        req.exemplar_labels.push_back(st.labels.count(known[i].candidate_hash) ? st.labels[known[i].candidate_hash] : "");
        shown.push_back({{"candidate_hash", known[i].candidate_hash}, {"speedup", known[i].speedup}, {"label", req.exemplar_labels.back()}});
      }
      req.prompt = policy::build_prompt(c.templates, {task.id, device, reference, req.exemplars}, c.budget).text;
      tell(round, "asking");
      std::vector<Slot> slots;
      for (auto& a : policy.answer(req)) slots.push_back({a, policy::parse_response(a.text, a.finish_reason), {}, {}, {}});
      if (slots.empty()) {  // the policy has nothing more to say for this task
        out.stopped_early = true;
        break;
      }
      // Candidates: each parsed file once; a file the store already judged is not evaluated again.
      std::vector<QueueJob> jobs;
      std::vector<std::size_t> job_slot;
      for (std::size_t s = 0; s < slots.size(); ++s) {
        Slot& sl = slots[s];
        if (!sl.answer.error.empty() || sl.parsed.outcome != policy::ResponseOutcome::ok) continue;
        sl.hash = sha256_hex(sl.parsed.code);
        sl.file = c.run_dir / "candidates" / file_stem(task.id) / ("r" + std::to_string(round) + "_s" + std::to_string(s) + ".py");
        write_text(sl.file, sl.parsed.code);
        if ((sl.result = judged(task_hash, sl.hash))) continue;
        QueueJob j{task.id + " r" + std::to_string(round) + " s" + std::to_string(s), c.eval, json::object()};
        j.options.task_path = task.path.string(), j.options.candidate_path = sl.file.string();
        jobs.push_back(std::move(j));
        job_slot.push_back(s);
      }
      tell(round, "evaluating");
      if (!jobs.empty())
        run_queue(jobs, c.queue, [&](const QueueResult& qr) {
          Slot& sl = slots[job_slot[qr.index]];
          if (!qr.result) return;  // the evaluation could not run: scored as a failure
          sl.result = qr.result;
          store.save(*qr.result, protocol, qr.device, sl.parsed.code);
        });
      // Rewards, in slot order, then the group's advantages.
      std::vector<RlSample> rows;
      std::vector<double> rewards;
      bool better = false;
      for (std::size_t s = 0; s < slots.size(); ++s) {
        Slot& sl = slots[s];
        RlSample x{c.run, task.id, task_hash, round, int(s), policy.name(), sl.answer.label, req.prompt, sl.answer.text};
        x.outcome = sl.answer.error.empty() ? policy::response_outcome_name(sl.parsed.outcome) : "policy_error";
        x.prompt_tokens = sl.answer.prompt_tokens, x.completion_tokens = sl.answer.completion_tokens;
        x.exemplars = shown;
        Verdict v;
        if (sl.result) {
          const EvalResult& r = *sl.result;
          x.candidate_hash = sl.hash, x.status = status_name(r.status), x.accepted = r.accepted;
          v.accepted = r.accepted, v.blocking_flag = r.has_blocking_flag();
          if (r.accepted && r.speedup.count("eager")) x.speedup = v.speedup = r.speedup.at("eager");
          out.hacks += v.blocking_flag;
          for (auto& f : r.flags) out.flags[f.id] = out.flags.value(f.id, 0) + 1;
          ++out.evaluated;
          st.labels[sl.hash] = sl.answer.label;
          if (x.speedup && (!out.best || *x.speedup > *out.best)) {
            out.best = x.speedup, out.best_label = sl.answer.label, out.best_speedups = r.speedup, better = true;
            write_text(best_file, sl.parsed.code);
            out.best_file = best_file;
          }
        }
        ++out.tried;
        out.correct += x.accepted;
        x.raw_reward = raw_reward(v, c.reward);
        x.reward = normalizer.normalise(x.raw_reward);
        rewards.push_back(x.reward);
        rows.push_back(std::move(x));
      }
      std::vector<double> adv = grpo_advantages(rewards);
      for (std::size_t i = 0; i < rows.size(); ++i) rows[i].advantage = adv[i];
      store.save_round(rows);
      export_samples(store, c.run, c.run_dir / "samples.jsonl");
      out.rounds = round;
      st.since_better = better ? 0 : st.since_better + 1;
      tell(round, "round done");
    }
    if (st.since_better >= c.patience && out.rounds < c.rounds) out.stopped_early = true;
    outcomes.push_back(out);
  }
  return outcomes;
}

std::size_t export_samples(Store& store, const std::string& run, const fs::path& file) {
  std::vector<RlSample> all = store.run_samples(run);
  std::string text;
  for (auto& x : all) {
    json verdict = {{"outcome", x.outcome}, {"status", x.status.empty() ? json(nullptr) : json(x.status)},
                    {"accepted", x.accepted}, {"speedup", x.speedup ? json(*x.speedup) : json(nullptr)}};
    json line = {{"run", x.run}, {"task", x.task_id}, {"task_hash", x.task_hash}, {"round", x.round},
                 {"slot", x.slot}, {"policy", x.policy}, {"label", x.label}, {"prompt", x.prompt},
                 {"completion", x.completion}, {"raw_reward", x.raw_reward}, {"reward", x.reward},
                 {"advantage", x.advantage}, {"verdict", verdict}, {"exemplars", x.exemplars},
                 {"tokens", {{"prompt", x.prompt_tokens}, {"completion", x.completion_tokens}}}};
    if (!x.candidate_hash.empty()) line["candidate_hash"] = x.candidate_hash;
    text += line.dump() + "\n";
  }
  // Written whole and renamed, so a reader never sees half a file.
  fs::path tmp = file;
  tmp += ".tmp";
  write_text(tmp, text);
  fs::rename(tmp, file);
  return all.size();
}

}  // namespace cudal1::rl
