// build/split.h — cuda.cu cut into a device TU without torch and a host TU with it.
//
// nvcc spends most of a load_inline build parsing torch's headers, which only the host code
// needs. The splitter puts kernels, __device__ functions and variables, non-torch includes,
// macros and torch-free types into a device TU (nvcc, torch's CUDA flags, no torch headers), and
// the host code into a host TU (g++, with a precompiled torch header). Every `k<<<g, b, s, st>>>
// (args)` in host code becomes a call of a plain C++ launch stub the device TU defines next to
// the kernel. Whatever it cannot take with certainty is refused with a reason, and the build then
// compiles cuda.cu whole, as torch does: a refusal costs time, never meaning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cudal1 {

struct SplitResult {
  bool ok = false;
  std::string reason;         // why not, for a person (one of the fallback reasons in builds.md)
  std::string host_source;    // host TU: starts with `#include <pch_header>` when pch_header is set
  std::string device_source;  // device TU; empty when cuda.cu has no device code at all
  std::string pch_header;     // "torch/extension.h", "torch/types.h" or "" (no precompiled header)
  std::vector<std::string> kernels;  // kernels found, in source order
  std::vector<std::string> stubs;    // launch stub names, one per kernel
  int launches = 0;                  // launches rewritten
};

// `file` names the source in #line directives, so compiler messages point at cuda.cu's lines.
SplitResult split_cuda_source(std::string_view source, const std::string& file = "cuda.cu");

}  // namespace cudal1
