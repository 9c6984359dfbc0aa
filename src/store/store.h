// store/store.h — the SQLite file every evaluation is kept in.
//
// Each evaluation is one row: task and candidate hashes, the candidate's source, device and
// versions, protocol, and the full result JSON. Rows are only ever added, so history is kept;
// a lookup returns the newest row for (task, candidate, protocol, device). Thread-safe.
//
// Every evaluation row carries a seal (store/seal.h) under a key kept beside the file. A row whose
// seal is missing or does not fit (written by an older cudal1, or planted by anything without the
// key) is never answered, counted as an exemplar or a best speedup: it is as if absent, so the
// evaluation runs again.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "evaluator/result.h"
#include "store/seal.h"

namespace SQLite {
class Database;
class Statement;
}

namespace cudal1 {

// One answer of an optimisation run (rl/loop.h) as the store keeps it and trainers read it.
struct RlSample {
  std::string run, task_id, task_hash;
  int round = 0, slot = 0;
  // optimize --turns: the answer's turn in its slot's conversation (0-based; the slot stays the
  // same across turns) and the evaluator's feedback the policy was sent on it (rl/feedback.h),
  // empty when no later turn was asked. `prompt` is the slot's first prompt on every turn.
  int turn = 0;
  std::string feedback;
  std::string policy, label, prompt, completion;
  std::string outcome;          // the response outcome (policy/response.h), or "policy_error"
  std::string candidate_hash;   // empty when nothing was evaluated
  std::string status;           // the evaluation's status; empty when nothing was evaluated
  std::string error;            // why the answer has no verdict (the policy's or the evaluation's
                                // failure, or what its text lacked); empty when it has one
  bool accepted = false;
  std::optional<double> speedup;  // against eager, when accepted
  double raw_reward = 0, reward = 0, advantage = 0;
  std::size_t prompt_tokens = 0, completion_tokens = 0;
  // What the prompt showed: [{candidate_hash, speedup, label}], in the order sampled.
  nlohmann::json exemplars = nlohmann::json::array();
};

// A known reward hack as the store keeps it for the judge (judge/hack_cases.h).
struct HackCase {
  int64_t id = 0;
  std::string family;   // "timed_phase", a fixture's family or the first blocking flag's id
  std::string source;   // "fixture", "rejected" (the evaluator caught it) or "confirmed" (the judge did)
  std::string task_hash, candidate_hash;
  std::string code;     // the candidate's source
  std::string reference;  // its task's source, when known: what the candidate shares with it is no trick
  nlohmann::json evidence = nlohmann::json::object();  // flags, error, attribution, the judge's reason
};

class Store {
 public:
  // Opens or creates the store (and its folder; a new file is its owner's only) and its seal key.
  // Throws Error(store) with what to do.
  explicit Store(const std::filesystem::path& path);
  ~Store();

  std::optional<EvalResult> find(const std::string& task_hash, const std::string& candidate_hash,
                                 const std::string& protocol_key, const std::string& device);

  // Returns the new row's id. A result with an infrastructure cause (evaluator/infrastructure.h)
  // is no verdict on the candidate: nothing is written, and 0 is returned.
  int64_t save(const EvalResult& result, const std::string& protocol_key,
               const std::string& device, const std::string& candidate_source);

  // Evaluation rows in the file, sealed or not.
  int64_t count();
  // The devices ("cpu", "cuda:1") that evaluation rows name, sorted: where a report of the
  // store's results looks when the machine reading it has no GPU of its own.
  std::vector<std::string> devices();
  // Rows ignored so far because their seal did not fit.
  std::size_t unsealed_rows_ignored() const { return alarm_.count(); }

  // The best accepted eager speedup on record for a task on a device ("cpu", "cuda:1") under a protocol.
  std::optional<double> best_speedup(const std::string& task_hash, const std::string& protocol_key,
                                     const std::string& device);

  // A task's exemplars for contrastive prompts (rl/sampler.h): every candidate whose newest
  // evaluation on this device and protocol was accepted with an eager speedup, oldest first.
  struct Exemplar {
    std::string candidate_hash, source;
    double speedup = 0;
  };
  std::vector<Exemplar> exemplars(const std::string& task_hash, const std::string& protocol_key,
                                  const std::string& device);

  // An optimisation round's samples, all or none; the round's pending answers go with them.
  void save_round(const std::vector<RlSample>& samples);
  // A round's answers as asked (rl/loop.cpp says what the JSON holds), kept until save_round
  // writes that round: a resumed run judges them instead of asking the policy again.
  void save_pending_round(const std::string& run, const std::string& task_id, int round, const nlohmann::json& asked);
  std::optional<nlohmann::json> pending_round(const std::string& run, const std::string& task_id, int round);
  // A run's samples in the order written (every run's when run is empty); one task's when
  // task_id is not empty.
  std::vector<RlSample> run_samples(const std::string& run, const std::string& task_id = "");

  // Known hacks (store/hack_tables.cpp). add_hack_case keeps one row per candidate and source and
  // returns its id, the existing row's when there is one; hack_cases lists sealed rows, oldest first.
  int64_t add_hack_case(const HackCase& c);
  std::vector<HackCase> hack_cases();
  // Every candidate whose newest sealed evaluation was refused with a blocking flag, with its source.
  struct Blocked {
    EvalResult result;
    std::string source;
  };
  std::vector<Blocked> blocked_evaluations();
  // The judge's verdict on a candidate for a task (judge/judge.h's JSON); a newer one replaces it.
  void save_judgement(const std::string& task_hash, const std::string& candidate_hash, const nlohmann::json& judgement);
  std::optional<nlohmann::json> find_judgement(const std::string& task_hash, const std::string& candidate_hash);

  // Computed facts worth keeping (task metadata by content hash, device ceilings by device),
  // keyed by what they describe and the version of the code that computed them.
  std::optional<nlohmann::json> find_cached(const std::string& key, const std::string& version);
  void save_cached(const std::string& key, const std::string& version, const nlohmann::json& value);
  const std::filesystem::path& path() const { return path_; }
  // The files a candidate must not reach: the database, its -wal and -shm, and the seal key.
  std::vector<std::string> private_files() const;

 private:
  struct Row;
  std::optional<Row> next_sealed(SQLite::Statement& q, std::size_t& ignored);
  // Of q's rows, the newest sealed one per (task, candidate) — a later verdict replaces an earlier
  // one — that `keep` accepts, in the order they were written.
  std::vector<Row> newest_per_candidate(SQLite::Statement& q, const std::function<bool(const Row&)>& keep);

  std::filesystem::path path_;
  std::unique_ptr<SQLite::Database> db_;
  std::unique_ptr<Sealer> sealer_;
  SealAlarm alarm_;
  std::mutex m_;  // every method is safe to call from several threads
};

}  // namespace cudal1
