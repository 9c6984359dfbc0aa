# cuda solution: softmax over the last dim of a bfloat16 tensor with fp32 math; one block per row (128 threads for 1024 columns), the row read once as 16-byte vectors of 8 bf16 into fp32 registers, block max and block sum of exp(x - max) by warp shuffles + shared memory, then exp(x - max) / sum rounded once to bf16 and stored as 16-byte vectors: 2 B read + 2 B written per element, one kernel; odd widths/alignments use a scalar fallback
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cmath>

__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }

__device__ __forceinline__ float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
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
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = lane < nwarps ? scratch[lane] : 0.0f;
    r = warp_sum(r);
    __syncthreads();
    return r;
}

// Fast path: cols % 8 == 0, 16-byte aligned, cols / 8 <= VPT * blockDim.x. Each uint4 holds 8 bf16.
template <int VPT>
__global__ void softmax_bf16_vec_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out,
                                        int64_t rows, int cols) {
    __shared__ float scratch[32];
    const int n8 = cols >> 3;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const uint4* xr = reinterpret_cast<const uint4*>(x + row * cols);
        uint4* orow = reinterpret_cast<uint4*>(out + row * cols);
        float v[VPT][8];
        float m = -INFINITY;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int idx = threadIdx.x + k * blockDim.x;
            if (idx < n8) {
                const uint4 raw = xr[idx];
                const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float2 f = __bfloat1622float2(h[j]);
                    v[k][2 * j] = f.x;
                    v[k][2 * j + 1] = f.y;
                    m = nan_max(m, nan_max(f.x, f.y));
                }
            } else {
#pragma unroll
                for (int j = 0; j < 8; ++j) v[k][j] = 0.0f;
            }
        }
        m = block_max(m, scratch);
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int idx = threadIdx.x + k * blockDim.x;
            if (idx < n8) {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    v[k][j] = expf(v[k][j] - m);
                    s += v[k][j];
                }
            }
        }
        s = block_sum(s, scratch);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int idx = threadIdx.x + k * blockDim.x;
            if (idx < n8) {
                uint4 o;
                __nv_bfloat162* oh = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
                for (int j = 0; j < 4; ++j) oh[j] = __floats2bfloat162_rn(v[k][2 * j] / s, v[k][2 * j + 1] / s);
                orow[idx] = o;
            }
        }
    }
}

// Fallback: any width and alignment; three passes over the row.
__global__ void softmax_bf16_scalar_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ out,
                                           int64_t rows, int64_t cols) {
    __shared__ float scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __nv_bfloat16* xr = x + row * cols;
        __nv_bfloat16* orow = out + row * cols;
        float m = -INFINITY;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = nan_max(m, __bfloat162float(xr[c]));
        m = block_max(m, scratch);
        float s = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(__bfloat162float(xr[c]) - m);
        s = block_sum(s, scratch);
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
            orow[c] = __float2bfloat16_rn(expf(__bfloat162float(xr[c]) - m) / s);
    }
}

static bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

torch::Tensor softmax_bf16_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "softmax_bf16: CUDA tensor expected");
    TORCH_CHECK(x.scalar_type() == torch::kBFloat16, "softmax_bf16: bfloat16 expected");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto out = torch::empty(xc.sizes(), xc.options());
    if (xc.numel() == 0) return out;
    const int64_t cols = xc.dim() == 0 ? 1 : xc.size(-1);  // softmax of a 0-d tensor is 1
    const int64_t rows = xc.numel() / cols;
    const __nv_bfloat16* px = reinterpret_cast<const __nv_bfloat16*>(xc.data_ptr<at::BFloat16>());
    __nv_bfloat16* po = reinterpret_cast<__nv_bfloat16*>(out.data_ptr<at::BFloat16>());
    auto stream = at::cuda::getCurrentCUDAStream();
    const int grid = (int)(rows < (int64_t)(1 << 30) ? rows : (int64_t)(1 << 30));

    if ((cols % 8 == 0) && cols <= INT32_MAX && aligned16(px) && aligned16(po)) {
        const int64_t n8 = cols / 8;
        int threads = (int)((n8 + 31) / 32 * 32);
        if (threads > 256) threads = 256;
        const int64_t per = (n8 + threads - 1) / threads;
        const int c = (int)cols;
        if (per <= 1) { softmax_bf16_vec_kernel<1><<<grid, threads, 0, stream>>>(px, po, rows, c); C10_CUDA_KERNEL_LAUNCH_CHECK(); return out; }
        if (per <= 2) { softmax_bf16_vec_kernel<2><<<grid, threads, 0, stream>>>(px, po, rows, c); C10_CUDA_KERNEL_LAUNCH_CHECK(); return out; }
        if (per <= 4) { softmax_bf16_vec_kernel<4><<<grid, threads, 0, stream>>>(px, po, rows, c); C10_CUDA_KERNEL_LAUNCH_CHECK(); return out; }
    }
    int threads = (int)((cols + 31) / 32 * 32);
    if (threads > 256) threads = 256;
    softmax_bf16_scalar_kernel<<<grid, threads, 0, stream>>>(px, po, rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP_SRC = "torch::Tensor softmax_bf16_forward(torch::Tensor x);"

_ext = load_inline(
    name="cudal1_sol_level1_27_softmax_bf16",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["softmax_bf16_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.softmax_bf16_forward(x)
