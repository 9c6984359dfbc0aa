// trainer/stage_io.h — what every training stage does around its steps, the same way: which
// tensors train, the checkpoint swapped in whole (a crash while saving keeps the previous one),
// the per-step log cut back to what the checkpoint holds on resume, and the stage's output
// (a PEFT adapter, or a full model folder that loads like the one it came from).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/lora.h"
#include "trainer/model.h"
#include "trainer/train.h"

namespace cudal1::trainer {

// Every parameter (full fine-tuning) or the adapter's factors.
std::vector<std::pair<std::string, torch::Tensor>> trainable_parameters(CausalLM& model, bool full);

// OUT/checkpoint: the optimiser's state plus `state` (the stage's own resume point) in
// stage_state.json, written aside first (checkpoint.new); the old one is moved aside
// (checkpoint.old) while the new one is renamed in. A load after a crash between the two renames
// takes the new one when it is complete, else the old one.
void save_stage_checkpoint(const Optimizer& opt, const nlohmann::json& state, const std::filesystem::path& out_dir);
// Loads OUT/checkpoint into `opt` when there is one and returns its stage state. `state` holds
// the stage's "objective" (sft, selfsup, crl); a checkpoint of another objective is refused with
// Error(usage) before anything is loaded.
std::optional<nlohmann::json> load_stage_checkpoint(Optimizer& opt, const std::filesystem::path& out_dir,
                                                    const std::string& objective);
void remove_stage_checkpoint(const std::filesystem::path& out_dir);

// OUT/train_log.jsonl opened for appending, after dropping its lines with "step" > kept_steps
// (steps a resumed run trains again).
std::ofstream open_train_log(const std::filesystem::path& out_dir, int64_t kept_steps);

// OUT/adapter (PEFT's layout; base_model_name_or_path = model_dir) or, with `full`, OUT/model with
// the tokenizer files of model_dir copied beside the weights. Returns the folder written.
std::filesystem::path save_stage_output(const CausalLM& model, bool full, LoraConfig lora,
                                        const std::filesystem::path& model_dir, const std::filesystem::path& out_dir);

}  // namespace cudal1::trainer
