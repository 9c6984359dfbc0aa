// report/bench_names.h — bench JSON written before the compile baselines took their names
// (compile, compile_ro), read under today's names (evaluator/result.h canonical_baseline_name).
//
// An earlier run's rows said compile_default and compile_reduce_overhead; a report or a run
// that carries such rows shows them in the same columns as new ones.
#pragma once

#include <nlohmann/json.hpp>

namespace cudal1 {

// The row with its baseline-keyed objects (speedup, claimed, baseline_unavailable) under today's
// names; a figure under both names keeps today's. Anything that is not an object is returned
// as it is.
nlohmann::json canonical_bench_row(nlohmann::json row);

// The whole bench JSON: every row as above, and the "baselines" order list renamed (each name once).
nlohmann::json canonical_bench(nlohmann::json bench);

}  // namespace cudal1
