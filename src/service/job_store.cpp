// service/job_store.cpp — the service's durable job table (see job_store.h).
#include "service/job_store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "core/error.h"
#include "store/sqlite_guard.h"

namespace cudal1::service {

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  seq          INTEGER PRIMARY KEY,
  id           TEXT NOT NULL UNIQUE,
  state        TEXT NOT NULL,
  request_json TEXT NOT NULL,
  outcome_json TEXT,
  attempts     INTEGER NOT NULL DEFAULT 0,
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  request_seal TEXT,
  seal         TEXT
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state, seq);
)sql";

JobState state_from(const std::string& s) {
  if (s == "queued") return JobState::queued;
  if (s == "running") return JobState::running;
  if (s == "done") return JobState::done;
  return JobState::failed;
}

// 128 random bits as hex: ids a client cannot guess or collide with.
std::string new_id() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32));
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()), static_cast<unsigned long long>(rng()));
  return buf;
}

template <typename F>
auto guarded(const std::filesystem::path& path, const char* what, F&& f) {
  return sqlite_guarded(path, what, "check that " + path.string() + " is the service's job file on a writable disk, or pass another --jobs",
                        std::forward<F>(f));
}

// Two seals (store/seal.h): the request's, made once when the job is submitted, says cudal1
// accepted this request under this id; the row's, made at every write, covers the request, state,
// outcome and attempts. Only a request cudal1 sealed is ever run or answered for.
constexpr const char* kRequestSeal = "cudal1-job-request/1";
constexpr const char* kRowSeal = "cudal1-job/1";
constexpr const char* kColumns = "id, state, request_json, outcome_json, attempts, created_at, updated_at, request_seal, seal";

}  // namespace

// One job row as stored, before anything in it is believed.
struct JobStore::Row {
  std::string id, state, request, outcome, created_at, updated_at, request_seal, seal;
  bool has_outcome = false;
  int attempts = 0;

  static Row read(SQLite::Statement& q) {
    auto text = [&](int i) { return q.getColumn(i).isNull() ? std::string() : q.getColumn(i).getString(); };
    return {text(0), text(1), text(2), text(3), text(5), text(6), text(7), text(8), !q.getColumn(3).isNull(),
            q.getColumn(4).getInt()};
  }
  // What the row's seal covers; `attempts` is the attempts as text, kept alive by the caller.
  std::vector<std::string_view> sealed_fields(const std::string& attempts) const {
    return {id, request, state, has_outcome ? "1" : "0", outcome, attempts};
  }
  Job job() const {
    Job j{id, state_from(state), nlohmann::json::parse(request, nullptr, false), nullptr, attempts, created_at, updated_at};
    if (j.request.is_discarded()) j.request = nullptr;
    if (has_outcome) j.outcome = nlohmann::json::parse(outcome, nullptr, false);
    if (j.outcome.is_discarded()) j.outcome = nullptr;
    return j;
  }
};

std::string JobStore::row_seal(const Row& r) const {
  const std::string attempts = std::to_string(r.attempts);
  return sealer_->seal(kRowSeal, r.sealed_fields(attempts));
}

// Writes the row's state, outcome and attempts under a fresh seal. A request cudal1 did not seal
// is never sealed as anything but failed: such a job is not run.
void JobStore::write(Row& r) {
  if (!sealer_->verify(r.request_seal, kRequestSeal, {r.id, r.request}) && r.state != job_state_name(JobState::failed)) {
    r.state = job_state_name(JobState::failed);
    r.has_outcome = true;
    r.outcome = nlohmann::json{{"error", "this job's request was written outside cudal1 (its seal does not match); "
                                         "it is not run: submit it again"}}.dump();
  }
  SQLite::Statement u(*db_, "UPDATE jobs SET state = ?, outcome_json = ?, attempts = ?, seal = ?, "
                            "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?");
  u.bind(1, r.state);
  r.has_outcome ? u.bind(2, r.outcome) : u.bind(2);
  u.bind(3, r.attempts);
  u.bind(4, row_seal(r));
  u.bind(5, r.id);
  u.exec();
}

// A row whose seal does not fit was written by something else: the job goes back to the queue
// when its request is one cudal1 sealed (whatever state or reward was planted, it is evaluated for
// real), else it ends failed. Returns whether the row had to be put right.
bool JobStore::put_right(Row& r) {
  const std::string attempts = std::to_string(r.attempts);
  if (sealer_->verify(r.seal, kRowSeal, r.sealed_fields(attempts))) return false;
  r.state = job_state_name(JobState::queued);
  r.has_outcome = false;
  r.outcome.clear();
  write(r);
  alarm_.raise(1);
  return true;
}

// At start every row is checked once (a planted row nobody asks about is put right too, and a file
// from before seals is migrated whole); then the jobs a crash left running go back to the queue.
void JobStore::check_every_row() {
  std::vector<Row> rows;
  SQLite::Statement q(*db_, std::string("SELECT ") + kColumns + " FROM jobs ORDER BY seq");
  while (q.executeStep()) rows.push_back(Row::read(q));
  SQLite::Transaction tx(*db_);
  for (auto& r : rows) {
    put_right(r);
    if (r.state == job_state_name(JobState::running)) {  // left running by a crash
      r.state = job_state_name(JobState::queued);
      write(r);
      ++requeued_;
    }
  }
  tx.commit();
}

const char* job_state_name(JobState s) {
  switch (s) {
    case JobState::queued: return "queued";
    case JobState::running: return "running";
    case JobState::done: return "done";
    case JobState::failed: return "failed";
  }
  return "failed";
}

JobStore::JobStore(const std::filesystem::path& path)
    : path_(path),
      alarm_("jobs", "jobs written by a cudal1 from before seals, or by anything without the key " +
                         Sealer::key_path(path).string() + ", were queued again (or failed, where their request itself "
                         "was not sealed); if no older cudal1 wrote " + path.string() +
                         ", something else can write it: keep candidates' processes away from it") {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const std::string lock_path = path.string() + ".lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw Error(ErrorKind::input, "cannot open " + lock_path + ": " + std::strerror(errno),
                "check that the job file's folder is writable, or pass another --jobs");
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    throw Error(ErrorKind::usage, "the job file " + path.string() + " is in use by another running cudal1 serve",
                "stop that service first, or give this one its own file with --jobs");
  }
  try {
    create_private_file(path_);
    open_database();
  } catch (...) {
    ::close(lock_fd_);  // no destructor runs for a constructor that throws
    throw;
  }
}

void JobStore::open_database() {
  guarded(path_, "opening the job file", [&] {
    db_ = std::make_unique<SQLite::Database>(path_.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db_->setBusyTimeout(10000);
    db_->exec("PRAGMA journal_mode=WAL");
    db_->exec("PRAGMA synchronous=FULL");  // an acknowledged job survives a power cut, not only a crash
    db_->exec(kSchema);
    // Job files from before seals: the columns are added; their rows, unsealed, are put right below.
    for (const char* column : {"request_seal", "seal"}) {
      SQLite::Statement has(*db_, std::string("SELECT 1 FROM pragma_table_info('jobs') WHERE name = '") + column + "'");
      if (!has.executeStep()) db_->exec(std::string("ALTER TABLE jobs ADD COLUMN ") + column + " TEXT");
    }
    sealer_ = std::make_unique<Sealer>(path_);
    check_every_row();
    return 0;
  });
}

std::vector<std::string> JobStore::private_files(const std::filesystem::path& path) {
  return {path.string(), path.string() + "-wal", path.string() + "-shm", Sealer::key_path(path).string()};
}

JobStore::~JobStore() {
  db_.reset();
  ::close(lock_fd_);  // releases the lock
}

std::optional<std::vector<std::string>> JobStore::submit(const std::vector<nlohmann::json>& requests, int64_t max_pending) {
  std::lock_guard lock(m_);
  return guarded(path_, "storing jobs", [&]() -> std::optional<std::vector<std::string>> {
    SQLite::Transaction tx(*db_);
    SQLite::Statement pending(*db_, "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')");
    pending.executeStep();
    if (pending.getColumn(0).getInt64() + int64_t(requests.size()) > max_pending) return std::nullopt;
    std::vector<std::string> ids;
    SQLite::Statement insert(*db_, "INSERT INTO jobs (id, state, request_json, request_seal, seal) VALUES (?, ?, ?, ?, ?)");
    for (auto& r : requests) {
      Row row{new_id(), job_state_name(JobState::queued), r.dump(), "", "", "", "", "", false, 0};
      ids.push_back(row.id);
      insert.bind(1, row.id);
      insert.bind(2, row.state);
      insert.bind(3, row.request);
      insert.bind(4, sealer_->seal(kRequestSeal, {row.id, row.request}));
      insert.bind(5, row_seal(row));
      insert.exec();
      insert.reset();
    }
    tx.commit();
    return ids;
  });
}

std::optional<Job> JobStore::claim() {
  std::lock_guard lock(m_);
  return guarded(path_, "taking a job", [&]() -> std::optional<Job> {
    SQLite::Transaction tx(*db_);
    for (;;) {
      SQLite::Statement q(*db_, std::string("SELECT ") + kColumns + " FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1");
      if (!q.executeStep()) return std::nullopt;
      Row r = Row::read(q);
      q.reset();
      put_right(r);  // planted as queued with a request cudal1 never sealed: it ends failed instead
      if (r.state != job_state_name(JobState::queued)) continue;
      r.state = job_state_name(JobState::running), ++r.attempts;
      write(r);
      tx.commit();
      return r.job();
    }
  });
}

void JobStore::finish(const std::string& id, JobState state, const nlohmann::json& outcome) {
  std::lock_guard lock(m_);
  guarded(path_, "recording a job's end", [&] {
    SQLite::Statement q(*db_, std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return 0;
    Row r = Row::read(q);
    q.reset();
    r.state = job_state_name(state), r.has_outcome = true, r.outcome = outcome.dump();
    write(r);
    return 0;
  });
}

std::optional<Job> JobStore::get(const std::string& id) {
  std::lock_guard lock(m_);
  return guarded(path_, "reading a job", [&]() -> std::optional<Job> {
    SQLite::Statement q(*db_, std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return std::nullopt;
    Row r = Row::read(q);
    q.reset();
    put_right(r);  // a planted "done, reward 99" is never reported: the job is queued again
    return r.job();
  });
}

JobCounts JobStore::counts() {
  std::lock_guard lock(m_);
  return guarded(path_, "counting jobs", [&] {
    JobCounts c;
    SQLite::Statement q(*db_, "SELECT state, COUNT(*) FROM jobs GROUP BY state");
    while (q.executeStep()) {
      int64_t n = q.getColumn(1).getInt64();
      switch (state_from(q.getColumn(0).getString())) {
        case JobState::queued: c.queued = n; break;
        case JobState::running: c.running = n; break;
        case JobState::done: c.done = n; break;
        case JobState::failed: c.failed = n; break;
      }
    }
    return c;
  });
}

}  // namespace cudal1::service
