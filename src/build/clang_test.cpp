// clang as the fast path's compiler: which flags and compilers it stands in for, finding it,
// and the link check that catches symbols its objects need and nothing defines.
#include "build/clang.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "build/shell.h"
#include "core/error.h"

using namespace cudal1;
namespace fs = std::filesystem;

TEST(ClangFlags, TorchsFlagsPassWithTheirValues) {
  std::vector<std::string> gxx = {"-DTORCH_EXTENSION_NAME=m", "-DPYBIND11_COMPILER_TYPE=\"_gcc\"", "-isystem",
                                  "/t/include", "-I", "/x", "-D_GLIBCXX_USE_CXX11_ABI=1", "-fPIC", "-std=c++17", "-O3",
                                  "-Wno-unused", "-march=native", "-ffast-math", "-x", "c++"};
  ClangFlags f = clang_flags(gxx);
  ASSERT_TRUE(f.ok) << f.reason;
  std::vector<std::string> want(gxx.begin(), gxx.end() - 2);  // "-x c++": the TU is a .cpp
  EXPECT_EQ(f.words, want);
}

TEST(ClangFlags, OpenMpAndUnknownOptionsKeepGxx) {
  ClangFlags omp = clang_flags({"-O2", "-fopenmp"});
  EXPECT_FALSE(omp.ok);
  EXPECT_NE(omp.reason.find("OpenMP"), std::string::npos) << omp.reason;
  ClangFlags odd = clang_flags({"-fno-gnu-unique"});
  EXPECT_FALSE(odd.ok);
  EXPECT_NE(odd.reason.find("-fno-gnu-unique"), std::string::npos) << odd.reason;
  // Options for the assembler, the linker and the preprocessor's own pass are not compile options clang shares.
  for (const char* w : {"-Wa,--noexecstack", "-Wl,-rpath,/x", "-Wp,-DX"}) EXPECT_FALSE(clang_flags({w}).ok) << w;
  EXPECT_FALSE(clang_flags({"-isystem"}).ok);  // no value
}

TEST(ClangFlags, StandsInOnlyForGxxByName) {
  for (const char* c : {"c++", "g++", "gcc", "cc", "/usr/bin/g++-12", "x86_64-linux-gnu-g++-12"}) EXPECT_TRUE(clang_may_replace(c)) << c;
  EXPECT_FALSE(clang_may_replace("aarch64-linux-gnu-g++"));
  EXPECT_FALSE(clang_may_replace("icpx"));
  EXPECT_FALSE(clang_may_replace("/opt/nvc++"));
}

TEST(FindClang, OffAndBadNames) {
  EXPECT_FALSE(find_clang("off").has_value());
  EXPECT_THROW(find_clang("/bin/false"), Error);
  EXPECT_THROW(find_clang("/no/such/clang++"), Error);
}

// make test's machine has Debian's clang (scripts/setup.sh), so the fast path's default finds one.
TEST(FindClang, FindsTheMachinesClang) {
  unsetenv("CUDAL1_CLANG");
  auto c = find_clang("");
  ASSERT_TRUE(c.has_value()) << "no clang++ on PATH: scripts/setup.sh installs Debian's clang";
  EXPECT_GE(c->major, 11);
  EXPECT_NE(c->version.find("clang version"), std::string::npos) << c->version;
  auto again = find_clang(c->path);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->version, c->version);
}

TEST(UndefinedSymbolCheck, ListsCxxSymbolsButNotPythons) {
  fs::path dir = fs::temp_directory_path() / ("cudal1-symcheck-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.cpp") << "extern \"C\" int PyLong_AsLong(void*);\n"
                                  "int nowhere(int);\n"
                                  "int use(void* p) { return nowhere(1) + PyLong_AsLong(p); }\n";
  std::ofstream(dir / "b.cpp") << "extern \"C\" int PyLong_AsLong(void*);\n"
                                  "int use(void* p) { return PyLong_AsLong(p); }\n";
  std::string cd = "cd " + shell_quote(dir.string()) + " && ";
  ASSERT_EQ(std::system((cd + "g++ -fPIC -c a.cpp b.cpp").c_str()), 0);
  std::string bad = sh_output(cd + undefined_symbol_check("g++ a.o -shared -o symcheck.so") + "; echo rc=$?", 60);
  EXPECT_NE(bad.find("_Z7nowherei"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("PyLong_AsLong"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("rc=0"), std::string::npos) << bad;
  std::string good = sh_output(cd + undefined_symbol_check("g++ b.o -shared -o symcheck.so") + "; echo rc=$?", 60);
  EXPECT_NE(good.find("rc=0"), std::string::npos) << good;
  EXPECT_FALSE(fs::exists(dir / "symcheck.so"));
  fs::remove_all(dir);
}
