// cli/enrich_carried_lines: reading an earlier enrich.jsonl's verdicts.
#include "cli/enrich_carried_lines.h"

#include <fstream>

#include "core/error.h"
#include "evaluator/options.h"

namespace cudal1 {

using json = nlohmann::json;

namespace {

std::string string_at(const json& line, const char* key) {
  auto it = line.find(key);
  return it != line.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string line_key(const std::string& task, const std::string& candidate, const std::string& protocol) {
  return task + "\n" + candidate + "\n" + protocol;
}

// The line's verdict, or nullopt when it has none: no status, one this cudal1 does not know, a
// machine's failure rather than the file's (`infrastructure`), or not measured on a CUDA device.
std::optional<EvalResult> verdict(const json& line) {
  const std::string status = string_at(line, "status");
  auto accepted = line.find("accepted");
  if (status.empty() || accepted == line.end() || !accepted->is_boolean()) return std::nullopt;
  if (line.contains("infrastructure") && !line["infrastructure"].is_null()) return std::nullopt;
  if (!is_cuda_device(string_at(line, "device"))) return std::nullopt;
  EvalResult r;
  try {
    r.status = status_from_name(status);
  } catch (const Error&) {
    return std::nullopt;
  }
  r.accepted = accepted->get<bool>();
  r.error = string_at(line, "error");
  r.task_hash = string_at(line, "task_sha256");
  r.candidate_hash = string_at(line, "candidate_sha256");
  r.provenance = {{"device", string_at(line, "device")}};  // where it was verified, which the line keeps
  if (std::string card = string_at(line, "device_name"); !card.empty()) r.provenance["device_name"] = card;
  for (const json& f : line.value("flags", json::array())) {
    if (!f.is_object()) continue;
    const std::string severity = string_at(f, "severity");
    r.flags.push_back({string_at(f, "id"), severity == "warn" ? Severity::warn : severity == "info" ? Severity::info : Severity::block,
                       string_at(f, "evidence")});
  }
  return r;
}

}  // namespace

CarriedEnrichLines read_carried_enrich_lines(const std::filesystem::path& file) {
  const std::string hint = "name the enrich.jsonl that an earlier `cudal1 enrich` wrote into its --out folder";
  std::ifstream in(file);
  if (!in) throw Error(ErrorKind::input, "cannot read " + file.string(), hint);
  CarriedEnrichLines carried;
  carried.file = file.string();
  std::string text;
  for (std::size_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (line.is_discarded() || !line.is_object())
      throw Error(ErrorKind::input, file.string() + " line " + std::to_string(number) + " is not a JSON object", hint);
    ++carried.lines;
    const std::string task = string_at(line, "task_sha256"), candidate = string_at(line, "candidate_sha256"),
                      protocol = string_at(line, "protocol_key");
    std::optional<EvalResult> v = verdict(line);
    if (task.empty() || candidate.empty() || protocol.empty() || !v) {
      ++carried.unusable;
      continue;
    }
    carried.by_key[line_key(task, candidate, protocol)] = std::move(*v);
  }
  return carried;
}

std::string carried_lines_tally(const CarriedEnrichLines& carried, std::size_t taken) {
  return carried.file + ": " + std::to_string(carried.lines) + " lines, " + std::to_string(carried.lines - carried.unusable) +
         " with a verdict from a CUDA device, " + std::to_string(taken) +
         " taken (the others are for other tasks, other generated files or another protocol)";
}

std::optional<EvalResult> find_carried_verdict(const CarriedEnrichLines& carried, const std::string& task_sha256,
                                               const std::string& candidate_sha256, const std::string& protocol_key) {
  auto it = carried.by_key.find(line_key(task_sha256, candidate_sha256, protocol_key));
  if (it == carried.by_key.end()) return std::nullopt;
  return it->second;
}

}  // namespace cudal1
