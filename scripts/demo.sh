#!/usr/bin/env bash
# `make demo`: evaluates every bundled example candidate against its task and prints one table
# per task. Runs on CUDA when the Python that cudal1 will use can see a GPU, else on the CPU
# (CUDAL1_DEVICE overrides). Results are kept in <build>/demo.db, so a second run answers from
# the store; DEMO_FLAGS=--force re-evaluates.
set -euo pipefail
cli=${1:-build/cudal1}
root=$(cd "$(dirname "$0")/.." && pwd)
db=$(dirname "$cli")/demo.db

device=${CUDAL1_DEVICE:-cpu}
if [ -z "${CUDAL1_DEVICE:-}" ]; then
  for py in ${CUDAL1_PYTHON:-} python3 /usr/bin/python3; do
    if "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      device=cuda
      export CUDAL1_PYTHON=$py
      break
    fi
  done
fi

for task in "$root"/examples/*/task.py; do
  dir=$(dirname "$task")
  echo "== $(basename "$dir") ($device)"
  args=()
  for c in "$dir"/candidates/*.py; do args+=(--candidate "$c"); done
  "$cli" eval --task "$task" "${args[@]}" --device "$device" --db "$db" ${DEMO_FLAGS:-} \
    | sed -n '/^candidate  *verdict/,$p'
  echo
done
