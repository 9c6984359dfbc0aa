#include <gtest/gtest.h>


#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "core/timing_turn.h"
#include "core/timing_turn_testing.h"

using namespace cudal1;
using namespace std::chrono_literals;

namespace {

// A private lock folder per test, so tests (and a real cudal1) running beside them never meet.
class TimingTurnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cudal1_turns_" + std::to_string(getpid()));
    setenv("CUDAL1_TIMING_LOCKS", dir_.c_str(), 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override {
    unsetenv("CUDAL1_TIMING_LOCKS");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};


}  // namespace

TEST_F(TimingTurnTest, OneTurnPerDeviceAtATime) {
  TimingTurn first = TimingTurn::take("cuda:0", 1s);
  ASSERT_TRUE(first.held());
  TimingTurn second = TimingTurn::take("cuda", 150ms);  // "cuda" is device 0 too
  EXPECT_FALSE(second.held());
  EXPECT_GE(second.waited_s(), 0.15);
  TimingTurn other_gpu = TimingTurn::take("cuda:1", 150ms);
  EXPECT_TRUE(other_gpu.held());
  first.release();
  TimingTurn third = TimingTurn::take("cuda:0", 1s);
  EXPECT_TRUE(third.held());
}

TEST_F(TimingTurnTest, AnotherProcessWaitsForTheTurn) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {  // holds the turn for 400 ms
    TimingTurn t = TimingTurn::take("cuda:0", 1s);
    char c = t.held() ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    usleep(400 * 1000);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  TimingTurn mine = TimingTurn::take("cuda:0", 10s);
  EXPECT_TRUE(mine.held());
  EXPECT_GE(mine.waited_s(), 0.2);  // it waited for the child's turn to end, not for its patience
  EXPECT_LT(mine.waited_s(), 9.0);
  int status = 0;
  waitpid(child, &status, 0);
  close(ready[0]);
  close(ready[1]);
}

// Checks run beside checks; a timer waits for the checks under way, and the checks that come
// after it wait for its timing.
TEST_F(TimingTurnTest, SharedTurnsShareTheDeviceAndAWaitingTimerGoesFirst) {
  using Kind = TimingTurn::Kind;
  TimingTurn check1 = TimingTurn::take("cuda:0", 1s, Kind::shared);
  TimingTurn check2 = TimingTurn::take("cuda:0", 1s, Kind::shared);
  ASSERT_TRUE(check1.held());
  ASSERT_TRUE(check2.held());
  EXPECT_FALSE(TimingTurn::take("cuda:0", 100ms).held());

  std::atomic<double> timer_got_s{0}, late_check_got_s{0};
  auto start = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::thread timer([&] {
    TimingTurn t = TimingTurn::take("cuda:0", 10s);
    timer_got_s = t.held() ? since() : -1.0;
    std::this_thread::sleep_for(200ms);
  });
  test_support::wait_for_turnstile_holder("cuda:0");  // the timer waits there for the checks
  std::thread late_check([&] {
    TimingTurn c = TimingTurn::take("cuda:0", 10s, Kind::shared);
    late_check_got_s = c.held() ? since() : -1.0;
  });
  std::this_thread::sleep_for(200ms);
  const double released_s = since();
  check1.release();
  check2.release();
  timer.join();
  late_check.join();
  EXPECT_GE(timer_got_s, released_s) << "the timer did not wait for the checks under way";
  EXPECT_GE(late_check_got_s, timer_got_s + 0.15) << "a check that came later ran during the timing";
}

TEST_F(TimingTurnTest, TheFileIsThePhysicalDevice) {
  setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
  EXPECT_EQ(TimingTurn::file_for("cuda:1"), dir_.string() + "/cuda-3.lock");
  EXPECT_EQ(TimingTurn::file_for("cuda"), dir_.string() + "/cuda-2.lock");
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(TimingTurn::file_for("cuda:3"), dir_.string() + "/cuda-3.lock");
}
