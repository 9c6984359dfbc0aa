// cli/train_init_command: `cudal1 train init` — a llama or qwen2 model with random weights, from
// scratch, as a Hugging Face model folder (trainer/init_model.h), for training runs and
// benchmarks without a downloaded model.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "report/table.h"
#include "trainer/init_model.h"
#include "trainer/model.h"

namespace cudal1::cli {

namespace {

struct InitArgs {
  trainer::InitModelOptions o;
  std::string out, tokenizer, dtype = "bfloat16";
  bool untied = false, json_out = false;
};

void run_train_init(InitArgs& a) {
  a.o.out_dir = a.out;
  a.o.tokenizer_dir = a.tokenizer;
  a.o.dtype = trainer::dtype_from_name(a.dtype);
  a.o.tie_embeddings = !a.untied;
  const trainer::InitModelSummary s = trainer::init_model(a.o);
  const trainer::ModelConfig& c = s.config;
  nlohmann::json j = {{"out", s.out_dir.string()}, {"architecture", c.model_type}, {"parameters", s.parameters},
                      {"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size}, {"layers", c.num_hidden_layers},
                      {"heads", c.num_attention_heads}, {"kv_heads", c.num_key_value_heads},
                      {"intermediate_size", c.intermediate_size}, {"tied_embeddings", c.tie_word_embeddings},
                      {"dtype", a.dtype}, {"seed", a.o.seed}};
  if (a.json_out) {
    std::cout << j.dump() << std::endl;
    return;
  }
  Table t({"architecture", "parameters", "vocab", "hidden", "layers", "heads / kv", "intermediate", "tied", "dtype", "seed"},
          {false, true, true, true, true, true, true, false, false, true});
  t.add_row({c.model_type, std::to_string(s.parameters), std::to_string(c.vocab_size), std::to_string(c.hidden_size),
             std::to_string(c.num_hidden_layers),
             std::to_string(c.num_attention_heads) + " / " + std::to_string(c.num_key_value_heads),
             std::to_string(c.intermediate_size), c.tie_word_embeddings ? "yes" : "no", a.dtype, std::to_string(a.o.seed)});
  t.print(std::cout);
  std::cout << "\nwritten to " << s.out_dir.string()
            << " (config.json, model.safetensors, generation_config.json, the tokenizer); train it with "
               "`cudal1 train sft --model "
            << s.out_dir.string() << " --full ...`\n";
}

}  // namespace

void register_train_init(CLI::App& train) {
  auto a = std::make_shared<InitArgs>();
  CLI::App* cmd = train.add_subcommand("init", "Make a model with random weights (llama or qwen2) as a Hugging Face "
                                               "model folder, for training from scratch without a downloaded model");
  cmd->add_option("--out", a->out, "output folder")->required();
  cmd->add_option("--tokenizer", a->tokenizer,
                  "folder with tokenizer.json and tokenizer_config.json (with a chat template); vocab_size follows it")
      ->required();
  cmd->add_option("--arch", a->o.architecture, "llama or qwen2 (q/k/v biases)")
      ->check(CLI::IsMember({"llama", "qwen2"}))
      ->capture_default_str();
  cmd->add_option("--hidden", a->o.hidden_size, "hidden size")->capture_default_str();
  cmd->add_option("--layers", a->o.num_layers, "decoder layers")->capture_default_str();
  cmd->add_option("--heads", a->o.num_heads, "attention heads")->capture_default_str();
  cmd->add_option("--kv-heads", a->o.num_kv_heads, "key/value heads (0: as many as --heads)")->capture_default_str();
  cmd->add_option("--intermediate", a->o.intermediate_size, "MLP width (0: about 8/3 of --hidden, a multiple of 64)")
      ->capture_default_str();
  cmd->add_option("--max-positions", a->o.max_positions, "max_position_embeddings")->capture_default_str();
  cmd->add_option("--rope-theta", a->o.rope_theta, "rotary base")->capture_default_str();
  cmd->add_flag("--untied", a->untied, "a separate lm_head instead of the embedding table (tied by default)");
  cmd->add_option("--dtype", a->dtype, "bfloat16, float16 or float32")->capture_default_str();
  cmd->add_option("--init-std", a->o.init_std, "standard deviation of linear and embedding weights")->capture_default_str();
  cmd->add_option("--seed", a->o.seed, "the same seed gives the same bytes")->capture_default_str();
  cmd->add_flag("--force", a->o.overwrite, "replace a model already in --out");
  cmd->add_flag("--json", a->json_out, "print the summary as one JSON object");
  cmd->callback([a] { run_train_init(*a); });
}

}  // namespace cudal1::cli
