// rl/sft_dataset.h — the supervised fine-tuning set of CUDA-L1's first stage, drawn from the
// store: accepted answers from every source (the policy that wrote them: a model, the built-in
// rewrites, a replayed kernel set), at most N per task and source, the fastest distinct files
// first, as CUDA-L1 did to keep one source or one task from dominating. Written as JSON-lines
// ({task, task_hash, source, candidate_hash, speedup, prompt, completion, shown}) for `cudal1 train
// sft` and for trainers outside cudal1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/prompt.h"
#include "rl/sampler.h"
#include "store/store.h"

namespace cudal1::rl {

struct SftExample {
  std::string task_id, task_hash, source, candidate_hash;
  double speedup = 0;                 // against eager, as accepted
  std::string prompt, completion;     // what the source was asked and answered
  // A contrastive copy's exemplars, [{candidate_hash, speedup}] in the order shown; else empty.
  nlohmann::json shown = nlohmann::json::array();
};

struct SftSelection {
  std::string run;                    // empty: every run in the store
  std::size_t per_task_and_source = 2;
};

// In task order of first appearance, then source, then speedup (highest first).
std::vector<SftExample> select_sft_examples(Store& store, const SftSelection& selection);

// Stage 3 asks with contrastive prompts: earlier files of the task with their speedups, and "write
// one faster than all of them". CUDA-L1 fine-tunes a large model on first-round prompts and relies
// on it to generalise; a small model trained from scratch answers only prompts like those it saw.
// A contrastive copy is an answer again, under the prompt the loop would write showing files of its
// task that were measured slower than it (so the answer does what the prompt asks), picked by the
// loop's sampler from every accepted file of the task in the selection's run(s). The task's fastest
// file is the exception: stage 3's sampler favours the fastest files, so its prompts mostly show
// that one, and a model never trained on such a prompt answers it with noise; its copies draw from
// every file, itself included, and answer with itself (no known file is faster).
struct ContrastiveCopies {
  int copies = 0;                     // per answer, at most (draws that repeat a prompt are dropped)
  SamplerConfig sampler;              // picks: files shown, as `--exemplars` in the loop
  policy::PromptTemplates templates;
  std::string device;                 // as the loop names it in prompts ("cuda")
  policy::PromptBudget budget;        // prompt and answer together
  std::function<std::size_t(const std::string&)> answer_tokens;  // the answer's share of the budget
  uint64_t seed = 0;
  // The task's reference text, shown in the prompt as the loop shows it.
  std::function<std::string(const SftExample&)> reference;
};

// The copies, in the order of the answers they copy. An answer with no slower file gets none,
// unless it is its task's fastest.
std::vector<SftExample> contrastive_copies(Store& store, const SftSelection& selection,
                                           const std::vector<SftExample>& answers, const ContrastiveCopies& copies);

// One JSON object per line, written whole and renamed. Returns the lines written.
std::size_t write_sft_jsonl(const std::vector<SftExample>& examples, const std::filesystem::path& file);

}  // namespace cudal1::rl
