// sandbox/sandbox.h — the one confinement for every process that runs code from outside: a
// candidate's worker, the build service's capture worker, a reference that came from a client.
//
// Inside it a process (docs/defences.md, "The sandbox"):
// - runs as an unprivileged uid of its own when cudal1 runs as root (one per live sandbox), with
//   no capabilities and no way to gain any;
// - has its own PID namespace (it sees and signals only its own processes; when its first
//   process dies, or cudal1 does, all of them die), a network namespace with no interfaces, and
//   its own IPC and host name;
// - sees the filesystem read-only; its scratch and `writable` folders are the only places it
//   writes; the temporary folders, the user's home, cudal1's cache and whatever `hidden` names
//   (the store, the jobs file, serve's files, a token) are empty to it, except the paths it
//   needs, which are put back at their own paths;
// - runs under a seccomp filter that refuses ptrace, process_vm_*, bpf, mount, namespaces,
//   kexec, modules, keyrings, perf events and the like (sandbox/seccomp.h).
// Bubblewrap (bwrap) builds the namespaces and mounts; util-linux's setpriv switches the uid. Where
// the kernel refuses namespaces, the fallback keeps the uid, the filter and the process-tree
// freezing, and says so (SandboxSupport::why).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace cudal1 {

struct SandboxPolicy {
  std::string scratch;                // its own folder: cwd, HOME and TMPDIR, written
  std::vector<std::string> writable;  // other folders it writes (a build folder)
  std::vector<std::string> readable;  // files or folders it reads, wherever they lie
  std::vector<std::string> hidden;    // files or folders it must not see, beside the defaults
  bool gpu = false;                   // keep the GPU's device nodes
};

enum class SandboxKind { namespaces, fallback };

// What this machine lets the sandbox use: probed once per cudal1 process by running bwrap with
// the options a sandbox uses. CUDAL1_BWRAP and CUDAL1_SETPRIV name the programs, else $PATH;
// CUDAL1_SANDBOX=fallback forces the fallback.
struct SandboxSupport {
  SandboxKind kind = SandboxKind::fallback;
  std::string bwrap, setpriv;
  bool switch_uid = false;  // cudal1 runs as root: each sandbox runs as a uid of its own
  std::string why;          // why the fallback, for a person
  std::string describe() const;
};
const SandboxSupport& sandbox_support();

// The uids sandboxes run as: CUDAL1_SANDBOX_UID_BASE (default 2000000000) plus a slot, one per
// live sandbox, so a fork bomb's process limit and a fallback sandbox's signals stay its own.
// No passwd entry is needed.
uid_t sandbox_uid_base();

// One sandbox's uid, held while the sandbox lives: a slot above sandbox_uid_base() that no
// other sandbox on the machine holds (a lock file per slot under $TMPDIR) when
// sandbox_support().switch_uid, else the caller's own uid (and no slot). Thread-safe; throws
// Error(runner) when no slot can be locked.
class SandboxUid {
 public:
  SandboxUid();
  ~SandboxUid();
  SandboxUid(const SandboxUid&) = delete;
  SandboxUid& operator=(const SandboxUid&) = delete;
  uid_t uid() const { return uid_; }

 private:
  uid_t uid_;
  long slot_ = -1;
  int lock_fd_ = -1;
};

// The command line that runs `argv` in a sandbox of `policy` as `uid`: bwrap's options (the
// seccomp program read from `seccomp_fd`, the sandbox's first pid written to `info_fd`), then
// setpriv when the uid switches. Only for SandboxKind::namespaces.
std::vector<std::string> sandbox_command(const SandboxPolicy& policy, uid_t uid, const std::vector<std::string>& argv,
                                         int seccomp_fd, int info_fd);

// The folders and files every sandbox hides whatever its policy says: the temporary folders,
// the home folder, cudal1's cache folder, /etc/shadow and /etc/gshadow.
std::vector<std::string> default_hidden_paths();

// What a Python interpreter reads to start and import its packages (its prefixes, its
// executable's folder, each existing sys.path entry), asked of it once per interpreter.
const std::vector<std::string>& python_paths(const std::string& python);

}  // namespace cudal1
