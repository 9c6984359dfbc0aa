// evaluator/attribution.h — whose kernels a candidate's GPU time is spent in.
//
// The candidate worker records every CUDA kernel's name and time over a few calls (torch.profiler).
// Kernels are sorted into the candidate's own (names of the __global__ functions or Triton
// kernels its source defines), compiled (torch.compile's generated Triton), library (cuBLAS,
// cuDNN, CUTLASS, ...), ATen (PyTorch's own kernels) and other. A source that defines kernels
// none of which runs is a decoy: PyTorch does the work behind a kernel for show.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

// Names of the kernels a candidate's source defines: `__global__ ... name(` and Triton
// `@triton.jit` functions.
std::vector<std::string> own_kernel_names(const std::string& candidate_source);

struct Attribution {
  double own_us = 0, compiled_us = 0, library_us = 0, aten_us = 0, other_us = 0;
  double total_us() const { return own_us + compiled_us + library_us + aten_us + other_us; }
  std::vector<std::string> defined;  // own_kernel_names of the source
  bool decoy() const { return !defined.empty() && own_us == 0 && total_us() > 0; }
  nlohmann::json top;                // the largest kernels with their category
  nlohmann::json to_json() const;    // shares per category, defined names, top kernels
};

// kernels: [{"name", "us", "count"}] from the worker.
Attribution attribute_kernels(const nlohmann::json& kernels, const std::vector<std::string>& own);

// The decoy flag's evidence: which kernel was defined and what ran instead. `build` is the
// result's build record (EvalResult::build); when the candidate's extension failed to build, the
// compiler's first error is added, since a candidate that catches its own build failure and runs
// PyTorch instead is the usual decoy, and the reader should not have to dig for why.
std::string decoy_evidence(const Attribution& a, const nlohmann::json& build);

}  // namespace cudal1
