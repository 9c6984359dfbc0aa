// lint/result.cpp — LintResult as JSON: what `cudal1 lint-task --json` prints and what the
// store's cache keeps.
#include "lint/lint.h"

namespace cudal1 {

using json = nlohmann::json;

json LintResult::to_json() const {
  json f = json::array(), c = json::array();
  for (auto& x : findings) f.push_back({{"id", x.id}, {"evidence", x.evidence}});
  for (auto& x : checks)
    c.push_back({{"id", x.id}, {"tested", x.tested}, {"passes", x.passes()}, {"passed_cases", x.passed_cases},
                 {"cases", x.cases}, {"evidence", x.evidence}});
  return {{"degenerate", degenerate}, {"fixed_weights", fixed_weights}, {"findings", f}, {"checks", c}, {"tolerance", tolerance},
          {"device", device}, {"task", {{"path", task_path}, {"sha256", task_hash}}}, {"cases", cases},
          {"outputs", outputs}, {"env", env}, {"version", kLintVersion}, {"from_store", from_store}};
}

LintResult LintResult::from_json(const json& j) {
  LintResult r;
  r.degenerate = j.value("degenerate", false);
  r.fixed_weights = j.value("fixed_weights", false);
  for (auto& x : j.value("findings", json::array()))
    r.findings.push_back({x.value("id", ""), x.value("evidence", "")});
  for (auto& x : j.value("checks", json::array()))
    r.checks.push_back({x.value("id", ""), x.value("tested", true), x.value("passed_cases", 0), x.value("cases", 0),
                        x.value("evidence", "")});
  r.tolerance = j.value("tolerance", "");
  r.device = j.value("device", "");
  json task = j.value("task", json::object());
  r.task_path = task.value("path", "");
  r.task_hash = task.value("sha256", "");
  r.cases = j.value("cases", json::array());
  r.outputs = j.value("outputs", json::array());
  r.env = j.value("env", json::object());
  r.from_store = j.value("from_store", false);
  return r;
}

}  // namespace cudal1
