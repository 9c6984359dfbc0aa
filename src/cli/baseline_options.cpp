// cli/baseline_options: see baseline_options.h.
#include "cli/baseline_options.h"

#include <algorithm>

#include "baselines/baselines.h"
#include "core/error.h"

namespace cudal1::cli {

void add_baseline_options(CLI::App* cmd, BaselineArgs& a) {
  std::string known;
  for (auto& n : baseline_names()) known += (known.empty() ? "" : ", ") + n;
  cmd->add_flag("--baselines", a.all, "also speedups against every baseline: " + known + " (cached per task)");
  cmd->add_option("--baseline", a.names, "also the speedup against this baseline only (" + known +
                                             "); repeatable or comma-separated; each costs its own build and timing per task")
      ->delimiter(',');
}

void apply_baseline_args(const BaselineArgs& a, EvalOptions& o) {
  const auto& known = baseline_names();
  for (auto& n : a.names)
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      std::string list;
      for (auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error(ErrorKind::usage, "--baseline " + n + " is not a baseline", "pick from " + list);
    }
  o.baselines = a.all || !a.names.empty();
  o.baseline_names = a.all ? std::vector<std::string>{} : a.names;
}

}  // namespace cudal1::cli
