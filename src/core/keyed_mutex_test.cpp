#include "core/keyed_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

using namespace cudal1;

TEST(KeyedMutex, OneKeyIsHeldByOneAtATimeOthersAreFree) {
  KeyedMutex m;
  auto a = m.try_lock("task-a");
  ASSERT_TRUE(a.held());
  EXPECT_FALSE(m.try_lock("task-a").held());
  EXPECT_TRUE(m.try_lock("task-b").held());  // released at once: a temporary
  a.release();
  EXPECT_TRUE(m.try_lock("task-a").held());
}

TEST(KeyedMutex, AWaiterGetsTheKeyWhenTheHolderLetsGo) {
  KeyedMutex m;
  auto first = m.lock("k");
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto g = m.lock("k");
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  KeyedMutex::Guard moved = std::move(first);  // a moved guard still holds the key
  EXPECT_FALSE(first.held());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.load());
  moved.release();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_TRUE(m.try_lock("k").held());
}
