#include "core/process_tree.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

using namespace cudal1;

namespace {

// A spinning shell with two children, one of them in a session of its own (out of reach of a
// signal to the shell's group, not of the tree).
pid_t start_tree() {
  pid_t p = fork();
  if (p == 0) {
    execl("/bin/sh", "sh", "-c", "sleep 100 & setsid sleep 100 & while :; do :; done", nullptr);
    _exit(127);
  }
  for (int i = 0; i < 200 && process_tree(p).size() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return p;
}

TEST(ProcessTree, FindsDescendantsInOtherSessions) {
  pid_t p = start_tree();
  auto tree = process_tree(p);
  ASSERT_EQ(tree.size(), 3u);
  EXPECT_EQ(tree.front(), p) << "the root comes first";
  kill_tree(p);
  waitpid(p, nullptr, 0);
  EXPECT_TRUE(process_tree(p).empty());
}

TEST(ProcessTree, StopsAllButOneAndContinuesThem) {
  pid_t p = start_tree();
  auto tree = process_tree(p);
  ASSERT_EQ(tree.size(), 3u);
  pid_t spared = tree[1];
  ASSERT_TRUE(stop_tree(p, spared));
  for (pid_t q : tree) {
    auto st = read_proc_stat(q);
    ASSERT_TRUE(st);
    if (q == spared) EXPECT_NE(st->state, 'T');
    else EXPECT_EQ(st->state, 'T') << "pid " << q;
  }
  // A stopped spinning shell uses no CPU.
  double before = tree_cpu_ms(p);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LT(tree_cpu_ms(p) - before, 30.0);
  continue_tree(p);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_NE(read_proc_stat(p)->state, 'T');
  kill_tree(p);
  waitpid(p, nullptr, 0);
}

TEST(ProcessTree, CountsCpuOfTheTreeLessOneProcess) {
  pid_t p = start_tree();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double all = tree_cpu_ms(p), without_shell = tree_cpu_ms(p, p);
  EXPECT_GT(all, without_shell) << "the spinning shell's time is left out";
  EXPECT_GT(tree_rss_bytes(p), 0u);
  kill_tree(p);
  waitpid(p, nullptr, 0);
}

TEST(ProcessTree, FindsProcessesByRealUid) {
  auto mine = processes_of_uid(getuid());
  EXPECT_NE(std::find(mine.begin(), mine.end(), getpid()), mine.end());
  EXPECT_TRUE(processes_of_uid(uid_t(3999999999u)).empty());
}

}  // namespace
