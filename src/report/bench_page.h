// report/bench_page.h — pieces shared by the bench report's HTML sections (bench_html.cpp draws
// the page and its plots, bench_tables.cpp its tables): status colours and bounded, escaped text.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/bench_stats.h"

namespace cudal1::bench_page {

// The CSS class that colours a row in plots and tables: "st-acc" when accepted, else one per
// known status, "st-oth" for anything else. Never input text, so safe in an attribute.
const char* status_class(const nlohmann::json& row);

// Every class status_class can return, with its legend text, in legend order.
struct StatusClass {
  const char* css;
  const char* legend;
};
const std::vector<StatusClass>& status_classes();

// Untrusted text, cut to `max_bytes` and escaped for HTML: a 1 MB task name must not make a
// 1 MB table cell.
std::string text(const std::string& s, std::size_t max_bytes = 200);

// A measured speedup, "n/a" or "invalid" as a table cell (<td>...</td>), with the reason or the
// "not accepted" note as a tooltip.
std::string speedup_cell(const nlohmann::json& row, const std::string& baseline);

std::string summary_section(const BenchStats& s);
// The kernel set's claims beside what was measured (report/bench_claims.h); empty without claims.
std::string claims_section(const nlohmann::json& bench);
// Each card's own figures when the rows come from several (report/bench_provenance.h); else empty.
std::string per_card_section(const nlohmann::json& bench);
std::string flags_section(const nlohmann::json& bench);
std::string rows_section(const nlohmann::json& bench, const std::vector<std::string>& baselines);

}  // namespace cudal1::bench_page
