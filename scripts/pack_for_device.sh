#!/usr/bin/env bash
# scripts/pack_for_device.sh — xz copies of the binaries the GPU machine runs (build-static's
# cudal1 and cudal1_gpu_tests, build-gpu-trainer's cudal1), beside them as NAME.xz: a third of the
# size, so a device call can carry them with Debian's clang (scripts/fetch_clang.sh) inside its
# 64 MiB. scripts/gpu_check.sh unpacks an .xz whose binary is missing or older.
set -euo pipefail
cd "$(dirname "$0")/.."
for f in build-static/cudal1 build-static/cudal1_gpu_tests build-gpu-trainer/cudal1; do
  [ -x "$f" ] || continue
  xz -T0 -9 -k -f "$f"
  printf '%s.xz %s bytes\n' "$f" "$(stat -c %s "$f.xz")"
done
