// A child started with drop_privileges keeps no capability and cannot gain one; and when a step
// of that drop fails, the child never runs: Process throws, naming the step (fails closed).
// The failures are injected with a seccomp filter in a death-test child, so the real system
// calls fail as a hostile or unusual kernel would make them fail.
#include <gtest/gtest.h>

#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <linux/capability.h>
#include <sys/syscall.h>

#include <string>

#include "core/error.h"
#include "runner/process.h"

using namespace cudal1;
using namespace std::chrono_literals;

namespace {

ProcessSpec dropping(const std::string& script) {
  ProcessSpec s;
  s.argv = {"/bin/sh", "-c", script};
  s.limits.drop_privileges = true;
  return s;
}

bool holds_setpcap() {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[CAP_SETPCAP / 32].effective >> (CAP_SETPCAP % 32)) & 1u;
}

// In the death test's own process: makes `syscall` (with first argument `arg0`, when given)
// fail with EPERM from now on, for this process and every child it starts; then starts a child
// with drop_privileges and exits 0 only if that start threw an Error naming `step`.
[[noreturn]] void start_with_failing(int syscall_nr, long arg0, const char* step) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  int added = arg0 < 0 ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), syscall_nr, 0)
                       : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), syscall_nr, 1,
                                          SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(arg0)));
  if (added != 0 || seccomp_load(ctx) != 0) _exit(10);
  try {
    Process p(dropping("echo ran >&4"));
    _exit(11);  // started although a step of the drop failed
  } catch (const Error& e) {
    _exit(e.message().find(step) != std::string::npos ? 0 : 12);
  }
}

}  // namespace

TEST(PrivilegeDrop, TheChildHoldsNoCapabilityAndCannotGainOne) {
  ProcessSpec s = dropping(
      "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status | tr -s '\\t ' ' ' "
      "| tr '\\n' ';' >&4; echo >&4");
  Process p(s);
  std::string line;
  ASSERT_EQ(p.read_line(5s, line), WaitOutcome::line) << p.stderr_tail();
  EXPECT_NE(line.find("CapPrm: 0000000000000000"), std::string::npos) << line;
  EXPECT_NE(line.find("CapEff: 0000000000000000"), std::string::npos) << line;
  EXPECT_NE(line.find("CapInh: 0000000000000000"), std::string::npos) << line;
  EXPECT_NE(line.find("NoNewPrivs: 1"), std::string::npos) << line;
  if (holds_setpcap()) {
    EXPECT_NE(line.find("CapBnd: 0000000000000000"), std::string::npos) << line;
  }
}

TEST(PrivilegeDrop, AFailedNoNewPrivsKeepsTheChildFromRunning) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(start_with_failing(SCMP_SYS(prctl), PR_SET_NO_NEW_PRIVS, "setting no_new_privs"),
              ::testing::ExitedWithCode(0), "");
}

TEST(PrivilegeDrop, AFailedCapsetKeepsTheChildFromRunning) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(start_with_failing(SCMP_SYS(capset), -1, "dropping its capabilities"),
              ::testing::ExitedWithCode(0), "");
}

TEST(PrivilegeDrop, AFailedBoundingSetDropKeepsTheChildFromRunning) {
  if (!holds_setpcap()) GTEST_SKIP() << "without CAP_SETPCAP the bounding set is not ours to change";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(start_with_failing(SCMP_SYS(prctl), PR_CAPBSET_DROP, "emptying the capability bounding set"),
              ::testing::ExitedWithCode(0), "");
}
