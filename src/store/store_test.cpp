#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "core/error.h"
#include "store/store.h"

using namespace cudal1;

TEST(Store, SavesFindsNewestAndSurvivesReopen) {
  auto path = std::filesystem::temp_directory_path() / "cudal1_store_test" / "results.db";
  std::filesystem::remove_all(path.parent_path());
  EvalResult r;
  r.task_hash = "t";
  r.candidate_hash = "c";
  r.status = Status::incorrect;
  r.error = "case 0: wrong";
  r.add_flag("unwritten_output", Severity::block, "case 0 output 0");
  {
    Store s(path);
    EXPECT_FALSE(s.find("t", "c", "p", "cpu"));
    s.save(r, "p", "cpu", "class ModelNew: ...");
    r.status = Status::ok;
    r.accepted = true;
    r.speedup["eager"] = 1.5;
    s.save(r, "p", "cpu", "class ModelNew: ...");
  }
  Store s(path);
  EXPECT_EQ(s.count(), 2);
  auto hit = s.find("t", "c", "p", "cpu");
  ASSERT_TRUE(hit);
  EXPECT_TRUE(hit->from_store);
  EXPECT_EQ(hit->status, Status::ok);
  EXPECT_EQ(hit->speedup.at("eager"), 1.5);
  ASSERT_EQ(hit->flags.size(), 1u);
  EXPECT_EQ(hit->flags[0].id, "unwritten_output");
  EXPECT_FALSE(s.find("t", "c", "other-protocol", "cpu"));
  EXPECT_FALSE(s.find("t", "c", "p", "cuda"));
  std::filesystem::remove_all(path.parent_path());
}

TEST(Store, UnwritablePathIsAStoreError) {
  try {
    Store s("/proc/cudal1-cannot-exist/results.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::store);
    EXPECT_NE(e.hint().find("--db"), std::string::npos);
  }
}

TEST(Store, BestSpeedupCountsOnlyAcceptedRowsOfTheSameTaskDeviceAndProtocol) {
  auto dir = std::filesystem::temp_directory_path() / ("cudal1-best-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  cudal1::Store store(dir / "r.db");
  auto row = [&](const char* cand, double speedup, bool accepted, const char* device, const char* protocol) {
    cudal1::EvalResult r;
    r.task_hash = "t";
    r.candidate_hash = cand;
    r.accepted = accepted;
    r.speedup["eager"] = speedup;
    store.save(r, protocol, device, "src");
  };
  EXPECT_FALSE(store.best_speedup("t", "p", "cuda").has_value());
  row("a", 1.5, true, "cuda", "p");
  row("b", 9.0, false, "cuda", "p");   // rejected: never the bar
  row("c", 4.0, true, "cpu", "p");     // another device
  row("d", 5.0, true, "cuda", "q");    // another protocol
  row("e", 2.5, true, "cuda", "p");
  EXPECT_DOUBLE_EQ(*store.best_speedup("t", "p", "cuda"), 2.5);
  std::filesystem::remove_all(dir);
}

TEST(Store, ExemplarsAreCandidatesWhoseNewestVerdictIsAccepted) {
  auto dir = std::filesystem::temp_directory_path() / ("cudal1-exemplars-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  cudal1::Store store(dir / "r.db");
  auto row = [&](const char* cand, double speedup, bool accepted, const char* device = "cuda:0") {
    cudal1::EvalResult r;
    r.task_hash = "t";
    r.candidate_hash = cand;
    r.accepted = accepted;
    if (speedup > 0) r.speedup["eager"] = speedup;
    store.save(r, "p", device, std::string("source of ") + cand);
  };
  EXPECT_TRUE(store.exemplars("t", "p", "cuda:0").empty());
  row("a", 1.5, true);
  row("b", 3.0, true);
  row("b", 3.0, false);  // re-evaluated and rejected: no longer an exemplar
  row("c", 0.0, true);   // accepted but never timed: no score to show
  row("d", 2.0, false);
  row("d", 2.2, true);   // rejected once, accepted since
  row("e", 9.0, true, "cpu");
  auto ex = store.exemplars("t", "p", "cuda:0");
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].candidate_hash, "a");
  EXPECT_EQ(ex[0].source, "source of a");
  EXPECT_DOUBLE_EQ(ex[0].speedup, 1.5);
  EXPECT_EQ(ex[1].candidate_hash, "d");
  EXPECT_DOUBLE_EQ(ex[1].speedup, 2.2);
  EXPECT_TRUE(store.exemplars("t", "other", "cuda:0").empty());
  std::filesystem::remove_all(dir);
}

namespace {

// A fresh store in its own folder, removed afterwards.
struct TempStore {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("cudal1-sealed-" + std::to_string(::getpid()) + "-" +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::path db = dir / "results.db";
  TempStore() { std::filesystem::remove_all(dir); }
  ~TempStore() { std::filesystem::remove_all(dir); }
};

cudal1::EvalResult verdict(const char* cand, cudal1::Status status, double speedup) {
  cudal1::EvalResult r;
  r.task_hash = "t";
  r.candidate_hash = cand;
  r.status = status;
  r.accepted = status == cudal1::Status::ok;
  if (speedup > 0) r.speedup["eager"] = speedup;
  return r;
}

// What the attack wrote with sqlite3: an accepted 50x verdict for a file nobody evaluated.
void plant_forged_verdict(const std::filesystem::path& db, const char* cand, const char* seal) {
  SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE);
  cudal1::EvalResult forged = verdict(cand, cudal1::Status::ok, 50.0);
  SQLite::Statement ins(raw, "INSERT INTO evaluations (task_hash, candidate_hash, candidate_source, device, protocol, "
                             "status, accepted, speedup_eager, result_json, seal) "
                             "VALUES ('t', ?, 'zeros', 'cpu', 'p', 'ok', 1, 50.0, ?, ?)");
  ins.bind(1, cand);
  ins.bind(2, forged.to_json().dump());
  seal ? ins.bind(3, seal) : ins.bind(3);
  ins.exec();
}

}  // namespace

TEST(Store, ForgedVerdictRowIsNeverAnswered) {
  TempStore t;
  Store store(t.db);
  store.save(verdict("honest", Status::ok, 1.5), "p", "cpu", "src");
  plant_forged_verdict(t.db, "zeros", nullptr);
  // A seal copied from a genuine row does not fit another row's fields.
  SQLite::Database raw(t.db.string(), SQLite::OPEN_READONLY);
  std::string copied = raw.execAndGet("SELECT seal FROM evaluations WHERE candidate_hash = 'honest'").getString();
  plant_forged_verdict(t.db, "zeros", copied.c_str());
  testing::internal::CaptureStderr();
  EXPECT_FALSE(store.find("t", "zeros", "p", "cpu")) << "the all-zeros file must be evaluated, not answered 50x";
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("store: ignored 2 rows whose seal does not match (written outside cudal1?)"), std::string::npos) << err;
  EXPECT_NE(err.find("hint:"), std::string::npos);
  EXPECT_NE(err.find("A copy of a store needs its key copied beside it"), std::string::npos) << err;
  EXPECT_DOUBLE_EQ(*store.best_speedup("t", "p", "cpu"), 1.5) << "a forged row never sets the bar";
  auto ex = store.exemplars("t", "p", "cpu");
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0].candidate_hash, "honest");
  EXPECT_GE(store.unsealed_rows_ignored(), 6u);
  ASSERT_TRUE(store.find("t", "honest", "p", "cpu"));
}

TEST(Store, TamperedSealedRowIsIgnoredAndTheOlderVerdictStands) {
  TempStore t;
  Store store(t.db);
  store.save(verdict("c", Status::incorrect, 0), "p", "cpu", "src");
  store.save(verdict("c", Status::incorrect, 0), "p", "cpu", "src");
  {
    // The newest row's verdict rewritten in place, its seal kept.
    SQLite::Database raw(t.db.string(), SQLite::OPEN_READWRITE);
    std::string json_text = verdict("c", Status::ok, 50.0).to_json().dump();
    SQLite::Statement u(raw, "UPDATE evaluations SET result_json = ?, status = 'ok', accepted = 1, speedup_eager = 50 "
                             "WHERE id = (SELECT MAX(id) FROM evaluations)");
    u.bind(1, json_text);
    u.exec();
  }
  testing::internal::CaptureStderr();
  auto hit = store.find("t", "c", "p", "cpu");
  testing::internal::GetCapturedStderr();
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->status, Status::incorrect);
  EXPECT_FALSE(store.best_speedup("t", "p", "cpu"));
  EXPECT_TRUE(store.exemplars("t", "p", "cpu").empty());
  {
    // Only the speedup column changed: still caught, the column is under the seal too.
    SQLite::Database raw(t.db.string(), SQLite::OPEN_READWRITE);
    raw.exec("UPDATE evaluations SET result_json = (SELECT result_json FROM evaluations WHERE id = 1), "
             "status = 'incorrect', accepted = 0, speedup_eager = NULL WHERE id = 2");
    raw.exec("UPDATE evaluations SET speedup_eager = 50 WHERE id = 1");
  }
  EXPECT_EQ(store.find("t", "c", "p", "cpu")->status, Status::incorrect);  // row 2 is whole again
  EXPECT_EQ(store.unsealed_rows_ignored(), 3u);  // row 2 at the first find, best_speedup and exemplars
}

TEST(Store, RowsOfAStoreFromBeforeSealsAreKeptButNeverAnswered) {
  TempStore t;
  std::filesystem::create_directories(t.dir);
  {
    SQLite::Database raw(t.db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    raw.exec("INSERT INTO meta VALUES ('schema_version', '1')");
    raw.exec("CREATE TABLE evaluations (id INTEGER PRIMARY KEY, created_at TEXT NOT NULL DEFAULT 'then', "
             "task_hash TEXT NOT NULL, task_path TEXT, candidate_hash TEXT NOT NULL, candidate_path TEXT, "
             "candidate_source TEXT NOT NULL, device TEXT NOT NULL, device_name TEXT, torch_version TEXT, "
             "protocol TEXT NOT NULL, status TEXT NOT NULL, accepted INTEGER NOT NULL, speedup_eager REAL, "
             "result_json TEXT NOT NULL)");
    raw.exec("INSERT INTO evaluations (task_hash, candidate_hash, candidate_source, device, protocol, status, "
             "accepted, speedup_eager, result_json) VALUES ('t', 'c', 'src', 'cpu', 'p', 'ok', 1, 2.0, '" +
             verdict("c", Status::ok, 2.0).to_json().dump() + "')");
  }
  Store store(t.db);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(store.find("t", "c", "p", "cpu"));
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(store.count(), 1);  // kept for audit, not believed
  store.save(verdict("c", Status::ok, 2.0), "p", "cpu", "src");
  ASSERT_TRUE(store.find("t", "c", "p", "cpu"));
}

TEST(Store, NewStoreAndItsKeyAreTheOwnersOnly) {
  TempStore t;
  Store store(t.db);
  store.save(verdict("c", Status::ok, 2.0), "p", "cpu", "src");
  auto others = std::filesystem::perms::group_all | std::filesystem::perms::others_all;
  for (auto& f : store.private_files()) {
    if (std::filesystem::exists(f)) {
      EXPECT_EQ(std::filesystem::status(f).permissions() & others, std::filesystem::perms::none) << f;
    }
  }
  EXPECT_TRUE(std::filesystem::exists(t.db.string() + ".key"));
  EXPECT_EQ(store.private_files().back(), t.db.string() + ".key");
}

TEST(Store, InfrastructureFailureIsNotAVerdictAndIsNotSaved) {
  TempStore t;
  Store store(t.db);
  EvalResult r = verdict("c", Status::crash, 0);
  r.infrastructure = {{"cause", "out-of-memory killer"}};
  EXPECT_EQ(store.save(r, "p", "cpu", "src"), 0);
  EXPECT_EQ(store.count(), 0);
  EXPECT_FALSE(store.find("t", "c", "p", "cpu"));
}

// A sample keeps why it has no verdict; a store from before samples said so opens with its rows,
// which say nothing, and takes new rows that do.
TEST(Store, ASampleKeepsItsErrorAndAnOlderStoreGainsTheColumn) {
  TempStore t;
  RlSample x;
  x.run = "r";
  x.task_id = "task";
  x.task_hash = "t";
  x.round = 1;
  x.policy = "openai:m";
  x.prompt = "p";
  x.outcome = "policy_error";
  x.error = "HTTP 500 from http://127.0.0.1:1/v1/chat/completions: overloaded";
  {
    Store store(t.db);
    store.save_round({x});
  }
  {
    SQLite::Database raw(t.db.string(), SQLite::OPEN_READWRITE);
    raw.exec("ALTER TABLE rl_samples DROP COLUMN error");  // the store as it was made before
  }
  Store store(t.db);
  RlSample y = x;
  y.slot = 1;
  store.save_round({y});
  auto rows = store.run_samples("r");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].error, "");
  EXPECT_EQ(rows[1].error, x.error);
}

// A store from before multi-turn refinement keys samples by (run, task, round, slot): it opens
// with its rows as turn 0, in the order written, and takes several turns of one slot.
TEST(Store, AnOlderStoreTakesTurnsOfOneSlot) {
  TempStore t;
  std::filesystem::create_directories(t.dir);
  {
    SQLite::Database raw(t.db.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec(R"sql(CREATE TABLE rl_samples (
      id INTEGER PRIMARY KEY, created_at TEXT NOT NULL DEFAULT 'then', run TEXT NOT NULL, task_id TEXT NOT NULL,
      task_hash TEXT NOT NULL, round INTEGER NOT NULL, slot INTEGER NOT NULL, policy TEXT NOT NULL, label TEXT,
      prompt TEXT NOT NULL, completion TEXT NOT NULL, outcome TEXT NOT NULL, candidate_hash TEXT, status TEXT,
      accepted INTEGER NOT NULL, speedup REAL, raw_reward REAL NOT NULL, reward REAL NOT NULL, advantage REAL NOT NULL,
      prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, exemplars_json TEXT NOT NULL DEFAULT '[]',
      error TEXT NOT NULL DEFAULT '', UNIQUE (run, task_id, round, slot)))sql");
    raw.exec("INSERT INTO rl_samples (run, task_id, task_hash, round, slot, policy, prompt, completion, outcome, accepted, "
             "raw_reward, reward, advantage, prompt_tokens, completion_tokens) VALUES "
             "('r', 'task', 't', 1, 0, 'old', 'p', 'c', 'ok', 0, 0, 0, 0, 1, 2)");
  }
  Store store(t.db);
  RlSample x;
  x.run = "r", x.task_id = "task", x.task_hash = "t", x.round = 2, x.slot = 0, x.policy = "new", x.prompt = "p";
  x.outcome = "ok", x.feedback = "status: compile_error";
  RlSample y = x;
  y.turn = 1, y.feedback = "";
  store.save_round({x, y});
  auto rows = store.run_samples("r");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].policy, "old");
  EXPECT_EQ(rows[0].turn, 0);
  EXPECT_EQ(rows[0].completion_tokens, 2u);
  EXPECT_EQ(rows[1].turn, 0);
  EXPECT_EQ(rows[1].feedback, "status: compile_error");
  EXPECT_EQ(rows[2].turn, 1);
  EXPECT_EQ(rows[2].slot, 0);
  EXPECT_THROW(store.save_round({y}), Error) << "a turn is stored once";
}
