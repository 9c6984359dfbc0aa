// DeviceGate: exclusive holds exclude everything; shared holds overlap; a waiting exclusive
// request is not starved by shared requests that arrive after it; with freezing, members' shared
// holds are stopped instead of waited for.
#include "core/device_gate.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
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

namespace cudal1 {

namespace {

// A child in its own process group that only waits, for the freezing tests.
struct Sleeper {
  pid_t pid = -1;
  Sleeper() {
    pid = fork();
    if (pid == 0) {
      setsid();
      for (;;) pause();
    }
    // Wait for setsid: until then the group does not exist.
    for (int i = 0; i < 200 && getpgid(pid) != pid; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~Sleeper() {
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  bool stopped() const {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), {});
    auto p = s.rfind(')');
    return p != std::string::npos && p + 2 < s.size() && s[p + 2] == 'T';
  }
};

bool eventually(const std::function<bool()>& f) {
  for (int i = 0; i < 200; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace

// With freezing, an exclusive request does not wait for a member's shared hold: the member's
// processes are stopped while it is held and continued after, and a process the member starts
// meanwhile is stopped at once.
TEST(DeviceGate, FreezingStopsSharedMembersInsteadOfWaitingForThem) {
  DeviceGate gate(true);
  DeviceGate::Member checking(&gate), timing(&gate);
  Sleeper a, late;
  checking.track(a.pid);
  auto shared = gate.acquire(DeviceGate::Mode::shared, &checking);
  auto start = std::chrono::steady_clock::now();
  {
    auto alone = gate.acquire(DeviceGate::Mode::exclusive, &timing);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
    EXPECT_TRUE(eventually([&] { return a.stopped(); }));
    checking.track(late.pid);
    EXPECT_TRUE(eventually([&] { return late.stopped(); }));
  }
  EXPECT_TRUE(eventually([&] { return !a.stopped() && !late.stopped(); }));
  EXPECT_GT(checking.frozen_for(), std::chrono::nanoseconds(0));
  EXPECT_EQ(timing.frozen_for(), std::chrono::nanoseconds(0));
  checking.untrack(late.pid);
}

// An evaluation that ends while its processes are stopped (its thread threw, say) leaves the gate
// with nothing of it: its processes go on, and the exclusive hold's release does not touch it.
TEST(DeviceGate, AMemberGoneWhileFrozenIsContinuedAndForgotten) {
  DeviceGate gate(true);
  DeviceGate::Member timing(&gate);
  Sleeper a;
  auto checking = std::make_unique<DeviceGate::Member>(&gate);
  checking->track(a.pid);
  auto shared = std::make_unique<DeviceGate::Hold>(gate.acquire(DeviceGate::Mode::shared, checking.get()));
  auto alone = gate.acquire(DeviceGate::Mode::exclusive, &timing);
  EXPECT_TRUE(eventually([&] { return a.stopped(); }));
  shared.reset();
  checking.reset();
  EXPECT_TRUE(eventually([&] { return !a.stopped(); }));
  alone.release();
  auto again = gate.acquire(DeviceGate::Mode::exclusive, &timing);  // nothing left in the way
}

// A member that is not freezable now (measuring time passing in its processes) is waited for as
// without freezing; a hold without a member always is.
TEST(DeviceGate, FreezingWaitsForHoldsItMayNotStop) {
  DeviceGate gate(true);
  DeviceGate::Member idle_check(&gate), timing(&gate);
  Sleeper a;
  idle_check.track(a.pid);
  idle_check.set_freezable(false);
  for (DeviceGate::Member* holder : {&idle_check, static_cast<DeviceGate::Member*>(nullptr)}) {
    auto shared = std::make_unique<DeviceGate::Hold>(gate.acquire(DeviceGate::Mode::shared, holder));
    std::atomic<bool> got{false};
    std::thread t([&] {
      auto alone = gate.acquire(DeviceGate::Mode::exclusive, &timing);
      got = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(got.load());
    EXPECT_FALSE(a.stopped());
    shared.reset();
    t.join();
    EXPECT_TRUE(got.load());
  }
}

}  // namespace cudal1
