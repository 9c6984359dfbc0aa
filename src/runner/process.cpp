#include "runner/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/process_tree.h"
#include "sandbox/mount_plan.h"
#include "sandbox/seccomp.h"

extern char** environ;

namespace cudal1 {

namespace {

constexpr std::size_t kTailBytes = 64 * 1024;

std::mutex g_live_mutex;
std::set<pid_t> g_live;      // children we started and still own; never killed as "orphans"
std::set<pid_t> g_programs;  // their programs' own pids (below bwrap when sandboxed)

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// `base/rel` into buf; false when rel is empty or it does not fit. Async-signal-safe.
bool join_path(char (&buf)[4096], const std::string& base, const std::string& rel) {
  if (rel.empty() || base.size() + rel.size() + 2 >= sizeof buf) return false;
  std::memcpy(buf, base.data(), base.size());
  buf[base.size()] = '/';
  std::memcpy(buf + base.size() + 1, rel.data(), rel.size() + 1);
  return true;
}

// mkdir -p of the part of `path` after its first `prefix` bytes. Async-signal-safe.
bool make_dirs(char* path, std::size_t prefix) {
  for (char* p = path + prefix + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    int r = mkdir(path, 0755);
    *p = '/';
    if (r != 0 && errno != EEXIST) return false;
  }
  return mkdir(path, 0755) == 0 || errno == EEXIST;
}

// The step a child failed at, sent with its errno through the status pipe: a child that cannot
// give up what it must not keep, or cannot get where it must run, never runs (it fails closed).
enum class ChildStep : int { switch_uid, bounding_set, no_new_privs, capabilities, chdir, seccomp, exec };

const char* child_step_name(int step) {
  switch (ChildStep(step)) {
    case ChildStep::switch_uid: return "switching to the sandbox's uid";
    case ChildStep::bounding_set: return "emptying the capability bounding set";
    case ChildStep::no_new_privs: return "setting no_new_privs";
    case ChildStep::capabilities: return "dropping its capabilities";
    case ChildStep::chdir: return "entering its working folder";
    case ChildStep::seccomp: return "loading the seccomp filter";
    case ChildStep::exec: return "exec";
  }
  return "starting";
}

struct ChildFailure {
  int step = 0, error = 0;
};

[[noreturn]] void child_fails(int status_w, ChildStep step) {
  ChildFailure f{int(step), errno};
  (void)!write(status_w, &f, sizeof f);
  _exit(127);
}

// Whether this process may change the bounding set. Without CAP_SETPCAP it cannot (EPERM), and
// need not: no_new_privs and an empty permitted set keep execve from granting anything.
bool holds_setpcap() {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return true;  // unknown: a failed drop then fails closed
  return (data[CAP_SETPCAP / 32].effective >> (CAP_SETPCAP % 32)) & 1u;
}

// The highest capability this kernel knows: dropping one above it fails with EINVAL.
int last_capability() {
  int last = CAP_LAST_CAP;
  if (FILE* f = std::fopen("/proc/sys/kernel/cap_last_cap", "r")) {
    if (std::fscanf(f, "%d", &last) != 1) last = CAP_LAST_CAP;
    std::fclose(f);
  }
  return last;
}

// What the child does besides exec, all decided before fork().
struct ChildSetup {
  pid_t parent = 0;          // the parent-death signal is armed only while this is our parent
  int sandbox_fds[2] = {-1, -1};  // for bwrap: the seccomp program (-> fd 5), its info pipe (-> fd 6)
  // The fallback sandbox, done by the child itself:
  bool fallback = false;
  uid_t uid = 0;             // switched to when switch_uid
  bool switch_uid = false;
  rlim_t nproc = 0;          // RLIMIT_NPROC for that uid; 0: unchanged
  sock_fprog filter{};       // the seccomp program, loaded last
  bool may_drop_bounding_set = true;  // holds CAP_SETPCAP (holds_setpcap())
  int last_cap = 63;         // the kernel's highest capability number (/proc/sys/kernel/cap_last_cap)
};

// The child side of fork(): only async-signal-safe calls from here to execve.
[[noreturn]] void exec_child(const ProcessSpec& spec, const ChildSetup& cs, char* const* argv, char* const* envp,
                             int req_r, int rep_w, int out_w, int err_w, int status_w) {
  setsid();
  // Dies with the parent (the fork ran on the parent's spawner thread, which lives as long as it).
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != cs.parent) _exit(127);
  // A mask survives execve: signals the parent blocks for its own reasons (serve waits for SIGTERM
  // on one thread) must still reach the child.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int devnull = open("/dev/null", O_RDONLY);
  // Move the pipes to fds above 10 first so the dup2s below cannot clobber each other.
  int fds[6] = {req_r, rep_w, out_w, err_w, cs.sandbox_fds[0], cs.sandbox_fds[1]};
  for (int& f : fds)
    if (f >= 0) f = fcntl(f, F_DUPFD, 10);
  dup2(devnull, 0);
  dup2(fds[2], 1);
  dup2(fds[3], 2);
  dup2(fds[0], 3);
  dup2(fds[1], 4);
  if (fds[4] >= 0) dup2(fds[4], 5);  // dup2 clears close-on-exec: bwrap reads them
  if (fds[5] >= 0) dup2(fds[5], 6);
  for (int f = fds[4] >= 0 ? 7 : 5; f < 1024; ++f)
    if (f != status_w) close(f);

  struct rlimit core = {0, 0};
  setrlimit(RLIMIT_CORE, &core);
  if (spec.limits.nice > 0) setpriority(PRIO_PROCESS, 0, spec.limits.nice);
  if (spec.limits.limit_address_space && spec.limits.memory_bytes) {
    struct rlimit as = {spec.limits.memory_bytes, spec.limits.memory_bytes};
    setrlimit(RLIMIT_AS, &as);
  }
  const ProcessLimits& l = spec.limits;
  if ((!l.hide_dirs.empty() || !l.hide_files.empty()) && cs.sandbox_fds[0] < 0) {
    // Done while still privileged; once capabilities are dropped nothing can be unmounted.
    // Paths were built before fork(): only string reads and system calls here.
    if (unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
      for (auto& h : l.hide_dirs) {
        char keep_path[4096], ro_path[4096];
        bool keep = join_path(keep_path, h.path, h.keep) &&
                    mount(keep_path, h.stage.c_str(), nullptr, MS_BIND, nullptr) == 0;
        bool ro = join_path(ro_path, h.path, h.keep_read_only) &&
                  mount(ro_path, h.stage_read_only.c_str(), nullptr, MS_BIND, nullptr) == 0;
        if (mount("tmpfs", h.path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=16k") != 0)
          continue;
        if (keep && make_dirs(keep_path, h.path.size())) mount(h.stage.c_str(), keep_path, nullptr, MS_BIND, nullptr);
        if (ro && make_dirs(ro_path, h.path.size())) {
          // Moved, not bound, so no writable view stays at the stage; if it cannot be made
          // read-only it is taken away again: the job then simply does without it.
          if (mount(h.stage_read_only.c_str(), ro_path, nullptr, MS_MOVE, nullptr) == 0 &&
              mount(nullptr, ro_path, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
            umount2(ro_path, MNT_DETACH);
        }
        mount(nullptr, h.path.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
      }
      for (auto& f : l.hide_files) mount("/dev/null", f.c_str(), nullptr, MS_BIND, nullptr);
    }
  }
  if (cs.nproc) {
    struct rlimit np = {cs.nproc, cs.nproc};
    setrlimit(RLIMIT_NPROC, &np);
  }
  bool drop = (spec.limits.drop_privileges && cs.sandbox_fds[0] < 0) || cs.fallback;  // bwrap needs them to build the sandbox
  // Root regains every capability in the bounding set at execve, so empty that set too, while
  // CAP_SETPCAP is still held.
  if (drop && cs.may_drop_bounding_set)
    for (int cap = 0; cap <= cs.last_cap; ++cap)
      if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) child_fails(status_w, ChildStep::bounding_set);
  if (cs.switch_uid) {
    gid_t g = gid_t(cs.uid);
    if (setgroups(0, nullptr) != 0 || setresgid(g, g, g) != 0 || setresuid(cs.uid, cs.uid, cs.uid) != 0)
      child_fails(status_w, ChildStep::switch_uid);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);  // a uid change clears it
  }
  if (drop) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fails(status_w, ChildStep::no_new_privs);
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capset, &hdr, data) != 0) child_fails(status_w, ChildStep::capabilities);
  }
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) child_fails(status_w, ChildStep::chdir);
  if (cs.filter.len && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &cs.filter, 0, 0) != 0)
    child_fails(status_w, ChildStep::seccomp);
  execve(argv[0], argv, envp);
  child_fails(status_w, ChildStep::exec);
}

// The thread every child is forked on. It never ends, so a child's parent-death signal fires
// only when the whole parent goes (a lane thread that forked a worker may end before it).
class Spawner {
 public:
  static Spawner& instance() {
    static Spawner* s = new Spawner();  // never destroyed: children may be forked until exit
    return *s;
  }
  pid_t fork_with(const std::function<pid_t()>& fork_fn) {
    std::packaged_task<pid_t()> task(fork_fn);
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> l(m_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  Spawner() { std::thread([this] { run(); }).detach(); }
  [[noreturn]] void run() {
    for (;;) {
      std::unique_lock<std::mutex> l(m_);
      cv_.wait(l, [&] { return !queue_.empty(); });
      auto task = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      task();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<pid_t()>> queue_;
};

// Folders a sandboxed child writes, given to its uid (the parent made them as itself).
void give_to_uid(const std::string& path, uid_t uid) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return;
  if (lchown(path.c_str(), uid, gid_t(uid)) != 0) return;
  if (!fs::is_directory(path, ec) || fs::is_symlink(path, ec)) return;
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    (void)!lchown(it->path().c_str(), uid, gid_t(uid));
}

// Without a mount namespace a switched uid must reach what it needs through the real folders;
// where one of them is closed to it (a 0700 home holding the interpreter), the fallback keeps
// cudal1's uid rather than fail, and says so once.
bool reachable_by(const SandboxPolicy& policy, const std::vector<std::string>& argv, uid_t uid) {
  std::vector<std::string> needed = {policy.scratch, argv.front()};
  needed.insert(needed.end(), policy.writable.begin(), policy.writable.end());
  needed.insert(needed.end(), policy.readable.begin(), policy.readable.end());
  for (auto& path : needed)
    for (std::filesystem::path a = std::filesystem::path(path).parent_path(); !a.empty() && a != a.root_path();
         a = a.parent_path())
      if (!uid_may_enter(a.string(), uid, uid)) {
        static std::once_flag said;
        std::call_once(said, [&] {
          std::fprintf(stderr, "cudal1: the fallback sandbox keeps cudal1's own uid: %s is closed to other uids "
                               "(hint: install bubblewrap, or keep Python and the task files outside such folders)\n",
                       a.c_str());
        });
        return false;
      }
  return true;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// Kills and reaps children of ours that no live Process owns: orphans a candidate left behind.
void kill_orphans() {
  for (int round = 0; round < 20; ++round) {
    std::vector<pid_t> orphans;
    {
      std::lock_guard<std::mutex> lock(g_live_mutex);
      for (pid_t p : children_of(getpid()))
        if (!g_live.count(p)) orphans.push_back(p);
    }
    if (orphans.empty()) {
      if (round >= 2) return;  // re-parenting can lag a moment behind a kill
    }
    for (pid_t p : orphans) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

std::string ExitInfo::describe() const {
  if (signaled) return "killed by " + signal_name(signal);
  if (exited) return "exited with status " + std::to_string(exit_code);
  return "still running";
}

void protect_parent_process() {
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

Process::Process(const ProcessSpec& spec) : limits_(spec.limits) {
  if (spec.argv.empty()) throw Error(ErrorKind::internal, "Process started with no argv");

  // Everything the child needs is built before fork(): no allocation after it.
  ChildSetup cs;
  cs.parent = getpid();
  cs.may_drop_bounding_set = holds_setpcap();
  cs.last_cap = last_capability();
  std::vector<std::string> argv_s = spec.argv;
  int seccomp_fd = -1, info[2] = {-1, -1};
  std::string filter;  // the fallback's seccomp program; cs.filter points into it
  if (spec.sandbox) {
    const SandboxSupport& support = sandbox_support();
    uid_ = std::make_unique<SandboxUid>();
    uid_t uid = uid_->uid();
    switched_uid_ = uid != geteuid() &&
                    (support.kind == SandboxKind::namespaces || reachable_by(*spec.sandbox, spec.argv, uid));
    if (!switched_uid_) uid = geteuid();
    if (switched_uid_) {
      give_to_uid(spec.sandbox->scratch, uid);
      for (auto& w : spec.sandbox->writable) give_to_uid(w, uid);
      // Threads count too (torch starts one per core, inductor a pool): generous, but a fork
      // bomb stops here, and only this sandbox's uid is counted.
      cs.nproc = rlim_t(std::max(4096L, 64L * sysconf(_SC_NPROCESSORS_ONLN)));
    }
    if (support.kind == SandboxKind::namespaces) {
      sandbox_ = Sandboxed::namespaces;
      seccomp_fd = seccomp_program_fd();
      if (pipe2(info, O_CLOEXEC) != 0) {
        close(seccomp_fd);
        throw Error(ErrorKind::runner, std::string("cannot create pipes: ") + strerror(errno));
      }
      argv_s = sandbox_command(*spec.sandbox, uid, spec.argv, 5, 6);
      if (const char* t = std::getenv("CUDAL1_SANDBOX_TRACE"); t && *t == '1') {
        std::string line = "sandbox:";
        for (auto& a : argv_s) line += " " + a;
        std::fprintf(stderr, "%s\n", line.c_str());
      }
      cs.sandbox_fds[0] = seccomp_fd;
      cs.sandbox_fds[1] = info[1];
    } else {
      sandbox_ = Sandboxed::fallback;
      cs.fallback = true;
      cs.switch_uid = switched_uid_;
      // Whatever still runs as this slot's uid was left by a cudal1 that died holding it (the
      // slot's lock is ours now): without a PID namespace nothing else ended it.
      if (cs.switch_uid)
        for (pid_t left : processes_of_uid(uid)) kill(left, SIGKILL);
      cs.uid = uid;
      filter = seccomp_program();
      cs.filter.len = static_cast<unsigned short>(filter.size() / sizeof(sock_filter));
      cs.filter.filter = reinterpret_cast<sock_filter*>(filter.data());
    }
  }
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::map<std::string, std::string> env_map;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string name = kv.substr(0, eq);
    bool allowed = spec.env_allow_prefixes.empty();
    for (auto& prefix : spec.env_allow_prefixes) allowed |= name.rfind(prefix, 0) == 0;
    if (allowed) env_map[name] = kv.substr(eq + 1);
  }
  for (auto& name : spec.unset_env) env_map.erase(name);
  for (auto& [k, v] : spec.env) env_map[k] = v;
  std::vector<std::string> env_s;
  for (auto& [k, v] : env_map) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int req[2], rep[2], out[2], err[2], status[2];
  if (pipe2(req, O_CLOEXEC) || pipe2(rep, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
      pipe2(err, O_CLOEXEC) || pipe2(status, O_CLOEXEC))
    throw Error(ErrorKind::runner, std::string("cannot create pipes: ") + strerror(errno));

  // The registry lock is held across fork so no orphan scan can mistake the new child.
  std::unique_lock<std::mutex> lock(g_live_mutex);
  pid_ = Spawner::instance().fork_with([&]() -> pid_t {
    pid_t p = fork();
    if (p == 0) exec_child(spec, cs, argv.data(), envp.data(), req[0], rep[1], out[1], err[1], status[1]);
    return p;
  });
  if (pid_ < 0) throw Error(ErrorKind::runner, std::string("fork failed: ") + strerror(errno));
  g_live.insert(pid_);
  lock.unlock();
  main_pid_ = pid_;

  close(req[0]);
  close(rep[1]);
  close(out[1]);
  close(err[1]);
  close(status[1]);
  if (seccomp_fd >= 0) close(seccomp_fd);
  if (info[1] >= 0) close(info[1]);
  req_fd_ = req[1];
  rep_fd_ = rep[0];
  out_fd_ = out[0];
  err_fd_ = err[0];
  set_nonblocking(rep_fd_);
  set_nonblocking(out_fd_);
  set_nonblocking(err_fd_);

  ChildFailure failure;
  ssize_t n = read(status[0], &failure, sizeof failure);
  close(status[0]);
  if (n == sizeof failure) {
    if (info[0] >= 0) close(info[0]);
    kill_all();
    std::string step = failure.step == int(ChildStep::exec) ? "" : std::string(child_step_name(failure.step)) + ": ";
    throw Error(ErrorKind::runner,
                "cannot start " + argv_s[0] + ": " + step + strerror(failure.error),
                sandboxed() ? "check the sandbox: scripts/sandbox_probe.sh says what this machine allows"
                            : "check that the program exists and is executable");
  }
  if (info[0] >= 0) find_main_pid(info[0]);
  std::lock_guard<std::mutex> programs(g_live_mutex);
  g_programs.insert(main_pid_);
}

bool Process::is_live_program(pid_t pid) {
  std::lock_guard<std::mutex> l(g_live_mutex);
  return g_programs.count(pid) > 0;
}

bool Process::owns(pid_t pid) const {
  if (!sandboxed()) return pid == pid_;
  for (pid_t p : sandbox_processes())
    if (p == pid) return true;
  return false;
}

std::vector<pid_t> Process::processes() const {
  if (exit_) return {};
  return sandboxed() ? sandbox_processes() : process_tree(pid_);
}

void Process::find_main_pid(int info_fd) {
  // bwrap writes {"child-pid": N} once the namespaces exist; N is the sandbox's init, whose one
  // child becomes the program. A bwrap that fails writes nothing: read_line then reports its exit.
  std::string text;
  char buf[1024];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{info_fd, POLLIN, 0};
    if (poll(&p, 1, 100) < 0 && errno != EINTR) break;
    ssize_t n = p.revents ? read(info_fd, buf, sizeof buf) : -1;
    if (n > 0) text.append(buf, std::size_t(n));
    if (n == 0 || reap(false)) break;
    if (text.find('}') != std::string::npos) break;
  }
  close(info_fd);
  pid_t init = 0;
  try {
    init = nlohmann::json::parse(text).value("child-pid", 0);
  } catch (const std::exception&) {
    return;
  }
  for (int i = 0; init > 0 && i < 2000 && !exit_; ++i) {
    auto kids = children_of(init);
    if (!kids.empty()) {
      main_pid_ = kids.front();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<pid_t> Process::outside_tree() const {
  std::vector<pid_t> roots;
  if (sandbox_ != Sandboxed::fallback) return roots;
  if (switched_uid_) return processes_of_uid(uid_->uid());
  // Without a uid of its own, what left the tree by a double fork was re-parented to us (a
  // subreaper): a child of ours that no live Process owns is some candidate's.
  std::lock_guard<std::mutex> l(g_live_mutex);
  for (pid_t orphan : children_of(getpid()))
    if (!g_live.count(orphan)) roots.push_back(orphan);
  return roots;
}

std::vector<pid_t> Process::sandbox_processes() const {
  std::vector<pid_t> all = process_tree(pid_);
  std::set<pid_t> seen(all.begin(), all.end());
  for (pid_t root : outside_tree())
    for (pid_t p : process_tree(root))
      if (seen.insert(p).second) all.push_back(p);
  return all;
}

bool Process::stop_others() {
  if (!sandboxed() || exit_) return true;
  bool stopped = stop_tree(pid_, main_pid_);
  for (pid_t root : outside_tree())
    if (root != main_pid_) stopped &= stop_tree(root, main_pid_);
  return stopped;
}

void Process::continue_others() {
  if (!sandboxed() || exit_) return;
  for (pid_t p : sandbox_processes()) kill(p, SIGCONT);
}

double Process::others_cpu_ms() const {
  if (!sandboxed()) return 0;
  auto tree = process_tree(pid_);
  std::set<pid_t> in_tree(tree.begin(), tree.end());
  double total = tree_cpu_ms(pid_, main_pid_);
  for (pid_t p : sandbox_processes())
    if (!in_tree.count(p))
      if (auto st = read_proc_stat(p)) total += st->cpu_ms + st->children_cpu_ms;
  return total;
}

Process::~Process() { kill_all(); }

bool Process::send_line(const std::string& line) {
  if (req_fd_ < 0) return false;
  std::string data = line + "\n";
  const char* p = data.data();
  std::size_t left = data.size();
  signal(SIGPIPE, SIG_IGN);
  while (left > 0) {
    ssize_t w = write(req_fd_, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  return true;
}

void Process::drain(int fd, std::string& tail) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return;
    output_seen_ += static_cast<std::size_t>(n);
    tail.append(buf, static_cast<std::size_t>(n));
    if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
  }
}

bool Process::reap(bool block) {
  if (exit_) return true;
  int status = 0;
  pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r != pid_) return false;
  ExitInfo info;
  if (WIFEXITED(status) && sandbox_ == Sandboxed::namespaces && WEXITSTATUS(status) > 128 &&
      WEXITSTATUS(status) <= 128 + 64) {
    // bwrap reports a program killed by signal N as exit status 128 + N.
    info.signaled = true;
    info.signal = WEXITSTATUS(status) - 128;
  } else if (WIFEXITED(status)) {
    info.exited = true;
    info.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.signal = WTERMSIG(status);
  }
  exit_ = info;
  std::lock_guard<std::mutex> lock(g_live_mutex);
  g_live.erase(pid_);
  g_programs.erase(main_pid_);
  return true;
}

bool Process::check_memory() {
  if (!limits_.memory_bytes || exit_) return true;
  // A sandbox's limit holds for all of it: helpers it starts share the budget.
  std::size_t rss = 0;
  if (sandboxed()) {
    for (pid_t p : sandbox_processes())
      if (auto st = read_proc_stat(p)) rss += st->rss_bytes;
  } else if (auto st = read_proc_stat(pid_)) {
    rss = st->rss_bytes;
  } else {
    return true;
  }
  if (rss > peak_rss_) peak_rss_ = rss;
  return rss <= limits_.memory_bytes;
}

WaitOutcome Process::read_line(std::chrono::milliseconds timeout, std::string& line) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::chrono::nanoseconds frozen_at_start = frozen_clock_ ? frozen_clock_() : std::chrono::nanoseconds(0);
  for (;;) {
    auto nl = pending_.find('\n');
    if (nl != std::string::npos) {
      line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return WaitOutcome::line;
    }
    if (output_seen_ > limits_.output_bytes) {
      kill_all();
      return WaitOutcome::output_flood;
    }
    if (!check_memory()) {
      kill_all();
      return WaitOutcome::memory_exceeded;
    }
    if (exit_ || reap(false)) {
      // The child is gone; take what it wrote before it went.
      char buf[65536];
      ssize_t n;
      while (rep_fd_ >= 0 && (n = read(rep_fd_, buf, sizeof buf)) > 0) pending_.append(buf, n);
      drain(out_fd_, out_tail_);
      drain(err_fd_, err_tail_);
      if (pending_.find('\n') != std::string::npos) continue;
      kill_all();
      return WaitOutcome::exited;
    }
    auto now = std::chrono::steady_clock::now();
    // Time the child spent frozen by its gate (core/device_gate.h) is not its own.
    auto frozen = frozen_clock_ ? frozen_clock_() - frozen_at_start : std::chrono::nanoseconds(0);
    if (now >= deadline + frozen) return WaitOutcome::timeout;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline + frozen - now).count();
    struct pollfd pfd[3] = {{rep_fd_, POLLIN, 0}, {out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int r = poll(pfd, 3, static_cast<int>(std::min<long long>(left, 50)));
    if (r < 0 && errno != EINTR) return WaitOutcome::timeout;
    if (pfd[0].revents & POLLIN) {
      char buf[65536];
      ssize_t n;
      while ((n = read(rep_fd_, buf, sizeof buf)) > 0) {
        pending_.append(buf, n);
        if (pending_.size() > limits_.output_bytes) {  // a "line" without end is a flood too
          kill_all();
          return WaitOutcome::output_flood;
        }
      }
    }
    if (pfd[1].revents & POLLIN) drain(out_fd_, out_tail_);
    if (pfd[2].revents & POLLIN) drain(err_fd_, err_tail_);
    if ((pfd[0].revents & (POLLHUP | POLLERR)) && !(pfd[0].revents & POLLIN)) {
      // Reply pipe closed: the child is exiting; wait for it briefly so the exit is reported.
      for (int i = 0; i < 100 && !reap(false); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!exit_ && std::chrono::steady_clock::now() >= deadline) return WaitOutcome::timeout;
    }
  }
}

void Process::kill_all() {
  if (sandboxed() && pid_ > 0) {
    // Its processes in whatever session or group they moved to; a namespace's all go with its
    // first process, the fallback's are found by their uid.
    for (pid_t p : sandbox_processes())
      if (p != pid_) kill(p, SIGKILL);
    kill_tree(pid_);
    if (sandbox_ == Sandboxed::fallback && switched_uid_)
      for (int pass = 0; pass < 20; ++pass) {
        auto left = processes_of_uid(uid_->uid());
        if (left.empty()) break;
        for (pid_t p : left) kill(p, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
  }
  if (pid_ > 0 && !exit_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    reap(true);
  } else if (pid_ > 0) {
    kill(-pid_, SIGKILL);  // the group may outlive its leader
  }
  close_fd(req_fd_);
  if (rep_fd_ >= 0 || out_fd_ >= 0) {
    if (out_fd_ >= 0) drain(out_fd_, out_tail_);
    if (err_fd_ >= 0) drain(err_fd_, err_tail_);
  }
  close_fd(rep_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
  kill_orphans();
}

}  // namespace cudal1
