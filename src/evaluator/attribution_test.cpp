#include <gtest/gtest.h>

#include "evaluator/attribution.h"

using namespace cudal1;

TEST(Attribution, FindsKernelNamesInCudaAndTritonSources) {
  std::string src = R"(
    template <typename T, int N>
    __global__ void __launch_bounds__(256) fused_gelu_kernel(const T* x, T* y, int n) {}
    __global__ void
    row_softmax(float* p) {}
    __device__ float helper(float x) { return x; }
    @triton.jit
    def add_kernel(x_ptr, y_ptr, n):
        pass
  )";
  auto names = own_kernel_names(src);
  EXPECT_EQ(names, (std::vector<std::string>{"fused_gelu_kernel", "row_softmax", "add_kernel"}));
}

TEST(Attribution, SortsKernelsAndCallsADecoyADecoy) {
  nlohmann::json kernels = {
      {{"name", "void fused_gelu_kernel<float, 4>(float const*, float*, int)"}, {"us", 30.0}},
      {{"name", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"}, {"us", 50.0}},
      {{"name", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>"}, {"us", 15.0}},
      {{"name", "triton_poi_fused_add_0"}, {"us", 5.0}}};
  Attribution a = attribute_kernels(kernels, {"fused_gelu_kernel"});
  EXPECT_DOUBLE_EQ(a.own_us, 30.0);
  EXPECT_DOUBLE_EQ(a.library_us, 50.0);
  EXPECT_DOUBLE_EQ(a.aten_us, 15.0);
  EXPECT_DOUBLE_EQ(a.compiled_us, 5.0);
  EXPECT_FALSE(a.decoy());
  EXPECT_NEAR(a.to_json()["share"]["own"].get<double>(), 0.30, 1e-12);

  // The same work with the candidate's kernel never launched: a decoy.
  Attribution d = attribute_kernels(nlohmann::json::array({kernels[1], kernels[2]}), {"fused_gelu_kernel"});
  EXPECT_TRUE(d.decoy());
  // A plain PyTorch rewrite defines no kernels: never a decoy.
  EXPECT_FALSE(attribute_kernels(kernels, {}).decoy());
  // Names match whole words: "gelu" is not the candidate's "gelu_fast" kernel.
  EXPECT_DOUBLE_EQ(attribute_kernels(kernels, {"fused_gelu"}).own_us, 0.0);
}

// A decoy whose extension failed to build says so, with the compiler's first error: the usual
// case is a candidate that catches its own build failure and runs PyTorch instead.
TEST(Attribution, ADecoyWhoseExtensionFailedSaysTheCompilersError) {
  Attribution d = attribute_kernels(nlohmann::json::array({{{"name", "void at::native::softmax_warp_forward<float>"}, {"us", 50.0}}}),
                                    {"swish_forward_kernel"});
  ASSERT_TRUE(d.decoy());
  const std::string plain = decoy_evidence(d, {{"kind", "built"}});
  EXPECT_EQ(plain, "the candidate defines kernels (swish_forward_kernel) but none ran in 50 us of GPU work: "
                   "PyTorch's or library kernels did the work");
  EXPECT_EQ(decoy_evidence(d, nlohmann::json::object()), plain);  // no build record at all
  nlohmann::json failed = {{"kind", "compile_error"},
                           {"modules", {{{"name", "swish_cuda"},
                                         {"error", "main.cpp: the command exited with status 1\n"
                                                   "cuda.cu(12): warning #177-D: variable \"e\" was declared but never referenced\n"
                                                   "      printf(\"swish error: %d\\n\", e);\n"  // quoted source, not a diagnostic
                                                   "main.cpp: In function 'void pybind11_init_swish_cuda(pybind11::module_&)':\n"
                                                   "main.cpp:4:59: error: \u2018swish_forward_kernel\u2019 was not declared in this scope\n"
                                                   "    4 | m.def(\"swish_forward_kernel\", ...);\n"}}}}};
  EXPECT_EQ(decoy_evidence(d, failed),
            plain + "; its extension did not build (swish_cuda: main.cpp:4:59: error: \u2018swish_forward_kernel\u2019 "
                    "was not declared in this scope), so what ran is the candidate's fallback");
  // A message without an "error:" line gives its first line; the source line it quotes never comes along.
  failed["modules"][0]["error"] = "nvcc timed out after 900 s\n  some code";
  EXPECT_NE(decoy_evidence(d, failed).find("(swish_cuda: nvcc timed out after 900 s)"), std::string::npos);
  // Several modules failed: the first one's error, then the others by name, so fixing the first is
  // not mistaken for fixing the build.
  failed["modules"].push_back({{"name", "relu_cuda"}, {"error", "cuda.cu(3): error: identifier \"x\" is undefined"}});
  EXPECT_NE(decoy_evidence(d, failed).find("(swish_cuda: nvcc timed out after 900 s; relu_cuda also failed)"), std::string::npos);
  failed["modules"].push_back({{"name", "built_fine"}});  // no error: not counted
  failed["modules"].push_back({{"name", "gelu_cuda"}, {"error", "error: out of memory"}});
  EXPECT_NE(decoy_evidence(d, failed).find("(swish_cuda: nvcc timed out after 900 s; relu_cuda and 1 more also failed)"),
            std::string::npos);
  // A call compiled in the candidate's own process reports its failure itself; its text is cut again.
  nlohmann::json missed = {{"kind", "none"},
                           {"calls_reported", {{"missed", {"ab12"}}, {"in_process_failed", {"main.cpp:4:46: error: \u2018forward\u2019 was not declared\nquoted code"}}}}};
  EXPECT_EQ(decoy_evidence(d, missed), plain + "; its extension did not build (in the candidate's process: main.cpp:4:46: error: "
                                               "\u2018forward\u2019 was not declared), so what ran is the candidate's fallback");
}
