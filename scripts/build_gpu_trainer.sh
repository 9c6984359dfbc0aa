#!/usr/bin/env bash
# scripts/build_gpu_trainer.sh — builds the CLI with the trainer for the GPU machine, in
# build-gpu-trainer/: the static build (libstdc++, SQLite, OpenSSL, PCRE2, ICU linked in) plus
# the pip wheel's libtorch, which stays shared and is found at run time through LD_LIBRARY_PATH:
#
#   LD_LIBRARY_PATH=$(python3 -c 'import torch,os; print(os.path.dirname(torch.__file__)+"/lib")') \
#     build-gpu-trainer/cudal1 train bench-step --model DIR -d cuda ...
#
# Only the `cudal1` target is built. libtorch comes from, in this order: $TORCH_DIR (a
# .../torch/share/cmake/Torch folder), the torch of $PYTHON, the venv /tmp/v211 (torch 2.11 cu130,
# the GPU machine's version). The wheel's libtorch must be the GPU machine's version: its C++ ABI
# is what the binary is compiled against.
# JOBS (default 1) sets the build's parallelism; BUILD_DIR the folder.
#
# CUDA toolkit: the wheel's TorchConfig.cmake (Caffe2/public/cuda.cmake) runs find_package(CUDA),
# enable_language(CUDA) and find_package(CUDAToolkit REQUIRED) even though nothing here compiles
# CUDA, so configuring needs nvcc of the wheel's CUDA major version (here /usr/local/cuda, 13.0,
# found through PATH or CUDA_HOME / CUDACXX). Without one, find_package(Torch) fails with "Your
# installed Caffe2 version uses CUDA but I cannot find the CUDA libraries". The toolkit's own
# libraries are not needed at run time: --as-needed drops the ones the binary does not call, and
# the wheel's libtorch_cuda.so finds its own through its RPATH (site-packages/nvidia/...).
# TORCH_CUDA_ARCH_LIST is fixed so that configuring needs no GPU to detect one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-$root/build-gpu-trainer}
jobs=${JOBS:-1}

torch_dir=${TORCH_DIR:-}
if [ -z "$torch_dir" ]; then
  python=${PYTHON:-}
  if [ -z "$python" ] && [ -x /tmp/v211/bin/python ]; then python=/tmp/v211/bin/python; fi
  if [ -z "$python" ]; then
    echo "build_gpu_trainer: no libtorch: set TORCH_DIR or PYTHON (an interpreter with the CUDA torch wheel)" >&2
    exit 2
  fi
  torch_dir=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')/Torch
fi
if [ ! -f "$torch_dir/TorchConfig.cmake" ]; then
  echo "build_gpu_trainer: no TorchConfig.cmake in $torch_dir" >&2
  exit 2
fi

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}  # the H200; no GPU here to detect

echo "build_gpu_trainer: libtorch from $torch_dir, into $build, -j$jobs"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDAL1_STATIC=ON -DCUDAL1_STATIC_TRAINER=ON \
  -DTorch_DIR="$torch_dir"
if ! grep -q 'CUDAL1_HAVE_TRAINER=1' "$build/build.ninja"; then
  echo "build_gpu_trainer: configure left the trainer out (see the cmake output above)" >&2
  exit 1
fi
cmake --build "$build" --target cudal1 -j "$jobs"

bin=$build/cudal1
echo "build_gpu_trainer: $bin, $(du -m "$bin" | cut -f1) MiB"
readelf -d "$bin" | grep -E 'RPATH|RUNPATH' || echo "build_gpu_trainer: no RPATH (libtorch through LD_LIBRARY_PATH)"
