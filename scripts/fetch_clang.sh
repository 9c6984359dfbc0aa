#!/usr/bin/env bash
# scripts/fetch_clang.sh [DIR] — Debian's clang and the libraries it loads, as .deb files in DIR
# (default .clang, which .git/info/exclude should ignore), for a machine that has no clang and
# no network: the GPU machine. There scripts/gpu_check.sh unpacks them into .clang-root and
# points the build service at them (CUDAL1_CLANG), so its fast path compiles the TUs that include
# torch with clang (docs/builds.md). About 55 MB: carry DIR and little else in that call (the
# device tool carries 64 MiB a call; scripts/pack_for_device.sh shrinks the binaries).
#
# Pinned to Debian 12's clang-19 (19.1.7): newer than the GPU machine's libstdc++ headers, which
# an older clang may not parse. The libraries clang loads come along, since that machine's image
# is not Debian's, but for those any image with Python, dpkg and bash has (glibc, libstdc++, zlib,
# liblzma, libzstd, libffi, libtinfo): the 64 MiB a call has no room to spare.
set -euo pipefail
dir=${1:-.clang}
mkdir -p "$dir"
cd "$dir"
packages=(clang-19 libclang-cpp19 libllvm19 libclang-common-19-dev libz3-4 libxml2 libicu72 libedit2 libbsd0 libmd0)
apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || {
  echo "fetch_clang: apt-get download failed: this needs Debian 12's package registry (apt-get update first)" >&2
  exit 1
}
ls -1 ./*.deb | wc -l | xargs printf 'fetch_clang: %s packages in %s, ' "$(pwd)"
du -sh . | cut -f1
