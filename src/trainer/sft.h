// trainer/sft.h — CUDA-L1's first stage, supervised fine-tuning, as a resumable run: the store's
// accepted answers (rl/sft_dataset.h) rendered through the model's chat template, trained on the
// completion tokens only, through a LoRA adapter (or every weight), with checkpoints.
//
// OUT/ holds sft.jsonl (the dataset used), train_log.jsonl (one line per optimiser step: loss,
// learning rate, gradient norm), checkpoint/ (the latest; a run with the same OUT resumes from it,
// skipping the micro-batches already trained on in the same seeded order), and at the end
// adapter/ (PEFT's layout) or model/ (full fine-tuning, Hugging Face's layout).
//
// Data-parallel (SftRunOptions::data_parallel): W ranks split each global micro-batch of
// W * batch examples, drawn in the order a single process with --batch W * batch draws its own,
// and their averaged gradients make the update that process would make. Rank 0 writes OUT; every
// rank reads OUT/checkpoint to resume, so OUT must be one folder that all of them see.
#pragma once

#include "trainer/distributed.h"
#include "trainer/lora.h"
#include "trainer/train.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "rl/sft_dataset.h"
#include "store/store.h"
#include "tokenizer/chat_template.h"

namespace cudal1::trainer {

struct SftRunOptions {
  std::filesystem::path model_dir;    // config.json, weights, tokenizer.json (+ tokenizer_config.json)
  std::filesystem::path out_dir;
  std::string store_run;              // empty: every run in the store
  std::size_t per_task_and_source = 2;
  // Contrastive copies of the answers (rl/sft_dataset.h): copies 0 keeps the paper's set. Its
  // budget and answer_tokens are the model tokenizer's and max_tokens, set here.
  rl::ContrastiveCopies contrastive;
  bool full = false;                  // every weight trains; else a LoRA adapter
  LoraConfig lora;
  OptimConfig optim;                  // total_steps is set from the data
  int epochs = 1, batch = 4;
  int64_t max_tokens = 4096;          // longer examples are left out (and counted)
  // Examples whose answer is longer are left out (and counted): the sampler's token limit in the
  // stages after this one would cut such an answer, so teaching it teaches answers that never end
  // in time. Counted as the sampler counts: the answer's tokens and the stop token. 0: no limit.
  int64_t max_answer_tokens = 0;
  uint64_t seed = 0;
  std::string device = "cpu", dtype = "float32";
  std::optional<tokenizer::ChatFormat> chat_format;  // when the template is not recognised
  int checkpoint_every = 50;          // optimiser steps
  DataParallel* data_parallel = nullptr;  // null, or a world of one: this process trains alone
};

struct SftRunSummary {
  std::size_t examples = 0, too_long = 0;
  std::size_t answer_too_long = 0;    // left out by max_answer_tokens
  std::size_t contrastive = 0;        // of the examples, contrastive copies
  int64_t steps = 0, resumed_at = 0;  // resumed_at: the step a checkpoint resumed from (0: none)
  double first_loss = 0, last_loss = 0;  // mean micro-batch loss of the first and last step this call ran
  std::filesystem::path output;       // adapter/ or model/
};

// Throws Error(input) when the store has no accepted answer to learn from or the model folder
// is incomplete. `progress(step, total, loss)` after each optimiser step, on every rank, with the
// loss over the whole global batch. `device` "cuda" is each rank's own GPU (rank_device).
SftRunSummary run_sft(Store& store, const SftRunOptions& options,
                      const std::function<void(int64_t, int64_t, double)>& progress = {});

}  // namespace cudal1::trainer
