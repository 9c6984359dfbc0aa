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
  updated_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
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

Job read_job(SQLite::Statement& q) {
  Job j;
  j.id = q.getColumn(0).getString();
  j.state = state_from(q.getColumn(1).getString());
  j.request = nlohmann::json::parse(q.getColumn(2).getString());
  if (!q.getColumn(3).isNull()) j.outcome = nlohmann::json::parse(q.getColumn(3).getString());
  j.attempts = q.getColumn(4).getInt();
  j.created_at = q.getColumn(5).getString();
  j.updated_at = q.getColumn(6).getString();
  return j;
}

constexpr const char* kColumns = "id, state, request_json, outcome_json, attempts, created_at, updated_at";

}  // namespace

const char* job_state_name(JobState s) {
  switch (s) {
    case JobState::queued: return "queued";
    case JobState::running: return "running";
    case JobState::done: return "done";
    case JobState::failed: return "failed";
  }
  return "failed";
}

JobStore::JobStore(const std::filesystem::path& path) : path_(path) {
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
    requeued_ = db_->exec("UPDATE jobs SET state = 'queued', updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
                          "WHERE state = 'running'");
    return 0;
  });
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
    SQLite::Statement insert(*db_, "INSERT INTO jobs (id, state, request_json) VALUES (?, 'queued', ?)");
    for (auto& r : requests) {
      ids.push_back(new_id());
      insert.bind(1, ids.back());
      insert.bind(2, r.dump());
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
    SQLite::Statement q(*db_, std::string("SELECT ") + kColumns + " FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1");
    if (!q.executeStep()) return std::nullopt;
    Job j = read_job(q);
    SQLite::Statement u(*db_, "UPDATE jobs SET state = 'running', attempts = attempts + 1, "
                              "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?");
    u.bind(1, j.id);
    u.exec();
    tx.commit();
    j.state = JobState::running, ++j.attempts;
    return j;
  });
}

void JobStore::finish(const std::string& id, JobState state, const nlohmann::json& outcome) {
  std::lock_guard lock(m_);
  guarded(path_, "recording a job's end", [&] {
    SQLite::Statement u(*db_, "UPDATE jobs SET state = ?, outcome_json = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
                              "WHERE id = ?");
    u.bind(1, job_state_name(state));
    u.bind(2, outcome.dump());
    u.bind(3, id);
    u.exec();
    return 0;
  });
}

std::optional<Job> JobStore::get(const std::string& id) {
  std::lock_guard lock(m_);
  return guarded(path_, "reading a job", [&]() -> std::optional<Job> {
    SQLite::Statement q(*db_, std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?");
    q.bind(1, id);
    if (!q.executeStep()) return std::nullopt;
    return read_job(q);
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
