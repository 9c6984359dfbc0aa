// The sandbox (sandbox/sandbox.h) tested with the attacks themselves: a confined Python program
// tries each thing a hostile candidate would, and reports on fd 4 what worked.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/process_tree.h"
#include "runner/process.h"
#include "sandbox/sandbox.h"

namespace fs = std::filesystem;
using namespace cudal1;
using json = nlohmann::json;

namespace {

struct Dirs {
  fs::path root = fs::temp_directory_path() / ("cudal1-sandbox-test-" + std::to_string(getpid()));
  fs::path scratch = root / "scratch", secret = root / "secret";
  Dirs() {
    fs::remove_all(root);
    fs::create_directories(scratch);
    fs::create_directories(secret);
    std::ofstream(secret / "token") << "s3cret-token";
  }
  ~Dirs() { fs::remove_all(root); }
};

bool namespaces() {
  if (sandbox_support().kind == SandboxKind::namespaces) return true;
  std::cerr << "sandbox: " << sandbox_support().describe() << "\n";
  return false;
}

// Runs `program` (Python) in a sandbox over `d` and returns what it wrote to fd 4.
json run_confined(const Dirs& d, const std::string& program, std::vector<std::string> extra_env = {}) {
  ProcessSpec spec;
  spec.argv = {"/usr/bin/python3", "-c", program};
  spec.cwd = d.scratch.string();
  spec.env["SECRET_DIR"] = d.secret.string();
  spec.env["TEST_PID"] = std::to_string(getpid());
  spec.sandbox = SandboxPolicy{.scratch = d.scratch.string(), .hidden = {d.secret.string()}};
  Process p(spec);
  std::string line;
  auto outcome = p.read_line(std::chrono::seconds(60), line);
  EXPECT_EQ(outcome, WaitOutcome::line) << p.stderr_tail();
  return outcome == WaitOutcome::line ? json::parse(line) : json::object();
}

constexpr const char* kReport = R"(
import json, os
def report(**kw):
    os.write(4, (json.dumps(kw) + "\n").encode())
def attempt(fn):
    try:
        return fn()
    except Exception as e:
        return "refused: " + type(e).__name__
)";

TEST(Sandbox, WritesOnlyItsScratchAndSeesNoneOfWhatIsHidden) {
  if (!namespaces()) GTEST_SKIP() << "no namespaces here";
  Dirs d;
  json r = run_confined(d, std::string(kReport) + R"(
def write(p):
    open(p, "w").write("x"); return "written"
report(scratch=attempt(lambda: write("mine")),
       usr=attempt(lambda: write("/usr/cudal1-sandbox-probe")),
       secret=attempt(lambda: open(os.environ["SECRET_DIR"] + "/token").read()),
       secret_listing=attempt(lambda: os.listdir(os.environ["SECRET_DIR"])),
       shadow=attempt(lambda: open("/etc/shadow").read()),
       tmp=attempt(lambda: write("/tmp/cudal1-sandbox-probe")))
)");
  EXPECT_EQ(r["scratch"], "written");
  EXPECT_NE(r["usr"], "written");
  EXPECT_NE(r["tmp"], "written");
  EXPECT_FALSE(r["secret"].is_string() && r["secret"].get<std::string>().find("s3cret") != std::string::npos);
  EXPECT_TRUE(r["secret_listing"] == json::array() || r["secret_listing"] == "refused: FileNotFoundError")
      << "a hidden folder is empty or not there: " << r["secret_listing"];
  EXPECT_TRUE(r["shadow"] == "" || r["shadow"].get<std::string>().rfind("refused", 0) == 0) << r["shadow"];
  EXPECT_TRUE(fs::exists(d.scratch / "mine"));
  EXPECT_FALSE(fs::exists("/usr/cudal1-sandbox-probe"));
}

TEST(Sandbox, SeesAndSignalsOnlyItsOwnProcesses) {
  if (!namespaces()) GTEST_SKIP() << "no namespaces here";
  Dirs d;
  json r = run_confined(d, std::string(kReport) + R"(
import signal
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
cmdlines = [attempt(lambda p=p: open(f"/proc/{p}/cmdline").read()) for p in pids]
report(pids=len(pids), sees_parent=any(("cudal1_unit" + "_tests") in str(c) for c in cmdlines),
       signal_test=attempt(lambda: os.kill(int(os.environ["TEST_PID"]), signal.SIGSTOP) or "sent"),
       signal_parent=attempt(lambda: os.kill(os.getppid(), signal.SIGSTOP) or "sent"),
       all=attempt(lambda: os.kill(-1, signal.SIGSTOP) or "sent"))
)");
  EXPECT_LE(r["pids"].get<int>(), 3) << "its PID namespace holds bwrap's init and itself";
  EXPECT_FALSE(r["sees_parent"]) << "the test binary, its parent's parent, is out of sight";
  EXPECT_NE(r["signal_test"], "sent") << "the test process lies outside its namespace";
  // Its parent is the namespace's init, which ignores signals it has no handler for: sent, and
  // nothing happens. That this test goes on running shows nothing outside was stopped.
  auto self = read_proc_stat(getpid());
  ASSERT_TRUE(self);
  EXPECT_NE(self->state, 'T');
}

TEST(Sandbox, HasNoNetwork) {
  if (!namespaces()) GTEST_SKIP() << "no namespaces here";
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(s, 4), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  Dirs d;
  json r = run_confined(d, std::string(kReport) + "import socket\nreport(connect=attempt(lambda: socket.create_connection(('127.0.0.1', " +
                               std::to_string(ntohs(a.sin_port)) + "), timeout=3) and 'connected'), " +
                               "interfaces=os.listdir('/sys/class/net') if os.path.exists('/sys/class/net') else [])\n");
  close(s);
  EXPECT_NE(r["connect"], "connected") << "a listener on the host's loopback is out of reach";
}

// A path-named socket is a door no network namespace closes: the attack is a host service's
// world-writable socket where the sandbox can see it (here its own scratch folder).
TEST(Sandbox, ReachesNoUnixSocketOrVsockOfTheHost) {
  if (!namespaces()) GTEST_SKIP() << "no namespaces here";
  Dirs d;
  fs::path path = d.scratch / "host_service.sock";
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(s, 4), 0);
  fs::permissions(path, fs::perms::all);
  fs::path log_path = d.scratch / "host_log.sock";  // a datagram service, as a system log is
  int log = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un l{};
  l.sun_family = AF_UNIX;
  std::snprintf(l.sun_path, sizeof l.sun_path, "%s", log_path.c_str());
  ASSERT_EQ(bind(log, reinterpret_cast<sockaddr*>(&l), sizeof l), 0);
  fs::permissions(log_path, fs::perms::all);
  json r = run_confined(d, std::string(kReport) + "import socket\n"
                               "def unix():\n"
                               "    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                               "    c.settimeout(3)\n"
                               "    c.connect(" + json(path.string()).dump() + ")\n"
                               "    return 'connected'\n"
                               "def seqpacket():\n"
                               "    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
                               "    c.settimeout(3)\n"
                               "    try:\n"
                               "        c.connect(" + json(path.string()).dump() + ")\n"
                               "    except OSError as e:\n"
                               "        return 'opened, connect refused: ' + type(e).__name__\n"
                               "    return 'connected'\n"
                               "def vsock():\n"
                               "    socket.socket(40, socket.SOCK_STREAM)\n"
                               "    return 'opened'\n"
                               "def pair():\n"
                               "    x, y = socket.socketpair()\n"
                               "    x.sendall(b'ping')\n"
                               "    return y.recv(4).decode()\n"
                               "def datagrams():\n"
                               "    x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                               "    x.sendto(b'hello', " + json(log_path.string()).dump() + ")\n"
                               "    return 'sent'\n"
                               "report(unix=attempt(unix), seqpacket=attempt(seqpacket), vsock=attempt(vsock), pair=attempt(pair),\n"
                               "       datagrams=attempt(datagrams))\n");
  close(s), close(log);
  EXPECT_EQ(r["unix"], "refused: OSError") << r.dump();
  // The kind the CUDA driver needs opens, and reaches no stream service (EPROTOTYPE).
  EXPECT_EQ(r["seqpacket"], "opened, connect refused: OSError") << r.dump();
  EXPECT_EQ(r["vsock"], "refused: OSError") << r.dump();
  EXPECT_EQ(r["datagrams"], "refused: PermissionError") << "a datagram end can send to any path it sees";
  EXPECT_EQ(r["pair"], "ping") << "a connected pair with no name is how a candidate's own processes talk";
}

TEST(Sandbox, RefusesNamespacesTracingAndMountsAndDropsPrivileges) {
  if (!namespaces()) GTEST_SKIP() << "no namespaces here";
  Dirs d;
  json r = run_confined(d, std::string(kReport) + R"(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def call(fn, *args):
    rc = fn(*args)
    return "ok" if rc == 0 else "errno %d" % ctypes.get_errno()
status = open("/proc/self/status").read()
field = lambda name: [l.split()[1] for l in status.splitlines() if l.startswith(name + ":")][0]
report(unshare_user=call(libc.unshare, 0x10000000), unshare_net=call(libc.unshare, 0x40000000),
       ptrace=call(libc.ptrace, 0, 0, 0, 0), mount=call(libc.mount, b"none", b"/tmp", b"tmpfs", 0, None),
       uid=int(field("Uid")), cap_eff=field("CapEff"), no_new_privs=field("NoNewPrivs"))
)");
  EXPECT_EQ(r["unshare_user"], "errno 1");
  EXPECT_EQ(r["unshare_net"], "errno 1");
  EXPECT_EQ(r["ptrace"], "errno 1");
  EXPECT_EQ(r["mount"], "errno 1");
  EXPECT_EQ(r["cap_eff"], "0000000000000000");
  EXPECT_EQ(r["no_new_privs"], "1");
  if (geteuid() == 0 && sandbox_support().switch_uid) EXPECT_GE(r["uid"].get<long>(), long(sandbox_uid_base()));
}

// Everything the program starts, in whatever session, is stopped, measured and killed with it.
TEST(Sandbox, StopsMeasuresAndKillsEveryProcessItStarted) {
  if (!namespaces()) GTEST_SKIP() << "no namespaces here";
  Dirs d;
  ProcessSpec spec;
  spec.argv = {"/usr/bin/python3", "-c", R"(
import os, subprocess, time
subprocess.Popen(["python3", "-c", "while True: pass"], start_new_session=True)
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        while True: pass
    os._exit(0)
os.write(4, b"ready\n")
time.sleep(300)
)"};
  spec.cwd = d.scratch.string();
  spec.sandbox = SandboxPolicy{.scratch = d.scratch.string()};
  auto p = std::make_unique<Process>(spec);
  std::string line;
  ASSERT_EQ(p->read_line(std::chrono::seconds(30), line), WaitOutcome::line) << p->stderr_tail();
  EXPECT_NE(p->main_pid(), p->pid()) << "the program runs below bwrap";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double busy = p->others_cpu_ms();
  EXPECT_GT(busy, 50.0) << "two spinning helpers in other sessions are counted";
  ASSERT_TRUE(p->stop_others());
  double stopped_at = p->others_cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(p->others_cpu_ms() - stopped_at, 30.0) << "stopped helpers use no CPU";
  EXPECT_NE(read_proc_stat(p->main_pid())->state, 'T') << "the program itself is spared";
  p->continue_others();
  auto tree = process_tree(p->pid());
  EXPECT_GE(tree.size(), 5u) << "bwrap, its init, the program and both helpers";
  p.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (pid_t q : tree) {
    auto st = read_proc_stat(q);
    EXPECT_TRUE(!st || st->state == 'Z') << "pid " << q << " outlived its sandbox";
  }
}

}  // namespace
