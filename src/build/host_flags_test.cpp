#include "build/host_flags.h"

#include <gtest/gtest.h>

#include "build/shell.h"

using namespace cudal1;
using Words = std::vector<std::string>;

namespace {

Words words(const std::string& text) {
  auto w = shell_words(text);
  EXPECT_TRUE(w) << text;
  return w.value_or(Words{});
}

}  // namespace

// torch 2.x's cuda_cflags for load_inline (include list trimmed), read as sh reads them.
TEST(HostFlags, TorchCudaFlagsBecomeHostFlags) {
  Words nvcc = words(
      R"(-DTORCH_EXTENSION_NAME=my_ext -DTORCH_API_INCLUDE_EXTENSION_H -DPYBIND11_COMPILER_TYPE=\"_gcc\" )"
      "-isystem /opt/torch/include -isystem /usr/local/cuda/include -D_GLIBCXX_USE_CXX11_ABI=1 "
      "-D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr "
      "-gencode=arch=compute_90,code=compute_90 -gencode=arch=compute_90,code=sm_90 "
      "--compiler-options '-fPIC' -O3 --use_fast_math -std=c++17");
  HostFlags h = host_flags_from_nvcc(nvcc);
  ASSERT_TRUE(h.ok) << h.reason;
  EXPECT_EQ(h.words, (Words{"-DTORCH_EXTENSION_NAME=my_ext", "-DTORCH_API_INCLUDE_EXTENSION_H",
                            R"(-DPYBIND11_COMPILER_TYPE="_gcc")", "-isystem", "/opt/torch/include", "-isystem",
                            "/usr/local/cuda/include", "-D_GLIBCXX_USE_CXX11_ABI=1", "-D__CUDA_NO_HALF_OPERATORS__",
                            "-D__CUDA_NO_HALF2_OPERATORS__", "-fPIC", "-O3", "-std=c++17"}));
}

TEST(HostFlags, SpellingsOfHostOptions) {
  HostFlags h = host_flags_from_nvcc({"-I/inc", "-I", "/inc2", "-D", "X=1", "-UNDEBUG", "-include", "pre.h",
                                      "-Xcompiler", "-fopenmp,-Wall", "-Xcompiler=-fno-math-errno",
                                      "--compiler-options=-march=native", "--std", "c++20", "-O", "2", "--optimize=1",
                                      "--debug", "--disable-warnings", "-m64"});
  ASSERT_TRUE(h.ok) << h.reason;
  EXPECT_EQ(h.words, (Words{"-I/inc", "-I", "/inc2", "-D", "X=1", "-UNDEBUG", "-include", "pre.h", "-fopenmp",
                            "-Wall", "-fno-math-errno", "-march=native", "-std=c++20", "-O2", "-O1", "-g", "-w",
                            "-m64"}));
}

TEST(HostFlags, DeviceOnlyOptionsAndTheirValuesAreDropped) {
  HostFlags h = host_flags_from_nvcc({"-arch", "sm_90", "-code=sm_90", "-Xptxas", "-v,-O3", "-maxrregcount=64",
                                      "-lineinfo", "--extended-lambda", "-G", "--ftz=true", "-t", "4", "-O3"});
  ASSERT_TRUE(h.ok) << h.reason;
  EXPECT_EQ(h.words, Words{"-O3"});
}

// torch puts `-ccbin $CC` first when CC is set (the H200 machine does): the split must follow it.
TEST(HostFlags, HostCompilerFromCcbinIsKeptApartFromTheFlags) {
  for (const Words& in : {Words{"-ccbin", "/opt/gcc/bin/gcc", "-O3"}, Words{"-ccbin=/opt/gcc/bin/gcc", "-O3"},
                          Words{"--compiler-bindir", "/opt/gcc/bin/gcc", "-O3"}}) {
    HostFlags h = host_flags_from_nvcc(in);
    ASSERT_TRUE(h.ok) << h.reason;
    EXPECT_EQ(h.host_compiler, "/opt/gcc/bin/gcc");
    EXPECT_EQ(h.words, Words{"-O3"});
  }
  EXPECT_TRUE(host_flags_from_nvcc({"-O3"}).host_compiler.empty());
}

TEST(HostFlags, UnknownOrIncompleteOptionsRefuseWithTheirName) {
  const std::pair<Words, std::string> cases[] = {
      {{"-O3", "-rdc=true"}, "-rdc=true"},
      {{"--relocatable-device-code", "true"}, "--relocatable-device-code"},
      {{"-x", "cu"}, "-x"},
      {{"-Ofast"}, "-Ofast"},
      {{"-isystem/opt/inc"}, "-isystem/opt/inc"},
      {{"-O3", "-I"}, "-I"},  // a value-taking option at the end
      {{"-gencode"}, "-gencode"},
      {{"-Xcompiler"}, "-Xcompiler"},
      {{"--std"}, "--std"},
      {{"-O3", "-ccbin"}, "-ccbin"},
  };
  for (auto& [in, culprit] : cases) {
    HostFlags h = host_flags_from_nvcc(in);
    EXPECT_FALSE(h.ok) << culprit;
    EXPECT_NE(h.reason.find("nvcc option " + culprit + ":"), std::string::npos) << h.reason;
  }
}
