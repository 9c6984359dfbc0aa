#include "rl/loop.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/format.h"
#include "core/hash.h"
#include "core/stats.h"
#include "policy/response.h"
#include "rl/best_rule.h"
#include "rl/feedback.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace cudal1::rl {

namespace {

// "level1/19_ReLU" -> "level1_19_ReLU": one file name per task.
std::string file_stem(const std::string& task_id) {
  std::string s;
  for (char c : task_id) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return s == "." || s == ".." ? "_" + s : s;
}

void write_text(const fs::path& file, const std::string& text) { write_file(file, text, "check that the run folder is on a writable disk"); }

// A policy's answer as a pending round keeps it in the store.
json answer_to_json(const policy::PolicyAnswer& a) {
  return {{"text", a.text}, {"finish_reason", a.finish_reason}, {"prompt_tokens", a.prompt_tokens},
          {"completion_tokens", a.completion_tokens}, {"error", a.error}, {"label", a.label}};
}

policy::PolicyAnswer answer_from_json(const json& j) {
  policy::PolicyAnswer a;
  a.text = j.value("text", "");
  a.finish_reason = j.value("finish_reason", "");
  a.prompt_tokens = j.value("prompt_tokens", std::size_t(0));
  a.completion_tokens = j.value("completion_tokens", std::size_t(0));
  a.error = j.value("error", "");
  a.label = j.value("label", "");
  return a;
}

// One answer on its way through a round.
struct Slot {
  policy::PolicyAnswer answer;
  policy::ParsedResponse parsed;
  fs::path file;
  std::string hash;
  std::optional<EvalResult> result;
  std::string error;  // why it has no verdict (RlSample::error)
  // An earlier slot of the turn with the same file: this one is judged, scored and counted with it.
  std::optional<std::size_t> same_as;
  bool asked = true;     // has an answer this turn (a slot whose conversation ended has none)
  bool goes_on = false;  // it is asked again, with feedback, next turn
};

// An answer that could not be judged for a reason outside its text: no answer came, or its
// evaluation could not run (a LoopFailure).
bool is_failure(const RlSample& x) {
  return !x.error.empty() && (x.outcome == "policy_error" || x.outcome == policy::response_outcome_name(policy::ResponseOutcome::ok));
}

void count_failure(TaskOutcome& out, const RlSample& x) {
  if (is_failure(x)) out.failures[x.error] = out.failures.value(x.error, 0) + 1;
}

// One task through the run: where its earlier rounds left it and this round's answers.
struct TaskRun {
  const LoopTask* task = nullptr;
  std::size_t index = 0;  // the task's place in the run (spreads first-round and contrastive rounds)
  std::string reference, task_hash;
  fs::path best_file;
  int next_round = 1, since_better = 0;
  bool done = false;
  TaskOutcome outcome;
  std::map<std::string, std::string> labels;  // candidate hash -> the label of the answer that wrote it
  std::vector<std::string> answered;           // every earlier answer's label, in order
  // This round's:
  bool in_round = false, better_this_round = false;
  policy::PolicyRequest request;
  json shown = json::array();
  std::vector<Slot> slots;                          // the current turn's, by slot
  std::vector<std::vector<policy::Turn>> histories; // each slot's conversation so far
  std::vector<RlSample> rows;                       // every turn's samples, in the order scored
};

// What an evaluation changed: a faster accepted answer than any before (`better`, which patience
// counts), and whether its file is the new RUN_DIR/best/ file (`file`: it beats the reference by
// more than the noise, rl/best_rule.h, and is faster than the file there).
struct Credit {
  bool better = false, file = false;
};

// An answer's evaluation, as it lands in the outcome: counts, flags, a new best.
Credit credit(TaskRun& t, const Slot& sl, const EvalResult& r) {
  TaskOutcome& out = t.outcome;
  ++out.evaluated;
  out.hacks += r.has_blocking_flag();
  for (auto& f : r.flags) out.flags[f.id] = out.flags.value(f.id, 0) + 1;
  t.labels[sl.hash] = sl.answer.label;
  if (!r.accepted || !r.speedup.count("eager")) return {};
  double s = r.speedup.at("eager");
  Credit c;
  if (!out.best || s > *out.best) {
    out.best = s;
    out.best_label = sl.answer.label;
    out.best_speedups = r.speedup;
    c.better = true;
  }
  if (beats_reference(r) && (!out.best_file_speedup || s > *out.best_file_speedup)) {
    out.best_file_speedup = s;
    c.file = true;
  }
  return c;
}

// Where a task's earlier rounds of this run leave it; each stored answer's evaluation is looked
// up again, so a resumed run reports the same flags and baselines as an uninterrupted one.
void replay_history(TaskRun& t, const std::vector<RlSample>& samples,
                    const std::function<std::optional<EvalResult>(const std::string&, const std::string&)>& judged) {
  int round = 0;
  bool better_this_round = false;
  std::set<std::string> files_this_round;
  for (auto& x : samples) {
    if (x.round != round) {
      if (round > 0) t.since_better = better_this_round ? 0 : t.since_better + 1;
      round = x.round;
      better_this_round = false;
      files_this_round.clear();
    }
    t.answered.push_back(x.label);
    // A file answered twice in one turn is counted with its twin.
    if (!x.candidate_hash.empty() && !files_this_round.insert(std::to_string(x.turn) + ":" + x.candidate_hash).second) continue;
    ++t.outcome.tried;
    t.outcome.correct += x.accepted;
    count_failure(t.outcome, x);
    if (x.candidate_hash.empty() || x.status.empty()) continue;
    Slot sl;
    sl.hash = x.candidate_hash;
    sl.answer.label = x.label;
    if (auto r = judged(x.task_hash, x.candidate_hash)) {
      better_this_round |= credit(t, sl, *r).better;
      continue;
    }
    // Judged under another protocol: what the sample recorded is all there is.
    ++t.outcome.evaluated;
    t.labels[x.candidate_hash] = x.label;
    if (x.accepted && x.speedup && (!t.outcome.best || *x.speedup > *t.outcome.best)) {
      t.outcome.best = x.speedup;
      t.outcome.best_label = x.label;
      better_this_round = true;
    }
  }
  if (round > 0) t.since_better = better_this_round ? 0 : t.since_better + 1;
  t.outcome.rounds = round;
  t.next_round = round + 1;
}

// Why best/ holds no file for the task, or not its fastest answer; "" when it holds that one.
std::string best_file_note(const TaskOutcome& out) {
  if (out.best_file.empty()) return no_best_file_note(out.best, out.correct);
  if (out.best && out.best_file_speedup && *out.best > *out.best_file_speedup) {
    return "best/ holds the " + format_fixed(*out.best_file_speedup, 2) + "x answer; the faster " + format_fixed(*out.best, 2) +
           "x one was within its measurement's noise";
  }
  return "";
}

}  // namespace

json TaskOutcome::to_json() const {
  json j = {{"task", id}, {"rounds", rounds}, {"tried", tried}, {"evaluated", evaluated}, {"correct", correct},
            {"hacks", hacks}, {"best_speedup", best ? json(*best) : json(nullptr)}, {"best_speedups", best_speedups},
            {"start", start}, {"improved", improved()}, {"best_label", best_label}, {"stopped_early", stopped_early},
            {"flags", flags}, {"failures", failures}};
  if (!best_file.empty()) j["best_file"] = best_file.string();
  if (best_file_speedup) j["best_file_speedup"] = *best_file_speedup;
  if (!best_note.empty()) j["best_note"] = best_note;
  return j;
}

std::optional<AllFailed> all_failed(const std::vector<RlSample>& samples) {
  std::map<std::string, std::size_t> by_message;
  for (auto& x : samples) {
    if (!is_failure(x)) return std::nullopt;
    ++by_message[x.error];
  }
  if (by_message.empty()) return std::nullopt;
  auto most = std::max_element(by_message.begin(), by_message.end(), [](auto& a, auto& b) { return a.second < b.second; });
  return AllFailed{most->first, samples.size(), most->second, by_message.size()};
}

std::vector<TaskOutcome> run_loop(const std::vector<LoopTask>& tasks, policy::Policy& policy, Store& store,
                                  const LoopConfig& c, const std::function<void(const LoopProgress&)>& progress,
                                  const std::function<void(const LoopFailure&)>& failure) {
  if (c.turns < 1 || c.turns > kMaxTurns)
    throw Error(ErrorKind::usage, "the loop's turns must be 1 to " + std::to_string(kMaxTurns) + ", not " + std::to_string(c.turns),
                "pass --turns between 1 and " + std::to_string(kMaxTurns));
  if (!(c.gamma >= 0 && c.gamma <= 1))
    throw Error(ErrorKind::usage, "the discount gamma must be from 0 to 1, not " + std::to_string(c.gamma), "pass --gamma between 0 and 1");
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
      if (auto r = store.find(task_hash, hash, protocol, d)) return judge::with_kept_verdict(store, c.judge, std::move(*r));
    return std::nullopt;
  };
  // The rolling normalisation goes on from every reward this run has given, in the order given.
  RewardNormalizer normalizer(c.reward);
  for (auto& x : store.run_samples(c.run)) normalizer.remember(x.raw_reward);

  std::vector<TaskRun> runs(tasks.size());
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    TaskRun& tr = runs[t];
    tr.task = &tasks[t];
    tr.index = t;
    tr.reference = read_file(tasks[t].path.string());
    tr.task_hash = sha256_hex(tr.reference);
    tr.outcome.id = tasks[t].id;
    std::vector<RlSample> earlier = store.run_samples(c.run, tasks[t].id);
    replay_history(tr, earlier, judged);
    // The run's own files (a resumed run's) are what it found, not what it started from.
    std::set<std::string> own;
    for (auto& x : earlier) own.insert(x.candidate_hash);
    for (auto& e : exemplars_of(tr.task_hash))
      if (!own.count(e.candidate_hash)) tr.outcome.start = std::max(tr.outcome.start, e.speedup);
    tr.best_file = c.run_dir / "best" / (file_stem(tasks[t].id) + ".py");
    if (tr.outcome.best_file_speedup && fs::exists(tr.best_file)) tr.outcome.best_file = tr.best_file;
  }
  LoopProgress pr;
  pr.tasks = tasks.size();
  pr.rounds = c.rounds;
  // This round's answers finished so far (judged, or failed), before its samples are written.
  int round_tried = 0, round_correct = 0;
  auto tell = [&](const std::string& stage) {
    pr.stage = stage;
    pr.tried = round_tried;
    pr.correct = round_correct;
    pr.with_best = pr.improved = 0;
    std::vector<double> bests;
    for (auto& tr : runs) {
      pr.tried += tr.outcome.tried;
      pr.correct += tr.outcome.correct;
      pr.improved += tr.outcome.improved();
      if (tr.outcome.best) bests.push_back(*tr.outcome.best);
    }
    pr.with_best = bests.size();
    pr.best_geomean = bests.empty() ? std::nullopt : std::optional<double>(geometric_mean(bests));
    if (progress) progress(pr);
  };
  std::set<std::string> told;
  auto fail = [&](const std::string& task, const std::string& message) {
    if (failure && told.insert(message).second) failure({task, message});
  };

  // Prompts fit the policy's own limit too (a model's positions, its tokenizer's count).
  policy::PromptBudget budget = c.budget;
  if (std::optional<policy::PromptBudget> own = policy.prompt_budget()) {
    budget.max_tokens = std::min(budget.max_tokens, own->max_tokens);
    if (own->count_tokens) budget.count_tokens = own->count_tokens;
  }

  // A request about the task, without a prompt yet: what every turn of the round shares.
  auto base_request = [&](TaskRun& tr, int round, uint64_t seed) {
    const LoopTask& task = *tr.task;
    tr.request = policy::PolicyRequest{task.id, task.path.string(), tr.reference, device, "", {}, {}, tr.answered, c.group, round, seed};
  };

  // One task's round asked of the policy: its prompt, the exemplars it showed, the answers.
  auto ask = [&](TaskRun& tr, int round) {
    const LoopTask& task = *tr.task;
    std::mt19937_64 rng(c.seed ^ std::hash<std::string>{}(task.id) ^ (uint64_t(round) * 0x9e3779b97f4a7c15ull));
    // The prompt: earlier accepted variants of this task on this device, by score bucket.
    std::vector<Store::Exemplar> known;
    if (round_shows_exemplars(c.sampler.share, round, tr.index)) known = exemplars_of(tr.task_hash);
    std::vector<Exemplar> scored;
    for (auto& e : known) scored.push_back({e.candidate_hash, e.speedup});
    base_request(tr, round, rng());
    json shown = json::array();
    for (std::size_t i : sample_exemplars(scored, c.sampler, rng)) {
      tr.request.exemplars.push_back({known[i].source, known[i].speedup});
      tr.request.exemplar_labels.push_back(tr.labels.count(known[i].candidate_hash) ? tr.labels[known[i].candidate_hash] : "");
      shown.push_back({{"candidate_hash", known[i].candidate_hash}, {"speedup", known[i].speedup}, {"label", tr.request.exemplar_labels.back()}});
    }
    tr.request.prompt = policy::build_prompt(c.templates, {task.id, device, tr.reference, tr.request.exemplars}, budget).text;
    json answers = json::array();
    for (auto& a : policy.answer(tr.request)) answers.push_back(answer_to_json(a));
    return json{{"policy", policy.name()}, {"prompt", tr.request.prompt}, {"shown", shown}, {"answers", answers}};
  };

  std::vector<QueueJob> jobs;
  std::vector<std::pair<TaskRun*, std::size_t>> job_slot;

  // A turn's candidates: each parsed file once; a file the store already judged is not evaluated
  // again, and one answered twice in the turn is judged once.
  auto prepare = [&](TaskRun& tr, int round, int turn) {
    const LoopTask& task = *tr.task;
    std::map<std::string, std::size_t> first_with;  // file hash -> its first slot
    for (std::size_t s = 0; s < tr.slots.size(); ++s) {
      Slot& sl = tr.slots[s];
      if (!sl.asked) continue;
      if (!sl.answer.error.empty()) {
        sl.error = sl.answer.error;
        ++round_tried;
        fail(task.id, sl.error);
        continue;
      }
      if (sl.parsed.outcome != policy::ResponseOutcome::ok) {
        sl.error = policy::response_outcome_reason(sl.parsed.outcome);
        ++round_tried;
        continue;
      }
      sl.hash = sha256_hex(sl.parsed.code);
      // Turn 0 keeps the name files had before turns: r<round>_s<slot>.py.
      sl.file = c.run_dir / "candidates" / file_stem(task.id) /
                ("r" + std::to_string(round) + "_s" + std::to_string(s) + (turn ? "_t" + std::to_string(turn) : "") + ".py");
      write_text(sl.file, sl.parsed.code);
      if (auto [first, fresh] = first_with.try_emplace(sl.hash, s); !fresh) {
        sl.same_as = first->second;
        continue;
      }
      if ((sl.result = judged(tr.task_hash, sl.hash))) {
        ++round_tried;
        round_correct += sl.result->accepted;
        continue;
      }
      QueueJob j{task.id + " r" + std::to_string(round) + " s" + std::to_string(s) + (turn ? " t" + std::to_string(turn) : ""),
                 c.eval, json::object()};
      j.options.task_path = task.path.string();
      j.options.candidate_path = sl.file.string();
      jobs.push_back(std::move(j));
      job_slot.push_back({&tr, s});
    }
  };

  // A turn's answers of every task, scored in slot order: their rows (rewards are normalised when
  // the round is written, in the order stored), the outcome's counts and best, and for each slot
  // that goes on, the feedback its next turn is asked with.
  auto score = [&](const std::vector<TaskRun*>& wave, int round, int turn) {
    for (TaskRun* tp : wave) {
      TaskRun& tr = *tp;
      if (!tr.in_round) continue;
      TaskOutcome& out = tr.outcome;
      const bool last_turn = turn + 1 >= c.turns;
      // What a slot's answer must beat to end its conversation: the task's best before this turn,
      // and the reference beyond the noise (rl/best_rule.h) — a first accepted answer at 1.00x is
      // worth revising, and so is one a sibling slot of the same turn happened to beat.
      const std::optional<double> best_before = out.best;
      for (std::size_t s = 0; s < tr.slots.size(); ++s) {
        Slot& sl = tr.slots[s];
        if (!sl.asked) continue;
        if (sl.same_as) {
          sl.result = tr.slots[*sl.same_as].result;
          sl.error = tr.slots[*sl.same_as].error;
        }
        RlSample x;
        x.run = c.run;
        x.task_id = tr.task->id;
        x.task_hash = tr.task_hash;
        x.round = round;
        x.slot = int(s);
        x.turn = turn;
        x.policy = policy.name();
        x.label = sl.answer.label;
        x.prompt = tr.request.prompt;
        x.completion = sl.answer.text;
        x.outcome = sl.answer.error.empty() ? policy::response_outcome_name(sl.parsed.outcome) : "policy_error";
        x.prompt_tokens = sl.answer.prompt_tokens;
        x.completion_tokens = sl.answer.completion_tokens;
        x.exemplars = tr.shown;
        x.candidate_hash = sl.hash;
        x.error = sl.error;
        Verdict v;
        if (sl.result) {
          // Refused hacks join the judge's cases; a gated hack verdict refuses the result here.
          if (!sl.same_as)
            if (auto o = judge::second_opinion(store, c.judge, tr.reference, sl.parsed.code, *sl.result, out.best); !o.error.empty())
              fail(tr.task->id, "the judge: " + o.error);
          const EvalResult& r = *sl.result;
          x.status = status_name(r.status);
          x.accepted = r.accepted;
          v.accepted = r.accepted;
          v.blocking_flag = r.has_blocking_flag();
          if (r.accepted && r.speedup.count("eager")) x.speedup = v.speedup = r.speedup.at("eager");
          if (!sl.same_as) {
            Credit cr = credit(tr, sl, r);
            tr.better_this_round |= cr.better;
            if (cr.file) {
              write_text(tr.best_file, sl.parsed.code);
              out.best_file = tr.best_file;
            }
          }
        }
        if (!sl.same_as) {
          ++out.tried;
          out.correct += x.accepted;
          count_failure(out, x);
        }
        tr.answered.push_back(x.label);
        x.raw_reward = raw_reward(v, c.reward);
        // The slot goes on unless this was its last turn, no answer came (a policy's error is no
        // answer to revise), or the answer beats the reference and the best before this turn.
        bool wins = sl.result && beats_reference(*sl.result) && x.speedup && (!best_before || *x.speedup > *best_before);
        bool goes_on = !last_turn && sl.answer.error.empty() && !wins;
        if (goes_on) {
          FeedbackInput f;
          if (sl.result) f.result = sl.result->to_json();
          f.error = sl.error;
          f.best = out.best;
          x.feedback = render_feedback(c.templates, f);
          tr.histories[s].push_back({sl.answer.text, sl.answer.label, x.feedback, x.accepted, x.speedup});
        }
        sl.goes_on = goes_on;
        tr.rows.push_back(std::move(x));
      }
    }
  };

  // The next turn of every slot that goes on, each with its conversation: one request per slot
  // (count 1), all asked together. A slot the policy answers nothing ends. Returns whether any
  // slot has a turn.
  auto ask_turn = [&](const std::vector<TaskRun*>& wave, int turn) {
    std::vector<policy::PolicyRequest> requests;
    std::vector<std::pair<TaskRun*, std::size_t>> of;
    for (TaskRun* tp : wave) {
      if (!tp->in_round) continue;
      for (std::size_t s = 0; s < tp->slots.size(); ++s) {
        Slot& sl = tp->slots[s];
        bool next = sl.asked && sl.goes_on;
        sl = Slot{};
        sl.asked = false;
        if (!next) continue;
        policy::PolicyRequest r = tp->request;
        r.count = 1;
        r.answered_labels = tp->answered;
        r.history = tp->histories[s];
        r.seed = tp->request.seed + s + uint64_t(turn) * 0x9e3779b97f4a7c15ull;
        requests.push_back(std::move(r));
        of.push_back({tp, s});
      }
    }
    if (requests.empty()) return false;
    pr.task.clear();
    tell("asking");
    std::vector<std::vector<policy::PolicyAnswer>> answers = policy.answer_each(requests);
    bool any = false;
    for (std::size_t i = 0; i < of.size(); ++i) {
      if (i >= answers.size() || answers[i].empty()) continue;  // the slot ends
      Slot& sl = of[i].first->slots[of[i].second];
      sl.answer = answers[i].front();
      sl.parsed = policy::parse_response(sl.answer.text, sl.answer.finish_reason);
      sl.asked = any = true;
    }
    return any;
  };

  // Rounds go over every task at once: one round's answers of all tasks fill the lanes together;
  // so does each later turn of their slots.
  for (int round = 1; round <= c.rounds; ++round) {
    std::vector<TaskRun*> wave;
    for (auto& tr : runs)
      if (!tr.done && tr.next_round <= round && tr.since_better < c.patience) wave.push_back(&tr);
    if (wave.empty()) continue;
    pr.round = round;
    pr.active = wave.size();
    pr.jobs = pr.jobs_done = pr.jobs_accepted = 0;
    round_tried = round_correct = 0;
    for (TaskRun* tp : wave) {
      TaskRun& tr = *tp;
      const LoopTask& task = *tr.task;
      pr.task = task.id;
      tell("asking");
      tr.in_round = false;
      tr.better_this_round = false;
      tr.rows.clear();
      // A round stopped before its samples were written left its first answers: judge those, not
      // new ones. Another policy's answers (a resume with another --policy) are not this one's to judge.
      std::optional<json> asked = store.pending_round(c.run, task.id, round);
      if (asked && asked->value("policy", std::string()) != policy.name()) asked.reset();
      if (!asked) {
        asked = ask(tr, round);
        // None: the task stops, and a later resume asks again (a replay set may have grown).
        if (!(*asked)["answers"].empty()) store.save_pending_round(c.run, task.id, round, *asked);
      } else {
        base_request(tr, round, c.seed ^ std::hash<std::string>{}(task.id) ^ uint64_t(round));
      }
      tr.request.prompt = asked->value("prompt", std::string());
      tr.shown = asked->value("shown", json::array());
      tr.slots.clear();
      for (auto& a : asked->value("answers", json::array())) {
        policy::PolicyAnswer answer = answer_from_json(a);
        Slot& sl = tr.slots.emplace_back();
        sl.answer = answer;
        sl.parsed = policy::parse_response(answer.text, answer.finish_reason);
      }
      if (tr.slots.empty()) {  // the policy has nothing more to say for this task
        tr.outcome.stopped_early = tr.done = true;
        continue;
      }
      tr.in_round = true;
      tr.histories.assign(tr.slots.size(), {});
    }
    for (int turn = 0; turn < c.turns; ++turn) {
      if (turn > 0 && !ask_turn(wave, turn)) break;
      jobs.clear();
      job_slot.clear();
      for (TaskRun* tp : wave)
        if (tp->in_round) prepare(*tp, round, turn);
      pr.jobs += jobs.size();
      tell("evaluating");
      if (!jobs.empty())
        run_queue(jobs, c.queue, [&](const QueueResult& qr) {
          auto [tp, s] = job_slot[qr.index];
          Slot& sl = tp->slots[s];
          ++pr.jobs_done, ++round_tried, pr.task = tp->task->id;
          if (qr.result) {
            sl.result = qr.result;
            pr.jobs_accepted += qr.result->accepted, round_correct += qr.result->accepted;
            store.save(*qr.result, protocol, qr.device, sl.parsed.code);
          } else {  // scored as a failure, and said
            sl.error = "the evaluation could not run: " + (qr.error ? qr.error->describe() : std::string("no result came back"));
            fail(tp->task->id, sl.error);
          }
          tell("evaluating");
        });
      score(wave, round, turn);
    }
    // Per task: the round's rewards normalised together, then GRPO advantages within each turn's
    // group (the answers of one turn were asked alike); one transaction per task.
    for (TaskRun* tp : wave) {
      TaskRun& tr = *tp;
      if (!tr.in_round) continue;
      std::vector<double> raw;
      for (const auto& row : tr.rows) raw.push_back(row.raw_reward);
      std::vector<double> normalised = normalizer.normalise_round(raw);
      std::map<int, std::vector<std::size_t>> by_turn;
      for (std::size_t i = 0; i < tr.rows.size(); ++i) {
        tr.rows[i].reward = normalised[i];
        by_turn[tr.rows[i].turn].push_back(i);
      }
      for (auto& [turn, members] : by_turn) {
        std::vector<double> rewards;
        for (std::size_t i : members) rewards.push_back(tr.rows[i].reward);
        std::vector<double> adv = grpo_advantages(rewards);
        for (std::size_t k = 0; k < members.size(); ++k) tr.rows[members[k]].advantage = adv[k];
      }
      store.save_round(tr.rows);
      tr.outcome.rounds = round;
      tr.next_round = round + 1;
      tr.since_better = tr.better_this_round ? 0 : tr.since_better + 1;
      tr.slots.clear();
      tr.rows.clear();
      tr.in_round = false;
    }
    export_samples(store, c.run, c.run_dir / "samples.jsonl", c.gamma);
    round_tried = round_correct = 0;  // now in the outcomes
    pr.task.clear();
    tell("round done");
  }
  std::vector<TaskOutcome> outcomes;
  for (auto& tr : runs) {
    if (tr.since_better >= c.patience && tr.outcome.rounds < c.rounds) tr.outcome.stopped_early = true;
    tr.outcome.best_note = best_file_note(tr.outcome);
    outcomes.push_back(tr.outcome);
  }
  return outcomes;
}

std::vector<double> discounted_returns(const std::vector<RlSample>& samples, double gamma) {
  // Each slot's trajectory, its turns in order: (run, task, round, slot) -> (turn, index).
  std::map<std::tuple<std::string, std::string, int, int>, std::vector<std::pair<int, std::size_t>>> slots;
  for (std::size_t i = 0; i < samples.size(); ++i)
    slots[{samples[i].run, samples[i].task_id, samples[i].round, samples[i].slot}].push_back({samples[i].turn, i});
  std::vector<double> out(samples.size(), 0.0);
  for (auto& [key, turns] : slots) {
    std::sort(turns.begin(), turns.end());
    double after = 0;  // the return of the turn after this one
    for (auto it = turns.rbegin(); it != turns.rend(); ++it) {
      after = samples[it->second].reward + gamma * after;
      out[it->second] = after;
    }
  }
  return out;
}

std::size_t export_samples(Store& store, const std::string& run, const fs::path& file, double gamma) {
  std::vector<RlSample> all = store.run_samples(run);
  std::vector<double> returns = discounted_returns(all, gamma);
  std::string text;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const RlSample& x = all[i];
    json verdict = {{"outcome", x.outcome}, {"status", x.status.empty() ? json(nullptr) : json(x.status)},
                    {"accepted", x.accepted}, {"speedup", x.speedup ? json(*x.speedup) : json(nullptr)}};
    json line = {{"run", x.run}, {"task", x.task_id}, {"task_hash", x.task_hash}, {"round", x.round},
                 {"slot", x.slot}, {"turn", x.turn}, {"policy", x.policy}, {"label", x.label}, {"prompt", x.prompt},
                 {"completion", x.completion}, {"raw_reward", x.raw_reward}, {"reward", x.reward},
                 {"return", returns[i]}, {"advantage", x.advantage}, {"verdict", verdict},
                 {"error", x.error.empty() ? json(nullptr) : json(x.error)},
                 {"feedback", x.feedback.empty() ? json(nullptr) : json(x.feedback)},
                 {"exemplars", x.exemplars},
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
