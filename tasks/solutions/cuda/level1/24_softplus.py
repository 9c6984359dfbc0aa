# cuda solution: one fused pass, softplus with beta 1 and threshold 20 (x above 20 passes through, else log1p(exp(x))) per element, float4 loads/stores in a grid-stride loop with a scalar tail; 4 B read + 4 B written per element, one kernel
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

__device__ __forceinline__ float softplus_f(float v) {
    // PyTorch's softplus with beta = 1, threshold = 20: linear region above the threshold
    return v > 20.0f ? v : log1pf(expf(v));
}

__global__ void softplus_vec4_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t n4 = n >> 2;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (int64_t i = tid; i < n4; i += stride) {
        const float4 a = x4[i];
        o4[i] = make_float4(softplus_f(a.x), softplus_f(a.y), softplus_f(a.z), softplus_f(a.w));
    }
    for (int64_t i = (n4 << 2) + tid; i < n; i += stride) out[i] = softplus_f(x[i]);  // tail: < 4 elements
}

__global__ void softplus_scalar_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = softplus_f(x[i]);
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

torch::Tensor softplus_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "softplus: CUDA tensor expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "softplus: float32 expected");
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
        softplus_vec4_kernel<<<grid_for((n + 3) / 4, threads), threads, 0, stream>>>(px, po, n);
    } else {
        softplus_scalar_kernel<<<grid_for(n, threads), threads, 0, stream>>>(px, po, n);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP_SRC = "torch::Tensor softplus_forward(torch::Tensor x);"

_ext = load_inline(
    name="cudal1_sol_level1_24_softplus",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["softplus_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.softplus_forward(x)
