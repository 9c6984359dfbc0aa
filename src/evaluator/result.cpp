#include "evaluator/result.h"

#include "core/error.h"

namespace cudal1 {

namespace {
constexpr std::pair<Status, const char*> kStatusNames[] = {
    {Status::ok, "ok"},           {Status::compile_error, "compile_error"},
    {Status::runtime_error, "runtime_error"}, {Status::timeout, "timeout"},
    {Status::crash, "crash"},     {Status::incorrect, "incorrect"},
    {Status::rejected, "rejected"},
};
}

const char* status_name(Status s) {
  for (auto& [st, name] : kStatusNames)
    if (st == s) return name;
  return "unknown";
}

Status status_from_name(const std::string& name) {
  for (auto& [st, n] : kStatusNames)
    if (name == n) return st;
  throw Error(ErrorKind::internal, "unknown status '" + name + "' in a stored result");
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::block: return "block";
    case Severity::warn: return "warn";
    case Severity::info: return "info";
  }
  return "block";
}

bool EvalResult::has_blocking_flag() const {
  for (auto& f : flags)
    if (f.severity == Severity::block) return true;
  return false;
}

void EvalResult::add_flag(std::string id, Severity severity, std::string evidence) {
  for (auto& f : flags)
    if (f.id == id) {
      ++f.occurrences;
      return;
    }
  flags.push_back({std::move(id), severity, std::move(evidence)});
}

json EvalResult::to_json() const {
  json flags_j = json::array();
  for (auto& f : flags)
    flags_j.push_back({{"id", f.id}, {"severity", severity_name(f.severity)}, {"evidence", f.evidence},
                       {"occurrences", f.occurrences}});
  return {
      {"accepted", accepted},
      {"status", status_name(status)},
      {"flags", flags_j},
      {"runtime_ms", runtime_ms},
      {"speedup", speedup},
      {"error", error.empty() ? json(nullptr) : json(error)},
      {"correctness", correctness},
      {"statistics", statistics},
      {"provenance", provenance},
      {"phase_seconds", phase_seconds},
      {"task_lint", task_lint},
      {"build", build},
      {"budgets", budgets},
      {"infrastructure", infrastructure},
      {"task", {{"path", task_path}, {"sha256", task_hash}}},
      {"candidate", {{"path", candidate_path}, {"sha256", candidate_hash}}},
      {"from_store", from_store},
  };
}

std::string canonical_baseline_name(const std::string& name) {
  for (const RenamedBaseline& r : kRenamedBaselines)
    if (name == r.earlier) return r.now;
  return name;
}

EvalResult EvalResult::from_json(const json& j) {
  EvalResult r;
  r.accepted = j.at("accepted").get<bool>();
  r.status = status_from_name(j.at("status").get<std::string>());
  for (auto& f : j.at("flags")) {
    std::string sev = f.value("severity", "block");
    r.flags.push_back({f.at("id").get<std::string>(),
                       sev == "warn" ? Severity::warn : sev == "info" ? Severity::info : Severity::block,
                       f.value("evidence", ""), f.value("occurrences", 1)});
  }
  r.runtime_ms = j.value("runtime_ms", std::map<std::string, double>{});
  for (auto& [name, x] : j.value("speedup", std::map<std::string, double>{})) r.speedup[canonical_baseline_name(name)] = x;
  if (j.contains("error") && j["error"].is_string()) r.error = j["error"].get<std::string>();
  r.correctness = j.value("correctness", json::object());
  r.statistics = j.value("statistics", json::object());
  r.provenance = j.value("provenance", json::object());
  r.phase_seconds = j.value("phase_seconds", json::object());
  r.task_lint = j.value("task_lint", json::object());
  r.build = j.value("build", json::object());
  r.budgets = j.value("budgets", json::object());
  r.infrastructure = j.value("infrastructure", json(nullptr));
  if (j.contains("task")) {
    r.task_path = j["task"].value("path", "");
    r.task_hash = j["task"].value("sha256", "");
  }
  if (j.contains("candidate")) {
    r.candidate_path = j["candidate"].value("path", "");
    r.candidate_hash = j["candidate"].value("sha256", "");
  }
  r.from_store = j.value("from_store", false);
  return r;
}

}  // namespace cudal1
