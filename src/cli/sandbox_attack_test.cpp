// Attacks on what lies outside the candidate's sandbox, made through the CLI as a user runs it:
// the candidate knows every path (the store, the task file) and tries to forge, overwrite and
// outlive. Each test shows the attempt changed nothing.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "core/process_tree.h"
#include "evaluator/fixture_cases.h"
#include "runner/leftover_processes.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Workspace {
  fs::path root = fs::temp_directory_path() / ("cudal1-attack-" + std::to_string(getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::path store_dir = root / "store", db = store_dir / "results.db", task = root / "task.py",
           scratch = root / "scratch";
  Workspace() {
    fs::remove_all(root);
    fs::create_directories(store_dir);
    fs::create_directories(scratch);
    fs::copy_file(cudal1::fixtures_dir() / "tasks" / "scale_add.py", task);
  }
  ~Workspace() { fs::remove_all(root); }
  fs::path candidate(const std::string& name, const std::string& import_time_code, const std::string& forward_prefix = "") {
    fs::path p = root / name;
    std::ofstream(p) << "import os, sys\nimport torch\nimport torch.nn as nn\n" << import_time_code
                     << "\nclass ModelNew(nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n"
                        "        self.scale = scale\n\n    def forward(self, x, y):\n"
                     << forward_prefix << "        return x * self.scale + y\n";
    return p;
  }
  // `cudal1 eval` with this workspace's store and scratch; returns the exit status and stdout.
  std::pair<int, std::string> eval(const fs::path& cand) {
    std::string cmd = "CUDAL1_SCRATCH=" + scratch.string() + " " + CUDAL1_BINARY + " eval --json --db " + db.string() +
                      " --task " + task.string() + " --candidate " + cand.string() +
                      " --buckets 3 --calls 3 --build-timeout 60 --call-timeout 30 2>" + (root / "err.txt").string();
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  }
};

TEST(SandboxAttack, ForgingTheStoreAndOverwritingTheTaskChangeNothing) {
  Workspace w;
  std::string task_before = slurp(w.task);
  // The attack, run at import (so in the build service's capture worker too): a forged verdict
  // row, a raw write into the database file, a file beside the store, and a reference replaced by
  // one that returns zeros.
  std::string attack = "import sqlite3\n"
                       "DB, TASK = " + json(w.db.string()).dump() + ", " + json(w.task.string()).dump() + "\n"
                       "def attempt(fn):\n    try:\n        fn()\n    except Exception:\n        pass\n"
                       "attempt(lambda: sqlite3.connect(DB).executescript('CREATE TABLE forged(x); INSERT INTO forged VALUES (50);'))\n"
                       "attempt(lambda: open(DB, 'r+b').write(b'forged'))\n"
                       "attempt(lambda: open(os.path.dirname(DB) + '/planted', 'w').write('x'))\n"
                       "attempt(lambda: open(TASK, 'w').write(open(TASK).read().replace('x * self.scale + y', 'torch.zeros_like(x)')))\n";
  auto [code, out] = w.eval(w.candidate("forger.py", attack));
  ASSERT_EQ(code, 0) << slurp(w.root / "err.txt");
  json r = json::parse(out);
  EXPECT_EQ(r["status"], "ok") << out;
  EXPECT_TRUE(r["accepted"].get<bool>());
  EXPECT_EQ(slurp(w.task), task_before) << "the task file was overwritten";
  EXPECT_FALSE(fs::exists(w.store_dir / "planted"));
  SQLite::Database db(w.db.string());
  EXPECT_FALSE(db.tableExists("forged"));
  EXPECT_EQ(db.execAndGet("PRAGMA integrity_check").getString(), "ok");
  auto [code2, out2] = w.eval(w.candidate("zeros.py", "", "        return torch.zeros_like(x)\n"));
  EXPECT_EQ(json::parse(out2)["status"], "incorrect") << "the reference still computes x * scale + y";
}

// A client's suite is code from outside too: `tasks list` runs each task file to describe it and
// time its eager forward. A task that writes beside the store, over another task and into the
// caller's folders at import changes nothing, and the suite is still listed.
TEST(SandboxAttack, ATaskFileListedWithItsSuiteTouchesNothing) {
  Workspace w;
  fs::path suite = w.root / "suite", other = suite / "level1" / "02_honest.py";
  fs::create_directories(suite / "level1");
  fs::copy_file(w.task, other);
  std::string other_before = slurp(other);
  std::string attack = "import os\n"
                       "DB, OTHER, ROOT = " + json(w.db.string()).dump() + ", " + json(other.string()).dump() + ", " +
                       json(w.root.string()).dump() + "\n"
                       "def attempt(fn):\n    try:\n        fn()\n    except Exception:\n        pass\n"
                       "attempt(lambda: open(os.path.dirname(DB) + '/planted', 'w').write('x'))\n"
                       "attempt(lambda: open(OTHER, 'a').write('\\nraise SystemExit(1)\\n'))\n"
                       "attempt(lambda: open(ROOT + '/planted', 'w').write('x'))\n";
  std::ofstream(suite / "level1" / "01_attacker.py") << attack << slurp(w.task);
  std::string cmd = std::string(CUDAL1_BINARY) + " tasks list --json --device cpu --eager --suite " + suite.string() +
                    " --db " + w.db.string() + " 2>" + (w.root / "err.txt").string();
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out << slurp(w.root / "err.txt");
  json tasks = json::parse(out);
  ASSERT_EQ(tasks.size(), 2u) << out;
  for (auto& t : tasks) EXPECT_GT(t.value("eager_ms", 0.0), 0.0) << t.dump();
  EXPECT_FALSE(fs::exists(w.store_dir / "planted")) << "the task wrote beside the store";
  EXPECT_FALSE(fs::exists(w.root / "planted")) << "the task wrote into the caller's folder";
  EXPECT_EQ(slurp(other), other_before) << "the task rewrote another task of the suite";
}

// The sandbox's uid has no passwd entry: code that asks for its user name (torch.compile's cache
// folder, the profiler's) must still get one, even where the parent's environment has none.
TEST(SandboxAttack, AUserNameWithoutAPasswdEntry) {
  Workspace w;
  fs::path cand = w.candidate("asks_user.py", "import getpass\nNAME = getpass.getuser()\n");
  std::string cmd = "env -u USER -u LOGNAME " + std::string(CUDAL1_BINARY) + " eval --json --no-store --task " +
                    w.task.string() + " --candidate " + cand.string() + " --buckets 3 --calls 3 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  auto at = out.find('{');
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_EQ(json::parse(out.substr(at))["status"], "ok") << out;
}

// Where the kernel refuses namespaces the fallback still evaluates, says so, and (as root, with a
// uid of its own) still stops and flags a helper that escaped into a session of its own.
TEST(SandboxAttack, TheFallbackSaysSoAndStillCatchesAHelperProcess) {
  Workspace w;
  auto run = [&](const fs::path& cand) {
    // The extension cache outside a 0700 home, so that the sandbox's uid can reach all it needs.
    std::string cmd = "CUDAL1_SANDBOX=fallback CUDAL1_CACHE=" + (w.root / "cache").string() + " " +
                      std::string(CUDAL1_BINARY) + " eval --json --no-store --task " +
                      w.task.string() + " --candidate " + cand.string() + " --buckets 3 --calls 3 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
    return json::parse(out, nullptr, false);
  };
  json honest = run(cudal1::fixtures_dir() / "candidates" / "ok_scale_add_alpha.py");
  ASSERT_TRUE(honest.is_object());
  EXPECT_EQ(honest["status"], "ok") << honest.dump();
  EXPECT_EQ(honest["provenance"]["sandbox"].get<std::string>().rfind("fallback", 0), 0u) << honest["provenance"].dump();
  if (geteuid() != 0) GTEST_SKIP() << "without root the fallback keeps the caller's uid and cannot tell its helpers apart";
  json hog = run(cudal1::fixtures_dir() / "candidates" / "rejected_scale_add_hog_process_setsid.py");
  EXPECT_EQ(hog["status"], "rejected") << hog.dump();
  bool flagged = false;
  for (auto& f : hog["flags"]) flagged |= f["id"] == "background_process";
  EXPECT_TRUE(flagged) << hog["flags"].dump();
}

// kill -9 of `cudal1 eval` while the candidate hangs in its first call, with a helper in a
// session of its own: nothing of the evaluation is left 5 s later.
TEST(SandboxAttack, KillNineOfEvalLeavesNoProcessBehind) {
  Workspace w;
  std::string marker = "cudal1-orphan-marker-" + std::to_string(getpid());
  fs::path cand = w.candidate(
      "hang.py",
      "import subprocess, time\n"
      "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', " + json(marker).dump() +
          "], start_new_session=True)\n",
      "        import time\n        time.sleep(1000)\n");
  pid_t cli = fork();
  if (cli == 0) {
    setenv("CUDAL1_SCRATCH", w.scratch.c_str(), 1);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(CUDAL1_BINARY, CUDAL1_BINARY, "eval", "--db", w.db.c_str(), "--task", w.task.c_str(), "--candidate",
          cand.c_str(), "--call-timeout", "600", "--build-timeout", "600", nullptr);
    _exit(127);
  }
  // Its helper runs once the candidate has imported; the first call follows at once.
  bool started = false;
  for (int i = 0; i < 600 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (pid_t p : cudal1::leftover_processes(marker, "/nonexistent"))
      if (slurp("/proc/" + std::to_string(p) + "/cmdline").rfind("/", 0) == 0) started = true;
  }
  ASSERT_TRUE(started) << "the candidate never started its helper";
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_FALSE(cudal1::leftover_processes(marker, w.scratch).empty());
  kill(cli, SIGKILL);
  waitpid(cli, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  auto left = cudal1::leftover_processes(marker, w.scratch);
  std::string listing;
  for (pid_t p : left) listing += "\n  " + std::to_string(p) + ": " + slurp("/proc/" + std::to_string(p) + "/cmdline");
  EXPECT_TRUE(left.empty()) << "left behind:" << listing;
  for (pid_t p : left) kill(p, SIGKILL);
}

}  // namespace
