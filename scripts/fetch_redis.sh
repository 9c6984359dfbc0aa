#!/usr/bin/env bash
# scripts/fetch_redis.sh [DIR] — Debian's redis-server with what it needs beyond a stock image
# (redis-tools holds the binary; jemalloc and lzf its libraries) as .deb files in DIR (default
# .redis, ignored by git), for the GPU machine, which has no Redis and no network.
# scripts/gpu_check.sh (stage cluster) unpacks them and starts the server on 127.0.0.1. 1.4 MB.
set -euo pipefail
dir=${1:-.redis}
mkdir -p "$dir"
cd "$dir"
apt-get download redis-server redis-tools libjemalloc2 liblzf1 2>&1 | grep -v '^W: Download is performed unsandboxed' || {
  echo "fetch_redis: apt-get download failed: this needs Debian 12's package registry (apt-get update first)" >&2
  exit 1
}
ls -1 ./*.deb
