// cli/baseline_options: --baselines and --baseline NAME, the same on every command that
// evaluates (eval, batch, optimize, train selfsup|crl, serve): which of the task's baselines
// (baselines/baselines.h) each speedup is also given against.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "evaluator/evaluator.h"

namespace cudal1::cli {

struct BaselineArgs {
  bool all = false;                // --baselines: every one
  std::vector<std::string> names;  // --baseline NAME (repeatable, or comma-separated): these only
};

void add_baseline_options(CLI::App* cmd, BaselineArgs& a);

// Sets o.baselines and o.baseline_names. Throws Error(usage) naming the known baselines when a
// name is not one of them.
void apply_baseline_args(const BaselineArgs& a, EvalOptions& o);

}  // namespace cudal1::cli
