// policy/rewrite_python.h — the rewrites of the built-in rewrite policy (rewrite_policy.h), as
// Python: how a combination of them is named, and the candidate file that applies a combination
// to a KernelBench task (which of them apply to a task: rewrite_reference.h).
//
// Every rewrite is mechanical and keeps what the task computes: the same outputs within float32
// tolerance, the same dtypes, float32 arithmetic throughout (every file turns TF32 off, because
// cuDNN's autotuner and its NHWC kernels would otherwise pick TF32 algorithms on tensor-core
// GPUs, which the evaluator flags as reduced precision). Each one falls back to the task's own
// eager code where it cannot work (no CUDA, no torch.compile, a failed capture or compile, a trace
// that could be wrong), so a file is correct anywhere and only its speed depends on the machine.
//
// The file is the task's source (Model, get_inputs and get_init_inputs import as written) under
// a header whose first line names the combination, `# cudal1-rewrite: graph+channels_last`, so
// the label survives in stored candidates; ModelNew is appended after the source.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cudal1::policy {

// Bumped whenever the emitted Python changes (it is in every file's banner).
inline constexpr const char* kRewriteVersion = "rewrite/1";

// The first line of every file, followed by the combination's label.
inline constexpr const char* kRewriteLabelPrefix = "# cudal1-rewrite: ";

// In canonical order: labels list their rewrites in this order.
enum class Rewrite : unsigned {
  graph,                    // CUDA Graph capture over static input buffers, replayed per call
  channels_last,            // 2-D convolution weights and 4-D float inputs in NHWC
  cudnn_benchmark,          // cuDNN autotuning (torch.backends.cudnn.benchmark)
  compile,                  // torch.compile, default mode
  compile_reduce_overhead,  // torch.compile(mode="reduce-overhead")
  torchscript,              // TorchScript trace, frozen: what the forward computes from weights alone, once
};
inline constexpr Rewrite kAllRewrites[] = {Rewrite::graph,   Rewrite::channels_last,           Rewrite::cudnn_benchmark,
                                           Rewrite::compile, Rewrite::compile_reduce_overhead, Rewrite::torchscript};

const char* rewrite_name(Rewrite r);
// What the rewrite does and why it may be faster, a sentence or two for the answer's design.
const char* rewrite_design(Rewrite r);

// A set of rewrites: one bit per Rewrite.
struct Combination {
  unsigned bits = 0;

  bool has(Rewrite r) const { return bits & bit(r); }
  Combination with(Rewrite r) const { return {bits | bit(r)}; }
  bool empty() const { return bits == 0; }
  int size() const;
  bool contains_all(Combination other) const { return (bits & other.bits) == other.bits; }
  auto operator<=>(const Combination&) const = default;

  static unsigned bit(Rewrite r) { return 1u << static_cast<unsigned>(r); }
};

// Non-empty, and no two rewrites that exclude each other: at most one of compile,
// compile_reduce_overhead and torchscript (one compiler per model), graph and
// compile_reduce_overhead (which captures CUDA graphs itself; one capture inside another fails).
bool combination_allowed(Combination c);

// "graph+channels_last": the rewrites in canonical order, joined with '+'.
std::string combination_label(Combination c);

// The combination a label names, in any order; nullopt for a label that is not one of ours (an
// unknown or repeated name, an empty part: a model's name, another policy's label) or names a
// combination that is not allowed.
std::optional<Combination> parse_combination_label(std::string_view label);

// The label on a candidate's first line (after a byte-order mark), or "" when it has none.
std::string rewrite_label_in_code(const std::string& code);

// The candidate file applying `c` to the task `reference` (line endings made LF, a byte-order
// mark dropped, a coding declaration kept on the second line). Throws Error(task) when the
// reference is not a KernelBench task, Error(internal) for a combination that is not allowed.
std::string rewrite_candidate_source(const std::string& task_name, const std::string& reference, Combination c);

}  // namespace cudal1::policy
