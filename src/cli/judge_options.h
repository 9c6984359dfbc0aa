// cli/judge_options: the judge of `cudal1 optimize` and `train selfsup|crl` (judge/judge.h):
// --judge-url, --judge-model, --judge-mode, --judge-k, --judge-threshold.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "judge/judge.h"

namespace cudal1::cli {

struct JudgeArgs {
  std::string url, model, mode = "advise";
  std::size_t k = 3;
  double threshold = 3.0;
};

void add_judge_options(CLI::App* cmd, JudgeArgs& a);

// No judge unless a URL was given (--judge-url or CUDAL1_JUDGE_URL); otherwise the completed
// configuration, or Error(usage) saying what is missing (judge::complete_judge_config). A model
// without a URL is an Error(usage) too: the user meant to have a judge.
std::optional<judge::JudgeConfig> judge_config(const JudgeArgs& a);

}  // namespace cudal1::cli
