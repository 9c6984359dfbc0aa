#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runner/process.h"

using namespace cudal1;
using namespace std::chrono_literals;

static ProcessSpec shell(const std::string& script) {
  ProcessSpec s;
  s.argv = {"/bin/sh", "-c", script};
  return s;
}

TEST(Process, RequestAndReplyOverFd3AndFd4) {
  Process p(shell("read line <&3; echo \"got $line\" >&4; echo noise; echo more >&2"));
  ASSERT_TRUE(p.send_line("hello"));
  std::string line;
  ASSERT_EQ(p.read_line(5s, line), WaitOutcome::line);
  EXPECT_EQ(line, "got hello");
  EXPECT_EQ(p.read_line(5s, line), WaitOutcome::exited);
  EXPECT_NE(p.stdout_tail().find("noise"), std::string::npos);
  EXPECT_NE(p.stderr_tail().find("more"), std::string::npos);
  EXPECT_TRUE(p.exit_info()->exited);
}

TEST(Process, TimeoutThenKill) {
  Process p(shell("sleep 100"));
  std::string line;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(p.read_line(300ms, line), WaitOutcome::timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  p.kill_all();
  ASSERT_TRUE(p.exit_info());
  EXPECT_TRUE(p.exit_info()->signaled);
}

// Time the frozen clock says the child spent frozen (stopped while another lane timed) does not
// count against its deadline: a reply 0.3 s of running time away comes within a 1 s timeout
// although the child was stopped for 1.5 s of it. Stopped without the clock saying so (the child
// can stop itself), the time counts.
TEST(Process, FrozenTimeDoesNotCountAgainstTheDeadline) {
  for (bool clock : {true, false}) {
    SCOPED_TRACE(clock ? "with the frozen clock" : "without");
    Process p(shell("sleep 0.3; echo late >&4; sleep 100"));
    std::atomic<bool> frozen{true};
    auto since = std::chrono::steady_clock::now();
    std::atomic<long long> total_ns{0};
    if (clock)
      p.set_frozen_clock([&] {
        return std::chrono::nanoseconds(total_ns.load()) + (frozen ? std::chrono::steady_clock::now() - since : 0ns);
      });
    ASSERT_EQ(kill(-p.pid(), SIGSTOP), 0);
    std::thread resume([&] {
      std::this_thread::sleep_for(1500ms);
      total_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count();
      frozen = false;
      kill(-p.pid(), SIGCONT);
    });
    std::string line;
    auto outcome = p.read_line(1000ms, line);
    resume.join();
    EXPECT_EQ(outcome, clock ? WaitOutcome::line : WaitOutcome::timeout);
    if (clock) {
      EXPECT_EQ(line, "late");
    }
  }
}

TEST(Process, TheChildBlocksNoSignalThatTheParentBlocks) {
  sigset_t term, before;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &before);
  Process p(shell("grep SigBlk /proc/self/status >&4"));
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  std::string line;
  ASSERT_EQ(p.read_line(5s, line), WaitOutcome::line);
  EXPECT_EQ(line, "SigBlk:\t0000000000000000");
}

TEST(Process, SignalDeathIsReported) {
  Process p(shell("kill -SEGV $$"));
  std::string line;
  EXPECT_EQ(p.read_line(5s, line), WaitOutcome::exited);
  ASSERT_TRUE(p.exit_info());
  EXPECT_TRUE(p.exit_info()->signaled);
  EXPECT_EQ(p.exit_info()->describe(), "killed by SIGSEGV");
}

TEST(Process, OutputFloodIsCutOff) {
  ProcessSpec s = shell("yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  s.limits.output_bytes = 1 << 20;
  Process p(s);
  std::string line;
  EXPECT_EQ(p.read_line(20s, line), WaitOutcome::output_flood);
  EXPECT_LE(p.stdout_tail().size(), 64u * 1024);
}

TEST(Process, ReplyChannelFloodWithoutNewlineIsCutOff) {
  ProcessSpec s = shell("while :; do printf 'xxxxxxxxxxxxxxxxxxxxxxxx' >&4; done");
  s.limits.output_bytes = 1 << 20;
  Process p(s);
  std::string line;
  EXPECT_EQ(p.read_line(20s, line), WaitOutcome::output_flood);
}

TEST(Process, OrphansOfADoubleForkAreKilled) {
  protect_parent_process();
  auto marker = std::filesystem::temp_directory_path() / ("cudal1_orphan_" + std::to_string(getpid()));
  // The grandchild leaves the group (setsid) and outlives its parent.
  std::string script = "setsid sh -c 'echo $$ > " + marker.string() + "; sleep 300' & sleep 0.3; exit 0";
  pid_t orphan = 0;
  {
    Process p(shell(script));
    std::string line;
    EXPECT_EQ(p.read_line(10s, line), WaitOutcome::exited);
    std::ifstream(marker) >> orphan;
    ASSERT_GT(orphan, 0);
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_NE(kill(orphan, 0), 0) << "orphan " << orphan << " survived";
  std::filesystem::remove(marker);
}

TEST(Process, MemoryLimitKills) {
  ProcessSpec s;
  s.argv = {"/usr/bin/python3", "-c", "b = bytearray(600 << 20); import time; time.sleep(30)"};
  s.limits.memory_bytes = 200u << 20;
  Process p(s);
  std::string line;
  EXPECT_EQ(p.read_line(20s, line), WaitOutcome::memory_exceeded);
}

TEST(Process, MissingProgramIsARunnerError) {
  ProcessSpec s;
  s.argv = {"/nonexistent/program"};
  EXPECT_ANY_THROW(Process p(s));
}

TEST(Process, DroppedPrivilegesCannotReadParentMemory) {
  protect_parent_process();
  ProcessSpec s = shell("cat /proc/$PPID/mem >/dev/null 2>&1 && echo readable >&4 || echo denied >&4");
  s.limits.drop_privileges = true;
  Process p(s);
  std::string line;
  ASSERT_EQ(p.read_line(5s, line), WaitOutcome::line);
  EXPECT_EQ(line, "denied");
}

TEST(Process, HiddenFilesAndDirectoriesStayOutOfReach) {
  if (geteuid() != 0) GTEST_SKIP() << "mount namespaces need root here";
  auto base = std::filesystem::temp_directory_path() / ("cudal1_hide_" + std::to_string(getpid()));
  std::filesystem::create_directories(base / "cache" / "mine");
  std::filesystem::create_directories(base / "work" / "stage");
  std::ofstream(base / "store.db") << "secret";
  std::ofstream(base / "cache" / "other") << "theirs";
  std::ofstream(base / "cache" / "mine" / "build") << "own";
  ProcessSpec s = shell(
      "b=" + base.string() + "; "
      "printf '%s|%s|%s\\n' \"$(cat $b/store.db)\" \"$(cat $b/cache/other 2>/dev/null)\" "
      "\"$(cat $b/cache/mine/build)\" >&4; echo forged > $b/store.db; echo x > $b/cache/other");
  s.limits.hide_dirs = {{(base / "cache").string(), "mine", (base / "work" / "stage").string()}};
  s.limits.hide_files = {(base / "store.db").string()};
  s.limits.drop_privileges = true;
  Process p(s);
  std::string line;
  ASSERT_EQ(p.read_line(5s, line), WaitOutcome::line) << p.stderr_tail();
  EXPECT_EQ(line, "||own");  // store reads empty, others' builds are gone, its own remain
  p.read_line(5s, line);
  std::ifstream store(base / "store.db"), other(base / "cache" / "other");
  std::string a, b;
  store >> a;
  other >> b;
  EXPECT_EQ(a, "secret");
  EXPECT_EQ(b, "theirs");
  std::filesystem::remove_all(base);
}
