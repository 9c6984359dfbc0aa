#!/usr/bin/env bash
# Installs what cudal1 needs on a Debian 12 machine, and nothing when all of it is there.
# Debian packages only: the CPU build of PyTorch (python3-torch, used by the test runners),
# libtorch-dev, pybind11-dev and python3-dev (the headers load_inline compiles candidates against),
# the C++ libraries the core links (JSON, CLI parsing, SQLite, OpenSSL for SHA-256, PCRE2 for the
# tokenizer's Unicode pre-tokenizer patterns, cpp-httplib for
# the OpenAI-compatible policy's HTTP, GoogleTest),
# chromium (headless: the bench report's browser test loads the HTML page and reads its console),
# clang (the build service's fast path compiles the TUs that include torch with it), and
# bubblewrap and libseccomp (the sandbox that candidate code runs in), hiredis and redis-server
# (scale-out: the cluster's job stream, and the server its tests start on a free local port).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libsqlite3-dev libsqlitecpp-dev libssl-dev libcpp-httplib-dev libgtest-dev libpcre2-dev libicu-dev libgloo-dev libseccomp-dev bubblewrap
  libhiredis-dev redis-server
  python3-torch python3-numpy libtorch-dev pybind11-dev python3-dev
  chromium clang
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
