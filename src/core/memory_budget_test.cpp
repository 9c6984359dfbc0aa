#include "core/memory_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace cudal1;
using namespace std::chrono_literals;

namespace {

// Runs reserve(bytes) on a thread; `got` turns true once it returns.
struct Waiter {
  std::atomic<bool> got{false};
  MemoryBudget::Hold hold;
  std::thread t;
  Waiter(MemoryBudget& b, uint64_t bytes) : t([&b, bytes, this] { hold = b.reserve(bytes); got = true; }) {}
  void join() { if (t.joinable()) t.join(); }
  ~Waiter() { join(); }
};

}  // namespace

TEST(MemoryBudget, ReservationsThatFitDoNotWait) {
  MemoryBudget b(100);
  auto a = b.reserve(40), c = b.reserve(60);
  EXPECT_EQ(b.reserved(), 100u);
  a.release();
  EXPECT_EQ(b.reserved(), 60u);
}

TEST(MemoryBudget, OneThatDoesNotFitWaitsForARelease) {
  MemoryBudget b(100);
  auto a = b.reserve(70);
  Waiter w(b, 50);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(w.got);
  a.release();
  w.join();
  EXPECT_TRUE(w.got);
  EXPECT_EQ(b.reserved(), 50u);
}

TEST(MemoryBudget, AnEvaluationLargerThanTheBudgetRunsAlone) {
  MemoryBudget b(100);
  auto big = b.reserve(500);  // nothing else held: it goes
  EXPECT_EQ(b.reserved(), 500u);
  Waiter w(b, 1);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(w.got);
  big.release();
}

TEST(MemoryBudget, ALaterSmallReservationDoesNotOvertakeAWaitingLargeOne) {
  MemoryBudget b(100);
  auto a = b.reserve(60);
  Waiter large(b, 80);
  std::this_thread::sleep_for(30ms);
  Waiter small(b, 10);  // would fit beside `a`, but the large one came first
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(large.got);
  EXPECT_FALSE(small.got);
  a.release();
  large.join(), small.join();
  EXPECT_TRUE(large.got && small.got);
}

TEST(MemoryBudget, ShrinkingToTheMeasuredFootprintLetsAWaiterIn) {
  MemoryBudget b(100);
  auto a = b.reserve(90);
  Waiter w(b, 30);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(w.got);
  a.resize(20);
  w.join();
  EXPECT_TRUE(w.got);
  EXPECT_EQ(b.reserved(), 50u);
  a.resize(200);  // growing never waits
  EXPECT_EQ(b.reserved(), 230u);
}

TEST(MemoryBudget, EstimatesComeFromTheTaskThenTheLargestSeen) {
  MemoryBudget b(100);
  EXPECT_EQ(b.estimate("t1", 7), 7u);
  b.remember("t1", 40);
  b.remember("t2", 10);
  EXPECT_EQ(b.estimate("t2", 7), 10u);
  EXPECT_EQ(b.estimate("unseen", 7), 40u);
}

TEST(MemoryBudget, HostMemoryIsReadWhereThereIsProcMeminfo) {
  std::optional<uint64_t> avail = host_memory_available();
  if (!avail) GTEST_SKIP() << "no /proc/meminfo here";
  EXPECT_GT(*avail, uint64_t(1) << 20);
  EXPECT_LE(default_memory_budget(), *avail);
}
