// service/job_store.h — the reward service's jobs, durable: a job is a row in its own SQLite file
// before the client hears of it, and it only ever moves queued -> running -> done | failed. On
// start, jobs left running by a crash go back to the queue (their attempts counted), so every job
// a client was told about ends done or failed. Thread-safe.
//
// Rows are sealed (store/seal.h, key in PATH.key): a row whose seal does not fit (planted with
// sqlite3, or from a job file older than seals) is never reported as it reads. Its job goes back to
// the queue and is evaluated for real, or ends failed when its request is not one cudal1 sealed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/seal.h"

namespace SQLite {
class Database;
}

namespace cudal1::service {

enum class JobState { queued, running, done, failed };
const char* job_state_name(JobState s);

struct Job {
  std::string id;
  JobState state = JobState::queued;
  nlohmann::json request;   // what the evaluation needs: task and candidate paths, options
  nlohmann::json outcome;   // done: the reply's fields; failed: {"error": ...}
  int attempts = 0;         // times it was started
  std::string created_at, updated_at;
};

struct JobCounts {
  int64_t queued = 0, running = 0, done = 0, failed = 0;
};

class JobStore {
 public:
  // Opens or creates the file; jobs a crashed service left running are queued again. Holds the
  // file alone while open (a lock on PATH.lock): a second service would queue the first one's
  // running jobs again. Throws Error(usage) when another process holds it.
  explicit JobStore(const std::filesystem::path& path);
  ~JobStore();

  // Stores every request as a queued job in one transaction and returns their ids, or stores
  // nothing and returns nullopt when queued + running + requests would exceed max_pending.
  std::optional<std::vector<std::string>> submit(const std::vector<nlohmann::json>& requests, int64_t max_pending);
  // The oldest queued job, now running (attempts + 1); nullopt when none is queued.
  std::optional<Job> claim();
  void finish(const std::string& id, JobState state, const nlohmann::json& outcome);
  std::optional<Job> get(const std::string& id);
  JobCounts counts();
  int64_t requeued_at_start() const { return requeued_; }
  const std::filesystem::path& path() const { return path_; }
  // The files a candidate must not reach: the job file, its -wal and -shm, and the seal key.
  static std::vector<std::string> private_files(const std::filesystem::path& path);
  // Rows put right so far because their seal did not fit.
  std::size_t unsealed_rows_put_right() const { return alarm_.count(); }

 private:
  struct Row;
  void open_database();
  void check_every_row();
  std::string row_seal(const Row& r) const;
  void write(Row& r);
  bool put_right(Row& r);

  std::filesystem::path path_;
  int lock_fd_ = -1;
  std::unique_ptr<SQLite::Database> db_;
  std::unique_ptr<Sealer> sealer_;
  SealAlarm alarm_;
  std::mutex m_;
  int64_t requeued_ = 0;
};

}  // namespace cudal1::service
