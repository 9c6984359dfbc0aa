// build/host_flags.h — the g++ flags nvcc would give its host compiler for cuda.cu.
//
// The split's host TU is compiled by g++ directly, so it must see what nvcc's host pass sees:
// the same defines, include paths, language standard and optimisation level (nvcc passes -O to
// the host compiler and nothing when it has none), plus every -Xcompiler value. Device-only
// options are dropped. Any option whose effect on host code is not known here refuses the split.
#pragma once

#include <string>
#include <vector>

namespace cudal1 {

struct HostFlags {
  bool ok = false;
  std::string reason;               // the option that refused the split, for a person
  std::vector<std::string> words;   // g++ arguments, unquoted
  // nvcc's -ccbin / --compiler-bindir: the compiler nvcc runs for host code (torch passes $CC
  // there when it is set). The split's host TU must then be compiled by that one too.
  std::string host_compiler;
};

// `nvcc_words`: torch's cuda_cflags and cuda_post_cflags as shell words.
HostFlags host_flags_from_nvcc(const std::vector<std::string>& nvcc_words);

}  // namespace cudal1
