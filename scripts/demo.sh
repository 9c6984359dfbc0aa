#!/usr/bin/env bash
# `make demo`: evaluates every bundled example candidate against its task on this machine
# (cuda when a GPU is visible, else cpu) and prints one table per task. Results are kept in
# build/demo.db, so a second run answers from the store; pass --force through DEMO_FLAGS to redo.
set -euo pipefail
cli=${1:-build/cudal1}
root=$(cd "$(dirname "$0")/.." && pwd)
device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then device=cuda; fi

for task in "$root"/examples/*/task.py; do
  dir=$(dirname "$task")
  echo "== $(basename "$dir") ($device)"
  args=()
  for c in "$dir"/candidates/*.py; do args+=(--candidate "$c"); done
  "$cli" eval --task "$task" "${args[@]}" --device "$device" --db "$root/build/demo.db" ${DEMO_FLAGS:-} \
    | sed -n '/^candidate  *verdict/,$p'
  echo
done
