// report/bench_provenance.cpp — the rows' provenance pooled, split per card, and matched to the
// card of the speed-of-light ceilings (see the header).
#include "report/bench_provenance.h"

#include "report/bench_claims.h"
#include "report/bench_stats.h"

#include <algorithm>
#include <utility>

namespace cudal1 {

using json = nlohmann::json;

const std::vector<std::string>& bench_provenance_keys() {
  static const std::vector<std::string> keys = {"device_name", "driver", "torch", "cuda", "cudal1", "protocol"};
  return keys;
}

namespace {

// Distinct values with how many rows have each, in the order first seen.
using Tally = std::vector<std::pair<std::string, int>>;

void count(Tally& tally, const std::string& value) {
  auto it = std::find_if(tally.begin(), tally.end(), [&](auto& e) { return e.first == value; });
  if (it == tally.end()) tally.emplace_back(value, 1);
  else ++it->second;
}

// "A (27 rows), B (19 rows)": most rows first, ties in the order first seen.
std::string counted(Tally tally) {
  std::stable_sort(tally.begin(), tally.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string out;
  for (auto& [v, n] : tally)
    out += (out.empty() ? "" : ", ") + v + " (" + std::to_string(n) + (n == 1 ? " row)" : " rows)");
  return out;
}

}  // namespace

BenchProvenance pool_bench_provenance(const std::vector<json>& rows) {
  BenchProvenance out;
  for (const std::string& key : bench_provenance_keys()) {
    Tally values;
    for (const json& p : rows)
      if (p.is_object() && p.contains(key) && !p[key].is_null()) count(values, p[key].is_string() ? p[key].get<std::string>() : p[key].dump());
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

std::vector<std::pair<std::string, json>> bench_by_card(const json& bench) {
  std::vector<std::pair<std::string, json>> out;  // card -> its rows, in the order first seen
  for (const json& r : bench_rows(bench)) {
    if (!r.is_object() || bench_not_scored(r) || !r.contains("device_name") || !r["device_name"].is_string()) continue;
    const std::string& card = r["device_name"].get_ref<const std::string&>();
    auto it = std::find_if(out.begin(), out.end(), [&](auto& c) { return c.first == card; });
    if (it == out.end()) it = out.insert(out.end(), {card, json::array()});
    it->second.push_back(r);
  }
  if (out.size() < 2) return {};
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.second.size() > b.second.size(); });
  // Each card's copy of the bench has the whole bench's baselines, also where its own rows lack one.
  const std::vector<std::string> baselines = bench_baselines(bench);
  for (auto& [card, rows] : out) {
    json one = bench;
    one["baselines"] = baselines;
    one["rows"] = std::move(rows);
    rows = std::move(one);
  }
  return out;
}

std::vector<BenchCardFigures> bench_card_figures(const json& bench) {
  std::vector<BenchCardFigures> out;
  for (auto& [card, one] : bench_by_card(bench)) {
    const BenchStats st = bench_stats(one);
    const BenchLevelStats& all = st.levels.back();
    BenchCardFigures f{.card = card, .tasks = all.tasks, .accepted = all.accepted};
    for (auto& b : all.baselines) f.geomeans.emplace_back(b.baseline, b.geomean);
    for (auto& c : bench_claims(one))
      if (c.level == "all" && c.baseline == "eager") f.claims_hold = std::to_string(c.hold) + " of " + std::to_string(c.claims);
    out.push_back(std::move(f));
  }
  return out;
}

const char* bench_card_figures_rule() {
  return "The figures above pool every card's rows; here each card's rows alone (all levels; geometric means over "
         "its accepted rows; its claims against eager that hold).";
}

std::size_t add_sol_fractions(json& rows, const std::vector<double>& sol_ms, const std::string& card) {
  std::size_t other_card = 0;
  for (std::size_t i = 0; i < rows.size() && i < sol_ms.size(); ++i) {
    json& row = rows[i];
    if (!row.is_object() || !bench_accepted(row)) continue;
    if (row.contains("device_name") && row["device_name"].is_string() && row["device_name"] != card) {
      ++other_card;
      continue;
    }
    const json& runtime = row.contains("runtime_ms") ? row["runtime_ms"] : json();
    std::optional<double> candidate = runtime.is_object() ? bench_positive(runtime, "candidate") : std::nullopt;
    if (sol_ms[i] > 0 && candidate) row["sol_fraction"] = sol_ms[i] / *candidate;
  }
  return other_card;
}

}  // namespace cudal1
