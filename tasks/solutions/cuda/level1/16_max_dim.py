# cuda solution: values-only max over one dim (keepdim False, like torch.max(x, dim)[0]); reduced dim last -> one block per row, float4 loads, per-thread NaN-propagating max then warp-shuffle + shared-memory block max, one float written per row: the matrix is read once (the eager op also computes and writes indices); a reduced dim that is not last uses a coalesced column kernel (one thread per (outer, inner) pair)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>
#include <cmath>
#include <vector>

// max that propagates NaN, like torch.max
__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }

__device__ __forceinline__ float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

// blockDim.x a multiple of 32, at most 1024; every thread gets the result.
__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = lane < nwarps ? scratch[lane] : -INFINITY;
    r = warp_max(r);
    __syncthreads();
    return r;
}

// Reduced dim last, cols % 4 == 0 and aligned rows.
__global__ void max_rows_vec_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t rows, int64_t cols) {
    __shared__ float scratch[32];
    const int64_t n4 = cols >> 2;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
        float m = -INFINITY;
        for (int64_t c = threadIdx.x; c < n4; c += blockDim.x) {
            const float4 v = xr[c];
            m = nan_max(m, nan_max(nan_max(v.x, v.y), nan_max(v.z, v.w)));
        }
        m = block_max(m, scratch);
        if (threadIdx.x == 0) out[row] = m;
    }
}

// Reduced dim last, any width/alignment.
__global__ void max_rows_scalar_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t rows, int64_t cols) {
    __shared__ float scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * cols;
        float m = -INFINITY;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = nan_max(m, xr[c]);
        m = block_max(m, scratch);
        if (threadIdx.x == 0) out[row] = m;
    }
}

// Reduced dim not last: x viewed as (outer, dim, inner); one thread per output element (o, i).
__global__ void max_strided_kernel(const float* __restrict__ x, float* __restrict__ out,
                                   int64_t outer, int64_t dim, int64_t inner) {
    const int64_t total = outer * inner;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < total; j += stride) {
        const int64_t o = j / inner, i = j - o * inner;
        const float* xp = x + o * dim * inner + i;
        float m = -INFINITY;
        for (int64_t d = 0; d < dim; ++d) m = nan_max(m, xp[d * inner]);
        out[j] = m;
    }
}

static bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

torch::Tensor max_dim_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda(), "max_dim: CUDA tensor expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "max_dim: float32 expected");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    const int64_t nd = xc.dim();
    const int64_t nd_eff = nd == 0 ? 1 : nd;  // a 0-d tensor reduces like a 1-element vector
    if (dim < 0) dim += nd_eff;
    TORCH_CHECK(dim >= 0 && dim < nd_eff, "max_dim: dim out of range");
    std::vector<int64_t> out_shape;
    for (int64_t d = 0; d < nd; ++d) if (d != dim) out_shape.push_back(xc.size(d));
    auto out = torch::empty(out_shape, xc.options());
    const int64_t size = nd == 0 ? 1 : xc.size(dim);
    TORCH_CHECK(size > 0, "max_dim: cannot reduce over a zero-size dimension");
    if (xc.numel() == 0) return out;
    int64_t inner = 1;
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t outer = xc.numel() / (size * inner);
    const float* px = xc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    auto stream = at::cuda::getCurrentCUDAStream();

    if (inner == 1) {
        const int64_t rows = outer, cols = size;
        const int grid = (int)(rows < (int64_t)(1 << 30) ? rows : (int64_t)(1 << 30));
        const bool vec = (cols % 4 == 0) && aligned16(px);
        const int64_t work = vec ? cols / 4 : cols;
        int threads = (int)((work + 31) / 32 * 32);
        if (threads > 256) threads = 256;
        if (vec) max_rows_vec_kernel<<<grid, threads, 0, stream>>>(px, po, rows, cols);
        else max_rows_scalar_kernel<<<grid, threads, 0, stream>>>(px, po, rows, cols);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        return out;
    }
    const int threads = 256;
    const int64_t total = outer * inner;
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    int64_t blocks = (total + threads - 1) / threads;
    if (blocks > (int64_t)sms * 8) blocks = (int64_t)sms * 8;
    max_strided_kernel<<<(int)blocks, threads, 0, stream>>>(px, po, outer, size, inner);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP_SRC = "torch::Tensor max_dim_forward(torch::Tensor x, int64_t dim);"

_ext = load_inline(
    name="cudal1_sol_level1_16_max_dim",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["max_dim_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return _ext.max_dim_forward(x, int(self.dim))
