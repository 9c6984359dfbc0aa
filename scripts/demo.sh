#!/usr/bin/env bash
# `make demo`: evaluates every bundled example candidate against its task and prints one table
# per task, then optimises a few tasks with `cudal1 optimize` and the built-in rewrite policy (no
# model): bundled suite tasks on a GPU; on the CPU, the two examples whose forward recomputes
# something from its weights or sizes on every call (lora_linear, positional_encoding), where the
# policy's frozen TorchScript trace gives a real speedup even on torch 1.13. Runs on CUDA when the
# Python that cudal1 will use can see a GPU, else on the CPU (CUDAL1_DEVICE overrides). Results
# are kept in <build>/demo.db, so a second run answers from the store; DEMO_FLAGS=--force
# re-evaluates.
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
run=$(dirname "$cli")/demo-run
if [ "$device" = cuda ]; then
  tasks=(level1/23_silu level2/01_linear_bias_gelu level2/07_conv_bn_relu) rounds=3 group=4
else
  # The suite's GPU-sized tasks take minutes each on a CPU; these two take seconds.
  tasks=("$root"/examples/lora_linear/task.py "$root"/examples/positional_encoding/task.py) rounds=1 group=2
fi
"$cli" optimize "${tasks[@]}" --policy builtin --rounds "$rounds" --group "$group" --device "${CUDAL1_DEVICE:-auto}" \
  --run "$run" --db "$db"

echo
echo "== Next"
echo "report of this run: $run/report.html (every answer, verdicts, best file per task)"
echo "your own kernel: $cli eval --task TASK.py --candidate YOURS.py [--device cuda] (README.md)"
if [ "$device" = cpu ]; then
  echo "these are CPU timings, on this machine's PyTorch. GPU figures (H100/H200: the bundled suite, CUDA-L1's"
  echo "kernel sets, the trainer) are in bench/NOTES.md, their raw output in bench/results/."
  echo "on a GPU machine: CUDAL1_PYTHON=/path/to/python-with-CUDA-torch make demo"
fi
