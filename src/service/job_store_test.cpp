// The job file's seals, with the attack that prompted them: jobs marked done with a reward by
// plain SQL, never evaluated.
#include "service/job_store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace fs = std::filesystem;
using cudal1::service::Job;
using cudal1::service::JobState;
using cudal1::service::JobStore;
using nlohmann::json;

namespace {

struct TempJobs {
  fs::path dir = fs::temp_directory_path() / ("cudal1-jobs-" + std::to_string(::getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::path file = dir / "jobs.db";
  TempJobs() { fs::remove_all(dir); }
  ~TempJobs() { fs::remove_all(dir); }
  void sql(const std::string& statement) const {
    SQLite::Database raw(file.string(), SQLite::OPEN_READWRITE);
    raw.exec(statement);
  }
};

json request(const char* candidate) { return {{"task_path", "/t.py"}, {"candidate_path", candidate}}; }

// Runs f with stderr captured; returns what was written there.
template <typename F>
std::string stderr_of(F&& f) {
  testing::internal::CaptureStderr();
  f();
  return testing::internal::GetCapturedStderr();
}

}  // namespace

TEST(JobStore, JobsMarkedDoneByPlainSqlAreQueuedAgainNotReported) {
  TempJobs t;
  JobStore jobs(t.file);
  auto ids = jobs.submit({request("/a.py"), request("/b.py")}, 10).value();
  t.sql(R"(UPDATE jobs SET state = 'done', outcome_json = '{"reward": 99, "correct": true, "verdict": "ok"}')");
  Job a;
  std::string err = stderr_of([&] { a = jobs.get(ids[0]).value(); });
  EXPECT_EQ(a.state, JobState::queued) << "a planted verdict is never reported";
  EXPECT_TRUE(a.outcome.is_null()) << a.outcome.dump();
  EXPECT_NE(err.find("jobs: ignored 1 row whose seal does not match (written outside cudal1?)"), std::string::npos) << err;
  // The lanes evaluate both for real; the second is put right when it is first read, as the first was.
  Job claimed = jobs.claim().value();
  EXPECT_EQ(claimed.id, ids[0]);
  EXPECT_EQ(jobs.get(ids[1])->state, JobState::queued);
  EXPECT_EQ(jobs.claim().value().id, ids[1]);
  jobs.finish(ids[0], JobState::done, {{"reward", 0.0}});
  EXPECT_EQ(jobs.get(ids[0])->outcome["reward"], 0.0);
  EXPECT_EQ(jobs.unsealed_rows_put_right(), 2u);
}

TEST(JobStore, PlantedRowsArePutRightWhenTheServiceStarts) {
  TempJobs t;
  std::string id;
  {
    JobStore jobs(t.file);
    id = jobs.submit({request("/a.py")}, 10).value()[0];
  }
  t.sql(R"(UPDATE jobs SET state = 'done', outcome_json = '{"reward": 99}')");
  std::string err = stderr_of([&] {
    JobStore jobs(t.file);
    EXPECT_EQ(jobs.get(id)->state, JobState::queued);
  });
  EXPECT_NE(err.find("jobs: ignored 1 row"), std::string::npos) << err;
}

TEST(JobStore, AJobWhoseRequestCudal1NeverSealedIsNeverRun) {
  TempJobs t;
  JobStore jobs(t.file);
  auto genuine = jobs.submit({request("/a.py")}, 10).value()[0];
  // One job planted whole, queued ahead of the genuine one; the genuine one's request redirected.
  t.sql(R"(INSERT INTO jobs (seq, id, state, request_json) VALUES (0, 'planted', 'queued', '{"candidate_path": "/x.py"}'))");
  std::optional<Job> claimed;
  stderr_of([&] { claimed = jobs.claim(); });
  ASSERT_TRUE(claimed);
  EXPECT_EQ(claimed->id, genuine) << "the planted job, first in line, is not run";
  Job planted = jobs.get("planted").value();
  EXPECT_EQ(planted.state, JobState::failed);
  EXPECT_NE(planted.outcome.value("error", "").find("written outside cudal1"), std::string::npos) << planted.outcome.dump();
  t.sql(R"(UPDATE jobs SET request_json = '{"candidate_path": "/good.py"}' WHERE id = ')" + genuine + "'");
  jobs.finish(genuine, JobState::done, {{"reward", 1.0}});
  Job redirected = jobs.get(genuine).value();
  EXPECT_EQ(redirected.state, JobState::failed) << "a changed request is no job of cudal1's";
}

TEST(JobStore, SealedJobsKeepTheirStateAcrossRestarts) {
  TempJobs t;
  std::string done, running;
  {
    JobStore jobs(t.file);
    auto ids = jobs.submit({request("/a.py"), request("/b.py")}, 10).value();
    done = ids[0];
    running = ids[1];
    jobs.claim(), jobs.finish(done, JobState::done, {{"reward", 2.5}});
    jobs.claim();
  }
  std::string err = stderr_of([&] {
    JobStore jobs(t.file);
    EXPECT_EQ(jobs.requeued_at_start(), 1);
    Job d = jobs.get(done).value();
    EXPECT_EQ(d.state, JobState::done);
    EXPECT_EQ(d.outcome["reward"], 2.5);
    EXPECT_EQ(jobs.get(running)->state, JobState::queued);
    EXPECT_EQ(jobs.get(running)->attempts, 1);
    EXPECT_EQ(jobs.unsealed_rows_put_right(), 0u);
  });
  EXPECT_EQ(err, "");
}

TEST(JobStore, AJobFileFromBeforeSealsIsMigratedAndItsJobsAreNotBelieved) {
  TempJobs t;
  fs::create_directories(t.dir);
  {
    SQLite::Database raw(t.file.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("CREATE TABLE jobs (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, state TEXT NOT NULL, "
             "request_json TEXT NOT NULL, outcome_json TEXT, attempts INTEGER NOT NULL DEFAULT 0, "
             "created_at TEXT NOT NULL DEFAULT 'then', updated_at TEXT NOT NULL DEFAULT 'then')");
    raw.exec(R"(INSERT INTO jobs (id, state, request_json, outcome_json) VALUES ('old', 'done', '{}', '{"reward": 3}'))");
  }
  stderr_of([&] {
    JobStore jobs(t.file);
    Job old = jobs.get("old").value();
    EXPECT_EQ(old.state, JobState::failed);
    EXPECT_FALSE(old.outcome.contains("reward"));
    auto id = jobs.submit({request("/a.py")}, 10).value()[0];
    EXPECT_EQ(jobs.claim()->id, id);
  });
}

TEST(JobStore, NewJobFileAndItsKeyAreTheOwnersOnly) {
  TempJobs t;
  JobStore jobs(t.file);
  jobs.submit({request("/a.py")}, 10);
  auto files = JobStore::private_files(t.file);
  EXPECT_EQ(files.back(), t.file.string() + ".key");
  for (auto& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) == 0) EXPECT_EQ(st.st_mode & 077, 0u) << f;
  }
}
