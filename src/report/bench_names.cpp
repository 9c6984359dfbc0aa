#include "report/bench_names.h"

#include <algorithm>
#include <string>
#include <vector>

#include "evaluator/result.h"

namespace cudal1 {

namespace {

using json = nlohmann::json;

json canonical_keys(const json& by_baseline) {
  json out = json::object();
  for (auto& [name, v] : by_baseline.items())
    if (canonical_baseline_name(name) == name) out[name] = v;
  for (auto& [name, v] : by_baseline.items())  // an earlier name, unless today's is also there
    if (std::string now = canonical_baseline_name(name); now != name && !out.contains(now)) out[now] = v;
  return out;
}

}  // namespace

json canonical_bench_row(json row) {
  if (!row.is_object()) return row;
  for (const char* key : {"speedup", "claimed", "baseline_unavailable"})
    if (row.contains(key) && row[key].is_object()) row[key] = canonical_keys(row[key]);
  return row;
}

json canonical_bench(json bench) {
  if (!bench.is_object()) return bench;
  if (bench.contains("rows") && bench["rows"].is_array())
    for (json& row : bench["rows"]) row = canonical_bench_row(std::move(row));
  if (bench.contains("baselines") && bench["baselines"].is_array()) {
    json names = json::array();
    for (const json& n : bench["baselines"]) {
      json now = n.is_string() ? json(canonical_baseline_name(n.get<std::string>())) : n;
      if (std::find(names.begin(), names.end(), now) == names.end()) names.push_back(now);
    }
    bench["baselines"] = names;
  }
  return bench;
}

}  // namespace cudal1
