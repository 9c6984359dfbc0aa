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
