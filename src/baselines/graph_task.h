// baselines/graph_task.h — a task's CUDA Graph version, written as a KernelBench candidate file
// (`cudal1 enrich`, docs/baselines.md).
//
// CUDA-L1 enriched KernelBench with hand- (LLM-) written CUDA Graph versions of each task; we
// generate them mechanically. The file is the task's source, unchanged (Model, get_inputs and
// get_init_inputs import as written), followed by a ModelNew that wraps Model(*init_inputs) and,
// on CUDA, captures its forward once per call signature in a CUDA graph over static input
// buffers, then replays it on the current stream for every call. Off CUDA, or when capture
// fails, ModelNew calls the eager Model, so the file works anywhere; with kGraphStrictEnv set
// (as `cudal1 enrich` verifies it) that fallback is an error instead, so an accepted file is one
// whose graphs were replayed.
#pragma once

#include <string>

namespace cudal1 {

// Bumped whenever the emitted Python changes: it is in every file's header, so a new version
// has a new content hash and is verified again rather than answered from the store.
inline constexpr const char* kGraphTaskVersion = "graph-task/1";

// "1" in the environment: ModelNew raises instead of running eagerly. Named CUDA_* because the
// evaluator passes a candidate's process only allow-listed variables, CUDA_* among them.
inline constexpr const char* kGraphStrictEnv = "CUDA_GRAPH_STRICT";

// The candidate file for the task `task_name` (a suite name or a CUDA-L1 row name, for the
// header) whose source is `task_source`. The source is kept byte for byte after the header
// (a UTF-8 byte-order mark moves before the header, and a coding declaration is repeated
// above it, so Python still reads the file); the appended code uses the task's line endings.
// Throws Error(task) when the source has no Model, get_inputs or get_init_inputs.
std::string graph_task_source(const std::string& task_name, const std::string& task_source);

// Throws Error(task) when `source` (a task without its byte-order mark) has no Model, get_inputs
// or get_init_inputs: what every generator that appends a ModelNew to a task relies on.
void require_kernelbench_task(const std::string& task_name, const std::string& source);

// The PEP 263 coding declaration on the source's first or second line, or "": a generator that
// puts lines of its own first must repeat it within the first two lines.
std::string python_coding_line(const std::string& source);

// `text` made safe inside one Python comment line: control characters (a newline above all,
// which would end the comment and start code) become spaces.
std::string comment_line_text(std::string text);

// The Python graph_task_source appends, in pieces, for generators that combine the CUDA graph
// with other rewrites of a task (policy/rewrite_python.h) and so emit the very same code. Both
// end with a newline and need `import torch as _cudal1_torch` above them.
// The strict switch, its settings, _cudal1_key (what a captured graph depends on) and
// _cudal1_clone (outputs cloned out of static buffers): what the class below needs.
std::string graph_python_support();
// class ModelNew, which builds `wrapped_class(*init_inputs, **init_kwargs)` and replays its
// forward in CUDA graphs.
std::string graph_python_model_new(const std::string& wrapped_class);

// A short, groupable reason for a verification error that a strict graph file raised:
// "CUDA graph capture failed (cudaErrorStreamCaptureUnsupported)" (the CUDA error when one is
// named, else the exception type), "no CUDA graph replay: <why>", or "" when `error` is not one
// of the generated code's own errors.
std::string graph_failure_reason(const std::string& error);

}  // namespace cudal1
