// queue/jobs.h — where a queue's jobs come from: task/candidate pair files, CUDA-L1 JSON-lines
// files (each row's custom_code against its ref_code), folders of candidates named after a
// suite's tasks, and KernelBench run folders. Shared by `cudal1 batch` and `cudal1 bench`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "queue/queue.h"

namespace cudal1 {

// "TASK CANDIDATE" per line, or JSON lines {"task", "candidate", "id"}; '#' starts a comment. A
// task is a path or a suite name (tasks/suite.h: find_task). Throws Error(input) naming the line
// that is neither, or whose task is not found.
std::vector<QueueJob> jobs_from_pairs(const std::string& file);

// Whether `level` is among `levels`, digits as --levels gives them ("12": levels 1 and 2); an
// empty `levels` takes every level.
bool level_selected(const std::string& levels, int level);

// Each row with a custom_code whose level is in `levels` (empty: all), its task and candidate
// written under `work`. Each job's meta: {"level", "claimed": {baseline: speedup}} from the
// row's score_* fields (what CUDA-L1's authors measured).
std::vector<QueueJob> jobs_from_cuda_l1(const std::string& jsonl, const std::string& levels,
                                        const std::filesystem::path& work);

// DIR/levelN/NAME.py for each suite task levelN/NAME.py that has one; meta: {"level"}. A
// KernelBench run folder (queue/kernelbench_run.h) instead gives its kernels of sample
// `kernelbench_sample`. Throws Error(input) when no file in DIR matches a task of the suite.
std::vector<QueueJob> jobs_from_folder(const std::filesystem::path& dir, const std::filesystem::path& suite,
                                       int kernelbench_sample = 0);

}  // namespace cudal1
