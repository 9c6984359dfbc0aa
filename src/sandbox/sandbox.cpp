#include "sandbox/sandbox.h"

#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/paths.h"
#include "sandbox/mount_plan.h"
#include "sandbox/seccomp.h"

extern char** environ;

namespace cudal1 {

namespace fs = std::filesystem;

namespace {

struct Ran {
  bool ok = false;
  std::string output;
};

// Runs a short probe command, its output captured, killed after `timeout`.
Ran run_probe(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, int keep_fd = -1) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return {false, "cannot make a pipe"};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 2);
  if (keep_fd >= 0) posix_spawn_file_actions_adddup2(&fa, keep_fd, keep_fd);  // clears close-on-exec
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pipe_fds[1]);
  Ran ran;
  if (rc != 0) {
    close(pipe_fds[0]);
    return {false, "cannot start " + argv[0] + ": " + std::strerror(rc)};
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  bool ended = false;  // the output reached its end: the program is exiting
  while (!ended) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{pipe_fds[0], POLLIN, 0};
    if (poll(&p, 1, int(left)) <= 0) break;
    ssize_t n = read(pipe_fds[0], buf, sizeof buf);
    if (n <= 0) ended = true;
    else if (ran.output.size() < 16384) ran.output.append(buf, std::size_t(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  if (waitpid(pid, &status, ended ? 0 : WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ran.output += " (timed out)";
    return ran;
  }
  ran.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return ran;
}

std::string program(const char* env, const char* name) {
  if (const char* e = std::getenv(env); e && *e) return access(e, X_OK) == 0 ? e : "";
  return find_on_path(name);
}

std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  auto nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

// bwrap's options that do not depend on the policy: namespaces, the read-only root, /dev, /proc.
std::vector<std::string> base_options(bool root, bool gpu) {
  std::vector<std::string> o = {"--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
                                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "cudal1-sandbox"};
  if (!root) o.push_back("--unshare-user");
  o.insert(o.end(), {"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                     // POSIX shared memory (torch's and NCCL's), private and bounded.
                     "--perms", "1777", "--size", std::to_string(1u << 30), "--tmpfs", "/dev/shm"});
  if (gpu) {
    glob_t g{};
    if (glob("/dev/nvidia*", 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) o.insert(o.end(), {"--dev-bind-try", g.gl_pathv[i], g.gl_pathv[i]});
    globfree(&g);
  }
  return o;
}

std::vector<std::string> setpriv_prefix(const std::string& setpriv, uid_t uid) {
  std::string id = std::to_string(uid);
  return {setpriv, "--reuid=" + id, "--regid=" + id, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
          "--no-new-privs", "--"};
}

SandboxSupport probe() {
  SandboxSupport s;
  s.bwrap = program("CUDAL1_BWRAP", "bwrap");
  bool root = geteuid() == 0;
  if (const char* f = std::getenv("CUDAL1_SANDBOX"); f && std::string(f) == "fallback") {
    s.why = "CUDAL1_SANDBOX=fallback";
  } else if (s.bwrap.empty()) {
    s.why = "bubblewrap (bwrap) is not installed: install it (Debian: apt-get install bubblewrap) or set CUDAL1_BWRAP";
  } else {
    std::vector<std::string> cmd = {s.bwrap};
    for (auto& o : base_options(root, false)) cmd.push_back(o);
    int fd = -1;
    try {
      fd = seccomp_program_fd();
    } catch (const Error& e) {
      s.why = e.message();
    }
    if (fd >= 0) {
      cmd.insert(cmd.end(), {"--seccomp", std::to_string(fd), "--"});
      if (root) {
        s.setpriv = program("CUDAL1_SETPRIV", "setpriv");
        if (!s.setpriv.empty())
          for (auto& a : setpriv_prefix(s.setpriv, sandbox_uid_base())) cmd.push_back(a);
      }
      cmd.push_back("/bin/true");
      Ran r = run_probe(cmd, std::chrono::seconds(20), fd);
      close(fd);
      if (r.ok) s.kind = SandboxKind::namespaces;
      else s.why = "bwrap refused the sandbox's namespaces here: " + last_line(r.output);
    }
  }
  s.switch_uid = root && (s.kind == SandboxKind::fallback || !s.setpriv.empty());
  return s;
}

// Slots are taken machine-wide: a lock file per slot, held while the sandbox lives (the kernel
// drops it when its process dies), so two cudal1 processes never give one uid to two sandboxes.
std::mutex g_slots_mutex;
std::set<long> g_slots;  // this process's, under g_slots_mutex

fs::path slot_dir() {
  fs::path d = fs::path(std::getenv("TMPDIR") && *std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") /
               ("cudal1-sandbox-slots-" + std::to_string(geteuid()));
  std::error_code ec;
  fs::create_directories(d, ec);
  chmod(d.c_str(), 0700);
  return d;
}

}  // namespace

std::string SandboxSupport::describe() const {
  std::string uid = switch_uid ? ", a uid of its own from " + std::to_string(sandbox_uid_base()) : "";
  if (kind == SandboxKind::namespaces) return "namespaces (bwrap" + uid + ")";
  return "fallback (no namespaces: " + why + uid + ")";
}

const SandboxSupport& sandbox_support() {
  static const SandboxSupport s = probe();
  return s;
}

uid_t sandbox_uid_base() {
  if (const char* e = std::getenv("CUDAL1_SANDBOX_UID_BASE"); e && *e) {
    char* end = nullptr;
    unsigned long v = std::strtoul(e, &end, 10);
    if (end && !*end && v >= 1000 && v < 4000000000ul) return uid_t(v);
  }
  return 2000000000u;
}

SandboxUid::SandboxUid() : uid_(geteuid()) {
  if (!sandbox_support().switch_uid) return;
  static const fs::path dir = slot_dir();
  std::lock_guard<std::mutex> l(g_slots_mutex);
  for (long slot = 0; slot < 100000; ++slot) {
    if (g_slots.count(slot)) continue;
    int fd = open((dir / ("slot-" + std::to_string(slot))).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) break;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      continue;
    }
    g_slots.insert(slot);
    slot_ = slot;
    lock_fd_ = fd;
    // Slot 0 is the probe's; sandboxes start at 1.
    uid_ = sandbox_uid_base() + uid_t(slot + 1);
    return;
  }
  throw Error(ErrorKind::runner, "no free sandbox uid slot in " + dir.string(),
              "check that the folder is writable, or set TMPDIR to one that is");
}

SandboxUid::~SandboxUid() {
  if (slot_ < 0) return;
  std::lock_guard<std::mutex> l(g_slots_mutex);
  g_slots.erase(slot_);
  close(lock_fd_);
}

std::vector<std::string> default_hidden_paths() {
  std::vector<std::string> h = {"/tmp", "/var/tmp", "/etc/shadow", "/etc/gshadow", "/root"};
  if (const char* t = std::getenv("TMPDIR"); t && *t) h.push_back(t);
  if (const char* home = std::getenv("HOME"); home && *home && std::string(home) != "/") h.push_back(home);
  h.push_back(extension_cache_dir().parent_path().string());
  h.push_back(default_store_path().parent_path().string());
  if (const char* s = std::getenv("CUDAL1_SCRATCH"); s && *s) h.push_back(s);
  h.push_back(scratch_parent().string());
  return h;
}

const std::vector<std::string>& python_paths(const std::string& python) {
  static std::mutex m;
  static std::map<std::string, std::vector<std::string>> known;
  std::lock_guard<std::mutex> l(m);
  auto it = known.find(python);
  if (it != known.end()) return it->second;
  Ran r = run_probe({python, "-c",
                     "import json, os, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, "
                     "os.path.dirname(os.path.realpath(sys.executable))] + sys.path))"},
                    std::chrono::seconds(30));
  std::vector<std::string> paths;
  if (r.ok) {
    try {
      for (auto& p : nlohmann::json::parse(last_line(r.output)))
        if (p.is_string() && !p.get<std::string>().empty() && fs::exists(p.get<std::string>())) paths.push_back(p);
    } catch (const std::exception&) {
    }
  }
  if (paths.empty())
    throw Error(ErrorKind::runner, "cannot ask " + python + " where its packages are: " + last_line(r.output),
                "check that the interpreter runs (CUDAL1_PYTHON or --python names it)");
  return known.emplace(python, std::move(paths)).first->second;
}

std::vector<std::string> sandbox_command(const SandboxPolicy& policy, uid_t uid, const std::vector<std::string>& argv,
                                         int seccomp_fd, int info_fd) {
  const SandboxSupport& support = sandbox_support();
  bool root = geteuid() == 0;
  std::vector<std::string> cmd = {support.bwrap};
  for (auto& o : base_options(root, policy.gpu)) cmd.push_back(o);
  MountPlan plan;
  plan.hidden = default_hidden_paths();
  for (auto& h : policy.hidden) plan.hidden.push_back(h);
  plan.exposed.push_back({policy.scratch, true});
  for (auto& w : policy.writable) plan.exposed.push_back({w, true});
  for (auto& r : policy.readable) plan.exposed.push_back({r, false});
  if (support.switch_uid && uid != geteuid()) plan.can_enter = [uid](const std::string& p) { return uid_may_enter(p, uid, uid); };
  for (auto& o : mount_options(plan)) cmd.push_back(o);
  cmd.insert(cmd.end(), {"--chdir", policy.scratch, "--seccomp", std::to_string(seccomp_fd), "--info-fd",
                         std::to_string(info_fd), "--"});
  if (support.switch_uid && uid != geteuid())
    for (auto& a : setpriv_prefix(support.setpriv, uid)) cmd.push_back(a);
  for (auto& a : argv) cmd.push_back(a);
  return cmd;
}

}  // namespace cudal1
