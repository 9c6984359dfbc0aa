// sandbox/seccomp.h — the system calls a sandboxed process may not make.
//
// Refused with EPERM (a program that probes for a feature sees it missing, and nothing crashes):
// tracing and reading other processes (ptrace, process_vm_*, kcmp, pidfd_getfd), namespaces
// (unshare, setns, clone with a CLONE_NEW* flag), mounts and the new mount API, kernel modules
// and kexec, bpf, perf events, keyrings, userfaultfd, io_uring (its operations skip this filter),
// handle-based opens, clocks, swap, reboot, syslog, quotas, I/O ports, host and domain names.
// socket() of any family but IPv4, IPv6 and netlink gets EAFNOSUPPORT: a path-named Unix socket is
// reached through the filesystem whatever the namespaces, vsock through the hypervisor
// (socketpair of streams stays, for pipes between a candidate's own processes; of datagrams, which
// can still send to a path, it gets EPERM).
// clone3 gets ENOSYS, so the C library falls back to clone, whose flags the filter can read. A
// call made through another architecture's table (int 0x80) kills the process.
#pragma once

#include <string>

namespace cudal1 {

// The filter as a classic BPF program (struct sock_filter[]), built once with libseccomp.
// Throws Error(runner) when libseccomp cannot build it.
const std::string& seccomp_program();

// A new file descriptor (close-on-exec) whose contents are the program, read from its start:
// what bwrap's --seccomp option reads.
int seccomp_program_fd();

}  // namespace cudal1
