// DeviceGate: exclusive holds exclude everything; shared holds overlap; a waiting exclusive
// request is not starved by shared requests that arrive after it.
#include "core/device_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace cudal1 {
namespace {

using namespace std::chrono_literals;

TEST(DeviceGate, SharedHoldsOverlapAndExclusiveHoldsDoNot) {
  DeviceGate gate;
  std::atomic<int> shared_in{0}, exclusive_in{0}, max_shared{0};
  std::atomic<bool> broken{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        bool excl = (t + i) % 3 == 0;
        auto h = gate.acquire(excl ? DeviceGate::Mode::exclusive : DeviceGate::Mode::shared);
        if (excl) {
          if (++exclusive_in != 1 || shared_in != 0) broken = true;
          std::this_thread::sleep_for(200us);
          --exclusive_in;
        } else {
          int now = ++shared_in;
          if (exclusive_in != 0) broken = true;
          for (int m = max_shared; now > m && !max_shared.compare_exchange_weak(m, now);) {}
          std::this_thread::sleep_for(500us);
          --shared_in;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_FALSE(broken) << "an exclusive hold overlapped another hold";
  EXPECT_GT(max_shared.load(), 1) << "shared holds never overlapped";
}

TEST(DeviceGate, WaitingExclusiveGoesBeforeLaterSharedRequests) {
  DeviceGate gate;
  auto first = gate.acquire(DeviceGate::Mode::shared);
  std::atomic<int> order{0}, exclusive_at{-1}, later_shared_at{-1};
  std::thread excl([&] {
    auto h = gate.acquire(DeviceGate::Mode::exclusive);
    exclusive_at = order++;
  });
  std::this_thread::sleep_for(50ms);  // the exclusive request is waiting on `first`
  std::thread later([&] {
    auto h = gate.acquire(DeviceGate::Mode::shared);
    later_shared_at = order++;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(later_shared_at.load(), -1) << "a shared request went past a waiting exclusive one";
  first.release();
  excl.join();
  later.join();
  EXPECT_EQ(exclusive_at.load(), 0);
  EXPECT_EQ(later_shared_at.load(), 1);
}

TEST(DeviceGate, DowngradeLetsSharedInButNoOtherExclusive) {
  DeviceGate gate;
  auto mine = gate.acquire(DeviceGate::Mode::exclusive);
  mine.downgrade();
  EXPECT_EQ(mine.mode(), DeviceGate::Mode::shared);
  auto other_shared = gate.acquire(DeviceGate::Mode::shared);  // would block if still exclusive
  other_shared.release();
  std::atomic<bool> got{false};
  std::thread excl([&] {
    auto h = gate.acquire(DeviceGate::Mode::exclusive);
    got = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(got.load()) << "an exclusive hold started while a downgraded hold was still shared";
  mine.release();
  excl.join();
  EXPECT_TRUE(got.load());
}

TEST(DeviceGate, YieldingSharedHoldLetsAWaitingExclusiveRequestIn) {
  DeviceGate gate;
  auto mine = gate.acquire(DeviceGate::Mode::shared);
  EXPECT_FALSE(mine.yield()) << "yielded with nothing waiting";
  std::atomic<bool> timed{false}, mine_back{false};
  std::thread excl([&] {
    auto h = gate.acquire(DeviceGate::Mode::exclusive);
    std::this_thread::sleep_for(30ms);
    timed = true;
  });
  std::this_thread::sleep_for(50ms);  // the exclusive request waits on `mine`
  EXPECT_FALSE(timed.load());
  EXPECT_TRUE(mine.yield());
  mine_back = true;
  EXPECT_TRUE(timed.load()) << "the shared hold came back before the exclusive one had run";
  EXPECT_TRUE(mine.held());
  EXPECT_EQ(mine.mode(), DeviceGate::Mode::shared);
  excl.join();
  mine.release();
  auto after = gate.acquire(DeviceGate::Mode::exclusive);  // nothing left held
  EXPECT_TRUE(after.held());
}

TEST(DeviceGate, MovedHoldReleasesOnce) {
  DeviceGate gate;
  {
    auto a = gate.acquire(DeviceGate::Mode::exclusive);
    DeviceGate::Hold b = std::move(a);
    EXPECT_FALSE(a.held());
    EXPECT_TRUE(b.held());
  }
  auto c = gate.acquire(DeviceGate::Mode::exclusive);  // would block forever if not released
  EXPECT_TRUE(c.held());
}

}  // namespace
}  // namespace cudal1
