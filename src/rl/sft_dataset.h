// rl/sft_dataset.h — the supervised fine-tuning set of CUDA-L1's first stage, drawn from the
// store: accepted answers from every source (the policy that wrote them: a model, the built-in
// rewrites, a replayed kernel set), at most N per task and source, the fastest distinct files
// first, as CUDA-L1 did to keep one source or one task from dominating. Written as JSON-lines
// ({task, task_hash, source, candidate_hash, speedup, prompt, completion}) for `cudal1 train sft`
// and for trainers outside cudal1.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "store/store.h"

namespace cudal1::rl {

struct SftExample {
  std::string task_id, task_hash, source, candidate_hash;
  double speedup = 0;                 // against eager, as accepted
  std::string prompt, completion;     // what the source was asked and answered
};

struct SftSelection {
  std::string run;                    // empty: every run in the store
  std::size_t per_task_and_source = 2;
};

// In task order of first appearance, then source, then speedup (highest first).
std::vector<SftExample> select_sft_examples(Store& store, const SftSelection& selection);

// One JSON object per line, written whole and renamed. Returns the lines written.
std::size_t write_sft_jsonl(const std::vector<SftExample>& examples, const std::filesystem::path& file);

}  // namespace cudal1::rl
