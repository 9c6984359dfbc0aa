// store/hack_tables.cpp — the judge's two tables (judge/hack_cases.h, judge/judge.h): known hacks
// and verdicts. Both are sealed like evaluations: a verdict of "clean" planted by anything without
// the key would let a hack through the judge's gate, and a planted case would steer it.
#include <SQLiteCpp/SQLiteCpp.h>

#include "core/error.h"
#include "store/sqlite_guard.h"
#include "store/store.h"

namespace cudal1 {

namespace {

constexpr const char* kHackCaseSeal = "cudal1-hack-case/1";
constexpr const char* kJudgementSeal = "cudal1-judgement/1";

template <typename F>
auto guarded(const std::filesystem::path& path, const char* what, F&& f) {
  return sqlite_guarded(path, what, "check that " + path.string() + " is a cudal1 store on a writable disk, or pass another --db",
                        std::forward<F>(f));
}

}  // namespace

int64_t Store::add_hack_case(const HackCase& c) {
  std::lock_guard<std::mutex> lock(m_);
  return guarded(path_, "writing a hack case to the store", [&]() -> int64_t {
    std::string evidence = c.evidence.dump();
    SQLite::Statement ins(*db_, R"sql(
      INSERT OR IGNORE INTO hack_cases (family, source, task_hash, candidate_hash, code, reference, evidence_json, seal)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))sql");
    ins.bind(1, c.family), ins.bind(2, c.source), ins.bind(3, c.task_hash), ins.bind(4, c.candidate_hash);
    ins.bind(5, c.code), ins.bind(6, c.reference), ins.bind(7, evidence);
    ins.bind(8, sealer_->seal(kHackCaseSeal, {c.family, c.source, c.task_hash, c.candidate_hash, c.code, c.reference, evidence}));
    if (ins.exec() > 0) return db_->getLastInsertRowid();
    SQLite::Statement q(*db_, "SELECT id FROM hack_cases WHERE candidate_hash = ?1 AND source = ?2");
    q.bind(1, c.candidate_hash), q.bind(2, c.source);
    q.executeStep();
    return q.getColumn(0).getInt64();
  });
}

std::vector<HackCase> Store::hack_cases() {
  std::lock_guard<std::mutex> lock(m_);
  return guarded(path_, "reading the store's hack cases", [&] {
    SQLite::Statement q(*db_, "SELECT id, family, source, task_hash, candidate_hash, code, reference, evidence_json, seal FROM hack_cases ORDER BY id");
    std::vector<HackCase> out;
    std::size_t ignored = 0;
    while (q.executeStep()) {
      HackCase c;
      c.id = q.getColumn(0).getInt64();
      c.family = q.getColumn(1).getString(), c.source = q.getColumn(2).getString();
      c.task_hash = q.getColumn(3).getString(), c.candidate_hash = q.getColumn(4).getString();
      c.code = q.getColumn(5).getString(), c.reference = q.getColumn(6).getString();
      std::string evidence = q.getColumn(7).getString(), seal = q.getColumn(8).isNull() ? "" : q.getColumn(8).getString();
      if (!sealer_->verify(seal, kHackCaseSeal, {c.family, c.source, c.task_hash, c.candidate_hash, c.code, c.reference, evidence})) {
        ++ignored;
        continue;
      }
      c.evidence = nlohmann::json::parse(evidence, nullptr, false);
      out.push_back(std::move(c));
    }
    alarm_.raise(ignored);
    return out;
  });
}

void Store::save_judgement(const std::string& task_hash, const std::string& candidate_hash, const nlohmann::json& judgement) {
  std::lock_guard<std::mutex> lock(m_);
  guarded(path_, "writing a judgement to the store", [&] {
    std::string text = judgement.dump();
    SQLite::Statement q(*db_, "INSERT OR REPLACE INTO judgements (task_hash, candidate_hash, judgement_json, seal) VALUES (?1, ?2, ?3, ?4)");
    q.bind(1, task_hash), q.bind(2, candidate_hash), q.bind(3, text);
    q.bind(4, sealer_->seal(kJudgementSeal, {task_hash, candidate_hash, text}));
    q.exec();
    return 0;
  });
}

std::optional<nlohmann::json> Store::find_judgement(const std::string& task_hash, const std::string& candidate_hash) {
  std::lock_guard<std::mutex> lock(m_);
  return guarded(path_, "reading a judgement from the store", [&]() -> std::optional<nlohmann::json> {
    SQLite::Statement q(*db_, "SELECT judgement_json, seal FROM judgements WHERE task_hash = ?1 AND candidate_hash = ?2");
    q.bind(1, task_hash), q.bind(2, candidate_hash);
    if (!q.executeStep()) return std::nullopt;
    std::string text = q.getColumn(0).getString(), seal = q.getColumn(1).isNull() ? "" : q.getColumn(1).getString();
    if (!sealer_->verify(seal, kJudgementSeal, {task_hash, candidate_hash, text})) {
      alarm_.raise(1);
      return std::nullopt;
    }
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
  });
}

}  // namespace cudal1
