#include "core/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

namespace cudal1 {

namespace {

// A small /proc file, or "" when it cannot be read. Plain read(2): the process may exit while
// we read, and libstdc++'s streams throw on the resulting ESRCH.
std::string read_small(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::optional<ProcStat> parse_stat(pid_t pid, const std::string& content) {
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  auto close_paren = content.rfind(')');
  if (close_paren == std::string::npos) return std::nullopt;
  ProcStat s;
  s.pid = pid;
  unsigned long utime = 0, stime = 0;
  long cutime = 0, cstime = 0, rss_pages = 0;
  int ppid = 0;
  int n = std::sscanf(content.c_str() + close_paren + 1,
                      " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld %*d %*d %*d %*d %*u %*u %ld",
                      &s.state, &ppid, &utime, &stime, &cutime, &cstime, &rss_pages);
  if (n != 7) return std::nullopt;
  static const double ms_per_tick = 1000.0 / double(sysconf(_SC_CLK_TCK));
  s.ppid = ppid;
  s.cpu_ms = double(utime + stime) * ms_per_tick;
  s.children_cpu_ms = double(cutime + cstime) * ms_per_tick;
  s.rss_bytes = std::size_t(rss_pages > 0 ? rss_pages : 0) * std::size_t(sysconf(_SC_PAGESIZE));
  return s;
}

// Every process's stat, keyed by pid: one pass over /proc.
std::map<pid_t, ProcStat> scan_all() {
  std::map<pid_t, ProcStat> all;
  DIR* d = opendir("/proc");
  if (!d) return all;
  char path[64];
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end || pid <= 0) continue;
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (auto s = parse_stat(pid_t(pid), read_small(path))) all.emplace(pid_t(pid), *s);
  }
  closedir(d);
  return all;
}

// The tree under `root` out of one scan, parents first.
std::vector<ProcStat> tree_of(pid_t root, const std::map<pid_t, ProcStat>& all) {
  std::vector<ProcStat> out;
  auto it = all.find(root);
  if (it == all.end()) return out;
  std::multimap<pid_t, const ProcStat*> children;
  for (auto& [pid, s] : all) children.emplace(s.ppid, &s);
  out.push_back(it->second);
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto [lo, hi] = children.equal_range(out[i].pid);
    for (auto c = lo; c != hi; ++c)
      if (c->second->pid != root) out.push_back(*c->second);
  }
  return out;
}

bool is_stopped_or_dead(char state) { return state == 'T' || state == 't' || state == 'Z' || state == 'X'; }

}  // namespace

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  return parse_stat(pid, read_small(path));
}

std::string read_proc_comm(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/comm", int(pid));
  std::string comm = read_small(path);
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (auto& [pid, s] : scan_all())
    if (s.ppid == parent) out.push_back(pid);
  return out;
}

std::vector<pid_t> process_tree(pid_t root) {
  std::vector<pid_t> pids;
  for (auto& s : tree_of(root, scan_all())) pids.push_back(s.pid);
  return pids;
}

bool stop_tree(pid_t root, pid_t except, int max_passes) {
  auto pause = std::chrono::microseconds(100);
  for (int pass = 0; pass < max_passes; ++pass) {
    bool all_stopped = true;
    for (auto& s : tree_of(root, scan_all())) {
      if (s.pid == except || is_stopped_or_dead(s.state)) continue;
      all_stopped = false;
      kill(s.pid, SIGSTOP);
    }
    if (all_stopped) return true;
    // A stop takes effect when the process next runs: on a loaded machine, milliseconds.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
  return false;
}

void continue_tree(pid_t root) {
  for (auto& s : tree_of(root, scan_all())) kill(s.pid, SIGCONT);
}

void kill_tree(pid_t root) {
  // Stopped first: a process killed before its children would hand them to a subreaper outside
  // the tree, and a stopped process cannot fork while the kills go out.
  stop_tree(root, 0, 20);
  for (int pass = 0; pass < 200; ++pass) {
    bool others_left = false;
    for (auto& s : tree_of(root, scan_all())) {
      if (s.pid == root || s.state == 'Z' || s.state == 'X') continue;
      others_left = true;
      kill(s.pid, SIGKILL);
    }
    if (!others_left) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(root, SIGKILL);
}

double tree_cpu_ms(pid_t root, pid_t except) {
  double total = 0;
  for (auto& s : tree_of(root, scan_all())) total += (s.pid == except ? 0.0 : s.cpu_ms) + s.children_cpu_ms;
  return total;
}

std::vector<pid_t> processes_of_uid(uid_t uid) {
  std::vector<pid_t> out;
  char path[64];
  for (auto& [pid, s] : scan_all()) {
    std::snprintf(path, sizeof path, "/proc/%d/status", int(pid));
    std::string status = read_small(path);
    auto at = status.find("\nUid:");
    unsigned long real = 0;
    if (at != std::string::npos && std::sscanf(status.c_str() + at + 5, "%lu", &real) == 1 && real == uid) out.push_back(pid);
  }
  return out;
}

std::size_t tree_rss_bytes(pid_t root) {
  std::size_t total = 0;
  for (auto& s : tree_of(root, scan_all())) total += s.rss_bytes;
  return total;
}

}  // namespace cudal1
