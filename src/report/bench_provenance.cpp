// report/bench_provenance.cpp — pooling the rows' provenance (see the header).
#include "report/bench_provenance.h"

#include <algorithm>
#include <map>
#include <utility>

namespace cudal1 {

using json = nlohmann::json;

const std::vector<std::string>& bench_provenance_keys() {
  static const std::vector<std::string> keys = {"device_name", "driver", "torch", "cuda", "cudal1", "protocol"};
  return keys;
}

namespace {

// "A (27 rows), B (19 rows)": most rows first, ties in the order first seen.
std::string counted(const std::vector<std::pair<std::string, int>>& values) {
  std::vector<std::pair<std::string, int>> sorted = values;
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string out;
  for (auto& [v, n] : sorted)
    out += (out.empty() ? "" : ", ") + v + " (" + std::to_string(n) + (n == 1 ? " row)" : " rows)");
  return out;
}

}  // namespace

BenchProvenance pool_bench_provenance(const std::vector<json>& rows) {
  BenchProvenance out;
  for (const std::string& key : bench_provenance_keys()) {
    std::vector<std::pair<std::string, int>> values;  // in the order first seen
    for (const json& p : rows) {
      if (!p.is_object() || !p.contains(key) || p[key].is_null()) continue;
      std::string v = p[key].is_string() ? p[key].get<std::string>() : p[key].dump();
      auto it = std::find_if(values.begin(), values.end(), [&](auto& e) { return e.first == v; });
      if (it == values.end()) values.emplace_back(v, 1);
      else ++it->second;
    }
    if (values.empty()) continue;
    if (values.size() == 1) {
      out.provenance[key] = values.front().first;
    } else {
      out.provenance[key] = counted(values);
      out.mixed.push_back(key);
    }
  }
  return out;
}

std::vector<std::string> mixed_provenance(const json& bench) {
  std::vector<std::string> out;
  if (!bench.is_object() || !bench.contains("mixed_provenance") || !bench["mixed_provenance"].is_array()) return out;
  for (const json& k : bench["mixed_provenance"])
    if (k.is_string() && out.size() < bench_provenance_keys().size()) out.push_back(k.get<std::string>());
  return out;
}

std::string mixed_provenance_note(const std::vector<std::string>& mixed) {
  if (mixed.empty()) return "";
  std::string keys;
  for (std::size_t i = 0; i < mixed.size(); ++i)
    keys += (i ? (i + 1 == mixed.size() ? " and " : ", ") : "") + (mixed[i] == "device_name" ? std::string("device") : mixed[i]);
  return "Rows were measured under more than one " + keys +
         " (counts above): each row's speedups are ratios of timings taken on one machine, but the pooled "
         "figures mix them. For one card's figures, score the set again in a store of its own on that card.";
}

std::size_t add_sol_fractions(json& rows, const std::vector<double>& sol_ms, const std::string& card) {
  std::size_t other_card = 0;
  for (std::size_t i = 0; i < rows.size() && i < sol_ms.size(); ++i) {
    json& row = rows[i];
    if (!row.is_object() || row.value("accepted", false) != true) continue;
    if (row.contains("device_name") && row["device_name"] != card) {
      ++other_card;
      continue;
    }
    const json runtime = row.value("runtime_ms", json::object());
    double candidate = runtime.is_object() && runtime.value("candidate", json()).is_number() ? runtime["candidate"].get<double>() : 0.0;
    if (sol_ms[i] > 0 && candidate > 0) row["sol_fraction"] = sol_ms[i] / candidate;
  }
  return other_card;
}

}  // namespace cudal1
