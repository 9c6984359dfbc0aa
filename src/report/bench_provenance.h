// report/bench_provenance.h — where a bench's rows were measured, pooled for its reports. A run
// resumed from a store can hold rows measured on another card, driver or torch (a machine lent
// for one call, another for the next): every row's speedup is still a ratio of timings taken on
// one machine, but the pooled figures mix them, and the report must say so rather than name the
// first row's card.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

// The provenance keys a bench report shows, in order.
const std::vector<std::string>& bench_provenance_keys();

struct BenchProvenance {
  // key -> string. A value every row shares reads as it is; values of several rows read
  // "NVIDIA H100 80GB HBM3 (27 rows), NVIDIA H200 (19 rows)", most rows first.
  nlohmann::json provenance = nlohmann::json::object();
  std::vector<std::string> mixed;  // the keys with more than one value, in bench_provenance_keys order
};

// rows: each scored row's provenance object (keys above; a value that is not a string is read as
// its JSON text; absent or null keys are skipped).
BenchProvenance pool_bench_provenance(const std::vector<nlohmann::json>& rows);

// The bench JSON's "mixed_provenance" (strings; anything else reads as absent, since a report can
// be drawn from an untrusted file).
std::vector<std::string> mixed_provenance(const nlohmann::json& bench);

// One sentence for the reports when `mixed` is not empty, else "": which keys differ, and what
// that means for the figures.
std::string mixed_provenance_note(const std::vector<std::string>& mixed);

// The bench once per card its scored rows name in device_name (most rows first): each a copy of
// `bench` holding that card's rows only, for figures that do not mix cards. Empty when fewer than
// two cards are named; rows without a device_name, or not scored, are in none.
std::vector<std::pair<std::string, nlohmann::json>> bench_by_card(const nlohmann::json& bench);

// One card's own figures over all its rows (levels pooled), for the reports' per-card table.
struct BenchCardFigures {
  std::string card;
  int tasks = 0, accepted = 0;
  std::vector<std::pair<std::string, std::optional<double>>> geomeans;  // baseline -> over its accepted rows
  std::string claims_hold;  // "3 of 19": its claims against eager that hold; "" without claims
};
// Empty when the rows name fewer than two cards (bench_by_card).
std::vector<BenchCardFigures> bench_card_figures(const nlohmann::json& bench);
// The sentence above that table.
const char* bench_card_figures_rule();

// Sets sol_fraction (sol_ms[i] over the candidate's measured time, runtime_ms.candidate) on each
// accepted row i measured on `card`, the card the ceilings behind sol_ms were measured on (a row
// without a device_name string counts as measured there). Rows of any shape are tolerated. One card's ceilings say nothing of another's
// times, so an accepted row from another card gets none; returns how many.
std::size_t add_sol_fractions(nlohmann::json& rows, const std::vector<double>& sol_ms, const std::string& card);

}  // namespace cudal1
