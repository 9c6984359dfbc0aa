#!/usr/bin/env bash
# bench/eval_repeat.sh CLI DEVICE REPEATS — honest candidates (real CUDA kernels and PyTorch
# rewrites), each evaluated REPEATS times from scratch, so the spread between evaluations shows.
# Prints one table per task (speedup = median of the repeats, then each run and max - min).
set -uo pipefail
cli=${1:-build/cudal1}
device=${2:-cuda}
repeats=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
f=$root/tests/fixtures

run() {  # task, candidates...
  local task=$1
  shift
  local args=()
  for c in "$@"; do args+=(--candidate "$c"); done
  echo "== $(basename "$task") on $device"
  "$cli" eval --task "$task" "${args[@]}" --device "$device" --repeat "$repeats" --force \
    | sed -n '/^candidate  *verdict/,$p'
  echo
}

cuda_only() { [ "$device" = cpu ] || echo "$@"; }

run "$f/tasks/gemm_relu.py" $(cuda_only "$f/cuda/ok_gemm_relu_tiled_cuda.py") "$f/candidates/ok_gemm_relu_addmm.py"
run "$f/tasks/softmax_rows.py" $(cuda_only "$f/cuda/ok_softmax_rows_warp_cuda.py") "$f/candidates/ok_softmax_rows_stable.py"
run "$f/tasks/scale_add.py" $(cuda_only "$f/cuda/ok_scale_add_float4_cuda.py") "$f/candidates/ok_scale_add_alpha.py"
run "$root/examples/residual_layernorm/task.py" "$root/examples/residual_layernorm/candidates/ok_f_layer_norm.py"
