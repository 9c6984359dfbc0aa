# cuda solution: one fused pass, y = x / (1 + exp(-x)) per element, float4 loads/stores (16 B per thread per step) in a grid-stride loop with a scalar tail; reads 4 B and writes 4 B per element, the minimum for an out-of-place op
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

__device__ __forceinline__ float silu_f(float v) {
    // same formula as PyTorch's CUDA silu: x / (1 + exp(-x)); exp overflow gives x / inf = -0
    return v / (1.0f + expf(-v));
}

__global__ void silu_vec4_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t n4 = n >> 2;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (int64_t i = tid; i < n4; i += stride) {
        const float4 a = x4[i];
        o4[i] = make_float4(silu_f(a.x), silu_f(a.y), silu_f(a.z), silu_f(a.w));
    }
    for (int64_t i = (n4 << 2) + tid; i < n; i += stride) out[i] = silu_f(x[i]);  // tail: < 4 elements
}

__global__ void silu_scalar_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = silu_f(x[i]);
}

static bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

static int grid_for(int64_t work, int threads) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    int64_t blocks = (work + threads - 1) / threads;
    const int64_t cap = (int64_t)sms * 8;  // 8 x 256 threads fill an SM; the loop covers the rest
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (int)blocks;
}

torch::Tensor silu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "silu: CUDA tensor expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "silu: float32 expected");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto out = torch::empty(xc.sizes(), xc.options());
    const int64_t n = xc.numel();
    if (n == 0) return out;
    const float* px = xc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const int threads = 256;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (aligned16(px) && aligned16(po)) {
        silu_vec4_kernel<<<grid_for((n + 3) / 4, threads), threads, 0, stream>>>(px, po, n);
    } else {
        silu_scalar_kernel<<<grid_for(n, threads), threads, 0, stream>>>(px, po, n);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP_SRC = "torch::Tensor silu_forward(torch::Tensor x);"

_ext = load_inline(
    name="cudal1_sol_level1_23_silu",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["silu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.silu_forward(x)
