#include "cli/openai_options.h"

namespace cudal1::cli {

void add_openai_options(CLI::App* cmd, OpenAIArgs& a) {
  const policy::OpenAIConfig d;
  cmd->add_option("--openai-url", a.url, "with --policy openai: the server's API root, e.g. http://localhost:8000/v1 "
                                         "(default $CUDAL1_OPENAI_BASE_URL, else $OPENAI_BASE_URL)");
  cmd->add_option("--openai-model", a.model, "with --policy openai: the model it serves (default $CUDAL1_OPENAI_MODEL, else $OPENAI_MODEL)");
  cmd->add_option("--openai-temperature", a.temperature, "sampling temperature (default " +
                  std::to_string(d.temperature).substr(0, 3) + ")")->check(CLI::NonNegativeNumber);
  cmd->add_option("--openai-top-p", a.top_p, "nucleus sampling (default: the server's)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--openai-max-tokens", a.max_tokens, "tokens an answer may take, 0 to let the server decide (default " +
                  std::to_string(d.max_tokens) + ")")->check(CLI::NonNegativeNumber);
  cmd->add_option("--openai-concurrency", a.concurrency, "requests in flight at once (default " +
                  std::to_string(d.max_concurrency) + ")")->check(CLI::PositiveNumber);
  cmd->add_option("--openai-timeout", a.request_timeout_s, "seconds one request may take (default " +
                  std::to_string(int(d.timeout_s)) + ")")->check(CLI::PositiveNumber);
}

policy::OpenAIConfig openai_config(const OpenAIArgs& a) {
  policy::OpenAIConfig c = policy::openai_config_from_env(a.url, a.model);
  if (a.temperature) c.temperature = *a.temperature;
  if (a.top_p) c.top_p = *a.top_p;
  if (a.max_tokens) c.max_tokens = *a.max_tokens;
  if (a.concurrency) c.max_concurrency = *a.concurrency;
  if (a.request_timeout_s) c.timeout_s = *a.request_timeout_s;
  return c;
}

}  // namespace cudal1::cli
