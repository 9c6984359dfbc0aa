#!/usr/bin/env bash
# scripts/fetch_bwrap.sh [DIR] — Debian's bubblewrap as a .deb in DIR (default .bwrap, ignored by
# git), for the GPU machine, which has no bwrap and no network. scripts/gpu_check.sh unpacks it
# into .bwrap-root and points the sandbox at it (CUDAL1_BWRAP); its other needs (libcap2,
# libselinux1, util-linux's setpriv) are in that machine's image. 47 kB.
set -euo pipefail
dir=${1:-.bwrap}
mkdir -p "$dir"
cd "$dir"
apt-get download bubblewrap 2>&1 | grep -v '^W: Download is performed unsandboxed' || {
  echo "fetch_bwrap: apt-get download failed: this needs Debian 12's package registry (apt-get update first)" >&2
  exit 1
}
ls -1 ./*.deb
