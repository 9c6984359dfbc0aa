// evaluator/shadowing.h — a candidate that redefines the task's module-level names.
//
// KernelBench's harness takes get_inputs and the size constants from whichever module it last
// loaded, so a candidate could shrink the problem by redefining them. Here inputs always come
// from the task, in the reference's process, so shadowing changes nothing; it is still reported
// (a warning), because it shows intent and explains an `incorrect` that follows from it.
#pragma once

#include <string>
#include <vector>

namespace cudal1 {

// "get_inputs", "N (task: 4096, candidate: 64)": the module-level functions get_inputs /
// get_init_inputs the candidate defines otherwise than the task (a copy of the task's own is not
// reported), and the task's top-level constants it assigns a different value.
std::vector<std::string> shadowed_task_names(const std::string& task_source, const std::string& candidate_source);

}  // namespace cudal1
