// policy/rewrite_reference.h — what the rewrite policy reads from a task's reference source:
// which rewrites apply to it (rewrite_python.h) and what its answer's analysis says about it.
// Read from the text, comments left out, never by running it: the policy runs nothing.
#pragma once

#include <string>

#include "policy/rewrite_python.h"

namespace cudal1::policy {

// What the task's source shows.
struct ReferenceTraits {
  bool conv = false;       // any convolution: nn.Conv1d/2d/3d, ConvTranspose*, F.conv*d, ...
  bool conv2d = false;     // a 2-D one
  bool conv3d = false;     // a 3-D one
  bool host_sync = false;  // a forward calls .item(), .cpu(), .tolist() or .numpy()
};
ReferenceTraits reference_traits(const std::string& reference);

// The rewrites that apply to the task: graph unless a forward reads values back to the host
// (no CUDA graph can capture that); channels_last with 2-D convolutions and no 3-D ones (NHWC is
// a 4-D layout: a 3-D convolution's 5-D weight cannot take it); cudnn_benchmark with any
// convolution; compile, compile_reduce_overhead and torchscript always.
Combination applicable_rewrites(const std::string& reference);

// Those of them that can change anything on `device`. Off CUDA ("cpu"), graph and cudnn_benchmark
// always run the eager model and compile_reduce_overhead has no CUDA graphs to replay (it is
// compile's default mode there), so they are left out; any other device keeps all.
Combination applicable_rewrites(const std::string& reference, const std::string& device);

// The source with LF line endings and no byte-order mark: an answer is one text, and Python reads
// either form the same.
std::string normalized_reference(const std::string& source);

}  // namespace cudal1::policy
