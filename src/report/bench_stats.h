// report/bench_stats.h — the statistics of a `cudal1 bench` run, per level and per baseline, and
// the tolerant accessors that read one row of its JSON (the schema is in report/bench_report.h).
//
// Definitions (the HTML page repeats them under "How to read this"):
//   group        level 1, 2 and 3 (always present, possibly empty), any other integer level seen,
//                and "all" (every row, also those without a usable level).
//   not scored   rows whose status is "not_scored" (a run stopped early, or reported from its
//                store before it was done): counted apart and left out of everything below.
//   tasks        the scored rows of the group.
//   accepted     rows whose "accepted" is exactly true. correct rate = accepted / tasks.
//   For one baseline B, over the accepted rows of the group only:
//   n/a          speedup[B] absent or null, or a reason given in baseline_unavailable[B].
//   invalid      speedup[B] present but not a finite number > 0 (0, negative, NaN, inf, text).
//   measured     the rest. mean, median (the mean of the two middle values for an even count) and
//                geometric mean (exp of the mean of the natural logs) are over these rows only,
//                and are absent when there are none.
//   share >1.01x (measured rows with speedup > 1.01) / tasks. Every task of the group is in the
//                denominator: a failed, unaccepted, n/a or invalid row counts as not above.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudal1 {

struct BenchBaselineStats {
  std::string baseline;
  int measured = 0, unavailable = 0, invalid = 0, above = 0;  // above: measured and > 1.01
  std::optional<double> mean, median, geomean;                // absent when measured == 0
  double share_above = 0;                                     // above / tasks; 0 when no tasks
};

struct BenchLevelStats {
  std::string level;  // "1", "2", "3", other levels seen, "all"
  int tasks = 0, accepted = 0;
  int not_scored = 0;       // rows of the group left out of every figure (see above)
  double correct_rate = 0;  // accepted / tasks; 0 when no tasks
  std::map<std::string, int> statuses;
  std::vector<BenchBaselineStats> baselines;  // in BenchStats::baselines order
};

struct BenchStats {
  std::vector<std::string> baselines;       // the order to show
  std::vector<BenchLevelStats> levels;      // ascending level, "all" last
  std::map<std::string, int> flag_counts;   // flag name -> occurrences over every row
  std::map<std::string, int> flag_blocking; // flag name -> occurrences with severity "block"
  int flags = 0;
  int not_scored = 0;                       // over every row
};

BenchStats bench_stats(const nlohmann::json& bench);

// The groups every figure is over, as defined above: levels 1, 2, 3, any other level seen, then
// "all"; each with its scored rows (pointers into `bench`, which must outlive them) and the count
// of its rows not scored.
struct BenchGroup {
  std::string level;
  std::vector<const nlohmann::json*> rows;
  int not_scored = 0;
};
std::vector<BenchGroup> bench_groups(const nlohmann::json& bench);
// How a group is named in tables: "level 1", ..., "all".
std::string bench_group_name(const std::string& level);

// ---- Reading one row; each accepts any JSON value, since the input is untrusted. ----

// "baselines" when it is a list of strings; else every key of any row's "speedup", "eager" first.
std::vector<std::string> bench_baselines(const nlohmann::json& bench);
// "rows" when it is an array, else empty; a row that is not an object reads as an empty one.
const nlohmann::json& bench_rows(const nlohmann::json& bench);

// A string field as is, a number or bool as its JSON text, anything else as `fallback`.
std::string bench_text(const nlohmann::json& obj, const char* key, const std::string& fallback = "");
bool bench_accepted(const nlohmann::json& row);
std::optional<int> bench_level(const nlohmann::json& row);  // an integral number, or "1" text
std::string bench_status(const nlohmann::json& row);        // "unknown" when absent
bool bench_not_scored(const nlohmann::json& row);           // status "not_scored"
// The field is there and not null.
bool bench_has(const nlohmann::json& obj, const char* key);
// A finite number in `key`, else none.
std::optional<double> bench_number(const nlohmann::json& obj, const char* key);
// A finite number > 0 in `key`, else none (absent, null, 0, negative, NaN, inf, text).
std::optional<double> bench_positive(const nlohmann::json& obj, const char* key);

enum class BenchSpeedupKind { measured, unavailable, invalid };
struct BenchSpeedup {
  BenchSpeedupKind kind = BenchSpeedupKind::unavailable;
  double value = 0;    // when measured
  std::string reason;  // baseline_unavailable[B] when it is given
};
// Classifies the row's speedup against `baseline` as defined above (whether or not accepted).
BenchSpeedup bench_speedup(const nlohmann::json& row, const std::string& baseline);

struct BenchFlag {
  std::string name, severity, evidence;  // name from "name" (or "id", the evaluator's key)
};
std::vector<BenchFlag> bench_flags(const nlohmann::json& row);

}  // namespace cudal1
