// Candidate workers killed from outside, for real: the test kills the worker with SIGKILL in the
// middle of a call, as the out-of-memory killer or a person would; the kernel's count of
// out-of-memory kills is substituted, so no test depends on what else the machine is doing.
// Kept beside the store: what reaches it (a retry's verdict, never a killed attempt's) is what
// most of these check, and the evaluator itself knows nothing of the store.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "core/paths.h"
#include "evaluator/evaluator.h"
#include "evaluator/fixture_cases.h"
#include "evaluator/infrastructure.h"
#include "runner/python.h"
#include "store/store.h"

namespace fs = std::filesystem;
using namespace cudal1;

namespace {

// This process's candidate workers (children running `cudal1_worker.py candidate`).
std::set<pid_t> candidate_workers() {
  std::set<pid_t> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc", ec)) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    pid_t ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2 || ppid != ::getpid()) continue;
    std::ifstream cmd(e.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (args.find("cudal1_worker.py") != std::string::npos && args.find(std::string("\0candidate\0", 11)) != std::string::npos)
      out.insert(pid_t(std::stoi(name)));
  }
  return out;
}

// Kills the first `kills` candidate workers that reach their first call with SIGKILL, and lets
// the later ones go on.
class CandidateKiller {
 public:
  explicit CandidateKiller(int kills) : kills_(kills), thread_([this] { watch(); }) {}
  ~CandidateKiller() {
    stop_ = true;
    thread_.join();
  }
  int killed() const { return killed_; }

 private:
  void watch() {
    std::set<pid_t> done;
    while (!stop_) {
      for (pid_t pid : candidate_workers()) {
        fs::path dir = "/proc/" + std::to_string(pid) + "/cwd";
        std::error_code ec;
        if (done.count(pid) || !fs::exists(dir / "in_call", ec)) continue;
        done.insert(pid);
        if (killed_ < kills_) {
          ::kill(pid, SIGKILL);
          ++killed_;
        } else {
          std::ofstream(dir / "go").put('\n');
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  const int kills_;
  std::atomic<int> killed_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

EvalOptions options(const std::string& candidate) {
  EvalOptions o;
  o.task_path = (fixtures_dir() / "tasks" / "scale_add.py").string();
  o.candidate_path = (fixtures_dir() / candidate).string();
  o.timing = false;  // the verdict is the point here, not the figure
  o.lint = false;
  o.build_timeout_s = 90;
  o.call_timeout_s = 90;
  return o;
}

struct TempStore {
  fs::path dir = fs::temp_directory_path() / ("cudal1-infra-" + std::to_string(::getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempStore() { fs::remove_all(dir); }
  ~TempStore() { fs::remove_all(dir); }
};

}  // namespace

TEST(InfrastructureFaults, AWorkerKilledMidCallIsEvaluatedAgainAndOnlyTheRetrysVerdictIsStored) {
  TempStore t;
  Store store(t.dir / "r.db");
  OomKillCounterOverride no_oom([] { return std::optional<uint64_t>(7); });
  CandidateKiller killer(1);
  EvalOptions o = options("infrastructure/scale_add_waits_in_first_call.py");
  EvalResult r = evaluate(o);
  EXPECT_EQ(killer.killed(), 1);
  EXPECT_EQ(r.status, Status::ok) << r.error;
  EXPECT_TRUE(r.accepted);
  EXPECT_FALSE(r.infrastructure_failure());
  EXPECT_EQ(r.statistics["infrastructure_retry"]["first_attempt"]["cause"], kOutsideKillCause) << r.statistics.dump();
  store.save(r, o.protocol_key(), o.device, "src");
  EXPECT_EQ(store.count(), 1);  // the killed attempt's crash never reached the caller, so never the store
  EXPECT_EQ(store.find(r.task_hash, r.candidate_hash, o.protocol_key(), o.device)->status, Status::ok);
}

TEST(InfrastructureFaults, TheOutOfMemoryKillerTwiceIsNoVerdictAndIsNotStored) {
  TempStore t;
  Store store(t.dir / "r.db");
  uint64_t kills = 0;
  std::mutex m;
  OomKillCounterOverride oom_every_time([&] {  // another out-of-memory kill between any two reads
    std::lock_guard lock(m);
    return std::optional<uint64_t>(++kills);
  });
  CandidateKiller killer(2);
  EvalOptions o = options("infrastructure/scale_add_waits_in_first_call.py");
  EvalResult r = evaluate(o);
  EXPECT_EQ(killer.killed(), 2);
  ASSERT_TRUE(r.infrastructure_failure()) << r.error;
  EXPECT_EQ(r.status, Status::crash);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.infrastructure["cause"], kOomKillerCause);
  EXPECT_EQ(r.to_json()["infrastructure"]["cause"], kOomKillerCause);
  EXPECT_EQ(store.save(r, o.protocol_key(), o.device, "src"), 0);
  EXPECT_EQ(store.count(), 0);
  EXPECT_FALSE(store.find(r.task_hash, r.candidate_hash, o.protocol_key(), o.device)) << "evaluated again next time";
}

TEST(InfrastructureFaults, ACandidateThatKillsItselfKeepsItsCrashAndItIsStored) {
  TempStore t;
  Store store(t.dir / "r.db");
  OomKillCounterOverride no_oom([] { return std::optional<uint64_t>(7); });
  EvalOptions o = options("candidates/crash_sigkill_self.py");
  EvalResult r = evaluate(o);
  EXPECT_EQ(r.status, Status::crash);
  EXPECT_FALSE(r.infrastructure_failure()) << "dying cannot dodge the verdict";
  EXPECT_NE(r.error.find("the death is the candidate's own"), std::string::npos) << r.error;
  EXPECT_EQ(r.statistics["infrastructure_retry"]["second_attempt"]["cause"], kOutsideKillCause);
  EXPECT_GT(store.save(r, o.protocol_key(), o.device, "src"), 0);
  EXPECT_EQ(store.find(r.task_hash, r.candidate_hash, o.protocol_key(), o.device)->status, Status::crash);
}

TEST(InfrastructureFaults, OutOfMemoryOnAGpuOthersFilledIsNoVerdictForTheCandidate) {
  TempStore t;
  Store store(t.dir / "r.db");
  EvalOptions o = options("infrastructure/scale_add_device_full.py");
  EvalResult r = evaluate(o);
  ASSERT_TRUE(r.infrastructure_failure()) << r.error;
  EXPECT_EQ(r.infrastructure["cause"], kDeviceMemoryCause);
  EXPECT_EQ(r.infrastructure["first_attempt"]["cause"], kDeviceMemoryCause);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(store.save(r, o.protocol_key(), o.device, "src"), 0);
  EXPECT_EQ(store.count(), 0);
}

TEST(InfrastructureFaults, OutOfMemoryOnAGpuOthersFilledIsNoTaskErrorForTheReference) {
  TempStore t;
  Store store(t.dir / "r.db");
  EvalOptions o = options("candidates/ok_scale_add_alpha.py");
  o.task_path = (fixtures_dir() / "infrastructure" / "scale_add_task_device_full.py").string();
  EvalResult r = evaluate(o);  // no throw: not the task's fault
  ASSERT_TRUE(r.infrastructure_failure()) << r.error;
  EXPECT_EQ(r.infrastructure["cause"], kDeviceMemoryCause);
  EXPECT_NE(r.error.find("out of GPU memory that other processes held"), std::string::npos) << r.error;
  EXPECT_EQ(store.save(r, o.protocol_key(), o.device, "src"), 0);
}

// A GPU that other lanes filled refuses the precision ladder's float64 oracle (twice the
// reference's memory) or a rung: that step is taken on the host, and the reply says so. The
// ladder's own tests (precision_fallback_test.py) inject PyTorch's out-of-memory error.
TEST(InfrastructureFaults, ThePrecisionLadderTakesOnTheHostWhatAFullDeviceRefuses) {
  std::string command = "cd '" + python_worker_dir().string() + "' && '" + find_python("") +
                        "' -m unittest -q precision_fallback_test 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) output += buf;
  EXPECT_EQ(::pclose(pipe), 0) << output;
  EXPECT_NE(output.find("OK"), std::string::npos) << output;
}
