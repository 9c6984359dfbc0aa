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

namespace {

// The swap's three folders: the checkpoint in use, the next one being written, the one it
// replaces while the next is renamed in.
struct CheckpointPaths {
  fs::path current, next, previous;
  explicit CheckpointPaths(const fs::path& out_dir)
      : current(out_dir / "checkpoint"), next(out_dir / "checkpoint.new"), previous(out_dir / "checkpoint.old") {}
};

// stage_state.json is written last, and whole (renamed into place): a folder holding it is complete.
bool complete(const fs::path& folder) { return fs::exists(folder / "stage_state.json"); }

}  // namespace

void save_stage_checkpoint(const Optimizer& opt, const nlohmann::json& state, const fs::path& out_dir) {
  const CheckpointPaths p(out_dir);
  fs::remove_all(p.next);
  opt.save_checkpoint(p.next);
  write_file_durably(p.next / "stage_state.json", state.dump(2) + "\n", "check that the output folder is writable");
  // At every moment one complete checkpoint exists under one of the three names (load finds it).
  fs::remove_all(p.previous);
  if (fs::exists(p.current)) fs::rename(p.current, p.previous);
  fs::rename(p.next, p.current);
  fs::remove_all(p.previous);
}

std::optional<nlohmann::json> load_stage_checkpoint(Optimizer& opt, const fs::path& out_dir, const std::string& objective) {
  const CheckpointPaths p(out_dir);
  if (!fs::exists(p.current)) {  // a save was cut off between its two renames
    if (complete(p.next)) fs::rename(p.next, p.current);
    else if (fs::exists(p.previous)) fs::rename(p.previous, p.current);
  }
  const fs::path& ckpt = p.current;
  if (!fs::exists(ckpt / "trainer_state.json")) return std::nullopt;
  nlohmann::json state = nlohmann::json::object();
  if (fs::exists(ckpt / "stage_state.json")) {
    state = nlohmann::json::parse(read_file(ckpt / "stage_state.json"), nullptr, false);
    if (state.is_discarded() || !state.is_object())
      throw Error(ErrorKind::input, "the checkpoint's stage_state.json is not a JSON object",
                  "remove " + ckpt.string() + " to start the stage over");
  }
  // Checked before the optimiser's state is read: another stage's would not fit, or worse, would.
  const std::string held = state.value("objective", std::string("sft"));  // SFT once wrote none
  if (held != objective)
    throw Error(ErrorKind::usage, out_dir.string() + " holds an unfinished " + held + " stage, not " + objective,
                "use another --out for this stage (finish the " + held + " stage with its own command first)");
  opt.load_checkpoint(ckpt);
  return state;
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
