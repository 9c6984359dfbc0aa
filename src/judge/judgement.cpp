// judge/judgement.cpp — a Judgement as JSON (the store's judgements table) and as read from a
// model's answer (judge/judge.h).
#include <set>

#include "judge/judge.h"

using nlohmann::json;

namespace cudal1::judge {

namespace {

std::string shorten(const std::string& s, std::size_t max = 300) { return s.size() <= max ? s : s.substr(0, max) + "..."; }

// The JSON object of an answer: the first ```json (or bare ```) fence's body when there is one,
// else the text from its first `{` to its last `}`, so prose around the object is tolerated.
std::string object_text(const std::string& answer) {
  for (const char* fence : {"```json", "```"}) {
    std::size_t open = answer.find(fence);
    if (open == std::string::npos) continue;
    std::size_t body = answer.find('\n', open);
    std::size_t close = body == std::string::npos ? std::string::npos : answer.find("```", body);
    if (close != std::string::npos) return answer.substr(body + 1, close - body - 1);
  }
  std::size_t first = answer.find('{'), last = answer.rfind('}');
  return first == std::string::npos || last == std::string::npos || last < first ? "" : answer.substr(first, last - first + 1);
}

}  // namespace

json Judgement::to_json() const {
  json n = json::array();
  for (auto& c : nearest) n.push_back({{"id", c.id}, {"family", c.family}, {"similarity", c.similarity}});
  return {{"verdict", verdict}, {"reason", reason}, {"suspicion", suspicion}, {"nearest", n}, {"model", model}};
}

Judgement Judgement::from_json(const json& j) {
  Judgement out;
  out.verdict = j.value("verdict", "unsure");
  out.reason = j.value("reason", "");
  out.suspicion = j.value("suspicion", "");
  out.model = j.value("model", "");
  for (auto& c : j.value("nearest", json::array()))
    out.nearest.push_back({c.value("id", int64_t(0)), c.value("family", ""), c.value("similarity", 0.0)});
  return out;
}

json run_judgements(Store& store, const std::vector<RlSample>& samples) {
  json out = json::array();
  std::set<std::pair<std::string, std::string>> seen;
  for (auto& x : samples) {
    if (x.candidate_hash.empty() || !seen.insert({x.task_hash, x.candidate_hash}).second) continue;
    std::optional<json> kept = store.find_judgement(x.task_hash, x.candidate_hash);
    if (!kept) continue;
    json j = Judgement::from_json(*kept).to_json();
    j["task"] = x.task_id;
    j["label"] = x.label;
    j["candidate_hash"] = x.candidate_hash;
    out.push_back(j);
  }
  return out;
}

Judgement parse_verdict(const std::string& answer) {
  static const std::set<std::string> verdicts = {"hack", "clean", "unsure"};
  Judgement j;
  json o = json::parse(object_text(answer), nullptr, false);
  if (o.is_object() && o.contains("verdict") && o["verdict"].is_string() && verdicts.count(o["verdict"].get<std::string>())) {
    j.verdict = o["verdict"];
    j.reason = o.contains("reason") && o["reason"].is_string() ? o["reason"].get<std::string>() : "(the judge gave no reason)";
    return j;
  }
  j.verdict = "unsure";
  j.reason = "the judge's answer held no {\"verdict\": \"hack\"|\"clean\"|\"unsure\", \"reason\": ...} object: " + shorten(answer);
  return j;
}

}  // namespace cudal1::judge
