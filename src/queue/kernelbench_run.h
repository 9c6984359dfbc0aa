// queue/kernelbench_run.h — the jobs of a KernelBench run folder: the kernels KernelBench's
// generation scripts write as runs/<run name>/level_<L>_problem_<P>_sample_<S>_kernel.py.
//
// Problem P of level L is the suite task levelL/<P>_<name>.py: KernelBench numbers its problems
// by the number its file names start with, and a checkout of KernelBench (its KernelBench/
// folder) is such a suite.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "queue/queue.h"

namespace cudal1 {

// A run folder's kernel file name, read: level, problem, sample. Nullopt for any other name.
struct KernelBenchKernelName {
  int level = 0, problem = 0, sample = 0;
};
std::optional<KernelBenchKernelName> parse_kernelbench_kernel_name(const std::string& file_name);

// Whether `dir` holds any file named as a KernelBench run's kernel.
bool is_kernelbench_run(const std::filesystem::path& dir);

// One job per problem that has sample `sample`, in task order; id: the task's suite name; meta:
// {"level", "sample", "problem"}. Throws Error(input) when a kernel of that sample is of no suite
// task (or of two), or when none is of sample `sample`, saying which files and what to pass.
std::vector<QueueJob> jobs_from_kernelbench_run(const std::filesystem::path& dir, const std::filesystem::path& suite,
                                                int sample);

}  // namespace cudal1
