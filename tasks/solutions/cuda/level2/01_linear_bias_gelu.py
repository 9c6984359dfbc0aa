# cuda solution: the GEMM x @ W^T goes to cuBLAS (at::mm, no bias), then ONE fused epilogue kernel adds fc.bias, adds extra_bias and applies exact erf GELU in place on the GEMM result, float4 loads/stores with the two bias vectors read as float4 from cache: the 2048x4096 activation is read and written once after the GEMM (eager: bias add in the GEMM, a separate add kernel and a separate GELU kernel, each a full read + write)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>
#include <vector>

__device__ __forceinline__ float epilogue_f(float acc, float b1, float b2) {
    // (x W^T + fc.bias) + extra_bias, then exact GELU as PyTorch: x * 0.5 * (1 + erf(x / sqrt(2)))
    const float v = __fadd_rn(__fadd_rn(acc, b1), b2);
    return v * 0.5f * (1.0f + erff(v * 0.70710678118654752440f));
}

// In place on the (rows, cols) GEMM output; cols % 4 == 0 and 16-byte aligned pointers.
template <typename IndexT>
__global__ void bias_bias_gelu_vec4_kernel(float* __restrict__ y, const float* __restrict__ b1,
                                           const float* __restrict__ b2, IndexT n4, IndexT cols4) {
    const IndexT stride = (IndexT)gridDim.x * blockDim.x;
    float4* y4 = reinterpret_cast<float4*>(y);
    const float4* p4 = reinterpret_cast<const float4*>(b1);
    const float4* q4 = reinterpret_cast<const float4*>(b2);
    for (IndexT i = (IndexT)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const IndexT c4 = i % cols4;
        const float4 v = y4[i];
        const float4 p = __ldg(p4 + c4);
        const float4 q = __ldg(q4 + c4);
        y4[i] = make_float4(epilogue_f(v.x, p.x, q.x), epilogue_f(v.y, p.y, q.y),
                            epilogue_f(v.z, p.z, q.z), epilogue_f(v.w, p.w, q.w));
    }
}

// Any width and alignment.
__global__ void bias_bias_gelu_scalar_kernel(float* __restrict__ y, const float* __restrict__ b1,
                                             const float* __restrict__ b2, int64_t n, int64_t cols) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int64_t c = i % cols;
        y[i] = epilogue_f(y[i], __ldg(b1 + c), __ldg(b2 + c));
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

torch::Tensor linear_bias_gelu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor fc_bias,
                                       torch::Tensor extra_bias) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && fc_bias.is_cuda() && extra_bias.is_cuda(),
                "linear_bias_gelu: CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                fc_bias.scalar_type() == torch::kFloat32 && extra_bias.scalar_type() == torch::kFloat32,
                "linear_bias_gelu: float32 expected");
    TORCH_CHECK(x.dim() >= 1 && weight.dim() == 2, "linear_bias_gelu: bad ranks");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t in_f = weight.size(1), out_f = weight.size(0);
    TORCH_CHECK(x.size(-1) == in_f, "linear_bias_gelu: x's last dimension must equal in_features");
    TORCH_CHECK(fc_bias.numel() == out_f && extra_bias.numel() == out_f, "linear_bias_gelu: bias sizes");
    auto b1 = fc_bias.contiguous();
    auto b2 = extra_bias.contiguous();
    std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
    out_shape.back() = out_f;

    // GEMM only (cuBLAS): (rows, in) x (in, out); the result is a fresh tensor owned here.
    auto x2 = x.reshape({-1, in_f});
    auto y = at::mm(x2, weight.t());
    if (!y.is_contiguous()) y = y.contiguous();
    const int64_t n = y.numel();
    if (n == 0) return y.view(out_shape);
    float* py = y.data_ptr<float>();
    const float* p1 = b1.data_ptr<float>();
    const float* p2 = b2.data_ptr<float>();
    const int threads = 256;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (out_f % 4 == 0 && aligned16(py) && aligned16(p1) && aligned16(p2)) {
        const int64_t n4 = n / 4, cols4 = out_f / 4;  // n is a multiple of out_f, so of 4
        const int blocks = grid_for(n4, threads);
        if (n4 + (int64_t)blocks * threads < ((int64_t)1 << 32)) {
            bias_bias_gelu_vec4_kernel<uint32_t><<<blocks, threads, 0, stream>>>(py, p1, p2, (uint32_t)n4, (uint32_t)cols4);
        } else {
            bias_bias_gelu_vec4_kernel<int64_t><<<blocks, threads, 0, stream>>>(py, p1, p2, n4, cols4);
        }
    } else {
        bias_bias_gelu_scalar_kernel<<<grid_for(n, threads), threads, 0, stream>>>(py, p1, p2, n, out_f);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y.view(out_shape);
}
"""

_CPP_SRC = ("torch::Tensor linear_bias_gelu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor fc_bias, "
            "torch::Tensor extra_bias);")

_ext = load_inline(
    name="cudal1_sol_level2_01_linear_bias_gelu",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["linear_bias_gelu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.extra_bias = nn.Parameter(torch.randn(out_features) * 0.2)

    def forward(self, x):
        return _ext.linear_bias_gelu_forward(x, self.fc.weight, self.fc.bias, self.extra_bias)
