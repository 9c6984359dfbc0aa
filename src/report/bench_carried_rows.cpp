// report/bench_carried_rows: reading an earlier bench JSON's rows, and the reports' note on them.
#include "report/bench_carried_rows.h"

#include <cstdint>
#include <fstream>

#include "core/error.h"
#include "evaluator/options.h"
#include "report/bench_names.h"

namespace cudal1 {

using json = nlohmann::json;

namespace {

std::string string_at(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string row_key(const std::string& task_hash, const std::string& candidate_hash, const std::string& protocol_key,
                    const std::string& device_kind) {
  return task_hash + "\n" + candidate_hash + "\n" + protocol_key + "\n" + device_kind;
}

// The key of a row that can be taken again, or "" when it cannot.
std::string usable_key(const json& row) {
  const std::string status = string_at(row, "status");
  if (status.empty() || status == "not_scored" || status == "error") return "";
  if (row.contains("infrastructure") && !row["infrastructure"].is_null()) return "";  // the machine's failure
  const std::string task = string_at(row, "task_hash"), candidate = string_at(row, "candidate_hash");
  const json provenance = row.value("provenance", json::object());
  const std::string protocol = string_at(provenance, "protocol_key"), device = string_at(provenance, "device");
  if (task.empty() || candidate.empty() || protocol.empty() || device.empty()) return "";
  return row_key(task, candidate, protocol, carried_device_kind(device));
}

}  // namespace

std::string carried_device_kind(const std::string& device) { return is_cuda_device(device) ? "cuda" : device; }

CarriedRows read_carried_rows(const std::filesystem::path& file) {
  const std::string hint = "name a file that `cudal1 bench --json` wrote (its standard output, saved)";
  std::ifstream in(file);
  if (!in) throw Error(ErrorKind::input, "cannot read " + file.string(), hint);
  json bench = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (bench.is_discarded() || !bench.is_object() || !bench.contains("rows") || !bench["rows"].is_array())
    throw Error(ErrorKind::input, file.string() + " is not a bench JSON (an object with a \"rows\" array)", hint);
  CarriedRows carried;
  carried.file = file.string();
  for (const json& row : bench["rows"]) {
    ++carried.rows;
    if (std::string key = usable_key(row); !key.empty()) carried.by_key[key] = canonical_bench_row(row);
    else ++carried.unusable;
  }
  return carried;
}

std::optional<json> find_carried_row(const CarriedRows& carried, const std::string& task_hash,
                                     const std::string& candidate_hash, const std::string& protocol_key,
                                     const std::string& device) {
  auto it = carried.by_key.find(row_key(task_hash, candidate_hash, protocol_key, carried_device_kind(device)));
  if (it == carried.by_key.end()) return std::nullopt;
  json row = it->second;
  row["carried_from"] = carried.file;
  row.erase("from_store");  // where the earlier run found it says nothing of this one
  row.erase("sol_fraction");  // against ceilings this run did not choose
  return row;
}

std::string carried_rows_tally(const CarriedRows& carried, std::size_t taken) {
  return carried.file + ": " + std::to_string(carried.rows) + " rows, " + std::to_string(carried.rows - carried.unusable) +
         " with a verdict that can be carried, " + std::to_string(taken) +
         " taken (the others are for other files, another protocol or another kind of device)";
}

std::string carried_rows_note(const json& bench) {
  const json carried = bench.is_object() ? bench.value("carried_rows", json::object()) : json::object();
  const json count = carried.is_object() ? carried.value("count", json()) : json();
  if (!count.is_number_integer() || count.get<int64_t>() <= 0) return "";
  std::string files;
  for (const json& f : carried.value("files", json::array()))
    if (f.is_string()) files += (files.empty() ? "" : ", ") + f.get<std::string>();
  return std::to_string(count.get<int64_t>()) + " rows were taken as an earlier run's bench JSON wrote them" +
         (files.empty() ? std::string() : " (" + files + ")") +
         ", not measured by this run; their figures are that run's, on the card each row names.";
}

}  // namespace cudal1
