# cuda solution: the whole chain exp(clamp(x * a[col] + b[col], -c, c)) * y in one pass, float4 loads of x and y (a and b are tiny and stay in cache) and float4 stores in a grid-stride loop (32-bit index math when it fits; a scalar kernel for widths not divisible by 4 or unaligned views); 8 B read + 4 B written per element versus four eager kernels that each read and write a full 256 MB intermediate
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

__device__ __forceinline__ float chain_f(float x, float a, float b, float y, float lim) {
    // same rounding steps as the eager chain: (x * a) rounded, + b rounded (no FMA contraction)
    float t = __fadd_rn(__fmul_rn(x, a), b);
    t = t < -lim ? -lim : t;  // clamp; NaN compares false and passes through, as torch.clamp
    t = t > lim ? lim : t;
    return expf(t) * y;
}

// Fast path: cols % 4 == 0 and every pointer 16-byte aligned, so a float4 never crosses a row.
// IndexT is uint32_t when every index fits (cheap column modulo), int64_t otherwise.
template <typename IndexT>
__global__ void chain_vec4_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ out, IndexT n4, IndexT cols4, float lim) {
    const IndexT stride = (IndexT)gridDim.x * blockDim.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (IndexT i = (IndexT)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const IndexT c4 = i % cols4;
        const float4 xv = x4[i];
        const float4 yv = y4[i];
        const float4 av = __ldg(a4 + c4);
        const float4 bv = __ldg(b4 + c4);
        o4[i] = make_float4(chain_f(xv.x, av.x, bv.x, yv.x, lim), chain_f(xv.y, av.y, bv.y, yv.y, lim),
                            chain_f(xv.z, av.z, bv.z, yv.z, lim), chain_f(xv.w, av.w, bv.w, yv.w, lim));
    }
}

// Any width and alignment.
__global__ void chain_scalar_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                    const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ out, int64_t n, int64_t cols, float lim) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int64_t c = i % cols;
        out[i] = chain_f(x[i], __ldg(a + c), __ldg(b + c), y[i], lim);
    }
}

static bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

static int grid_for(int64_t work, int threads) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    int64_t blocks = (work + threads - 1) / threads;
    const int64_t cap = (int64_t)sms * 8;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (int)blocks;
}

torch::Tensor elementwise_chain_forward(torch::Tensor x, torch::Tensor y, torch::Tensor a, torch::Tensor b,
                                        double clamp_limit) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda() && a.is_cuda() && b.is_cuda(), "chain: CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && y.scalar_type() == torch::kFloat32 &&
                a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "chain: float32 expected");
    TORCH_CHECK(x.dim() >= 1 && x.sizes() == y.sizes(), "chain: x and y must have the same shape");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto yc = y.contiguous();
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t cols = xc.size(-1);
    TORCH_CHECK(ac.numel() == cols && bc.numel() == cols, "chain: a and b must match the last dimension");
    auto out = torch::empty(xc.sizes(), xc.options());
    const int64_t n = xc.numel();
    if (n == 0) return out;
    const float* px = xc.data_ptr<float>();
    const float* py = yc.data_ptr<float>();
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    const float lim = (float)clamp_limit;
    const int threads = 256;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (cols % 4 == 0 && aligned16(px) && aligned16(py) && aligned16(pa) && aligned16(pb) && aligned16(po)) {
        const int64_t n4 = n / 4, cols4 = cols / 4;  // n is a multiple of cols, so of 4: no tail
        const int blocks = grid_for(n4, threads);
        if (n4 + (int64_t)blocks * threads < ((int64_t)1 << 32)) {  // i + stride never wraps in 32 bits
            chain_vec4_kernel<uint32_t><<<blocks, threads, 0, stream>>>(px, py, pa, pb, po, (uint32_t)n4, (uint32_t)cols4, lim);
        } else {
            chain_vec4_kernel<int64_t><<<blocks, threads, 0, stream>>>(px, py, pa, pb, po, n4, cols4, lim);
        }
    } else {
        chain_scalar_kernel<<<grid_for(n, threads), threads, 0, stream>>>(px, py, pa, pb, po, n, cols, lim);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP_SRC = ("torch::Tensor elementwise_chain_forward(torch::Tensor x, torch::Tensor y, torch::Tensor a, "
            "torch::Tensor b, double clamp_limit);")

_ext = load_inline(
    name="cudal1_sol_level2_15_elementwise_chain",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["elementwise_chain_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, cols, clamp_limit):
        super().__init__()
        self.a = nn.Parameter(0.5 + 0.25 * torch.randn(cols))
        self.b = nn.Parameter(0.25 * torch.randn(cols))
        self.clamp_limit = clamp_limit

    def forward(self, x, y):
        return _ext.elementwise_chain_forward(x, y, self.a, self.b, float(self.clamp_limit))
