#include "sandbox/seccomp.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "core/error.h"

namespace cudal1 {

namespace {

constexpr const char* kRefused[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "unshare", "setns",
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init", "lookup_dcookie",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "swapon", "swapoff", "reboot", "syslog", "acct", "quotactl", "iopl", "ioperm",
    "sethostname", "setdomainname", "vhangup", "uselib",
};

// The socket families a sandboxed process may open: the network namespace confines these to its
// own loopback (netlink is how a library lists its interfaces). A path-named Unix socket is
// reached through the filesystem, which no namespace closes: a read-only bind still lets a process
// connect to any world-writable socket it can see (a system bus, a journal, a database), so
// socket(AF_UNIX) is refused for streams and datagrams. Sequenced packets stay: the CUDA driver
// opens two such sockets in cuInit and fails without them (seen on the H100, driver 580), and
// one reaches only a listener of the same type, which no common host service is. socketpair, a
// connected pair with no name, stays for streams. vsock reaches the hypervisor's host across
// every namespace.
constexpr int kSocketFamilies[] = {AF_INET, AF_INET6, AF_NETLINK, AF_UNIX};
constexpr int kRefusedUnixTypes[] = {SOCK_STREAM, SOCK_DGRAM};
constexpr int kFamilyLimit = 64;  // above AF_MAX (46 on Linux 6.x); higher values are refused as one
constexpr scmp_datum_t kSocketTypeMask = 0xf;  // the type without SOCK_CLOEXEC and SOCK_NONBLOCK

constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                             CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP};

std::string build() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) throw Error(ErrorKind::runner, "libseccomp could not start a filter");
  struct Release {
    scmp_filter_ctx c;
    ~Release() { seccomp_release(c); }
  } release{ctx};
  auto fail = [](const std::string& what, int rc) {
    return Error(ErrorKind::runner, "libseccomp could not " + what + ": " + std::strerror(-rc),
                 "the sandbox needs libseccomp 2.5 or later");
  };
  for (const char* name : kRefused) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0); rc < 0) throw fail(std::string("refuse ") + name, rc);
  }
  for (unsigned long flag : kNamespaceFlags)
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)); rc < 0)
      throw fail("filter clone's flags", rc);
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0); rc < 0) throw fail("refuse clone3", rc);
  for (int family = 0; family < kFamilyLimit; ++family) {
    if (std::find(std::begin(kSocketFamilies), std::end(kSocketFamilies), family) != std::end(kSocketFamilies)) continue;
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, scmp_datum_t(family))); rc < 0)
      throw fail("refuse a socket family", rc);
  }
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GE, scmp_datum_t(kFamilyLimit))); rc < 0)
    throw fail("refuse socket families past the last", rc);
  for (int type : kRefusedUnixTypes)
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, scmp_datum_t(AF_UNIX)),
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, kSocketTypeMask, scmp_datum_t(type))); rc < 0)
      throw fail("refuse Unix stream and datagram sockets", rc);
  // A datagram end of a pair can still send to a path (sendto): only connected streams stay.
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
                                SCMP_A1(SCMP_CMP_MASKED_EQ, kSocketTypeMask, scmp_datum_t(SOCK_DGRAM))); rc < 0)
    throw fail("refuse datagram socket pairs", rc);
  int fd = memfd_create("cudal1-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::runner, std::string("cannot make a memory file for the seccomp filter: ") + std::strerror(errno));
  std::string program;
  if (int rc = seccomp_export_bpf(ctx, fd); rc < 0) {
    close(fd);
    throw fail("export the filter", rc);
  }
  char buf[4096];
  ssize_t n;
  for (off_t at = 0; (n = pread(fd, buf, sizeof buf, at)) > 0; at += n) program.append(buf, std::size_t(n));
  close(fd);
  if (program.empty() || program.size() % 8 != 0) throw Error(ErrorKind::runner, "libseccomp exported an empty or torn filter");
  return program;
}

}  // namespace

const std::string& seccomp_program() {
  static const std::string program = build();
  return program;
}

int seccomp_program_fd() {
  const std::string& p = seccomp_program();
  int fd = memfd_create("cudal1-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::runner, std::string("cannot make a memory file for the seccomp filter: ") + std::strerror(errno));
  for (std::size_t done = 0; done < p.size();) {
    ssize_t w = write(fd, p.data() + done, p.size() - done);
    if (w <= 0) {
      close(fd);
      throw Error(ErrorKind::runner, "cannot write the seccomp filter to its memory file");
    }
    done += std::size_t(w);
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

}  // namespace cudal1
