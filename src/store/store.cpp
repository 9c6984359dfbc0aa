#include "store/store.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "core/error.h"
#include "store/sqlite_guard.h"

namespace cudal1 {

namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
  id               INTEGER PRIMARY KEY,
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  task_hash        TEXT NOT NULL,
  task_path        TEXT,
  candidate_hash   TEXT NOT NULL,
  candidate_path   TEXT,
  candidate_source TEXT NOT NULL,
  device           TEXT NOT NULL,
  device_name      TEXT,
  torch_version    TEXT,
  protocol         TEXT NOT NULL,
  status           TEXT NOT NULL,
  accepted         INTEGER NOT NULL,
  speedup_eager    REAL,
  result_json      TEXT NOT NULL,
  seal             TEXT
);
CREATE TABLE IF NOT EXISTS cache (
  key        TEXT NOT NULL,
  version    TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  value_json TEXT NOT NULL,
  PRIMARY KEY (key, version)
);
-- One row per answer a policy gave in an optimisation run (rl/loop.h): what it was shown, what
-- it wrote, how that was judged and scored. A round's rows are written together, once its group
-- is evaluated, so a run resumes at the first round without rows.
CREATE TABLE IF NOT EXISTS rl_samples (
  id                INTEGER PRIMARY KEY,
  created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  run               TEXT NOT NULL,
  task_id           TEXT NOT NULL,
  task_hash         TEXT NOT NULL,
  round             INTEGER NOT NULL,
  slot              INTEGER NOT NULL,
  policy            TEXT NOT NULL,
  label             TEXT,
  prompt            TEXT NOT NULL,
  completion        TEXT NOT NULL,
  outcome           TEXT NOT NULL,
  candidate_hash    TEXT,
  status            TEXT,
  accepted          INTEGER NOT NULL,
  speedup           REAL,
  raw_reward        REAL NOT NULL,
  reward            REAL NOT NULL,
  advantage         REAL NOT NULL,
  prompt_tokens     INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  exemplars_json    TEXT NOT NULL DEFAULT '[]',
  error             TEXT NOT NULL DEFAULT '',
  turn              INTEGER NOT NULL DEFAULT 0,
  feedback          TEXT NOT NULL DEFAULT '',
  UNIQUE (run, task_id, round, slot, turn)
);
-- A round's answers as the policy gave them (rl/loop.cpp), kept from the moment they came until the
-- round's samples are written: a run stopped mid-round is not asked again on resume; the same
-- answers are judged, those judged already from their evaluations.
CREATE TABLE IF NOT EXISTS rl_pending (
  run        TEXT NOT NULL,
  task_id    TEXT NOT NULL,
  round      INTEGER NOT NULL,
  asked_json TEXT NOT NULL,
  PRIMARY KEY (run, task_id, round)
);
-- Known reward hacks the judge compares a suspicious candidate with (judge/hack_cases.h): from the
-- red-team fixtures, from evaluations rejected with a blocking flag, and from the judge's own
-- confirmed verdicts. One row per candidate and source.
CREATE TABLE IF NOT EXISTS hack_cases (
  id             INTEGER PRIMARY KEY,
  created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  family         TEXT NOT NULL,
  source         TEXT NOT NULL,
  task_hash      TEXT NOT NULL,
  candidate_hash TEXT NOT NULL,
  code           TEXT NOT NULL,
  reference      TEXT NOT NULL DEFAULT '',
  evidence_json  TEXT NOT NULL,
  seal           TEXT,
  UNIQUE (candidate_hash, source)
);
-- The judge's verdict on a candidate for a task (judge/judge.h), the newest kept.
CREATE TABLE IF NOT EXISTS judgements (
  task_hash      TEXT NOT NULL,
  candidate_hash TEXT NOT NULL,
  created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  judgement_json TEXT NOT NULL,
  seal           TEXT,
  PRIMARY KEY (task_hash, candidate_hash)
);
CREATE INDEX IF NOT EXISTS evaluations_key
  ON evaluations (task_hash, candidate_hash, protocol, device);
)sql";

template <typename F>
auto guarded(const std::filesystem::path& path, const char* what, F&& f) {
  return sqlite_guarded(path, what, "check that " + path.string() + " is a cudal1 store on a writable disk, or pass another --db",
                        std::forward<F>(f));
}

// The columns a seal covers, in the order Row lists them, then the seal and the id.
constexpr const char* kRowColumns =
    "task_hash, task_path, candidate_hash, candidate_path, candidate_source, device, device_name, torch_version, "
    "protocol, status, accepted, speedup_eager, result_json, seal, id";
constexpr const char* kEvaluationSeal = "cudal1-evaluation/1";

// A REAL as sealed: JSON's shortest round-trip text, "null" for none (SQLite keeps doubles exact).
std::string speedup_text(const std::optional<double>& v) { return v ? json(*v).dump() : "null"; }

}  // namespace

// One evaluation row as stored: every field the store's lookups read is under the seal.
struct Store::Row {
  std::string task_hash, task_path, candidate_hash, candidate_path, candidate_source, device, device_name,
      torch_version, protocol, status, accepted, speedup_eager, result_json, seal;
  int64_t id = 0;
  std::optional<double> speedup;

  std::vector<std::string_view> sealed_fields() const {
    return {task_hash, task_path, candidate_hash, candidate_path, candidate_source, device,
            device_name, torch_version, protocol, status, accepted, speedup_eager, result_json};
  }
  static Row read(SQLite::Statement& q) {
    auto text = [&](int i) { return q.getColumn(i).isNull() ? std::string() : q.getColumn(i).getString(); };
    Row r{text(0), text(1), text(2), text(3), text(4), text(5), text(6), text(7), text(8), text(9),
          std::to_string(q.getColumn(10).getInt64()), "", text(12), text(13), q.getColumn(14).getInt64(), std::nullopt};
    if (!q.getColumn(11).isNull()) r.speedup = q.getColumn(11).getDouble();
    r.speedup_eager = speedup_text(r.speedup);
    return r;
  }
};

std::optional<Store::Row> Store::next_sealed(SQLite::Statement& q, std::size_t& ignored) {
  while (q.executeStep()) {
    Row row = Row::read(q);
    if (sealer_->verify(row.seal, kEvaluationSeal, row.sealed_fields())) return row;
    ++ignored;
  }
  return std::nullopt;
}

std::vector<Store::Row> Store::newest_per_candidate(SQLite::Statement& q, const std::function<bool(const Row&)>& keep) {
  std::map<std::pair<std::string, std::string>, Row> newest;
  std::size_t ignored = 0;
  while (auto row = next_sealed(q, ignored)) newest.insert_or_assign({row->task_hash, row->candidate_hash}, std::move(*row));
  alarm_.raise(ignored);
  std::vector<Row> kept;
  for (auto& [key, row] : newest)
    if (keep(row)) kept.push_back(std::move(row));
  std::sort(kept.begin(), kept.end(), [](const Row& a, const Row& b) { return a.id < b.id; });
  return kept;
}

Store::Store(const std::filesystem::path& path)
    : path_(path),
      alarm_("store", "rows written by an older cudal1 or by anything without the key " + Sealer::key_path(path).string() +
                          " are never answered; their evaluations run again. A copy of a store needs its key copied "
                          "beside it (" + Sealer::key_path(path).filename().string() + ", kept private). If no older cudal1 wrote " +
                          path.string() + " and it is no copy, something else can write it: keep candidates' processes away from it") {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  create_private_file(path_);
  guarded(path_, "opening the store", [&] {
    db_ = std::make_unique<SQLite::Database>(path_.string(),
                                             SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db_->setBusyTimeout(10000);
    db_->exec("PRAGMA journal_mode=WAL");
    db_->exec(kSchema);
    // Stores made before the loop showed its exemplars: the column is added, empty for old rows.
    SQLite::Statement cols(*db_, "SELECT 1 FROM pragma_table_info('rl_samples') WHERE name = 'exemplars_json'");
    if (!cols.executeStep()) db_->exec("ALTER TABLE rl_samples ADD COLUMN exemplars_json TEXT NOT NULL DEFAULT '[]'");
    // Stores made before samples said why an answer has no verdict: old rows say nothing.
    SQLite::Statement errors(*db_, "SELECT 1 FROM pragma_table_info('rl_samples') WHERE name = 'error'");
    if (!errors.executeStep()) db_->exec("ALTER TABLE rl_samples ADD COLUMN error TEXT NOT NULL DEFAULT ''");
    // Stores made before multi-turn refinement (optimize --turns): every old row is turn 0, and the
    // key gains the turn. SQLite cannot change a table's UNIQUE constraint in place, so the table
    // is renamed, made anew by the schema, filled from the old one (ids kept: the order written)
    // and the old one dropped, all in one transaction.
    SQLite::Statement turns(*db_, "SELECT 1 FROM pragma_table_info('rl_samples') WHERE name = 'turn'");
    if (!turns.executeStep()) {
      cols.reset(), errors.reset();  // a statement still reading the table would lock it against the drop
      SQLite::Transaction tx(*db_);
      db_->exec("ALTER TABLE rl_samples RENAME TO rl_samples_before_turns");
      db_->exec(kSchema);
      const char* cols = "id, created_at, run, task_id, task_hash, round, slot, policy, label, prompt, completion, outcome, "
                         "candidate_hash, status, accepted, speedup, raw_reward, reward, advantage, prompt_tokens, "
                         "completion_tokens, exemplars_json, error";
      db_->exec(std::string("INSERT INTO rl_samples (") + cols + ") SELECT " + cols + " FROM rl_samples_before_turns");
      db_->exec("DROP TABLE rl_samples_before_turns");
      tx.commit();
    }
    // Stores made before rows were sealed: their rows stay, unsealed, and are never answered.
    SQLite::Statement sealed(*db_, "SELECT 1 FROM pragma_table_info('evaluations') WHERE name = 'seal'");
    if (!sealed.executeStep()) db_->exec("ALTER TABLE evaluations ADD COLUMN seal TEXT");
    SQLite::Statement version(*db_, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (version.executeStep()) {
      int v = std::stoi(version.getColumn(0).getString());
      if (v > kSchemaVersion)
        throw Error(ErrorKind::store,
                    "the store was written by a newer cudal1 (schema " + std::to_string(v) + ")",
                    "use that cudal1, or pass another --db", path_.string());
    } else {
      db_->exec("INSERT INTO meta (key, value) VALUES ('schema_version', '" +
                std::to_string(kSchemaVersion) + "')");
    }
    return 0;
  });
  sealer_ = std::make_unique<Sealer>(path_);
}

Store::~Store() = default;

std::vector<std::string> Store::private_files() const {
  return {path_.string(), path_.string() + "-wal", path_.string() + "-shm", sealer_->path().string()};
}

std::optional<EvalResult> Store::find(const std::string& task_hash,
                                      const std::string& candidate_hash,
                                      const std::string& protocol_key, const std::string& device) {
  std::lock_guard<std::mutex> lock(m_);  // one store, many queue lanes
  return guarded(path_, "reading the store", [&]() -> std::optional<EvalResult> {
    // Newest first; an unsealed row is skipped as if it were not there.
    SQLite::Statement q(*db_, std::string("SELECT ") + kRowColumns +
                                  " FROM evaluations WHERE task_hash = ? AND candidate_hash = ? AND protocol = ? AND "
                                  "device = ? ORDER BY id DESC");
    q.bind(1, task_hash);
    q.bind(2, candidate_hash);
    q.bind(3, protocol_key);
    q.bind(4, device);
    std::size_t ignored = 0;
    std::optional<Row> row = next_sealed(q, ignored);
    alarm_.raise(ignored);
    if (!row) return std::nullopt;
    EvalResult r = EvalResult::from_json(json::parse(row->result_json));
    r.from_store = true;
    return r;
  });
}

int64_t Store::save(const EvalResult& r, const std::string& protocol_key, const std::string& device,
                    const std::string& candidate_source) {
  if (r.infrastructure_failure()) return 0;  // the machine failed, not the candidate: no verdict to keep
  std::lock_guard<std::mutex> lock(m_);  // one store, many queue lanes
  return guarded(path_, "writing to the store", [&] {
    Row row{r.task_hash, r.task_path, r.candidate_hash, r.candidate_path, candidate_source, device,
            r.provenance.value("device_name", ""), r.provenance.value("torch", ""), protocol_key, status_name(r.status),
            r.accepted ? "1" : "0", "", r.to_json().dump(), "", 0, std::nullopt};
    if (auto it = r.speedup.find("eager"); it != r.speedup.end() && std::isfinite(it->second)) row.speedup = it->second;
    row.speedup_eager = speedup_text(row.speedup);
    SQLite::Statement ins(*db_, R"sql(
      INSERT INTO evaluations (task_hash, task_path, candidate_hash, candidate_path, candidate_source,
        device, device_name, torch_version, protocol, status, accepted, speedup_eager, result_json, seal)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql");
    int i = 0;
    for (auto* text : {&row.task_hash, &row.task_path, &row.candidate_hash, &row.candidate_path, &row.candidate_source,
                       &row.device, &row.device_name, &row.torch_version, &row.protocol, &row.status})
      ins.bind(++i, *text);
    ins.bind(11, r.accepted ? 1 : 0);
    row.speedup ? ins.bind(12, *row.speedup) : ins.bind(12);
    ins.bind(13, row.result_json);
    ins.bind(14, sealer_->seal(kEvaluationSeal, row.sealed_fields()));
    ins.exec();
    return db_->getLastInsertRowid();
  });
}

std::optional<nlohmann::json> Store::find_cached(const std::string& key, const std::string& version) {
  std::lock_guard<std::mutex> lock(m_);  // one store, many queue lanes
  return guarded(path_, "reading the store", [&]() -> std::optional<nlohmann::json> {
    SQLite::Statement q(*db_, "SELECT value_json FROM cache WHERE key = ? AND version = ?");
    q.bind(1, key);
    q.bind(2, version);
    if (!q.executeStep()) return std::nullopt;
    return nlohmann::json::parse(q.getColumn(0).getString());
  });
}

void Store::save_cached(const std::string& key, const std::string& version, const nlohmann::json& value) {
  std::lock_guard<std::mutex> lock(m_);  // one store, many queue lanes
  guarded(path_, "writing to the store", [&] {
    SQLite::Statement q(*db_, "INSERT OR REPLACE INTO cache (key, version, value_json) VALUES (?, ?, ?)");
    q.bind(1, key);
    q.bind(2, version);
    q.bind(3, value.dump());
    q.exec();
    return 0;
  });
}

int64_t Store::count() {
  std::lock_guard<std::mutex> lock(m_);  // one store, many queue lanes
  return guarded(path_, "reading the store", [&] {
    SQLite::Statement q(*db_, "SELECT COUNT(*) FROM evaluations");
    q.executeStep();
    return q.getColumn(0).getInt64();
  });
}

std::vector<std::string> Store::devices() {
  std::lock_guard<std::mutex> lock(m_);  // one store, many queue lanes
  return guarded(path_, "reading the store", [&] {
    SQLite::Statement q(*db_, "SELECT DISTINCT device FROM evaluations ORDER BY device");
    std::vector<std::string> d;
    while (q.executeStep()) d.push_back(q.getColumn(0).getString());
    return d;
  });
}

std::optional<double> Store::best_speedup(const std::string& task_hash, const std::string& protocol_key,
                                          const std::string& device) {
  std::lock_guard<std::mutex> lock(m_);  // one store, many queue lanes
  return guarded(path_, "reading the store", [&]() -> std::optional<double> {
    SQLite::Statement q(*db_, std::string("SELECT ") + kRowColumns +
                                  " FROM evaluations WHERE task_hash = ? AND protocol = ? AND device = ? AND accepted = 1");
    q.bind(1, task_hash);
    q.bind(2, protocol_key);
    q.bind(3, device);
    std::optional<double> best;
    std::size_t ignored = 0;
    while (auto row = next_sealed(q, ignored))
      if (row->speedup && (!best || *row->speedup > *best)) best = row->speedup;
    alarm_.raise(ignored);
    return best;
  });
}

std::vector<Store::Exemplar> Store::exemplars(const std::string& task_hash, const std::string& protocol_key,
                                              const std::string& device) {
  std::lock_guard<std::mutex> lock(m_);
  return guarded(path_, "reading the store", [&] {
    // The newest sealed row per candidate decides: a later rejection takes an exemplar out.
    SQLite::Statement q(*db_, std::string("SELECT ") + kRowColumns +
                                  " FROM evaluations WHERE task_hash = ? AND protocol = ? AND device = ? ORDER BY id");
    q.bind(1, task_hash);
    q.bind(2, protocol_key);
    q.bind(3, device);
    std::vector<Exemplar> out;
    for (const Row& row : newest_per_candidate(q, [](const Row& r) { return r.accepted == "1" && r.speedup; }))
      out.push_back({row.candidate_hash, row.candidate_source, *row.speedup});
    return out;
  });
}

std::vector<Store::Blocked> Store::blocked_evaluations() {
  std::lock_guard<std::mutex> lock(m_);
  return guarded(path_, "reading the store", [&] {
    // As for exemplars, the newest sealed row per candidate of a task decides.
    SQLite::Statement q(*db_, std::string("SELECT ") + kRowColumns + " FROM evaluations ORDER BY id");
    std::vector<Blocked> out;
    for (const Row& row : newest_per_candidate(q, [](const Row& r) { return r.accepted == "0"; })) {
      EvalResult r = EvalResult::from_json(json::parse(row.result_json));
      if (r.has_blocking_flag()) out.push_back({std::move(r), row.candidate_source});
    }
    return out;
  });
}

void Store::save_round(const std::vector<RlSample>& samples) {
  std::lock_guard<std::mutex> lock(m_);
  guarded(path_, "writing a round to the store", [&] {
    SQLite::Transaction tx(*db_);
    SQLite::Statement ins(*db_, R"sql(
      INSERT INTO rl_samples (run, task_id, task_hash, round, slot, policy, label, prompt, completion,
        outcome, candidate_hash, status, accepted, speedup, raw_reward, reward, advantage,
        prompt_tokens, completion_tokens, exemplars_json, error, turn, feedback)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23))sql");
    for (auto& x : samples) {
      ins.bind(1, x.run), ins.bind(2, x.task_id), ins.bind(3, x.task_hash), ins.bind(4, x.round), ins.bind(5, x.slot);
      ins.bind(6, x.policy), ins.bind(7, x.label), ins.bind(8, x.prompt), ins.bind(9, x.completion);
      ins.bind(10, x.outcome);
      x.candidate_hash.empty() ? ins.bind(11) : ins.bind(11, x.candidate_hash);
      x.status.empty() ? ins.bind(12) : ins.bind(12, x.status);
      ins.bind(13, x.accepted ? 1 : 0);
      x.speedup ? ins.bind(14, *x.speedup) : ins.bind(14);
      ins.bind(15, x.raw_reward), ins.bind(16, x.reward), ins.bind(17, x.advantage);
      ins.bind(18, int64_t(x.prompt_tokens)), ins.bind(19, int64_t(x.completion_tokens));
      ins.bind(20, x.exemplars.dump()), ins.bind(21, x.error);
      ins.bind(22, x.turn), ins.bind(23, x.feedback);
      ins.exec();
      ins.reset();
    }
    SQLite::Statement done(*db_, "DELETE FROM rl_pending WHERE run = ?1 AND task_id = ?2 AND round = ?3");
    for (auto& x : samples) {
      done.bind(1, x.run), done.bind(2, x.task_id), done.bind(3, x.round);
      done.exec();
      done.reset();
    }
    tx.commit();
    return 0;
  });
}

void Store::save_pending_round(const std::string& run, const std::string& task_id, int round, const nlohmann::json& asked) {
  std::lock_guard<std::mutex> lock(m_);
  guarded(path_, "writing a round's answers to the store", [&] {
    SQLite::Statement q(*db_, "INSERT OR REPLACE INTO rl_pending (run, task_id, round, asked_json) VALUES (?1, ?2, ?3, ?4)");
    q.bind(1, run), q.bind(2, task_id), q.bind(3, round), q.bind(4, asked.dump());
    q.exec();
    return 0;
  });
}

std::optional<nlohmann::json> Store::pending_round(const std::string& run, const std::string& task_id, int round) {
  std::lock_guard<std::mutex> lock(m_);
  return guarded(path_, "reading the store", [&]() -> std::optional<nlohmann::json> {
    SQLite::Statement q(*db_, "SELECT asked_json FROM rl_pending WHERE run = ?1 AND task_id = ?2 AND round = ?3");
    q.bind(1, run), q.bind(2, task_id), q.bind(3, round);
    if (!q.executeStep()) return std::nullopt;
    auto j = nlohmann::json::parse(q.getColumn(0).getString(), nullptr, false);
    if (j.is_discarded()) return std::nullopt;  // unreadable: the round is asked again
    return j;
  });
}

std::vector<RlSample> Store::run_samples(const std::string& run, const std::string& task_id) {
  std::lock_guard<std::mutex> lock(m_);
  return guarded(path_, "reading the store", [&] {
    SQLite::Statement q(*db_, R"sql(
      SELECT run, task_id, task_hash, round, slot, policy, label, prompt, completion, outcome,
        candidate_hash, status, accepted, speedup, raw_reward, reward, advantage, prompt_tokens,
        completion_tokens, exemplars_json, error, turn, feedback FROM rl_samples WHERE (?1 = '' OR run = ?1) AND (?2 = '' OR task_id = ?2)
      ORDER BY id)sql");
    q.bind(1, run);
    q.bind(2, task_id);
    std::vector<RlSample> out;
    auto text = [&](int i) { return q.getColumn(i).isNull() ? std::string() : q.getColumn(i).getString(); };
    while (q.executeStep()) {
      RlSample x;
      x.run = text(0), x.task_id = text(1), x.task_hash = text(2);
      x.round = q.getColumn(3).getInt(), x.slot = q.getColumn(4).getInt();
      x.policy = text(5), x.label = text(6), x.prompt = text(7), x.completion = text(8), x.outcome = text(9);
      x.candidate_hash = text(10), x.status = text(11), x.accepted = q.getColumn(12).getInt() != 0;
      if (!q.getColumn(13).isNull()) x.speedup = q.getColumn(13).getDouble();
      x.raw_reward = q.getColumn(14).getDouble(), x.reward = q.getColumn(15).getDouble();
      x.advantage = q.getColumn(16).getDouble();
      x.prompt_tokens = std::size_t(q.getColumn(17).getInt64()), x.completion_tokens = std::size_t(q.getColumn(18).getInt64());
      x.exemplars = nlohmann::json::parse(text(19), nullptr, false);
      x.error = text(20);
      x.turn = q.getColumn(21).getInt(), x.feedback = text(22);
      out.push_back(std::move(x));
    }
    return out;
  });
}

}  // namespace cudal1
