// cli/openai_options: the OpenAI-compatible policy of `cudal1 optimize` (policy/openai_policy.h):
// --openai-url, --openai-model, and --openai-temperature, -top-p, -max-tokens, -concurrency,
// -timeout (named apart from --policy model's sampling options). Unset, each keeps the
// environment's value or the policy's default.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "policy/openai_policy.h"

namespace cudal1::cli {

struct OpenAIArgs {
  std::string url, model;
  std::optional<double> temperature, top_p, request_timeout_s;
  std::optional<int> max_tokens, concurrency;
};

void add_openai_options(CLI::App* cmd, OpenAIArgs& a);

// The policy's configuration: the flags over the environment (openai_config_from_env), or
// Error(usage) saying what is missing.
policy::OpenAIConfig openai_config(const OpenAIArgs& a);

}  // namespace cudal1::cli
