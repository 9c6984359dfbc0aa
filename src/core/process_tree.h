// core/process_tree.h — a process and everything it started, found, stopped, measured and killed
// through /proc.
//
// A sandboxed worker's processes may leave its process group (setsid), double-fork or start
// pools; inside its PID namespace every one of them stays a descendant of the sandbox's first
// process, because orphans are re-parented to the namespace's init. So "the tree under the root"
// is exactly what the worker started, whatever it did to hide. Outside a namespace (the fallback
// sandbox), orphans go to the nearest subreaper instead, and callers add those themselves.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace cudal1 {

// What /proc/PID/stat says of one process. CPU times in ms: its own (all its threads), and the
// children it reaped.
struct ProcStat {
  pid_t pid = 0, ppid = 0;
  char state = '?';  // R, S, D, T (stopped), t, Z, X
  double cpu_ms = 0, children_cpu_ms = 0;
  std::size_t rss_bytes = 0;
};
std::optional<ProcStat> read_proc_stat(pid_t pid);
// Its command name (/proc/PID/comm: the program's file name, at most 15 characters, which the
// process itself may change); empty when it is gone.
std::string read_proc_comm(pid_t pid);

// The processes whose parent is `parent`.
std::vector<pid_t> children_of(pid_t parent);

// `root` and every live descendant, parents before children. Empty when root is gone.
std::vector<pid_t> process_tree(pid_t root);

// SIGSTOP to every process of the tree, pass after pass, until a whole pass finds each one
// stopped (a process stopped late cannot have continued one stopped early: a stopped process
// sends nothing). `except` is left running. False when the tree kept changing for `max_passes`.
bool stop_tree(pid_t root, pid_t except = 0, int max_passes = 50);
// SIGCONT to every process of the tree.
void continue_tree(pid_t root);
// SIGKILL to every process of the tree until none is left but zombies; `root` itself last.
void kill_tree(pid_t root);

// CPU time of the tree, ms: every live process's own and reaped children's, less `except`'s own
// (a worker's main process, whose threads are measured another way) — but with its reaped
// children's kept.
double tree_cpu_ms(pid_t root, pid_t except = 0);
// Resident memory of the whole tree.
std::size_t tree_rss_bytes(pid_t root);

// Every process whose real uid is `uid` (a fallback sandbox's own uid: all of it, whatever
// session or parent its processes have).
std::vector<pid_t> processes_of_uid(uid_t uid);

}  // namespace cudal1
