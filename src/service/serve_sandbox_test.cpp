// `cudal1 serve` with candidates that attack the service from inside their sandbox: a forger
// beside a victim job, and kill -9 of the service while a candidate hangs.
#include <gtest/gtest.h>

#include "runner/leftover_processes.h"
#include "service/serve_test_support.h"

using namespace cudal1::serve_test;

namespace {

// At import, and again and again for a few seconds so that it overlaps the victim's evaluation:
// every job in the jobs file marked done with reward 99, a verdict planted in the store, every
// client file in the service's folder replaced by an honest kernel (the victim's zeros would
// pass), the service's port bound beside it, and every process it can see stopped. Its own math
// is honest.
std::string forger(const fs::path& dir, int port) {
  json paths = {{"jobs", (dir / "store.db.jobs").string()}, {"store", (dir / "store.db").string()},
                {"files", (dir / "serve-files").string()}, {"port", port}};
  return "import glob, json, os, signal, socket, sqlite3, time\n"
         "P = json.loads(" + json(paths.dump()).dump() + ")\n"
         "HONEST = 'import torch\\nclass ModelNew(torch.nn.Module):\\n    def __init__(self, scale):\\n        super().__init__()\\n"
         "        self.scale = scale\\n    def forward(self, x, y):\\n        return x * self.scale + y\\n'\n"
         "def attempt(fn):\n    try:\n        fn()\n    except Exception:\n        pass\n"
         "def forge_jobs():\n"
         "    db = sqlite3.connect(P['jobs'])\n"
         "    db.execute(\"UPDATE jobs SET state='done', outcome_json=?\", (json.dumps({'status': 'ok', 'accepted': True, 'reward': 99, 'speedup': 99}),))\n"
         "    db.commit()\n"
         "def forge_store():\n"
         "    db = sqlite3.connect(P['store'])\n"
         "    db.execute('CREATE TABLE IF NOT EXISTS forged(x)')\n"
         "    db.commit()\n"
         "def replace_files():\n"
         "    for f in glob.glob(P['files'] + '/**/*', recursive=True):\n"
         "        if os.path.isfile(f):\n"
         "            attempt(lambda f=f: open(f, 'w').write(HONEST))\n"
         "def take_port():\n"
         "    s = socket.socket()\n"
         "    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n"
         "    s.bind(('127.0.0.1', P['port']))\n"
         "    s.listen(64)\n"
         "    _sockets.append(s)\n"
         "def stop_everyone():\n"
         "    for d in glob.glob('/proc/[0-9]*'):\n"
         "        pid = int(d.rsplit('/', 1)[1])\n"
         "        if pid != os.getpid():\n"
         "            attempt(lambda: os.kill(pid, signal.SIGSTOP))\n"
         "_sockets = []\n"
         "for _ in range(25):\n"
         "    for fn in (forge_jobs, forge_store, replace_files, take_port):\n"
         "        attempt(fn)\n"
         "    time.sleep(0.2)\n"
         "attempt(stop_everyone)\n"
         "import torch\nimport torch.nn as nn\n"
         "class ModelNew(nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n        self.scale = scale\n"
         "    def forward(self, x, y):\n        return x * self.scale + y\n";
}

TEST_F(ServeTest, AForgerBesideAVictimLeavesTheVictimTheRewardItsOwnEvaluationEarns) {
  Server s(dir, {"--lanes", "2"}, {"CUDAL1_SERVE_TOKEN=s3cret"});
  Http h(s.port(), "s3cret");
  json forge = {{"task_id", "scale_add"}, {"reference_code", fixture("tasks/scale_add.py")}, {"kernel_code", forger(dir, s.port())}};
  auto [fcode, f] = h.post("/evaluate", forge);
  ASSERT_EQ(fcode, 202) << f.dump();
  auto [vcode, v] = h.post("/evaluate", evaluate_body("incorrect_scale_add_zeros.py"));
  ASSERT_EQ(vcode, 202) << v.dump();
  json victim = h.wait(v["job_id"]), forged = h.wait(f["job_id"]);
  EXPECT_EQ(victim["status"], "done") << victim.dump();
  EXPECT_EQ(victim["verdict"], "incorrect") << victim.dump();
  EXPECT_EQ(victim["reward"], 0.0) << "the victim's reward is its own evaluation's";
  EXPECT_EQ(forged["status"], "done") << forged.dump();
  EXPECT_NE(forged["reward"], 99.0);
  // The service was neither stopped nor robbed of its port: it still answers, on its own socket.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Http(s.port()).get("/healthz").first, 200);
  auto again = h.post("/evaluate", evaluate_body("incorrect_scale_add_zeros.py"));
  EXPECT_EQ(h.wait(again.second["job_id"])["reward"], 0.0) << "the store answers the victim's file with its own verdict";
}

TEST_F(ServeTest, KillNineOfTheServiceLeavesNoProcessOfItsEvaluations) {
  const std::string marker = "cudal1-serve-orphan-" + std::to_string(getpid());
  const std::string hang = "import subprocess, sys, time\n"
                           "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', " + json(marker).dump() +
                           "], start_new_session=True)\n"
                           "import torch\nimport torch.nn as nn\n"
                           "class ModelNew(nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n"
                           "    def forward(self, x, y):\n        time.sleep(1000)\n";
  Server s(dir, {"--lanes", "1"}, {"CUDAL1_SERVE_TOKEN=s3cret", "CUDAL1_SCRATCH=" + (dir / "scratch").string()});
  Http h(s.port(), "s3cret");
  auto [code, sub] = h.post("/evaluate", {{"task_id", "scale_add"}, {"reference_code", fixture("tasks/scale_add.py")}, {"kernel_code", hang}});
  ASSERT_EQ(code, 202) << sub.dump();
  // The helper of the candidate's own worker (not the capture's, which ends) runs once the job
  // is in its first call: wait until it has run a few seconds there.
  bool running = false;
  for (auto end = Clock::now() + std::chrono::seconds(120); Clock::now() < end && !running;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    running = h.get("/status/" + sub["job_id"].get<std::string>()).second.value("status", "") == "running" &&
              !cudal1::leftover_processes(marker, "").empty();
  }
  ASSERT_TRUE(running) << s.log();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  ASSERT_FALSE(cudal1::leftover_processes(marker, dir / "scratch").empty());
  s.kill_hard();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  auto left = cudal1::leftover_processes(marker, dir / "scratch");
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the evaluation outlived the service";
  for (pid_t p : left) ::kill(p, SIGKILL);
}

}  // namespace
