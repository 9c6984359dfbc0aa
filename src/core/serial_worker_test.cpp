// SerialWorker: tasks run off the posting thread, in order, a failing one does not stop the
// rest, and destruction runs what was posted before it.
#include "core/serial_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <vector>

using namespace cudal1;

TEST(SerialWorker, RunsTasksInOrderOffThePostingThread) {
  std::vector<int> order;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  const auto poster = std::this_thread::get_id();
  std::atomic<bool> off_thread{true};
  {
    SerialWorker w("test");
    w.post([&] {
      if (std::this_thread::get_id() == poster) off_thread = false;
      released.wait();  // post() returned while this one still runs
      order.push_back(1);
    });
    for (int i = 2; i <= 4; ++i) w.post([&order, i] { order.push_back(i); });
    EXPECT_EQ(w.pending(), 4u);
    release.set_value();
  }  // destruction runs the posted ones
  EXPECT_TRUE(off_thread);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST(SerialWorker, AFailingTaskIsSaidAndTheNextRuns) {
  std::atomic<int> ran{0};
  ::testing::internal::CaptureStderr();
  {
    SerialWorker w("reviews");
    w.post([] { throw std::runtime_error("planted"); });
    w.post([&] { ++ran; });
  }
  std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ran, 1);
  EXPECT_NE(said.find("reviews: a task failed: planted"), std::string::npos) << said;
}

TEST(SerialWorker, PendingFallsToZeroOnceAllHaveRun) {
  SerialWorker w("test");
  std::promise<void> done;
  w.post([&] { done.set_value(); });
  done.get_future().wait();
  for (int i = 0; i < 1000 && w.pending() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(w.pending(), 0u);
}
