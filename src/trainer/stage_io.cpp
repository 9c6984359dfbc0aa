// trainer/stage_io.cpp — checkpoints, logs and outputs of the stages (see stage_io.h).
#include "trainer/stage_io.h"

#include <sstream>

#include "core/error.h"
#include "core/hash.h"

namespace fs = std::filesystem;

namespace cudal1::trainer {

std::vector<std::pair<std::string, torch::Tensor>> trainable_parameters(CausalLM& model, bool full) {
  if (!full) return lora_parameters(model);
  std::vector<std::pair<std::string, torch::Tensor>> params;
  for (auto& p : model.named_parameters()) params.push_back({p.key(), p.value()});
  return params;
}

void save_stage_checkpoint(const Optimizer& opt, const nlohmann::json& state, const fs::path& out_dir) {
  fs::path next = out_dir / "checkpoint.new", ckpt = out_dir / "checkpoint";
  fs::remove_all(next);
  opt.save_checkpoint(next);
  write_file(next / "stage_state.json", state.dump(2) + "\n", "check that the output folder is writable");
  fs::remove_all(ckpt);
  fs::rename(next, ckpt);
}

std::optional<nlohmann::json> load_stage_checkpoint(Optimizer& opt, const fs::path& out_dir) {
  fs::path ckpt = out_dir / "checkpoint";
  if (!fs::exists(ckpt / "trainer_state.json")) return std::nullopt;
  opt.load_checkpoint(ckpt);
  if (!fs::exists(ckpt / "stage_state.json")) return nlohmann::json::object();
  auto j = nlohmann::json::parse(read_file(ckpt / "stage_state.json"), nullptr, false);
  if (j.is_discarded())
    throw Error(ErrorKind::input, "the checkpoint's stage_state.json is not JSON", "remove " + ckpt.string() + " to start the stage over");
  return j;
}

void remove_stage_checkpoint(const fs::path& out_dir) { fs::remove_all(out_dir / "checkpoint"); }

std::ofstream open_train_log(const fs::path& out_dir, int64_t kept_steps) {
  fs::path log_path = out_dir / "train_log.jsonl";
  std::string kept;
  if (fs::exists(log_path)) {
    std::istringstream old(read_file(log_path));
    for (std::string line; std::getline(old, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("step", int64_t(0)) <= kept_steps) kept += line + "\n";
    }
  }
  write_file(log_path, kept, "check that the output folder is writable");
  return std::ofstream(log_path, std::ios::app);
}

fs::path save_stage_output(const CausalLM& model, bool full, LoraConfig lora, const fs::path& model_dir,
                           const fs::path& out_dir) {
  if (full) {
    fs::path folder = out_dir / "model";
    model.save_pretrained(folder);
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"})
      if (fs::exists(model_dir / f)) fs::copy_file(model_dir / f, folder / f, fs::copy_options::overwrite_existing);
    return folder;
  }
  fs::path folder = out_dir / "adapter";
  lora.base_model_name_or_path = fs::absolute(model_dir).string();
  save_lora(model, lora, folder);
  return folder;
}

}  // namespace cudal1::trainer
