#include "cli/judge_options.h"

#include "core/env.h"
#include "core/error.h"

namespace cudal1::cli {

void add_judge_options(CLI::App* cmd, JudgeArgs& a) {
  cmd->add_option("--judge-url", a.url, "a second opinion on suspicious results from a model behind this OpenAI-compatible "
                  "endpoint, http://HOST:PORT/v1 (default $CUDAL1_JUDGE_URL; none: no judge)");
  cmd->add_option("--judge-model", a.model, "the judge's model (default $CUDAL1_JUDGE_MODEL)");
  cmd->add_option("--judge-mode", a.mode, "gate (a hack verdict refuses the result and earns the hack penalty) or advise "
                  "(it only labels it)")->check(CLI::IsMember({"gate", "advise"}))->capture_default_str();
  cmd->add_option("--judge-k", a.k, "known hacks shown to the judge")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--judge-threshold", a.threshold, "an accepted eager speedup from which the judge is asked")
      ->check(CLI::Range(1.0, 1e9))->capture_default_str();
}

std::optional<judge::JudgeConfig> judge_config(const JudgeArgs& a) {
  if (a.url.empty() && first_env({"CUDAL1_JUDGE_URL"}).empty()) {
    if (!a.model.empty())
      throw Error(ErrorKind::usage, "--judge-model names a judge but no endpoint was given",
                  "add --judge-url http://HOST:PORT/v1 (or set CUDAL1_JUDGE_URL), or leave --judge-model out");
    return std::nullopt;
  }
  judge::JudgeConfig c;
  c.url = a.url;
  c.model = a.model;
  c.mode = judge::judge_mode_from_name(a.mode);
  c.k = a.k;
  c.threshold = a.threshold;
  return judge::complete_judge_config(c);
}

}  // namespace cudal1::cli
