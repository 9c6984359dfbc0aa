// `cudal1 optimize` as a user meets it: a local model runs on what the machine has.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "core/hash.h"
#include "core/paths.h"
#include "evaluator/fixture_cases.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using cudal1::test::CliRun;
using cudal1::test::run_cli;

namespace {

// A run folder and a store of its own, on the CPU, one round of the scale_add fixture.
struct OptimizeRun {
  fs::path dir = cudal1::make_private_dir("cudal1-optimize-cli");
  ~OptimizeRun() { fs::remove_all(dir); }
  std::string args(const std::string& more, const std::string& run = "run") const {
    return "optimize " + (cudal1::fixtures_dir() / "tasks" / "scale_add.py").string() + " -d cpu --lanes 1 --rounds 1 --run " +
           (dir / run).string() + " --db " + (dir / "store.db").string() + " " + more;
  }
  std::vector<json> samples(const std::string& run = "run") const {
    std::vector<json> lines;
    std::ifstream in(dir / run / "samples.jsonl");
    for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
    return lines;
  }
  // A replay folder answering scale_add with these fixture candidates, in this order.
  std::string replay(const std::vector<std::string>& candidates) const {
    fs::create_directories(dir / "set" / "scale_add");
    for (std::size_t i = 0; i < candidates.size(); ++i)
      fs::copy_file(cudal1::fixtures_dir() / "candidates" / candidates[i], dir / "set" / "scale_add" / (std::to_string(i) + ".py"));
    return "--policy replay --replay " + (dir / "set").string();
  }
};

}  // namespace

// --policy model where the build has the trainer: the model goes where this libtorch can run it
// (a CPU-only one runs it on the CPU), and a GPU it cannot reach is a usage error saying what to
// pass, never an internal error.
TEST(OptimizeCli, ALocalModelRunsOnWhatTheMachineHas) {
  CliRun help = run_cli("optimize --help");
  if (help.out.find("--model-device") == std::string::npos) GTEST_SKIP() << "this build has no trainer";
  std::string tokens_line = help.out.substr(help.out.find("--max-new-tokens"));
  EXPECT_NE(tokens_line.substr(0, tokens_line.find('\n')).find("2048"), std::string::npos) << tokens_line;

  OptimizeRun r;
  fs::path model = r.dir / "model";
  CliRun init = run_cli("train init --out " + model.string() + " --tokenizer " +
                        (cudal1::fixtures_dir() / "tokenizer" / "llama3").string() +
                        " --hidden 32 --layers 1 --heads 2 --max-positions 8192 --dtype float32");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  std::string policy = "--policy model --model " + model.string() + " --max-new-tokens 8 --group 2";
  CliRun c = run_cli(r.args(policy));
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(r.samples().size(), 2u);
  CliRun cuda = run_cli(r.args(policy + " --model-device cuda", "cuda"));
  if (cuda.exit_code != 0) {
    EXPECT_EQ(cuda.exit_code, 2) << cuda.err;
    EXPECT_NE(cuda.err.find("pass --model-device cpu"), std::string::npos) << cuda.err;
  }
}
