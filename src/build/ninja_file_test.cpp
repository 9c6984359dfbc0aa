#include "build/ninja_file.h"

#include <gtest/gtest.h>

#include "core/error.h"

using namespace cudal1;

namespace {

// What torch 2.x's load_inline writes for an extension with main.cpp and cuda.cu (trimmed
// include list); the extension folder has a space in it, which ninja escapes as "$ ".
const char* kBuildNinja = R"(ninja_required_version = 1.3
cxx = c++
nvcc = /usr/local/cuda/bin/nvcc

cflags = -DTORCH_EXTENSION_NAME=my_ext -DTORCH_API_INCLUDE_EXTENSION_H -DPYBIND11_COMPILER_TYPE=\"_gcc\" -isystem /opt/torch/include -isystem /usr/include/python3.11 -D_GLIBCXX_USE_CXX11_ABI=1 -fPIC -std=c++17 -O3
post_cflags = 
cuda_cflags = -DTORCH_EXTENSION_NAME=my_ext -DTORCH_API_INCLUDE_EXTENSION_H -isystem /opt/torch/include -isystem /usr/local/cuda/include -D__CUDA_NO_HALF_OPERATORS__ --expt-relaxed-constexpr -gencode=arch=compute_90,code=sm_90 --compiler-options '-fPIC' -O3 --use_fast_math -std=c++17
cuda_post_cflags = 
cuda_dlink_post_cflags = 
ldflags = -shared -L/opt/torch/lib -lc10 -lc10_cuda -ltorch_cpu -ltorch_cuda -ltorch -ltorch_python -L/usr/local/cuda/lib64 -lcudart

rule compile
  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags
  depfile = $out.d
  deps = gcc

rule cuda_compile
  depfile = $out.d
  deps = gcc
  command = $nvcc --generate-dependencies-with-compile --dependency-output $out.d $cuda_cflags -c $in -o $out $cuda_post_cflags

rule link
  command = $cxx $in $ldflags -o $out

build main.o: compile /tmp/torch$ ext/my_ext/main.cpp
build cuda.cuda.o: cuda_compile /tmp/torch$ ext/my_ext/cuda.cu



build my_ext.so: link main.o cuda.cuda.o

default my_ext.so
)";

}  // namespace

TEST(NinjaFile, ReadsTorchVariables) {
  NinjaFile f = parse_ninja(kBuildNinja);
  EXPECT_EQ(f.var("cxx"), "c++");
  EXPECT_EQ(f.var("nvcc"), "/usr/local/cuda/bin/nvcc");
  EXPECT_EQ(f.var("post_cflags"), "");
  EXPECT_EQ(f.var("cuda_post_cflags"), "");
  EXPECT_EQ(f.var("no_such_var"), "");
  // Values are kept as written: shell quoting is the shell's business (shell.h).
  EXPECT_NE(f.var("cflags").find(R"(-DPYBIND11_COMPILER_TYPE=\"_gcc\")"), std::string::npos);
  EXPECT_NE(f.var("cuda_cflags").find("--compiler-options '-fPIC'"), std::string::npos);
  EXPECT_EQ(f.var("ldflags").rfind("-shared", 0), 0u);
}

TEST(NinjaFile, ReadsEdgesWithEscapedPaths) {
  NinjaFile f = parse_ninja(kBuildNinja);
  ASSERT_EQ(f.edges.size(), 3u);
  const NinjaFile::Edge* cu = f.edge_with_rule("cuda_compile");
  ASSERT_NE(cu, nullptr);
  EXPECT_EQ(cu->out, "cuda.cuda.o");
  EXPECT_EQ(cu->in, std::vector<std::string>{"/tmp/torch ext/my_ext/cuda.cu"});
  const NinjaFile::Edge* link = f.edge_with_rule("link");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->out, "my_ext.so");
  EXPECT_EQ(link->in, (std::vector<std::string>{"main.o", "cuda.cuda.o"}));
  EXPECT_EQ(f.edge_with_rule("compile")->out, "main.o");
  EXPECT_EQ(f.edge_with_rule("archive"), nullptr);
}

TEST(NinjaFile, CommandExpandsVariablesInAndOut) {
  NinjaFile f = parse_ninja(kBuildNinja);
  EXPECT_EQ(f.command("link", {"main.o", "cuda.cuda.o"}, "my_ext.so"),
            "c++ main.o cuda.cuda.o " + f.var("ldflags") + " -o my_ext.so");
  // "$out.d" is $out followed by ".d"; the empty $cuda_post_cflags leaves a trailing space.
  EXPECT_EQ(f.command("cuda_compile", {"cuda.cu"}, "cuda.cuda.o"),
            "/usr/local/cuda/bin/nvcc --generate-dependencies-with-compile --dependency-output cuda.cuda.o.d " +
                f.var("cuda_cflags") + " -c cuda.cu -o cuda.cuda.o ");
}

TEST(NinjaFile, CommandHandlesBracesAndEscapes) {
  NinjaFile f = parse_ninja("x = 1\nrule r\n  command = echo ${x}y $$HOME a$ b $in\n");
  EXPECT_EQ(f.command("r", {"p", "q"}, "o"), "echo 1y $HOME a b p q");
}

TEST(NinjaFile, UnknownRuleIsAnInternalError) {
  NinjaFile f = parse_ninja(kBuildNinja);
  try {
    f.command("cuda_dlink", {}, "dlink.o");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
  }
}

TEST(NinjaFile, RefusesSyntaxTorchDoesNotWrite) {
  // A pool and per-edge variables: real ninja, but not what load_inline writes.
  EXPECT_THROW(parse_ninja("pool link_pool\n  depth = 1\n"), Error);
  EXPECT_THROW(parse_ninja("build a.o: compile a.cpp\n  cflags = -O0\n"), Error);
  EXPECT_THROW(parse_ninja("build a.o:compile a.cpp\n"), Error);
}
