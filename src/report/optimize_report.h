// report/optimize_report.h — the HTML page of an optimisation run (`cudal1 optimize`, rl/loop.h):
// the tasks' table (best speedup against every baseline measured, answers tried, accepted,
// caught hacks), the best speedup per task, the distribution of every accepted answer's speedup,
// and per task its rounds (answers, accepted, with --turns the revisions and how many of them were
// accepted, best of the round and so far, mean reward, what the unparsed answers were), and the
// judge's verdicts when the run had one. The tasks' table says what best/ holds: the file's
// speedup, or none and why (TaskOutcome::best_note). Every string from samples or summary is
// escaped: completions are untrusted text.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace cudal1 {

// `summary`: the run's summary.json (run, policy, device, tasks: TaskOutcome::to_json()).
std::string optimize_report_html(const std::vector<RlSample>& samples, const nlohmann::json& summary);

}  // namespace cudal1
