// The retry rule on attempts made up here: no worker runs (the real deaths are in
// infrastructure_eval_test.cpp).
#include "evaluator/infrastructure.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <vector>

using namespace cudal1;

namespace {

ExitInfo killed_by(int sig) { return ExitInfo{false, 0, true, sig}; }

Attempt crash(std::optional<ExitInfo> exit, uint64_t oom_before, uint64_t oom_after) {
  Attempt a;
  a.result.status = Status::crash;
  a.result.error = "case 0: the candidate process " + (exit ? exit->describe() : std::string("went away"));
  a.candidate_exit = exit;
  a.oom_kills_before = oom_before;
  a.oom_kills_after = oom_after;
  return a;
}

Attempt ok() {
  Attempt a;
  a.result.status = Status::ok;
  a.result.accepted = true;
  a.result.speedup["eager"] = 1.2;
  a.candidate_exit = ExitInfo{true, 0, false, 0};
  return a;
}

// Runs the rule over these attempts in turn; `runs` says how many it asked for.
EvalResult rule(std::vector<Attempt> attempts, int& runs) {
  runs = 0;
  return retry_infrastructure_faults([&](int n) {
    EXPECT_EQ(n, runs);
    return attempts.at(std::size_t(runs++));
  });
}

}  // namespace

TEST(Infrastructure, OnlyASigkillDeathIsTheMachinesDoing) {
  EXPECT_TRUE(infrastructure_cause(crash(killed_by(SIGSEGV), 0, 0)).is_null());
  EXPECT_TRUE(infrastructure_cause(crash(ExitInfo{true, 0, false, 0}, 0, 0)).is_null());  // os._exit(0)
  EXPECT_TRUE(infrastructure_cause(crash(std::nullopt, 0, 0)).is_null());
  Attempt timed_out = crash(killed_by(SIGKILL), 0, 0);
  timed_out.result.status = Status::timeout;  // cudal1's own kill: reported as what it was for
  EXPECT_TRUE(infrastructure_cause(timed_out).is_null());
  EXPECT_EQ(infrastructure_cause(crash(killed_by(SIGKILL), 4, 4))["cause"], kOutsideKillCause);
  json oom = infrastructure_cause(crash(killed_by(SIGKILL), 4, 5));
  EXPECT_EQ(oom["cause"], kOomKillerCause);
  EXPECT_EQ(oom["oom_kills"], json::array({4, 5}));
  Attempt unreadable = crash(killed_by(SIGKILL), 0, 0);
  unreadable.oom_kills_before.reset();  // no /proc/vmstat: never guessed to be the OOM killer
  EXPECT_EQ(infrastructure_cause(unreadable)["cause"], kOutsideKillCause);
}

TEST(Infrastructure, ACandidatesOwnCrashIsNotRetried) {
  int runs = 0;
  EvalResult r = rule({crash(killed_by(SIGSEGV), 0, 0)}, runs);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(r.status, Status::crash);
  EXPECT_FALSE(r.infrastructure_failure());
}

TEST(Infrastructure, AKillFromOutsideIsRetriedAndTheRetryGivesTheVerdict) {
  int runs = 0;
  EvalResult r = rule({crash(killed_by(SIGKILL), 0, 0), ok()}, runs);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_TRUE(r.accepted);
  EXPECT_FALSE(r.infrastructure_failure());
  EXPECT_EQ(r.statistics["infrastructure_retry"]["first_attempt"]["cause"], kOutsideKillCause);
}

TEST(Infrastructure, DyingOfSigkillAgainWithoutAnOomKillIsTheCandidatesCrash) {
  for (uint64_t first_oom_after : {0, 1}) {  // whatever killed it the first time
    int runs = 0;
    EvalResult r = rule({crash(killed_by(SIGKILL), 0, first_oom_after), crash(killed_by(SIGKILL), 1, 1)}, runs);
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(r.status, Status::crash);
    EXPECT_FALSE(r.infrastructure_failure()) << "it cannot dodge its zero by dying";
    EXPECT_NE(r.error.find("the death is the candidate's own"), std::string::npos) << r.error;
    EXPECT_EQ(r.statistics["infrastructure_retry"]["second_attempt"]["cause"], kOutsideKillCause);
  }
}

TEST(Infrastructure, TheOomKillerTwiceIsAnInfrastructureFailure) {
  int runs = 0;
  EvalResult r = rule({crash(killed_by(SIGKILL), 7, 8), crash(killed_by(SIGKILL), 8, 9)}, runs);
  EXPECT_EQ(runs, 2);
  ASSERT_TRUE(r.infrastructure_failure());
  EXPECT_EQ(r.status, Status::crash);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.infrastructure["cause"], kOomKillerCause);
  EXPECT_EQ(r.infrastructure["first_attempt"]["cause"], kOomKillerCause);
  EXPECT_NE(r.error.find("infrastructure failure"), std::string::npos) << r.error;
  EXPECT_EQ(EvalResult::from_json(r.to_json()).infrastructure, r.infrastructure);  // kept in the JSON
}

TEST(Infrastructure, OomKillCountIsReadFromVmstatOrTheTestsCounter) {
  EXPECT_EQ(parse_oom_kill_count("pgfault 10\noom_kill 3\nnr_foo 1\n"), uint64_t(3));
  EXPECT_FALSE(parse_oom_kill_count("pgfault 10\n").has_value());
  int asked = 0;
  {
    OomKillCounterOverride fake([&] { return std::optional<uint64_t>(++asked + 41); });
    EXPECT_EQ(oom_kill_count(), uint64_t(42));
  }
  oom_kill_count();  // back to the kernel's (or none): the test's counter is not asked
  EXPECT_EQ(asked, 1);
}

namespace {

// PyTorch's message as a candidate met it on an H100 shared by 16 lanes.
const char* kSharedDeviceOom =
    "case 2 (heavy_tailed inputs): OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a "
    "total capacity of 79.18 GiB of which 252.94 MiB is free. Including non-PyTorch memory, this process has 5.80 GiB "
    "memory in use. Of the allocated memory 4.50 GiB is allocated by PyTorch";

Attempt runtime_error(const std::string& error) {
  Attempt a;
  a.result.status = Status::runtime_error;
  a.result.error = error;
  a.candidate_exit = ExitInfo{true, 0, false, 0};
  return a;
}

}  // namespace

TEST(Infrastructure, ReadsPyTorchsOutOfMemoryMessage) {
  auto oom = parse_device_out_of_memory(kSharedDeviceOom);
  ASSERT_TRUE(oom);
  EXPECT_DOUBLE_EQ(oom->requested, 512.0 * 1048576.0);
  EXPECT_NEAR(oom->total / 1073741824.0, 79.18, 1e-9);
  EXPECT_NEAR(oom->free / 1048576.0, 252.94, 1e-9);
  EXPECT_NEAR(oom->this_process / 1073741824.0, 5.80, 1e-9);
  EXPECT_TRUE(oom->others_to_blame());
  EXPECT_FALSE(parse_device_out_of_memory("RuntimeError: CUDA error: an illegal memory access was encountered"));
}

TEST(Infrastructure, OutOfMemoryIsTheCandidatesWhenItsOwnMemoryFillsTheDevice) {
  std::string own = "OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of "
                    "79.18 GiB of which 3.10 GiB is free. Including non-PyTorch memory, this process has 75.50 GiB memory "
                    "in use.";
  EXPECT_FALSE(parse_device_out_of_memory(own)->others_to_blame());
  EXPECT_TRUE(infrastructure_cause(runtime_error(own)).is_null());
  int runs = 0;
  EvalResult r = rule({runtime_error(own)}, runs);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(r.status, Status::runtime_error);
  EXPECT_FALSE(r.infrastructure_failure());
}

// A CUDA runtime error names no size; the worker notes what the device held when it failed.
TEST(Infrastructure, ACudaRuntimeOutOfMemoryIsJudgedByWhoHeldTheDevice) {
  std::string others = "loading the candidate: AcceleratorError: CUDA error: out of memory\n(device memory when it "
                       "failed: 85018877624 bytes in all, 104949760 free, 750780416 held by this process)";
  auto oom = parse_device_out_of_memory(others);
  ASSERT_TRUE(oom);
  EXPECT_FALSE(oom->request_known);
  EXPECT_TRUE(oom->others_to_blame());
  json cause = infrastructure_cause(runtime_error(others));
  EXPECT_EQ(cause["cause"], kDeviceMemoryCause);
  EXPECT_NE(cause["detail"].get<std::string>().find("more than this evaluation's own"), std::string::npos) << cause.dump();
  // The candidate's own 70 GB filled the device: its verdict.
  std::string own = "AcceleratorError: CUDA error: out of memory\n(device memory when it failed: 85018877624 bytes "
                    "in all, 104949760 free, 75161927680 held by this process)";
  EXPECT_FALSE(parse_device_out_of_memory(own)->others_to_blame());
  EXPECT_TRUE(infrastructure_cause(runtime_error(own)).is_null());
  // Without the note nothing says who filled it: the candidate's, as before.
  EXPECT_FALSE(parse_device_out_of_memory("AcceleratorError: CUDA error: out of memory"));
}

TEST(Infrastructure, OutOfMemoryOnADeviceOthersFilledIsRetried) {
  EXPECT_EQ(infrastructure_cause(runtime_error(kSharedDeviceOom))["cause"], kDeviceMemoryCause);
  int runs = 0;
  EvalResult r = rule({runtime_error(kSharedDeviceOom), ok()}, runs);
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(r.accepted);
  EXPECT_EQ(r.statistics["infrastructure_retry"]["first_attempt"]["cause"], kDeviceMemoryCause);

  r = rule({runtime_error(kSharedDeviceOom), runtime_error(kSharedDeviceOom)}, runs);
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(r.infrastructure_failure());  // no verdict, never stored
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.infrastructure["cause"], kDeviceMemoryCause);
  EXPECT_NE(r.error.find("infrastructure failure, no verdict"), std::string::npos);
}
