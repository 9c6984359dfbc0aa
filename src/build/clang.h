// build/clang.h — clang as the fast path's compiler for the TUs that include torch.
//
// g++ spends about 9 s on any TU that includes torch/extension.h, even against a precompiled
// header: every TU instantiates and compiles again the templates and inline functions the header
// needs (bench/NOTES.md, seventh session). clang instantiates them once, into its precompiled
// header (-fpch-instantiate-templates), and then compiles main.cpp in about 2 s and a split host
// TU in about 3.5 s. Both compilers follow the Itanium C++ ABI and use the same libstdc++
// headers, so their objects link into one module against torch's libraries.
//
// clang stands in for g++ only where that keeps what the TU means and links to: a compiler that
// is g++ (or gcc, cc, c++) by name, flags from a list whose meaning is the same under both
// (OpenMP, whose runtimes differ, is refused), and, after compiling, a link check that every
// symbol the clang objects need is defined (a name the two mangle differently would otherwise
// fail only at import). Any refusal or failure compiles that TU with g++, as before.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cudal1 {

struct ClangHost {
  std::string path;     // the clang++ to run
  std::string version;  // its --version line: part of the toolchain's fingerprint
  int major = 0;
};

// `configured`: "off" (none), a clang++ to use, or empty: $CUDAL1_CLANG the same way, else
// clang++ on PATH, else the newest clang++-N there. Versions before 11 (no
// -fpch-instantiate-templates) are not used. Throws Error(input) for a named compiler that
// does not run or is too old, so a typo is not silently a slower build.
std::optional<ClangHost> find_clang(const std::string& configured);

struct ClangFlags {
  bool ok = false;
  std::string reason;              // the flag that refused clang, for a person
  std::vector<std::string> words;  // clang++ arguments
};

// The clang++ arguments for a TU g++ would compile with `gxx_flags` (shell words, unquoted).
ClangFlags clang_flags(const std::vector<std::string>& gxx_flags);

// Whether clang may stand in for `compiler` (the first word of torch's cxx, or nvcc's -ccbin):
// g++, gcc, c++ or cc, with or without a folder, the host's triplet and a version suffix
// (x86_64-linux-gnu-g++-12); not a cross compiler.
bool clang_may_replace(const std::string& compiler);

// The compile command of a TU `stem`.cpp against the precompiled header file `pch` (empty: none).
std::vector<std::string> clang_compile_words(const ClangHost& clang, const std::string& pch, const ClangFlags& flags,
                                             const std::string& stem);

// The sh command that checks a module's objects for C++ symbols nothing defines: it links them
// as torch's link command would, into /dev/null with -z defs, and fails listing every undefined
// symbol but Python's own (an extension module finds those in the interpreter at import).
std::string undefined_symbol_check(const std::string& torch_link_command);

}  // namespace cudal1
