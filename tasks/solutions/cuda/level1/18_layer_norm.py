# cuda solution: one block per row; the row is read once into registers as float4 (fast path, up to 8192 features), two block reductions (warp shuffle + shared memory, fp32) give the mean and then the biased variance sum((x - mean)^2) from the registers (two-pass, no cancellation), and y = (x - mean) * rsqrt(var + eps) * w + b is written from registers: one read of x, one write of y; other widths/alignments use a scalar three-pass fallback
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = lane < nwarps ? scratch[lane] : 0.0f;
    r = warp_sum(r);
    __syncthreads();  // scratch is reused by the next reduction
    return r;
}

// Fast path: cols % 4 == 0, 16-byte aligned pointers, cols / 4 <= VPT * blockDim.x.
template <int VPT>
__global__ void layer_norm_vec_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ b, float* __restrict__ out,
                                      int64_t rows, int cols, float eps) {
    __shared__ float scratch[32];
    const int n4 = cols >> 2;
    const float4* w4 = reinterpret_cast<const float4*>(w);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    const float inv_cols = 1.0f / (float)cols;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
        float4* orow = reinterpret_cast<float4*>(out + row * cols);
        float4 v[VPT];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int idx = threadIdx.x + k * blockDim.x;
            if (idx < n4) {
                v[k] = xr[idx];
                s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
            } else {
                v[k] = make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
        const float mean = block_sum(s, scratch) * inv_cols;
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int idx = threadIdx.x + k * blockDim.x;
            if (idx < n4) {
                const float dx = v[k].x - mean, dy = v[k].y - mean, dz = v[k].z - mean, dw = v[k].w - mean;
                q += dx * dx + dy * dy + dz * dz + dw * dw;
            }
        }
        const float var = block_sum(q, scratch) * inv_cols;  // biased (divide by N), as nn.LayerNorm
        const float rstd = rsqrtf(var + eps);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int idx = threadIdx.x + k * blockDim.x;
            if (idx < n4) {
                const float4 g = w4[idx];
                const float4 h = b4[idx];
                orow[idx] = make_float4((v[k].x - mean) * rstd * g.x + h.x, (v[k].y - mean) * rstd * g.y + h.y,
                                        (v[k].z - mean) * rstd * g.z + h.z, (v[k].w - mean) * rstd * g.w + h.w);
            }
        }
    }
}

// Fallback: any width and alignment; three passes over the row (the later ones from L1/L2).
__global__ void layer_norm_scalar_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ b, float* __restrict__ out,
                                         int64_t rows, int64_t cols, float eps) {
    __shared__ float scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * cols;
        float* orow = out + row * cols;
        float s = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
        const float mean = block_sum(s, scratch) / (float)cols;
        float q = 0.0f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) { const float d = xr[c] - mean; q += d * d; }
        const float rstd = rsqrtf(block_sum(q, scratch) / (float)cols + eps);
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = (xr[c] - mean) * rstd * w[c] + b[c];
    }
}

static bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

torch::Tensor layer_norm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && bias.is_cuda(), "layer_norm: CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                bias.scalar_type() == torch::kFloat32, "layer_norm: float32 expected");
    TORCH_CHECK(x.dim() >= 1, "layer_norm: at least 1-D input expected");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    const int64_t cols = xc.size(-1);
    TORCH_CHECK(wc.numel() == cols && bc.numel() == cols, "layer_norm: weight/bias size must equal the last dimension");
    auto out = torch::empty(xc.sizes(), xc.options());
    if (xc.numel() == 0) return out;
    const int64_t rows = xc.numel() / cols;
    const float* px = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    auto stream = at::cuda::getCurrentCUDAStream();
    const int grid = (int)(rows < (int64_t)(1 << 30) ? rows : (int64_t)(1 << 30));
    const float e = (float)eps;

    const bool vec = (cols % 4 == 0) && cols <= INT32_MAX && aligned16(px) && aligned16(pw) &&
                     aligned16(pb) && aligned16(po);
    if (vec) {
        const int64_t n4 = cols / 4;
        int threads = (int)((n4 + 31) / 32 * 32);
        if (threads > 256) threads = 256;
        const int64_t per = (n4 + threads - 1) / threads;
        const int c = (int)cols;
        if (per <= 1) { layer_norm_vec_kernel<1><<<grid, threads, 0, stream>>>(px, pw, pb, po, rows, c, e); C10_CUDA_KERNEL_LAUNCH_CHECK(); return out; }
        if (per <= 2) { layer_norm_vec_kernel<2><<<grid, threads, 0, stream>>>(px, pw, pb, po, rows, c, e); C10_CUDA_KERNEL_LAUNCH_CHECK(); return out; }
        if (per <= 4) { layer_norm_vec_kernel<4><<<grid, threads, 0, stream>>>(px, pw, pb, po, rows, c, e); C10_CUDA_KERNEL_LAUNCH_CHECK(); return out; }
        if (per <= 8) { layer_norm_vec_kernel<8><<<grid, threads, 0, stream>>>(px, pw, pb, po, rows, c, e); C10_CUDA_KERNEL_LAUNCH_CHECK(); return out; }
    }
    int threads = (int)((cols + 31) / 32 * 32);
    if (threads > 256) threads = 256;
    layer_norm_scalar_kernel<<<grid, threads, 0, stream>>>(px, pw, pb, po, rows, cols, e);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_CPP_SRC = "torch::Tensor layer_norm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"

_ext = load_inline(
    name="cudal1_sol_level1_18_layer_norm",
    cpp_sources=_CPP_SRC,
    cuda_sources=_CUDA_SRC,
    functions=["layer_norm_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features, eps=1e-5)

    def forward(self, x):
        return _ext.layer_norm_forward(x, self.norm.weight, self.norm.bias, float(self.norm.eps))
