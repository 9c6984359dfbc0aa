// cli/baseline_options: see baseline_options.h.
#include "cli/baseline_options.h"

#include <algorithm>

#include "baselines/baselines.h"
#include "core/error.h"

namespace cudal1::cli {

namespace {

std::string known_baselines() {
  std::string list;
  for (auto& n : baseline_names()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

}  // namespace

void add_baseline_options(CLI::App* cmd, BaselineArgs& a) {
  const std::string known = known_baselines();
  cmd->add_flag("--baselines", a.all, "also speedups against every baseline: " + known + " (cached per task)");
  cmd->add_option("--baseline", a.names, "also the speedup against this baseline only (" + known +
                                             "); repeatable or comma-separated; each costs its own build and timing per task")
      ->delimiter(',');
}

void apply_baseline_args(const BaselineArgs& a, EvalOptions& o) {
  const auto& known = baseline_names();
  std::vector<std::string> names;
  for (auto& n : a.names) {
    names.push_back(canonical_baseline_name(n));  // an earlier name still works in scripts
    if (std::find(known.begin(), known.end(), names.back()) == known.end())
      throw Error(ErrorKind::usage, "--baseline " + n + " is not a baseline", "pick from " + known_baselines());
  }
  o.baselines = a.all || !a.names.empty();
  o.baseline_names = a.all ? std::vector<std::string>{} : names;
}

}  // namespace cudal1::cli
