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

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"

extern char** environ;

namespace cudal1 {

namespace {

constexpr std::size_t kTailBytes = 64 * 1024;

std::mutex g_live_mutex;
std::set<pid_t> g_live;  // children we started and still own; never killed as "orphans"

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

// The child side of fork(): only async-signal-safe calls from here to execve.
[[noreturn]] void exec_child(const ProcessSpec& spec, char* const* argv, char* const* envp,
                             int req_r, int rep_w, int out_w, int err_w, int status_w) {
  setsid();
  // A mask survives execve: signals the parent blocks for its own reasons (serve waits for SIGTERM
  // on one thread) must still reach the child.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int devnull = open("/dev/null", O_RDONLY);
  // Move the pipes to fds above 10 first so the dup2s below cannot clobber each other.
  int fds[4] = {req_r, rep_w, out_w, err_w};
  for (int& f : fds) f = fcntl(f, F_DUPFD, 10);
  dup2(devnull, 0);
  dup2(fds[2], 1);
  dup2(fds[3], 2);
  dup2(fds[0], 3);
  dup2(fds[1], 4);
  for (int f = 5; f < 1024; ++f)
    if (f != status_w) close(f);

  struct rlimit core = {0, 0};
  setrlimit(RLIMIT_CORE, &core);
  if (spec.limits.nice > 0) setpriority(PRIO_PROCESS, 0, spec.limits.nice);
  if (spec.limits.limit_address_space && spec.limits.memory_bytes) {
    struct rlimit as = {spec.limits.memory_bytes, spec.limits.memory_bytes};
    setrlimit(RLIMIT_AS, &as);
  }
  const ProcessLimits& l = spec.limits;
  if (!l.hide_dirs.empty() || !l.hide_files.empty()) {
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
  if (spec.limits.drop_privileges) {
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    // Root regains every capability in the bounding set at execve, so empty that set too.
    for (int cap = 0; cap <= 63; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {};
    syscall(SYS_capset, &hdr, data);
  }
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
    int e = errno;
    (void)!write(status_w, &e, sizeof e);
    _exit(127);
  }
  execve(argv[0], argv, envp);
  int e = errno;
  (void)!write(status_w, &e, sizeof e);
  _exit(127);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// A small /proc file, or "" when it cannot be read. Plain read(2): the process may exit while
// we read, and libstdc++'s streams throw on the resulting ESRCH.
std::string read_proc_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// Every pid whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end || pid <= 0) continue;
    std::string content = read_proc_file("/proc/" + std::string(e->d_name) + "/stat");
    auto close_paren = content.rfind(')');
    if (close_paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(content.c_str() + close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
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
  std::vector<std::string> argv_s = spec.argv;
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
  pid_ = fork();
  if (pid_ < 0) throw Error(ErrorKind::runner, std::string("fork failed: ") + strerror(errno));
  if (pid_ == 0)
    exec_child(spec, argv.data(), envp.data(), req[0], rep[1], out[1], err[1], status[1]);
  g_live.insert(pid_);
  lock.unlock();

  close(req[0]);
  close(rep[1]);
  close(out[1]);
  close(err[1]);
  close(status[1]);
  req_fd_ = req[1];
  rep_fd_ = rep[0];
  out_fd_ = out[0];
  err_fd_ = err[0];
  set_nonblocking(rep_fd_);
  set_nonblocking(out_fd_);
  set_nonblocking(err_fd_);

  int child_errno = 0;
  ssize_t n = read(status[0], &child_errno, sizeof child_errno);
  close(status[0]);
  if (n == sizeof child_errno) {
    kill_all();
    throw Error(ErrorKind::runner,
                "cannot start " + spec.argv[0] + ": " + strerror(child_errno),
                "check that the program exists and is executable");
  }
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
  if (WIFEXITED(status)) {
    info.exited = true;
    info.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.signal = WTERMSIG(status);
  }
  exit_ = info;
  std::lock_guard<std::mutex> lock(g_live_mutex);
  g_live.erase(pid_);
  return true;
}

bool Process::check_memory() {
  if (!limits_.memory_bytes || exit_) return true;
  std::string statm = read_proc_file("/proc/" + std::to_string(pid_) + "/statm");
  unsigned long size_pages = 0, rss_pages = 0;
  if (sscanf(statm.c_str(), "%lu %lu", &size_pages, &rss_pages) != 2) return true;
  std::size_t rss = rss_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
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
