#!/usr/bin/env bash
# `make demo`: evaluates every bundled example candidate against its task and prints one table
# per task, then optimises a few tasks with `cudal1 optimize` and the built-in rewrite policy (no
# model): bundled suite tasks on a GPU, the small examples on the CPU. Runs on CUDA when the Python that cudal1 will use can see a GPU, else on the CPU
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

echo "== cudal1 optimize: the built-in rewrite policy (no model), every candidate verified"
if [ "$device" = cuda ]; then
  tasks=(level1/23_silu level2/01_linear_bias_gelu level2/07_conv_bn_relu) rounds=3 group=4
else
  tasks=("$root"/examples/*/task.py) rounds=2 group=2  # the suite's GPU-sized tasks take minutes on a CPU
fi
"$cli" optimize "${tasks[@]}" --policy builtin --rounds "$rounds" --group "$group" --device "${CUDAL1_DEVICE:-auto}" \
  --run "$(dirname "$cli")/demo-run" --db "$db"
