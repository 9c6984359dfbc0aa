// runner/process.h — a child process the parent can always outlive.
//
// The child runs in its own session (so its whole process group can be killed), with two extra
// pipes: fd 3 carries the parent's requests in, fd 4 carries one-line replies out. Its stdout and
// stderr are drained into bounded buffers, never onto the tool's own stdout. The parent watches
// for replies, exit, output floods and memory use with one poll loop, and kills the child, its
// group and any orphans it re-parented to us (we are a child subreaper) when done.
//
// Every child is forked by one long-lived thread of the parent and gets SIGKILL when the parent
// dies (the kernel's parent-death signal belongs to the forking thread, and lane threads come
// and go). A child with a sandbox (sandbox/sandbox.h) runs confined; then its pid() is the
// sandbox's outermost process, main_pid() the program's own, and everything it starts is one
// process tree, measured and stopped as a whole.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/sandbox.h"

namespace cudal1 {

// A folder the child must not see, except `keep` (a relative path below it, may be empty), which
// stays at its own path, and `keep_read_only` (likewise), which stays but cannot be written: a
// build job writes its own folder and reads a shared precompiled header. Each `stage*` is an
// existing empty folder outside `path` used while mounting.
struct HiddenDir {
  std::string path, keep, stage;
  std::string keep_read_only = {}, stage_read_only = {};
};

struct ProcessLimits {
  std::size_t output_bytes = 4u << 20;     // stdout+stderr together; past it the child is killed
  std::size_t memory_bytes = 0;            // resident set size; 0 = no limit
  bool limit_address_space = false;        // also set RLIMIT_AS to memory_bytes (not with CUDA)
  bool drop_privileges = false;            // no capabilities, no new privileges, no core dumps
  int nice = 0;                            // added to the scheduling niceness (compilers yield to timed work)
  // In a private mount namespace (best effort: skipped where the kernel or user cannot):
  std::vector<HiddenDir> hide_dirs;        // covered by a read-only tmpfs, but for one subfolder
  std::vector<std::string> hide_files;     // /dev/null bound over them: reads empty, writes vanish
};

struct ProcessSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to (or replacing in) the parent's environment
  std::vector<std::string> unset_env;      // removed from the child's environment
  // When not empty, only variables whose names start with one of these pass from the parent
  // (spec.env is added after): untrusted code must not see API keys or tokens.
  std::vector<std::string> env_allow_prefixes;
  std::string cwd;
  ProcessLimits limits;
  // Runs the program confined (code from outside). Its scratch and writable folders are given to
  // the sandbox's uid first. limits.hide_* and drop_privileges then do not apply: the sandbox
  // hides and drops more.
  std::optional<SandboxPolicy> sandbox;
};

// What waiting for a reply line ended with.
enum class WaitOutcome { line, timeout, exited, output_flood, memory_exceeded };

struct ExitInfo {
  bool exited = false;     // normal exit (exit_code valid)
  int exit_code = 0;
  bool signaled = false;   // killed by a signal (signal valid)
  int signal = 0;
  std::string describe() const;  // "exited with status 0", "killed by SIGSEGV", "still running"
};

class Process {
 public:
  explicit Process(const ProcessSpec& spec);  // throws Error(runner) if it cannot start
  ~Process();                                  // kills everything still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // The program's own process: the same as pid() unless sandboxed.
  pid_t main_pid() const { return main_pid_; }
  bool sandboxed() const { return sandbox_ != Sandboxed::no; }
  // Of a sandboxed child: every process it started beside the program itself, stopped (false:
  // they kept multiplying) or continued; their CPU time so far in ms (those gone too, as far as
  // their parents reaped them).
  bool stop_others();
  void continue_others();
  double others_cpu_ms() const;
  // Whether `pid` is one of the processes of this child's sandbox.
  bool owns(pid_t pid) const;
  // Every live process of this child: its sandbox's, or its own tree when not sandboxed.
  std::vector<pid_t> processes() const;
  // Whether `pid` is the program of a live Process of this cudal1 (any lane's worker).
  static bool is_live_program(pid_t pid);

  // Writes one line (a '\n' is added) to the child's fd 3. False if the child is gone.
  bool send_line(const std::string& line);

  // Waits up to `timeout` for one line on fd 4, draining stdout/stderr meanwhile. Time that the
  // frozen clock says the child spent frozen does not count.
  WaitOutcome read_line(std::chrono::milliseconds timeout, std::string& line);
  // How long the child has been kept stopped in all, by whoever stopped it on purpose (its
  // DeviceGate member). Only that clock is trusted: the child can stop itself.
  void set_frozen_clock(std::function<std::chrono::nanoseconds()> clock) { frozen_clock_ = std::move(clock); }

  // Kills the child's group and its orphans, reaps the child; idempotent.
  void kill_all();

  // Exit information once the child has gone (after kill_all or an `exited` outcome).
  std::optional<ExitInfo> exit_info() const { return exit_; }

  std::size_t output_bytes_seen() const { return output_seen_; }
  std::size_t peak_rss_bytes() const { return peak_rss_; }
  const std::string& stdout_tail() const { return out_tail_; }
  const std::string& stderr_tail() const { return err_tail_; }

 private:
  void drain(int fd, std::string& tail);
  bool reap(bool block);
  bool check_memory();
  void find_main_pid(int info_fd);
  std::vector<pid_t> sandbox_processes() const;
  // The fallback's processes outside its tree: its uid's, or (keeping ours) our orphans.
  std::vector<pid_t> outside_tree() const;

  enum class Sandboxed { no, namespaces, fallback };
  Sandboxed sandbox_ = Sandboxed::no;
  std::unique_ptr<SandboxUid> uid_;
  bool switched_uid_ = false;  // the sandbox runs as uid_'s uid, not ours
  pid_t pid_ = -1, main_pid_ = -1;
  int req_fd_ = -1, rep_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  std::function<std::chrono::nanoseconds()> frozen_clock_;
  std::string pending_;  // reply bytes after the last full line
  std::string out_tail_, err_tail_;
  std::size_t output_seen_ = 0, peak_rss_ = 0;
  ProcessLimits limits_;
  std::optional<ExitInfo> exit_;
};

// Call once at start-up of the trusted parent. Makes it a child subreaper, so grandchildren a
// candidate orphans (double forks) are re-parented to us and can be found and killed, and makes
// it non-dumpable, so an unprivileged child cannot read its memory through /proc.
void protect_parent_process();

}  // namespace cudal1
