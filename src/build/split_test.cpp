#include "build/split.h"

#include <gtest/gtest.h>

#include "build/cuda_lex.h"

using namespace cudal1;
using Strings = std::vector<std::string>;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> texts(const Lexed& lx) {
  std::vector<std::string> out;
  for (auto& t : lx.tokens) out.emplace_back(t.text);
  return out;
}

// The usual load_inline cuda.cu: one kernel and a torch wrapper that launches it.
const char* kElementwise = R"(#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    int n = a.numel();
    const int block = 256;
    const int grid = (n + block - 1) / block;
    add_kernel<<<grid, block>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
)";

const char* kDispatched = R"(#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <typename scalar_t>
__global__ void scale_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, scalar_t s, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
}

torch::Tensor scale_cuda(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel();
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scale_cuda", ([&] {
        scale_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), static_cast<scalar_t>(s), n);
    }));
    return y;
}
)";

const char* kSharedMemory = R"(#include <torch/extension.h>

#define TILE 256
constexpr int kWarp = 32;

struct RowParams {
    int cols;
    float scale;
};

__constant__ float c_bias[16];

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}

__global__ void __launch_bounds__(TILE) row_sum_kernel(const float* __restrict__ x, float* __restrict__ out, RowParams p) {
    __shared__ float partial[TILE / kWarp];
    extern __shared__ float scratch[];
    float v = 0.f;
    for (int c = threadIdx.x; c < p.cols; c += blockDim.x) v += x[blockIdx.x * p.cols + c];
    scratch[threadIdx.x] = v;
    v = warp_sum(v);
    if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = v;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0] * p.scale + c_bias[blockIdx.x % 16];
}

torch::Tensor row_sum(torch::Tensor x, double scale) {
    auto out = torch::empty({x.size(0)}, x.options());
    RowParams p{static_cast<int>(x.size(1)), static_cast<float>(scale)};
    row_sum_kernel<<<x.size(0), TILE, TILE * sizeof(float)>>>(x.data_ptr<float>(), out.data_ptr<float>(), p);
    return out;
}
)";

// Kernel-looking text in comments and literals, which the splitter must not take for code.
const char* kDecoys = R"x(#include <torch/extension.h>
// Launch it as fill_kernel<<<grid, block>>>(p, v, n); not: __global__ void fake(float* p) {}
/* __global__ void also_fake(int* p) { p[0] = '{'; } <<<1, 1>>> */
__global__ void fill_kernel(float* p, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // i < n, see "<<<" below
    if (i < n) p[i] = v;
}

torch::Tensor fill(torch::Tensor t, double v) {
    const char* msg = "fill_kernel<<<g, b>>> failed: __global__ {";
    const char brace = '{';
    const char* raw = R"(a ") __device__ <<<1, 1>>>( )";
    int n = t.numel();
    TORCH_CHECK(t.is_cuda(), "expected a CUDA tensor for __global__ fill <<<");
    fill_kernel<<<(n + 255) / 256, 256>>>(t.data_ptr<float>(), (float)v, n);
    TORCH_CHECK(cudaGetLastError() == cudaSuccess, msg, brace, raw);
    return t;
}
)x";

}  // namespace

TEST(SplitLex, PunctuatorsLiteralsAndDirectives) {
  Lexed lx = lex_cuda("#define F(x) \\\n  (x)\nk<<<g, b>>>(s); // <<<\nstd::min(1'000, 'a'); \"}\"");
  ASSERT_EQ(lx.problem, "");
  EXPECT_EQ(texts(lx), (Strings{"#define F(x) \\\n  (x)", "k", "<<<", "g", ",", "b", ">>>", "(", "s", ")", ";",
                                "std", "::", "min", "(", "1'000", ",", "'a'", ")", ";", "\"}\""}));
  EXPECT_EQ(lx.tokens[0].kind, TokKind::directive);
  EXPECT_EQ(lx.tokens[1].line, 3);  // the continued directive spans lines 1-2
  EXPECT_EQ(lx.tokens.back().kind, TokKind::literal);
}

TEST(SplitLex, UnterminatedTextIsAProblem) {
  EXPECT_NE(lex_cuda("int a; /* open").problem, "");
  EXPECT_NE(lex_cuda("const char* s = \"open\n;").problem, "");
  EXPECT_NE(lex_cuda("auto r = R\"d(open)\";").problem, "");
}

TEST(Split, ElementwiseKernelAndLaunch) {
  SplitResult r = split_cuda_source(kElementwise);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.kernels, Strings{"add_kernel"});
  EXPECT_EQ(r.stubs, Strings{"__cudal1_launch_0_add_kernel"});
  EXPECT_EQ(r.launches, 1);
  EXPECT_EQ(r.pch_header, "torch/extension.h");
  EXPECT_EQ(r.host_source.rfind("#include <torch/extension.h>\n", 0), 0u);
  EXPECT_FALSE(has(r.host_source, "__global__"));
  EXPECT_FALSE(has(r.host_source, "<<<"));
  EXPECT_TRUE(has(r.host_source, "void __cudal1_launch_0_add_kernel(dim3, dim3, size_t, cudaStream_t, const float"));
  // Missing shared memory and stream arguments get launch's defaults.
  EXPECT_TRUE(has(r.host_source, "__cudal1_launch_0_add_kernel(grid, block, 0, (cudaStream_t)0, a.data_ptr<float>(), "
                                 "b.data_ptr<float>(), out.data_ptr<float>(), n);"));
  EXPECT_TRUE(has(r.host_source, "#line 9 \"cuda.cu\"\ntorch::Tensor add_cuda("));
  EXPECT_TRUE(has(r.device_source, "__global__ void add_kernel("));
  EXPECT_TRUE(has(r.device_source, "add_kernel<<<__cudal1_grid, __cudal1_block, __cudal1_smem, __cudal1_stream>>>(a, b, out, n);"));
  EXPECT_FALSE(has(r.device_source, "torch"));
  EXPECT_TRUE(has(r.device_source, "#include <cuda_runtime.h>"));
}

TEST(Split, FileNameGoesIntoLineDirectives) {
  SplitResult r = split_cuda_source(kElementwise, "/tmp/ext/cuda.cu");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_TRUE(has(r.device_source, "#line 4 \"/tmp/ext/cuda.cu\"\n__global__"));
}

TEST(Split, DispatchedTemplateKernelIsInstantiatedForTorchsTypes) {
  SplitResult r = split_cuda_source(kDispatched);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.kernels, Strings{"scale_kernel"});
  EXPECT_EQ(r.launches, 1);
  EXPECT_TRUE(has(r.host_source, "template <typename scalar_t> void __cudal1_launch_0_scale_kernel(dim3, dim3"));
  EXPECT_TRUE(has(r.host_source, "__cudal1_launch_0_scale_kernel<scalar_t>(blocks, threads, 0, "
                                 "at::cuda::getCurrentCUDAStream(), x.data_ptr<scalar_t>()"));
  EXPECT_FALSE(has(r.host_source, "<<<"));
  for (const char* type : {"double", "float"})
    EXPECT_TRUE(has(r.device_source, std::string("template void __cudal1_launch_0_scale_kernel<") + type +
                                         ">(dim3, dim3, size_t, cudaStream_t, const " + type + " * __restrict__ x, " +
                                         type + " * __restrict__ y, " + type + " s, int64_t n);"))
        << type;
  EXPECT_FALSE(has(r.device_source, "ATen"));
}

TEST(Split, DeviceHelpersConstantAndSharedMemoryStayOnTheDevice) {
  SplitResult r = split_cuda_source(kSharedMemory);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.kernels, Strings{"row_sum_kernel"});
  EXPECT_EQ(r.launches, 1);
  for (const char* device_only : {"__constant__ float c_bias", "__device__ __forceinline__ float warp_sum",
                                  "__shared__ float partial", "__launch_bounds__(TILE)"}) {
    EXPECT_TRUE(has(r.device_source, device_only)) << device_only;
    EXPECT_FALSE(has(r.host_source, device_only)) << device_only;
  }
  // Torch-free macros, constants and types are needed on both sides.
  for (const char* both : {"#define TILE 256", "constexpr int kWarp = 32;", "struct RowParams {"}) {
    EXPECT_TRUE(has(r.device_source, both)) << both;
    EXPECT_TRUE(has(r.host_source, both)) << both;
  }
  EXPECT_TRUE(has(r.host_source, "__cudal1_launch_0_row_sum_kernel(x.size(0), TILE, TILE * sizeof(float), (cudaStream_t)0, "));
}

TEST(Split, CommentsAndLiteralsAreNotCode) {
  SplitResult r = split_cuda_source(kDecoys);
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.kernels, Strings{"fill_kernel"});
  EXPECT_EQ(r.launches, 1);
  EXPECT_TRUE(has(r.host_source, "\"fill_kernel<<<g, b>>> failed: __global__ {\""));
  EXPECT_TRUE(has(r.host_source, "R\"(a \") __device__ <<<1, 1>>>( )\""));
  EXPECT_TRUE(has(r.host_source, "__cudal1_launch_0_fill_kernel((n + 255) / 256, 256, 0, (cudaStream_t)0, "));
  EXPECT_FALSE(has(r.device_source, "fake"));
}

TEST(Split, HostOnlySourceHasNoDeviceTU) {
  SplitResult r = split_cuda_source("#include <torch/extension.h>\ntorch::Tensor twice(torch::Tensor x) { return x * 2; }\n");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_EQ(r.device_source, "");
  EXPECT_TRUE(has(r.host_source, "return x * 2;"));
}

// `using namespace torch;` names no torch type, but the device TU has no torch to name.
TEST(Split, TorchUsingDirectivesStayOnTheHost) {
  for (const char* use : {"using namespace torch;", "using namespace at;", "namespace F = torch;"}) {
    std::string src = std::string("#include <torch/extension.h>\n") + use +
                      "\n__global__ void k(float* p) { p[0] = 0.f; }\n"
                      "torch::Tensor go(torch::Tensor t) { k<<<1, 1>>>(t.data_ptr<float>()); return t; }\n";
    SplitResult r = split_cuda_source(src);
    ASSERT_TRUE(r.ok) << r.reason;
    EXPECT_TRUE(has(r.host_source, use)) << use;
    EXPECT_FALSE(has(r.device_source, use)) << use;
  }
}

TEST(Split, RefusesWhatItCannotSplitSafely) {
  const std::string torch = "#include <torch/extension.h>\n";
  const std::pair<std::string, std::string> cases[] = {
      {"#define ZERO_KERNEL(name) __global__ void name(float* p) { p[threadIdx.x] = 0.f; }\nZERO_KERNEL(zero);\n",
       "CUDA code inside a macro"},
      {"__global__ void k(torch::PackedTensorAccessor32<float, 2> a) { a[blockIdx.x][threadIdx.x] = 0.f; }\n",
       "torch types in device code (kernel k)"},
      {"__device__ float at_index(const at::Tensor& t, int i);\n", "torch types in device code"},
      {"namespace { __global__ void k(float* p) { p[0] = 0.f; } }\n", "a kernel inside an anonymous namespace (k)"},
      {"#ifdef __CUDA_ARCH__\n#define FAST 1\n#endif\n", "a preprocessor condition on the CUDA compiler"},
      {"__constant__ float c_w[16];\nvoid set_w(torch::Tensor w) { cudaMemcpyToSymbol(c_w, w.data_ptr<float>(), 64); }\n",
       "device variable c_w used by host code"},
      {"__global__ void k(float* p) { p[0] = 0.f; }\n"
       "void go(float* p) { int g, b; cudaOccupancyMaxPotentialBlockSize(&g, &b, k, 0, 0); k<<<g, b>>>(p); }\n",
       "kernel k used outside a launch"},
      {"template <typename T> __global__ void k(T* p) { p[0] = T(0); }\n"
       "void go(torch::Tensor t) { k<<<1, 1>>>(t.data_ptr<float>()); }\n",
       "with deduced template arguments"},
      {"template <typename scalar_t> __global__ void k(scalar_t* p) { p[0] = scalar_t(0); }\n"
       "void go(torch::Tensor t) { AT_DISPATCH_FLOATING_TYPES_AND_HALF(t.scalar_type(), \"go\", ([&] {\n"
       "  k<scalar_t><<<1, 1>>>(t.data_ptr<scalar_t>()); })); }\n",
       "scalar_t outside AT_DISPATCH_FLOATING_TYPES"},
      {"__global__ void child(float* p) { p[0] = 0.f; }\n__global__ void parent(float* p) { child<<<1, 1>>>(p); }\n",
       "a kernel launched from device code (parent)"},
      {"void go(torch::Tensor t) { auto f = [] __device__ (float x) { return x; }; }\n", "device code inside host code"},
      {"__global__ void k(float* p) { p[0] = 0.f; }\n__global__ void k(int* p) { p[0] = 0; }\n",
       "two declarations of kernel k that differ"},
      {"__device__ float twice(float x) { return 2.f * x; }\nfloat twice(float x) { return 2.f * x; }\n",
       "a host and a device function share the name twice"},
      {"__global__ void k(float* p);\nvoid go(float* p) { k<<<1, 1>>>(p); }\n", "kernel k is declared but not defined"},
      {"/* never closed\n__global__ void k() {}\n", "could not be read with confidence"},
      {"DEFINE_KERNEL(k)\n", "could not be parsed with confidence"},
  };
  for (auto& [body, why] : cases) {
    SplitResult r = split_cuda_source(torch + body);
    EXPECT_FALSE(r.ok) << body;
    EXPECT_TRUE(has(r.reason, why)) << body << "\nreason: " << r.reason;
  }
}

// A lambda inside a kernel is device code like any other, so the kernel still splits.
TEST(Split, DeviceLambdaInsideAKernelIsFine) {
  SplitResult r = split_cuda_source(
      "#include <torch/extension.h>\n"
      "__global__ void k(float* p) { auto f = [=] __device__ (float x) { return 2.f * x; }; p[threadIdx.x] = f(p[threadIdx.x]); }\n"
      "void go(torch::Tensor t) { k<<<1, 32>>>(t.data_ptr<float>()); }\n");
  ASSERT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.launches, 1);
}
