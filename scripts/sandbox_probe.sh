#!/usr/bin/env bash
# scripts/sandbox_probe.sh [BWRAP] — what this machine's kernel lets the sandbox use: user, PID,
# network and mount namespaces, cgroups, bubblewrap with the GPU's device nodes, and a process
# switched to an unprivileged uid that still reaches the GPU. One line per check, "yes"/"no" and
# why; run it on a new kind of machine before trusting the sandbox there (docs/defences.md).
set -u
bwrap=${1:-$(command -v bwrap || true)}
check() {  # $1: label; rest: command
  local label=$1; shift
  if out=$("$@" 2>&1); then echo "yes  $label"; else echo "no   $label: $(echo "$out" | tail -1 | cut -c1-160)"; fi
}
echo "kernel $(uname -r); uid $(id -u); $(grep -E '^CapEff' /proc/self/status)"
echo "cgroups: $(awk '$3 ~ /cgroup/ {print $3":"$2}' /proc/mounts | tr '\n' ' ')"
echo "user namespaces max: $(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo '?'), unprivileged clone: $(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo '?')"
check "unshare user" unshare -U -r true
check "unshare pid" unshare -p -f --mount-proc true
check "unshare net" unshare -n true
check "unshare mount" unshare -m true
check "setpriv to uid 65534" setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs true
[ -n "$bwrap" ] || { echo "no   bwrap: not found"; exit 0; }
nv=()
for d in /dev/nvidia*; do [ -e "$d" ] && nv+=(--dev-bind "$d" "$d"); done
for d in /dev/nvidia-caps; do [ -d "$d" ] && nv+=(--dev-bind "$d" "$d"); done
base=("$bwrap" --die-with-parent --new-session --unshare-pid --unshare-net --unshare-ipc --unshare-uts
      --ro-bind / / --dev /dev "${nv[@]}" --proc /proc --tmpfs /tmp)
check "bwrap as $(id -un)" "${base[@]}" true
check "bwrap: no network" "${base[@]}" sh -c '! (exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null'
check "bwrap: / read-only" "${base[@]}" sh -c '! touch /usr/.probe 2>/dev/null'
check "bwrap: own PID namespace" "${base[@]}" sh -c 'test "$(ls /proc | grep -c "^[0-9]")" -lt 6'
check "bwrap + setpriv 65534" "${base[@]}" setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs true
check "bwrap --unshare-user" "$bwrap" --unshare-user --die-with-parent --ro-bind / / --dev /dev --proc /proc true
if [ ${#nv[@]} -gt 0 ] && command -v python3 >/dev/null; then
  check "GPU in bwrap as 65534" "${base[@]}" --setenv HOME /tmp setpriv --reuid 65534 --regid 65534 --clear-groups \
    --inh-caps=-all --bounding-set=-all --no-new-privs python3 -c 'import torch; x = torch.ones(4, device="cuda"); assert float(x.sum()) == 4; print(torch.cuda.get_device_name())'
  check "nvidia-smi compute-apps" nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
fi
